"""Every number mpm_reuseport adds to server-status, checked against an
independent source (issue #38: Drops counted connections never dropped).

- ReusePortBucketNDrops: the connection attempts the kernel refused because
  the bucket's queue was full, against the network namespace's TcpExt
  ListenDrops (what `nstat` shows; the runner's private namespace holds no
  other listener): a bucket whose only child is stopped is flooded, the
  sum shown must equal the kernel's count within 1 and the running bucket
  show none; 10,000 connections served with httpd's default AcceptFilter
  (TCP_DEFER_ACCEPT, whose discarded handshake ACKs the listener's own drop
  counter counts: what server-status used to show) must show 0 everywhere.
- ReusePortBucketNQueued / QueueLimit: `ss -ltn` Recv-Q / Send-Q of the
  bucket's socket, with a full queue and an empty one.
- ReusePortBucketNAccepted: the client's connections (curl's, one request
  each), and the kernel's count of connect()s (TcpActiveOpens).
- ReusePortChildN requests: their sum is the client's request count.
- ReusePortBucketNSampled / Local: one worker turn in 16 per thread, so
  about requests / 16 (each worker's first turn is sampled too).
- mod_fhcache's TotalHits + TotalMisses: the requests (covered at small
  scale by test_fhcache.py's test_status_totals_over_children; here at
  10,000 under mpm_reuseport).
Needs the runner's private network namespace (the default as root)."""
import os
import re
import select
import signal
import socket
import subprocess
import time

from mpmng_py.integration.common import (HttpdTestCase, all_threads_stopped, curl,
                                         mpm_directives, reuseport_only, tcp_counters)
from mpmng_py.integration.fhcache_mpms import FHCACHE_SO

BODY = b"n" * 200


def private_netns_only(test):
    """The kernel's counters are the namespace's: only the runner's own
    namespace has no other server refusing connections meanwhile."""
    def run(self):
        if not os.environ.get("MPMNG_IN_PRIVATE_NETNS"):
            self.skipTest("needs the runner's private network namespace")
        return test(self)
    run.__name__, run.__doc__ = test.__name__, test.__doc__
    return run


def listen_drops():
    return tcp_counters().get("TcpExtListenDrops", 0)


def children_by_bucket(st):
    """{bucket: [pid, ...]} and {pid: requests} from ReusePortChildN lines
    (`pid P bucket B requests R`)."""
    pids, served = {}, {}
    for key, val in st.items():
        if re.match(r"ReusePortChild\d+$", key):
            f = val.split()
            pids.setdefault(int(f[3]), []).append(int(f[1]))
            served[int(f[1])] = int(f[5])
    return pids, served


def bucket_numbers(st, name, nb):
    return [int(st["ReusePortBucket%d%s" % (b, name)]) for b in range(nb)]


def ss_buckets(port, pids_by_bucket):
    """{bucket: (Recv-Q, Send-Q, drop counter)} of the listening socket held
    by the bucket's children (`ss -ltnpm`: queued connections, backlog,
    skmem's d: the socket's own drop counter, what Drops used to show)."""
    out = subprocess.run(["ss", "-Hltnpm", "sport = :%d" % port], capture_output=True,
                         text=True, timeout=10).stdout
    res = {}
    for sock in re.split(r"\n(?=\S)", out.strip()):
        f = sock.split()
        pids = {int(x) for x in re.findall(r"pid=(\d+)", sock)}
        drops = re.search(r"skmem:\(.*\bd(\d+)\)", sock)
        for b, kids in pids_by_bucket.items():
            if set(kids) & pids:
                res[b] = (int(f[1]), int(f[2]), int(drops.group(1)) if drops else None)
    return res


def ss_queues(port, pids_by_bucket):
    """{bucket: (Recv-Q, Send-Q)} (ss_buckets without the drops)."""
    return {b: v[:2] for b, v in ss_buckets(port, pids_by_bucket).items()}


def open_burst(host, port, n, path, gap=0.02):
    """n connections, one after the other: each the kernel completes within
    gap seconds sends its request at once (so TCP_DEFER_ACCEPT queues it)
    and waits up to gap seconds for the answer; the others wait for their
    SYN to be answered.  So connections hashed to a running bucket are
    served one at a time (its queue never fills) and those hashed to a
    stopped one pile up.  Returns the sockets."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((host, port))
        socks.append(s)
        _, w, _ = select.select([], [s], [], gap)
        if w and s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
            s.send(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    % path).encode())
            select.select([s], [], [], gap)
    return socks


class StatusNumbers(HttpdTestCase):
    def start_two_buckets(self, extra, fhcache=False):
        directives = mpm_directives(buckets=2, start=2, server_limit=2, threads=10,
                                    thread_limit=10, max_workers=20, min_spare=1,
                                    max_spare=20) + extra
        if fhcache:
            directives = "LoadModule fhcache_module %s\nFHCache On\n" % FHCACHE_SO + directives
        h = self.httpd(directives, files={"f.html": BODY})
        h.wait_children(2)
        self.wait_workers(h, 20)
        return h

    def status(self, h):
        """server-status?auto, asked again while the answer hashes to a
        stopped bucket (the attempt times out)."""
        for _ in range(40):
            try:
                return h.status(timeout=1)
            except OSError:
                continue
        self.fail("no server-status answer in 40 attempts")

    # ---- Drops ------------------------------------------------------------
    def flood_stopped_bucket(self, accept_filter):
        """A bucket whose only child is stopped, ListenBacklog 8, 60
        connections: the kernel refuses those hashed to it beyond its 9
        queued (and their retries); the other bucket serves its share."""
        extra = "ReusePortStuckTimeout off\nListenBacklog 8\n"
        if accept_filter:
            extra += "AcceptFilter http %s\n" % accept_filter
        h = self.start_two_buckets(extra)
        st = h.status()
        pids, _ = children_by_bucket(st)
        self.assertEqual(sorted(len(p) for p in pids.values()), [1, 1], st)
        # Nothing refused yet, whatever the connections so far (the start's
        # probe, the status requests) left in the listeners' own counters.
        c0 = tcp_counters()
        k0 = c0["TcpExtListenDrops"]
        sk0 = ss_buckets(h.port, pids)
        self.assertEqual(bucket_numbers(st, "Drops", 2), [0, 0], st)
        stopped, running = 0, 1
        os.kill(pids[stopped][0], signal.SIGSTOP)
        socks = []
        try:
            while not all_threads_stopped(pids[stopped][0]):
                time.sleep(0.001)
            socks = open_burst(h.host, h.port, 60, "/f.html")
            # The tool worked: the kernel refused connections.
            self.wait_until(lambda: listen_drops() - k0 >= 10, 10,
                            "the kernel to refuse 10 connections (TcpExtListenDrops)")
            # Queued and QueueLimit are the kernel's queue (ss), sampled
            # by the parent about once a second: full in the stopped
            # bucket (backlog + 1), empty in the running one.
            ss = ss_queues(h.port, pids)
            self.assertEqual(ss[stopped], (9, 8), ss)
            self.assertEqual(ss[running][1], 8, ss)

            def queues_shown():
                st = self.status(h)
                q = bucket_numbers(st, "Queued", 2)
                return st if q[stopped] == 9 and q[running] == 0 else None

            st = self.wait_until(queues_shown, 10, "Queued 9 and 0 in server-status")
            self.assertEqual(bucket_numbers(st, "QueueLimit", 2), [8, 8], st)
        finally:
            for s in socks:
                s.close()
            os.kill(pids[stopped][0], signal.SIGCONT)
        self.wait_until(lambda: all(q == (0, 8) for q in ss_queues(h.port, pids).values()),
                        10, "the stopped bucket's queue to drain")
        # Refusals still on their way (retransmitted FINs) are counted by
        # both: wait for the parent's samples to catch up with the kernel.
        seen = {"k": None}

        def caught_up():
            k = listen_drops() - k0
            st = self.status(h)
            shown = bucket_numbers(st, "Drops", 2)
            done = sum(shown) == k and seen["k"] == k
            seen.update(k=k, shown=shown)
            return done
        deadline = time.monotonic() + 15
        while not caught_up() and time.monotonic() < deadline:
            time.sleep(0.3)
        k, shown = seen["k"], seen["shown"]
        sk1 = ss_buckets(h.port, pids)
        sock_drops = [sk1[b][2] - sk0[b][2] for b in (stopped, running)]
        defer = tcp_counters()["TcpExtTCPDeferAcceptDrop"] - c0["TcpExtTCPDeferAcceptDrop"]
        msg = ("AcceptFilter %s: shown %s (stopped bucket first), kernel ListenDrops %d; "
               "the sockets' own drop counters rose by %s, TCPDeferAcceptDrop by %d"
               % (accept_filter or "default", [shown[stopped], shown[running]], k,
                  sock_drops, defer))
        print("\n    " + msg, end=" ")
        self.assertGreaterEqual(k, 10, msg)
        # Exact: the loop above waits for the two to agree (and the kernel's
        # count to hold still); both count the same refusals.
        self.assertEqual(sum(shown), k, msg)
        self.assertEqual(shown[stopped], k, msg)
        self.assertEqual(shown[running], 0, msg)
        if accept_filter == "none":
            # No discarded ACKs: the sockets' own counters are the refusals
            # of each bucket.
            self.assertEqual(sock_drops, [shown[stopped], shown[running]], msg)
        h.stop()    # the next server's refusals are none of its business

    @reuseport_only
    @private_netns_only
    def test_drops_equal_the_kernels_listen_drops(self):
        """httpd's default AcceptFilter (data: TCP_DEFER_ACCEPT) and none."""
        for accept_filter in (None, "none"):
            with self.subTest(accept_filter=accept_filter or "default"):
                self.flood_stopped_bucket(accept_filter)

    @reuseport_only
    @private_netns_only
    def test_numbers_after_10000_connections(self):
        """10,000 connections, one request each (curl, 20 at a time),
        default AcceptFilter: no drops anywhere (the kernel refused none),
        and Accepted, the children's requests, Sampled, Queued/QueueLimit
        and mod_fhcache's hits + misses agree with the client and the
        kernel."""
        n = 10000
        h = self.start_two_buckets("", fhcache=True)
        urls = os.path.join(h.dir, "urls.cfg")
        with open(urls, "w") as f:
            f.write('url = "%s"\noutput = "/dev/null"\n' % h.url("/f.html") * n)
        calls = []      # every status answer, in order

        def status():
            calls.append(h.status())
            return calls[-1]

        def served(st):
            return sum(children_by_bucket(st)[1].values())

        def settled():
            # A request counts once logged, just after its answer: the
            # answer to the next one may come first.  Two answers in a row
            # one request apart: the first one's own, nothing else pending.
            a, b = status(), status()
            return b if served(b) - served(a) == 1 else None

        c0 = tcp_counters()
        st0 = self.wait_until(settled, 10, "every request before the baseline logged")
        i0 = len(calls)
        pids0 = children_by_bucket(st0)[0]
        cache0 = int(st0["FHCacheTotalHits"]) + int(st0["FHCacheTotalMisses"])
        res = curl("-Z", "--parallel-max", "20", "-H", "Connection: close",
                   "-w", "%{http_code}\n", "-K", urls, timeout=120)
        codes = res.stdout.decode().split()
        self.assertEqual((res.returncode, codes.count("200")), (0, n), res.stderr[-500:])

        def all_logged():
            # curl's requests, the baseline's and the status requests
            # since but this one.
            st = status()
            return st if served(st) - served(st0) == n + len(calls) - i0 else None

        st = self.wait_until(all_logged, 10, "curl's requests in ReusePortChildN")
        after = len(calls) - i0         # status requests after the baseline
        c1 = tcp_counters()
        pids = children_by_bucket(st)[0]
        self.assertEqual(pids, pids0, "children changed: their counts start again")

        def rise(name):
            return sum(bucket_numbers(st, name, 2)) - sum(bucket_numbers(st0, name, 2))
        defer = c1["TcpExtTCPDeferAcceptDrop"] - c0["TcpExtTCPDeferAcceptDrop"]
        refused = c1["TcpExtListenDrops"] - c0["TcpExtListenDrops"]
        opened = c1["TcpActiveOpens"] - c0["TcpActiveOpens"]
        accepted, sampled, local = rise("Accepted"), rise("Sampled"), rise("Local")
        requests = served(st) - served(st0)
        msg = ("%d connections: drops shown %s, kernel ListenDrops %d, TCPDeferAcceptDrop %d; "
               "connect()s %d, accepted %d; requests %d; sampled %d (local %d); "
               "%d status request(s) since the baseline"
               % (n, bucket_numbers(st, "Drops", 2), refused, defer, opened, accepted,
                  requests, sampled, local, after))
        print("\n    " + msg, end=" ")
        # The tools: the kernel refused nothing, and discarded a handshake
        # ACK per connection (the listeners' own drop counters rose by as
        # many: what Drops used to show).
        self.assertEqual(refused, 0, msg)
        self.assertGreaterEqual(defer, n, msg)
        self.assertEqual(bucket_numbers(st, "Drops", 2), [0, 0], msg)
        # curl's connections and the status requests' since the baseline
        # (each accepted before it answered); the kernel counted as many
        # connect()s, and the status requests' before.
        self.assertEqual(accepted, n + after, msg)
        self.assertEqual(opened, n + len(calls), msg)
        self.assertEqual(requests, n + after, msg)
        # Each worker thread samples its first turn, then one in 16; a turn
        # whose socket names no receiving CPU (-1) counts none (624-627 of
        # 10,001 turns seen, so the bound has the upper one's slack).
        self.assertGreaterEqual(sampled, n // 16 - 20, msg)
        self.assertLessEqual(sampled, (n + after) // 16 + 20, msg)
        self.assertLessEqual(local, sampled, msg)
        # Queues at rest: ss agrees with the parent's sample (about once a
        # second: wait for one after the load).
        ss = ss_queues(h.port, pids)
        self.assertEqual(sorted(ss.values()), [(0, 511), (0, 511)], ss)

        def at_rest():
            s = status()
            return s if bucket_numbers(s, "Queued", 2) == [0, 0] else None

        st = self.wait_until(at_rest, 5, "Queued 0 at rest", interval=0.25)
        self.assertEqual(bucket_numbers(st, "QueueLimit", 2), [511, 511], st)

        # mod_fhcache: every request is a hit or a miss (a status request a
        # miss too); children publish about once a second.
        def cache_total():
            s = status()
            total = int(s["FHCacheTotalHits"]) + int(s["FHCacheTotalMisses"]) - cache0
            return total if total >= n else None

        total = self.wait_until(cache_total, 10, "mod_fhcache's totals to include %d requests"
                                % n, interval=0.25)
        asked = len(calls) - i0 + 1     # the baseline's lookup may come after
        print("mod_fhcache hits + misses %d for %d requests and %d status request(s)"
              % (total, n, asked), end=" ")
        self.assertLessEqual(total, n + asked, "hits + misses %d for %d requests and "
                             "%d status requests" % (total, n, asked))
