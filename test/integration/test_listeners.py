"""Listener buckets: one SO_REUSEPORT socket per bucket and Listen address,
children bound to one bucket each, the ReusePort off fallback, IPv4+IPv6."""
import os
import re
import shutil
import signal
import subprocess
import unittest

from mpmng_py import privhttpd
from mpmng_py.integration.common import (HttpdTestCase, IS_REUSEPORT, NCPU, ipv6_loopback,
                                         listeners, mpm_directives, parallel_gets, pid_counts,
                                         reuseport_only, run_ab, ss_lines, tracer_of)


def bucket_log_lines(log, n):
    """Error-log lines of the MPM that say it uses n buckets."""
    out = []
    for line in log.splitlines():
        if not re.search(r"mpm_reuseport:|AH\d{5}", line):
            continue
        if re.search(r"bucket", line, re.I) and re.search(r"\b%d\b" % n, line):
            out.append(line)
    return out


def holders(h, port):
    """{listener inode: sorted child PIDs holding it} (parent excluded), and
    {child PID: [inodes]}."""
    kids = set(h.children())
    by_sock, by_child = {}, {}
    for l in listeners(port):
        by_sock[l["inode"]] = sorted(p for p in l["pids"] if p in kids)
        for p in l["pids"]:
            if p in kids:
                by_child.setdefault(p, []).append(l["inode"])
    return by_sock, by_child


def stop_one_child_under_load(h, pid, clients=8, seconds=3):
    """8 clients make a new connection per request for 4 s; `pid` is stopped
    (SIGSTOP) from 0.5 s to 3.5 s.  Returns the latencies (s, sorted) of the
    requests started while it was stopped, the errors, and a summary.
    The clock starts once every thread of the child has stopped (kill()
    returns before): until then it may still accept a connection, which is
    then its in-flight request and waits for SIGCONT."""
    from mpmng_py.integration.common import all_threads_stopped
    import threading
    import time
    from mpmng_py.integration.common import http_get
    # Our own clients, a new connection per request, so every latency
    # is one request's (no tool's bookkeeping in between).
    lat, errors, stop = [], [], time.monotonic() + seconds + 1
    stopped_at = {}

    def client():
        while time.monotonic() < stop:
            t0 = time.monotonic()
            try:
                r = http_get(h.host, h.port, "/f.bin", timeout=10)
                if r.status != 200:
                    errors.append(r.status)
            except Exception as e:      # noqa: BLE001 (reported)
                errors.append(repr(e))
            if "t" in stopped_at and t0 > stopped_at["t"]:
                lat.append(time.monotonic() - t0)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        os.kill(pid, signal.SIGSTOP)
        while not all_threads_stopped(pid):
            time.sleep(0.001)
        stopped_at["t"] = time.monotonic()
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)
        for t in threads:
            t.join(30)
    lat.sort()
    p99 = lat[int(len(lat) * 0.99)] * 1000 if lat else None
    msg = ("one child stopped for %d s: %d requests started meanwhile, p99 %s ms, "
           "max %.0f ms, errors %s"
           % (seconds, len(lat), "%.1f" % p99 if lat else "-",
              lat[-1] * 1000 if lat else 0, errors[:5]))
    print("\n    " + msg, end=" ")
    return lat, errors, msg


class Buckets(HttpdTestCase):
    @reuseport_only
    def test_one_socket_per_bucket_and_log_line(self):
        h = self.httpd(mpm_directives(buckets=4, start=4, server_limit=8, threads=10,
                                      max_workers=80, min_spare=10, max_spare=80)
                       + "LogLevel info\n")
        lines = ss_lines(h.port)
        self.assertEqual(len(lines), 4, "ss -Hltn sport = :%d:\n%s" % (h.port, "\n".join(lines)))
        for line in lines:
            self.assertIn("127.0.0.1:%d" % h.port, line)
        self.wait_until(lambda: bucket_log_lines(h.log(), 4), 5,
                        "an mpm_reuseport log line saying 4 buckets are used")
        self.assertNotIn("ReusePort off", h.log())

    @reuseport_only
    def test_default_buckets_is_online_cpus(self):
        limit = max(16, 2 * NCPU)
        h = self.httpd(mpm_directives(threads=25, server_limit=limit, max_workers=25 * limit,
                                      min_spare=25, max_spare=25 * limit)
                       + "LogLevel info\n")
        self.assertEqual(len(ss_lines(h.port)), NCPU,
                         "ReusePortBuckets auto must give one socket per online CPU (%d)" % NCPU)
        # StartServers defaults to the bucket count.
        h.wait_children(NCPU)
        self.wait_workers(h, 25 * NCPU)
        self.wait_until(lambda: bucket_log_lines(h.log(), NCPU), 5,
                        "a log line saying %d buckets are used" % NCPU)
        by_sock, by_child = holders(h, h.port)
        self.assertEqual(sorted(len(v) for v in by_sock.values()), [1] * NCPU,
                         "each bucket socket must be served by one child: %s" % by_sock)

    @reuseport_only
    def test_children_spread_evenly_over_buckets(self):
        # start None: StartServers defaults to the bucket count.
        for buckets, start in ((2, 4), (3, 5), (3, None)):
            with self.subTest(buckets=buckets, start=start):
                h = self.httpd(mpm_directives(buckets=buckets, start=start, server_limit=8,
                                              threads=10, max_workers=80, min_spare=10,
                                              max_spare=80))
                kids = h.wait_children(start or buckets)
                # Started: a child just forked still holds every bucket's.
                self.wait_workers(h, 10 * (start or buckets))
                by_sock, by_child = holders(h, h.port)
                self.assertEqual(len(by_sock), buckets)
                self.assertEqual(sorted(by_child), kids,
                                 "every child must hold a listener: %s" % by_child)
                for pid, socks in by_child.items():
                    self.assertEqual(len(socks), 1, "child %d holds listeners of %d buckets "
                                     "(each child serves exactly one bucket): %s"
                                     % (pid, len(socks), by_sock))
                sizes = sorted(len(v) for v in by_sock.values())
                self.assertLessEqual(sizes[-1] - sizes[0], 1,
                                     "children per bucket not even: %s" % by_sock)
                self.assertGreaterEqual(sizes[0], 1, by_sock)
                h.stop()

    @reuseport_only
    def test_stopped_child_holds_up_only_its_bucket(self):
        """With one child per bucket and no relief (ReusePortStuckTimeout
        off), SIGSTOP one child: new connections that the kernel hashes to
        its bucket wait, the others are served."""
        h = self.httpd(mpm_directives(buckets=2, start=2, server_limit=4, threads=10,
                                      max_workers=40, min_spare=10, max_spare=40)
                       + "ReusePortStuckTimeout off\n",
                       files={"index.html": "x"})
        kids = h.wait_children(2)
        self.wait_workers(h, 20)
        os.kill(kids[0], signal.SIGSTOP)
        try:
            results, _ = parallel_gets(h.host, h.port, 24, "/index.html", timeout=2)
        finally:
            os.kill(kids[0], signal.SIGCONT)
        ok = sum(1 for r in results if r[0])
        self.assertGreater(ok, 0, "no connection served while one of two children was "
                           "stopped: %s" % results)
        self.assertLess(ok, 24, "all connections were served although the only child of "
                        "one bucket was stopped: children are not bound to buckets")
        # And it recovers: everything is served again.
        results, _ = parallel_gets(h.host, h.port, 24, "/index.html", timeout=5)
        self.assertTrue(all(r[0] for r in results), results)



class Fallback(HttpdTestCase):
    def test_reuseport_off_single_listener_serves_over_children(self):
        h = self.httpd(mpm_directives(reuseport=False, buckets=4, start=3, server_limit=8,
                                      threads=25, max_workers=200, min_spare=25,
                                      max_spare=200) + "LogLevel info\n",
                       files={"index.html": b"y" * 100}, access_log=True)
        lines = ss_lines(h.port)
        self.assertEqual(len(lines), 1, "ReusePort off must leave one listener:\n%s"
                         % "\n".join(lines))
        kids = h.wait_children(3)
        self.wait_workers(h, 75)
        res = run_ab(h.url("/index.html"), 3000, 30)
        self.assertEqual(res.failures, 0, res)
        counts = pid_counts(h.access_log, "/index.html")
        self.assertEqual(sum(counts.values()), 3000)
        self.assertTrue(set(counts) <= set(kids), (counts, kids))
        self.assertGreater(len(counts), 1, "all requests served by one child: %s" % counts)
        if IS_REUSEPORT:
            self.assertEqual(h.log().count("ReusePort off"), 1,
                             "expected one 'ReusePort off' log line:\n" + h.log_tail())


class DualStack(HttpdTestCase):
    def test_ipv4_and_ipv6_each_get_bucket_sockets(self):
        if not ipv6_loopback():
            self.skipTest("::1 is not configured on lo")
        port = privhttpd.free_port("127.0.0.1", "::1")
        buckets = 2
        h = self.httpd(mpm_directives(buckets=buckets, start=buckets, server_limit=4,
                                      threads=10, max_workers=40, min_spare=10, max_spare=40),
                       port=port, listen=["127.0.0.1:%d" % port, "[::1]:%d" % port],
                       files={"index.html": "dual\n"})
        want = buckets if IS_REUSEPORT else 1
        socks = listeners(port)
        v4 = [s for s in socks if s["addr"] == "127.0.0.1:%d" % port]
        v6 = [s for s in socks if s["addr"] == "[::1]:%d" % port]
        self.assertEqual((len(v4), len(v6)), (want, want),
                         "\n".join(s["line"] for s in socks))
        kids = h.wait_children(buckets)
        if IS_REUSEPORT:
            # Each child holds its bucket's socket of both addresses, once
            # started (one just forked holds every bucket's).
            self.wait_workers(h, 10 * buckets)
            by_sock, by_child = holders(h, port)
            for pid in kids:
                self.assertEqual(len(by_child.get(pid, [])), 2,
                                 "child %d listeners: %s" % (pid, by_child))
        for url in ("http://127.0.0.1:%d/index.html" % port,
                    "http://[::1]:%d/index.html" % port):
            res = run_ab(url, 400, 8)
            self.assertEqual(res.failures, 0, "%s: %s" % (url, res))

    @reuseport_only
    def test_wildcard_listen_gets_buckets_in_both_families(self):
        """`Listen PORT` (no address): IPv4 and IPv6 each get one socket per
        bucket, unlike ListenCoresBucketsRatio (httpd bug 69804).  Binds the
        wildcard, so it runs only inside the runner's private netns."""
        if not os.environ.get("MPMNG_IN_PRIVATE_NETNS"):
            self.skipTest("wildcard bind needs the private network namespace")
        if not ipv6_loopback():
            self.skipTest("::1 is not configured on lo")
        port = privhttpd.free_port("127.0.0.1", "::1")
        buckets = 2
        h = self.httpd(mpm_directives(buckets=buckets, start=buckets, server_limit=4,
                                      threads=10, max_workers=40, min_spare=10, max_spare=40),
                       port=port, listen=["%d" % port], files={"index.html": "any\n"})
        socks = listeners(port)
        v4 = [s for s in socks if s["addr"] == "0.0.0.0:%d" % port]
        v6 = [s for s in socks if s["addr"] in ("[::]:%d" % port, "*:%d" % port)]
        self.assertEqual((len(v4), len(v6)), (buckets, buckets),
                         "\n".join(s["line"] for s in socks))
        for url in ("http://127.0.0.1:%d/index.html" % port,
                    "http://[::1]:%d/index.html" % port):
            res = run_ab(url, 200, 4)
            self.assertEqual(res.failures, 0, "%s: %s" % (url, res))


if __name__ == "__main__":
    unittest.main()

class BucketStatus(HttpdTestCase):
    @reuseport_only
    def test_server_status_shows_buckets_and_a_stuck_queue(self):
        """server-status shows each bucket's children, accepted connections
        and kernel queue; a stopped child's bucket shows its waiting
        connections (sampled by the parent) and the parent logs it once
        (relief off, so it stays stuck)."""
        import socket
        import time
        h = self.httpd(mpm_directives(buckets=2, start=2, server_limit=4, threads=10,
                                      max_workers=40, min_spare=10, max_spare=40)
                       + "ReusePortStuckTimeout off\n",
                       files={"index.html": "x"})
        kids = h.wait_children(2)
        self.wait_workers(h, 20)
        results, _ = parallel_gets(h.host, h.port, 30, "/index.html", timeout=5)
        self.assertTrue(all(r[0] for r in results), results)

        def counted():      # a child counts a request once it has logged it
            st = h.status()
            return st if sum(int(v.split()[5]) for k, v in st.items()
                             if re.match(r"ReusePortChild\d+$", k)) >= 30 else None
        st = self.wait_until(counted, 5, "the 30 requests counted per child")
        self.assertEqual(st["ReusePortBuckets"], "2")
        from mpmng_py.integration.common import http_get
        page = http_get(h.host, h.port, "/server-status").body.decode()
        self.assertIn("mpm_reuseport buckets", page)
        self.assertIn("127.0.0.1:%d" % h.port, page)
        accepted = sum(int(st["ReusePortBucket%dAccepted" % b]) for b in (0, 1))
        self.assertGreaterEqual(accepted, 30)
        # Requests per child (counted whether or not ExtendedStatus is on).
        per_child = [int(v.split()[5]) for k, v in st.items()
                     if re.match(r"ReusePortChild\d+$", k)]
        self.assertEqual(len(per_child), 2, st)
        self.assertGreaterEqual(sum(per_child), 30, st)
        # Queued is the parent's sample (about once a second): one taken
        # while the 30 requests above were arriving may still show some.
        def status_with_empty_queues():
            st = h.status()
            return st if all(st["ReusePortBucket%dQueued" % b] == "0" for b in (0, 1)) else None

        st = self.wait_until(status_with_empty_queues, 5,
                             "a queue sample with nothing waiting", interval=0.25)
        for b in (0, 1):
            self.assertEqual(st["ReusePortBucket%dChildren" % b], "1")
            self.assertGreater(int(st["ReusePortBucket%dQueueLimit" % b]), 0)
        os.kill(kids[0], signal.SIGSTOP)
        held = []
        try:
            # Requests sent, so TCP_DEFER_ACCEPT lets them into the queue;
            # about half hash to the stopped child's bucket and wait there.
            for _ in range(20):
                s = socket.create_connection((h.host, h.port), timeout=5)
                s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
                held.append(s)
            deadline = time.monotonic() + 10
            st = None
            while time.monotonic() < deadline:
                try:
                    st = h.status(timeout=1)    # may hash to the stopped bucket
                except OSError:
                    continue
                # Sampled about once a second: wait for the whole backlog,
                # and for a sample that did not catch one of the running
                # bucket's connections on its way through the queue.
                q = sorted(int(st["ReusePortBucket%dQueued" % b]) for b in (0, 1))
                if q[0] == 0 and q[1] >= 3:
                    break
                time.sleep(0.3)
            self.assertIsNotNone(st, "no status answer from the running child")
            queued = [int(st["ReusePortBucket%dQueued" % b]) for b in (0, 1)]
            self.assertEqual(sorted(q > 0 for q in queued), [False, True], queued)
            waiting = max(queued)
            self.assertGreaterEqual(waiting, 3, queued)
            # Stuck for 2 s: logged once.
            self.wait_until(lambda: "its children are stuck" in h.log(), 10,
                            "the parent to report the stuck bucket")
        finally:
            os.kill(kids[0], signal.SIGCONT)
        for s in held:
            s.settimeout(5)
            self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 200"))
            s.close()
        self.wait_until(lambda: all(h.status()["ReusePortBucket%dQueued" % b] == "0"
                                    for b in (0, 1)), 10, "the queue to drain")
        self.assertEqual(h.log().count("its children are stuck"), 1)


    @reuseport_only
    def test_server_status_counts_drops_of_a_full_queue(self):
        """A bucket whose queue is full drops new connections (SYNs); the
        parent reads the listener's drop counter (SO_MEMINFO) and
        server-status shows it per bucket."""
        import socket
        import time
        h = self.httpd(mpm_directives(buckets=2, start=2, server_limit=4, threads=10,
                                      max_workers=40, min_spare=10, max_spare=40)
                       + "ReusePortStuckTimeout off\nListenBacklog 1\n"
                       "AcceptFilter http none\n",
                       files={"index.html": "x"})
        kids = h.wait_children(2)
        self.wait_workers(h, 20)
        st = h.status()
        self.assertEqual([st["ReusePortBucket%dDrops" % b] for b in (0, 1)], ["0", "0"])
        os.kill(kids[0], signal.SIGSTOP)
        held = []
        try:
            for _ in range(40):
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex((h.host, h.port))
                held.append(s)
            drops, deadline = 0, time.monotonic() + 10
            while time.monotonic() < deadline and not drops:
                time.sleep(0.5)
                try:
                    st = h.status(timeout=1)
                except OSError:
                    continue
                drops = sum(int(st["ReusePortBucket%dDrops" % b]) for b in (0, 1))
            self.assertGreater(drops, 0, st)
        finally:
            os.kill(kids[0], signal.SIGCONT)
            for s in held:
                s.close()


class ChildrenPerBucket(HttpdTestCase):
    @reuseport_only
    def test_stopped_child_does_not_stall_its_bucket(self):
        """ReusePortChildrenPerBucket 2: a bucket whose child is stopped
        under load is served by its other child (EPOLLEXCLUSIVE wakes only
        a waiting child): no request waits for the stopped child and none
        fails."""
        import time
        h = self.httpd(mpm_directives(buckets=2, start=4, server_limit=8, threads=16,
                                      thread_limit=16, max_workers=128, min_spare=16,
                                      max_spare=32)
                       + "ReusePortChildrenPerBucket 2\nReusePortStuckTimeout off\n",
                       files={"f.bin": os.urandom(500)})
        kids = h.wait_children(4)
        # MaxSpareThreads 32 would reap down to one child per bucket; the
        # directive keeps two in each.
        time.sleep(2.5)
        st = h.status()
        for b in (0, 1):
            self.assertEqual(st["ReusePortBucket%dAccepting" % b], "2")
        lat, errors, msg = stop_one_child_under_load(h, kids[0])
        self.assert_no_stall(lat, errors, msg)

    def assert_no_stall(self, lat, errors, msg):
        self.assertGreater(len(lat), 500, msg)
        self.assertEqual(errors, [], msg)
        # Closed-loop clients stuck on a stalled bucket stop issuing, so a
        # stall hides from p99 (3 s stalls: p99 5 ms, max 3,000 ms with one
        # child per bucket and no relief; p99 is printed, its figure is in
        # docs/PERFORMANCE.md); the slowest request shows it: under 1.5 s,
        # half the stall (35-100 ms when it is served).
        self.assertLess(lat[-1], 1.5, msg)

    @reuseport_only
    def test_stuck_bucket_gets_another_child(self):
        """Default ReusePortStuckTimeout (50 ms), one child per bucket: the
        parent sees the stopped child's bucket queue connections with none
        accepted and starts another child for it, which takes them."""
        h = self.httpd(mpm_directives(buckets=2, start=2, server_limit=8, threads=16,
                                      thread_limit=16, max_workers=128, min_spare=16,
                                      max_spare=64),
                       files={"f.bin": os.urandom(500)})
        kids = h.wait_children(2)
        self.wait_workers(h, 32)
        lat, errors, msg = stop_one_child_under_load(h, kids[0])
        relief = [l for l in h.log().splitlines() if "started child" in l]
        self.assertTrue(relief, "no relief child logged:\n" + h.log_tail())
        self.assertEqual(len(relief), 1, relief)    # once, then held by the new one
        self.assertRegex(relief[0], r"bucket \d: \d+ connection\(s\) waited \d+ ms")
        self.assert_no_stall(lat, errors, msg)
        st = h.status()
        self.assertEqual(sorted(st["ReusePortBucket%dAccepting" % b] for b in (0, 1)),
                         ["1", "2"], st)
        # Fine again for 10 s: the bucket gives the added child back.
        self.wait_until(lambda: [h.status()["ReusePortBucket%dAccepting" % b]
                                 for b in (0, 1)] == ["1", "1"], 30,
                        "the added child to go")
        self.assertIn("one of its children goes", h.log())

    @reuseport_only
    @unittest.skipUnless(shutil.which("strace"), "strace not installed")
    def test_a_child_slow_to_start_is_not_taken_for_stuck(self):
        """A child the parent just started needs time to accept (over 50 ms
        under 2 CPU hogs at start-up): its bucket's connections wait
        meanwhile, yet the bucket is not stuck and gets no other child.
        strace holds the replacement of a killed child 0.4 s in setgid
        (dropping privileges, before it accepts)."""
        h = self.httpd(mpm_directives(buckets=1, start=1, server_limit=4, threads=16,
                                      thread_limit=16, max_workers=64, min_spare=1,
                                      max_spare=64),
                       files={"f.txt": "fine\n"})
        (kid,) = h.wait_children(1)
        trace = os.path.join(h.dir, "strace.txt")
        tr = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=setgid",
                               "-e", "inject=setgid:delay_enter=400000", "-o", trace,
                               "-p", str(h.pid)])
        self.addCleanup(tr.kill)
        self.wait_until(lambda: tracer_of(h.pid) == tr.pid, 10, "strace to attach")
        os.kill(kid, signal.SIGKILL)
        self.wait_until(lambda: set(h.children()) - {kid}, 10, "the killed child's successor")
        results, took = parallel_gets(h.host, h.port, 4, "/f.txt")
        tr.terminate()
        tr.wait(10)
        with open(trace) as f:
            delayed = [l for l in f if "setgid" in l and "(DELAYED)" in l]
        msg = "4 GETs in %.2f s: %s\nstrace: %s\n%s" % (took, results, delayed, h.log_tail())
        self.assertTrue(delayed, "strace held no setgid: " + msg)
        self.assertTrue(all(ok for ok, _ in results), msg)
        # Waited twice ReusePortStuckTimeout (50 ms): without the hold, the
        # relief would have come (the test may see the child late: not 0.4).
        self.assertGreater(took, 0.1, "the connections did not wait: " + msg)
        self.assertNotIn("started child", h.log(), msg)
        self.assertEqual(len(h.children()), 1, msg)

    @reuseport_only
    def test_stuck_timeout_values(self):
        for bad in ("0", "fast", "50ms", "60001"):
            h = self.httpd("ReusePortStuckTimeout %s\n" % bad, start=False)
            res = h.configtest()
            self.assertNotEqual(res.returncode, 0, bad)
            self.assertIn("ReusePortStuckTimeout", res.stderr + res.stdout)
        for good in ("off", "200"):
            h = self.httpd("ReusePortStuckTimeout %s\n" % good, start=False)
            self.assertEqual(h.configtest().returncode, 0, good)

    @reuseport_only
    def test_children_of_a_bucket_share_its_connections(self):
        """Four children on one bucket and bursts of 160 keep-alive
        connections: which child the kernel wakes is chance, so without
        balancing some child ends up well above its share of 40.  A child
        clearly above its share pauses accepting (rp_balance_rule.h: by more than
        an eighth, at least 4).  Asserted: every connection is accepted, no
        request fails and no child takes nearly all of a burst; how even the
        share is, is a bench figure."""
        import subprocess
        import time
        from mpmng_py.integration.common import Wrk
        kids_n, conns = 4, 160
        h = self.httpd(mpm_directives(buckets=1, start=kids_n, server_limit=kids_n,
                                      threads=8, thread_limit=8, max_workers=8 * kids_n,
                                      min_spare=1, max_spare=8 * kids_n)
                       + "ReusePortChildrenPerBucket %d\nMaxKeepAliveRequests 0\n"
                         "KeepAliveTimeout 30\n" % kids_n,
                       files={"f.bin": os.urandom(500)})
        kids = h.wait_children(kids_n)
        spreads = []

        def established():      # with the owner's pid, once a child accepted it
            return subprocess.run(["ss", "-Htnp", "state", "established",
                                   "sport = :%d" % h.port], capture_output=True,
                                  text=True, timeout=10).stdout

        for _ in range(3):
            # Each burst starts with no connection left from the last one
            # (lingering closes would count in a child's share).
            self.wait_until(lambda: not established().strip(), 10, "connections gone")
            time.sleep(0.2)
            w = Wrk(h.url("/f.bin"), 2, conns).start()
            seen = {}

            def accepted():     # one still queued has no pid
                seen["out"] = established()
                seen["per"] = [len(re.findall(r"pid=%d\b" % k, seen["out"])) for k in kids]
                return sum(seen["per"]) == conns
            try:
                self.wait_until(accepted, 10, "all %d connections accepted" % conns)
            finally:
                res = w.result()
            per, out = seen["per"], seen["out"]
            spreads.append(per)
            self.assertEqual(res.failures, 0, (res, per, out[:500]))
        msg = "connections per child, 3 bursts: %s" % spreads
        print("\n    " + msg, end=" ")
        # A paused child resumes when connections wait while its siblings
        # take none (their workers all busy in the burst, or the siblings
        # not run at all on a loaded machine), so it may end above its
        # pause point: 35-43 per child here, 55 once with two busy loops
        # beside it.  Without balancing, bursts here reach 51-115 (most runs
        # above 60): that overlaps a loaded machine's, so the balance
        # figure is the bench's (its children's CoV; no bench variant sets
        # ReusePortChildrenPerBucket yet).  Asserted with a wide margin: no
        # child took three quarters (120) of a burst, leaving its three
        # siblings next to nothing.
        for per in spreads:
            self.assertLess(max(per), 3 * conns // 4, msg)

    @reuseport_only
    def test_bad_children_per_bucket_rejected(self):
        for bad in ("0", "two", "-1"):
            h = self.httpd("ReusePortChildrenPerBucket %s\n" % bad, start=False)
            res = h.configtest()
            self.assertNotEqual(res.returncode, 0, bad)
            self.assertIn("ReusePortChildrenPerBucket", res.stderr + res.stdout)
        h = self.httpd(mpm_directives(buckets=4, start=4, server_limit=4, threads=10,
                                      max_workers=40)
                       + "ReusePortChildrenPerBucket 2\n", start=False)
        res = h.configtest()
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("needs 2 children per bucket", res.stderr + res.stdout)


def cpus_allowed(pid):
    """CPUs a process may run on, from /proc (e.g. {0} or {0, 1})."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                out = set()
                for part in line.split(":", 1)[1].strip().split(","):
                    lo, _, hi = part.partition("-")
                    out.update(range(int(lo), int(hi or lo) + 1))
                return out
    return set()


def bucket_cpus(nb):
    """{bucket: CPUs} as ReusePortCPUAffinity maps them (docs: the allowed
    CPUs in order; with no more buckets than CPUs, CPU number i serves
    bucket i % nb).  The server inherits this process's affinity."""
    cpus = sorted(os.sched_getaffinity(0))
    return {b: {c for i, c in enumerate(cpus) if i % nb == b} for b in range(nb)}


def local_share(st, nb):
    """(share of sampled requests served on their receiving CPU, sampled)."""
    n = sum(int(st["ReusePortBucket%dSampled" % b]) for b in range(nb))
    loc = sum(int(st["ReusePortBucket%dLocal" % b]) for b in range(nb))
    return (loc / n if n else 0.0), n


def children_by_bucket(st):
    """{bucket: [pid, ...]} from the ReusePortChildN status lines."""
    out = {}
    for key, val in st.items():
        m = re.match(r"ReusePortChild\d+$", key)
        if m:
            f = val.split()
            out.setdefault(int(f[3]), []).append(int(f[1]))
    return out


@unittest.skipUnless(NCPU >= 2, "needs 2 CPUs")
class Locality(HttpdTestCase):
    def serve_and_measure(self, affinity):
        from mpmng_py.integration.common import run_wrk
        h = self.httpd(mpm_directives(buckets=2, start=2, server_limit=4, threads=16,
                                      thread_limit=16, max_workers=64, min_spare=16,
                                      max_spare=64)
                       + "ReusePortCPUAffinity %s\n" % ("on" if affinity else "off"),
                       files={"f.bin": os.urandom(500)})
        h.wait_children(2)
        self.wait_workers(h, 32)
        res = run_wrk(h.url("/f.bin"), 3, 16, threads=2, close=True)
        self.assertEqual(res.failures, 0, res)
        st = h.status()
        share, n = local_share(st, 2)
        return h, st, share, n

    @reuseport_only
    def test_cpu_affinity_pins_children_and_steers_by_cpu(self):
        """ReusePortCPUAffinity on: bucket b's children run on CPU b only,
        and new connections go to the bucket of the CPU that received them,
        so (nearly) every request is served on its receiving CPU; off, the
        share is whatever the scheduler gives (reported)."""
        h, st, on, n_on = self.serve_and_measure(True)
        kids = children_by_bucket(st)
        self.assertEqual(sorted(kids), [0, 1], st)
        want = bucket_cpus(2)
        for b, pids in kids.items():
            for pid in pids:
                self.assertEqual(cpus_allowed(pid), want[b], "child %d of bucket %d" % (pid, b))
        h.stop()
        h, st, off, n_off = self.serve_and_measure(False)
        for pids in children_by_bucket(st).values():
            for pid in pids:
                self.assertGreater(len(cpus_allowed(pid)), 1, "pinned although off")
        msg = ("requests served on their receiving CPU: %.0f%% with ReusePortCPUAffinity "
               "(%d sampled), %.0f%% without (%d sampled)"
               % (on * 100, n_on, off * 100, n_off))
        print("\n    " + msg, end=" ")
        self.assertGreater(n_on, 200, msg)
        self.assertGreaterEqual(on, 0.9, msg)

    @reuseport_only
    def test_cpu_affinity_flag_values(self):
        h = self.httpd("ReusePortCPUAffinity maybe\n", start=False)
        res = h.configtest()
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("ReusePortCPUAffinity", res.stderr + res.stdout)

    def measure_buckets(self, h, Wrk):
        """One wrk pinned to a CPU of each bucket, 3 s side by side:
        (results, connections accepted per bucket, message)."""
        st0 = h.status()
        runs = []
        for cpu in (min(c) for c in bucket_cpus(2).values()):
            w = Wrk(h.url("/f.bin"), 3, 16, threads=1, latency=True)
            w.args = ["taskset", "-c", str(cpu)] + w.args
            runs.append(w.start())
        res = [w.result() for w in runs]
        st1 = h.status()
        per_bucket = [int(st1["ReusePortBucket%dAccepted" % b])
                      - int(st0["ReusePortBucket%dAccepted" % b]) for b in (0, 1)]
        msg = ("client on CPU 0: %d requests, %s; on CPU 1: %d requests, %s; "
               "connections accepted per bucket %s"
               % (res[0].requests, res[0].detail, res[1].requests, res[1].detail,
                  per_bucket))
        return res, per_bucket, msg

    @reuseport_only
    def test_latency_is_even_across_buckets(self):
        """With ReusePortCPUAffinity, a client pinned to CPU b talks to bucket
        b only, so two pinned wrk instances measure each bucket's latency
        side by side (printed).  Asserted: both clients are served without a
        failure and each bucket accepts at least a tenth of the connections
        (38-43% here; a bucket left out takes none).  How even the buckets'
        p99 and req/s are is a bench figure: wrk and a bucket's child share
        one pinned CPU, so on 2 noisy cores one bucket's p99 can be ten
        times the other's (CI: 73.9 / 7.5 ms, then 5.1 / 3.6 ms)."""
        import shutil
        from mpmng_py.integration.common import Wrk
        if not shutil.which("taskset"):
            self.skipTest("taskset missing")
        h = self.httpd(mpm_directives(buckets=2, start=2, server_limit=4, threads=16,
                                      thread_limit=16, max_workers=64, min_spare=16,
                                      max_spare=64)
                       + "ReusePortCPUAffinity on\n",
                       files={"f.bin": os.urandom(500)})
        h.wait_children(2)
        self.wait_workers(h, 32)
        res, per_bucket, msg = self.measure_buckets(h, Wrk)
        print("\n    " + msg, end=" ")
        for r in res:
            self.assertEqual(r.failures, 0, msg)
            self.assertGreater(r.requests, 0, msg)
        # Both buckets took connections (wrk reconnects every
        # MaxKeepAliveRequests).
        self.assertGreater(min(per_bucket), 0, msg)
        self.assertGreaterEqual(min(per_bucket), 0.1 * sum(per_bucket), msg)
