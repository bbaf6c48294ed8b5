"""Seamless graceful restart (mpm_reuseport): the old generation accepts
until the new one is ready, so restarts under load cost no failed request,
no reset and (almost) no latency (printed here; the restart bench records
p99); a configuration that fails its test leaves the running generation
serving."""
import os
import re
import signal
import time

from mpmng_py.integration.common import (CGI_SLOW, H2_RACE_LOST, SANITIZED, H2Clients,
                                         HttpdTestCase, ResponseReader, Wrk, connect, http_get,
                                         listeners, log_times, parallel_gets, started_count,
                                         h2c_file_directives, mpm_directives, needs_modules,
                                         request_bytes,
                                         reset_delta, reuseport_only, tcp_counters, wait_for_log)

# Under sanitizers a restart takes seconds: slower pacing, no timing checks.
EVERY = 3.0 if SANITIZED else 2.0
# wrk's duration, a cap: a load ends when its action is done (Wrk.stop).
LOAD_CAP_S = 120


def conf(buckets, slow_read=False):
    extra = ""
    if slow_read and not SANITIZED:
        # A configuration that takes ~0.1 s of CPU to read (httpd's Define
        # is quadratic), several times that under load, as a large site's
        # may: stock MPMs stop accepting that long on every graceful restart.
        extra = "".join("Define mpmng_pad_%d %d\n" % (i, i) for i in range(4000))
    return mpm_directives(buckets=buckets, start=buckets, server_limit=16,
                          threads=32, thread_limit=32, max_workers=256,
                          min_spare=32, max_spare=256) + extra


class SeamlessRestart(HttpdTestCase):
    def _load(self, h, action):
        """New-connection and keep-alive load while action() runs; it
        returns how many restarts it made.  TCP resets are counted until
        action returns, before wrk ends: wrk closing its busy connections
        makes resets of its own (a load of fixed length that ended inside
        the count, as when restarts under 2 CPU hogs were slow: 30-31
        TCPAbortOnClose, 45-46 TcpEstabResets, 0 failed requests)."""
        url = h.url("/file.bin")
        fresh = Wrk(url, LOAD_CAP_S, 16, close=True, latency=True).start()
        keep = Wrk(url, LOAD_CAP_S, 16, latency=True).start()
        try:
            time.sleep(0.5)
            before = tcp_counters()
            done = action()
            resets = reset_delta(before, tcp_counters())
        finally:
            r_fresh, r_keep = fresh.stop(), keep.stop()
        return r_fresh, r_keep, resets, done

    @staticmethod
    def _idle(seconds):
        return lambda: time.sleep(seconds) or 0

    def _restarts(self, h, n, every, bucket_cycle=None):
        def act():
            t0 = time.monotonic()
            self.each, self.sent = [], []
            for i in range(n):
                # Paced by the clock: a restart itself takes a while.
                time.sleep(max(0.0, t0 + every * (i + 1) - time.monotonic()))
                if bucket_cycle:
                    h.directives = conf(bucket_cycle[i % len(bucket_cycle)])
                    h.write_config()
                t1 = time.monotonic()
                h.graceful()
                self.each.append(time.monotonic() - t1)
                self.sent.append(h.signalled_at)
            self.took = time.monotonic() - t0
            time.sleep(1)   # the last old generation leaves
            return n
        return act

    def _restart_phases(self, h):
        """Per restart, the seconds of its configuration test (signal sent
        to "SIGUSR1 received") and of the parent's reading (from there to
        its next "resuming" line); None if the log has not one of each per
        signal."""
        log = h.log()
        received = log_times(log, "SIGUSR1 received")
        resumed = log_times(log, "resuming normal operations")[1:]
        if not len(received) == len(resumed) == len(self.sent):
            return None
        return ([r - s for s, r in zip(self.sent, received)],
                [d - r for r, d in zip(received, resumed)])

    def _check(self, h, label, base, during):
        (bf, bk, bres, _), (rf, rk, rres, n) = base, during
        msg = ("%s: %d graceful restarts in %.1f s (each until its generation ran: %s s)\n"
               "      without restarts: new conns %s\n"
               "                        keep-alive %s\n"
               "      with restarts:    new conns %s\n"
               "                        keep-alive %s\n"
               "      TCP resets without restarts: %s\n"
               "      TCP resets with restarts: %s"
               % (label, n, self.took, ", ".join("%.1f" % t for t in self.each),
                  bf, bk, rf, rk, bres, rres))
        # Each restart: the configuration test (httpd -t) from the signal
        # to "SIGUSR1 received", then the parent's own reading to its
        # "resuming" line.  Both read the same files at the same priority,
        # so the tests take about what the readings take, however loaded
        # the machine, plus starting a process (0.13-0.17 s each under 2
        # CPU hogs with a small configuration); a test starved behind the
        # busy children (it ran niced: 10-20 s each, 3 of 6 runs under 2
        # CPU hogs) or a wait before it is many times more.  A reading
        # (0.1 s of CPU with the slow configuration) is held to 4 * EVERY:
        # under 2 CPU hogs a whole restart took 0.3-7.5 s, both halves.
        # The restart bench measures their cost.
        phases = self._restart_phases(h)
        if phases:
            tested, read = phases
            msg += ("\n      configuration tests %.1f s, readings %.1f s (longest %.1f s)"
                    % (sum(tested), sum(read), max(read)))
        print("\n    " + msg, end=" ")
        self.assertEqual(n, 10, msg)
        self.assertIsNotNone(phases, "a signal without its two lines\n" + h.log()[-3000:])
        # Both clocks agree (a time zone that differs would show here).
        self.assertGreaterEqual(min(tested + read), -0.01, msg)
        if not SANITIZED:
            # (Timing is not checked with the sanitizer runtimes loaded.)
            self.assertLessEqual(sum(tested), 3 * sum(read) + 0.5 * n, msg)
            self.assertLessEqual(max(read), 4 * EVERY, msg)
        for r in (rf, rk):
            self.assertGreater(r.requests, 1000, msg)
            self.assertEqual(r.failures, 0, msg)
        # No connection reset once established, none aborted (client and
        # server share this namespace: either end counts).  TcpOutRsts,
        # printed, also counts RSTs that reset no accepted connection
        # (traced: refused SYNs, a client in SYN_SENT answering a stale ACK).
        self.assertEqual(sum(v for k, v in rres.items() if k != "TcpOutRsts"), 0, msg)
        # p99 with and without restarts is printed, not asserted: on 2
        # noisy cores the machine's other load can rise between the two
        # measurements (keep-alive p99 33 ms before, 166 ms during once).
        # The restart bench records it (docs/PERFORMANCE.md, graceful
        # restarts under load: p99 ratio 1.36-1.92).

    @reuseport_only
    def test_ten_restarts_in_20s_under_load(self):
        h = self.httpd(conf(2, slow_read=True),
                       files={"file.bin": os.urandom(1024)})
        h.wait_children(2)
        self.wait_workers(h, 64)
        base = self._load(h, self._idle(7))
        during = self._load(h, self._restarts(h, 10, EVERY))
        self._check(h, "same buckets, 0.1 s to read the configuration", base,
                    during)
        self.assertIn("accepting in every bucket", h.log())

    @reuseport_only
    def test_ten_restarts_changing_bucket_count_under_load(self):
        h = self.httpd(conf(2), files={"file.bin": os.urandom(1024)})
        h.wait_children(2)
        self.wait_workers(h, 64)
        base = self._load(h, self._idle(7))
        during = self._load(h, self._restarts(h, 10, EVERY,
                                              bucket_cycle=(3, 2, 1, 2)))
        # Part of the cycle has 1 bucket, hence 1 child for all new
        # connections, which the 2-bucket load without restarts does not:
        # its printed p99 is up to 3x (43.0 ms against 15.6 once, loaded).
        self._check(h, "bucket count 2->3->2->1->2...", base, during)

    @reuseport_only
    def test_a_bucket_removed_and_added_back_while_an_old_child_holds_it(self):
        """2 buckets, then 1, then 2 again, while the first generation's
        child of bucket 1 cannot stop (stopped here; slow under load): the
        new bucket 1 must get connections, not the old socket that child
        still holds.  The kernel's SO_REUSEPORT group keeps sockets in the
        order they were opened, and the steering program picks the first
        n: a new socket after the old one left the old one in place (half
        the new connections waited there, reset when it closed: 4 resets
        once in the ten restarts below under 2 CPU hogs)."""
        h = self.httpd(conf(2), files={"index.html": "here\n"})
        h.wait_children(2)
        self.wait_workers(h, 64)
        st = h.status()
        held = [int(v.split()[1]) for k, v in st.items()
                if k.startswith("ReusePortChild") and v.split()[3] == "1"]
        self.assertEqual(len(held), 1, st)
        os.kill(held[0], signal.SIGSTOP)
        try:
            for buckets in (1, 2):
                h.directives = conf(buckets)
                h.write_config()
                h.graceful()
                # At least: with 1 bucket MinSpareThreads 32 may add a child.
                self.wait_until(lambda: started_count(h.status()) >= 32 * buckets, 20,
                                "the workers of %d bucket(s)" % buckets)
            results, took = parallel_gets(h.host, h.port, 40, "/index.html", timeout=5)
            # Bucket 1's socket again, not another one beside it.
            socks = listeners(h.port)
        finally:
            os.kill(held[0], signal.SIGCONT)
        self.assertEqual(len(socks), 2, "\n".join(l["line"] for l in socks))
        bad = [r[1] for r in results if not r[0]]
        self.assertEqual(len(bad), 0, "%d of 40 new connections failed in %.1f s: %s"
                         % (len(bad), took, sorted(set(bad))))
        self.wait_gone([held[0]], 20, "the first generation's child")
        results, _ = parallel_gets(h.host, h.port, 40, "/index.html", timeout=5)
        self.assertEqual(sorted(set(r[1] for r in results if not r[0])), [],
                         "after the old child left")
        # A removed bucket's socket closes once no child listens on it.
        h.directives = conf(1)
        h.write_config()
        h.graceful()
        self.wait_until(lambda: len(listeners(h.port)) == 1, 10,
                        "bucket 1's socket closed after the restart to 1 bucket")

    @reuseport_only
    def test_bad_configuration_keeps_generation_serving(self):
        h = self.httpd(conf(1), files={"index.html": "still here\n"})
        h.wait_children(1)
        children = sorted(h.children())
        h.directives = conf(1) + "ThisIsNotADirective on\n"
        h.write_config()
        # Straight to the parent: `apache2 -k graceful` would test the
        # file itself and not send the signal.
        os.kill(h.pid, signal.SIGUSR1)
        # The test's output follows the refusal line by line.
        self.assertTrue(wait_for_log(h, "ThisIsNotADirective", 20), "restart refused: " + h.log())
        self.assertIn("restart refused", h.log())
        time.sleep(0.5)     # nothing must happen: give a wrong restart time
        self.assertLessEqual(set(children), set(h.children()))
        self.assertEqual(h.generation_count(), 1)
        from mpmng_py.integration.common import http_get
        self.assertEqual(http_get(h.host, h.port, "/index.html").body,
                         b"still here\n")
        # Fixed: the next restart goes ahead.
        h.directives = conf(1)
        h.write_config()
        h.graceful()
        self.wait_until(lambda: not set(h.children()) & set(children), 10,
                        "a new generation")
        self.assertEqual(http_get(h.host, h.port, "/index.html").body,
                         b"still here\n")

    @reuseport_only
    def test_graceful_stop_under_load_resets_nothing(self):
        """SIGWINCH under new-connection load: once the listeners close new
        connections are refused, but none that the kernel accepted before
        may be reset or left unanswered."""
        h = self.httpd(conf(2) + "LogLevel warn mpm_reuseport:info\n",
                       files={"file.bin": os.urandom(1024)})
        h.wait_children(2)
        self.wait_workers(h, 64)
        url = h.url("/file.bin")
        fresh = Wrk(url, 4, 16, close=True).start()
        keep = Wrk(url, 4, 16).start()
        try:
            time.sleep(1.5)
            procs = h.processes()
            before = tcp_counters()
            h.send_signal(signal.SIGWINCH)
            leftover = h.wait_exit(procs, 15)
            resets = reset_delta(before, tcp_counters())
        finally:
            r_fresh, r_keep = fresh.result(), keep.result()
        msg = ("new conns %s\nkeep-alive %s\nTCP resets %s"
               % (r_fresh, r_keep, resets))
        print("\n    " + msg.replace("\n", "\n    "), end=" ")
        self.assertEqual(leftover, [], msg)
        # Before the children's last accepts the parent has the kernel
        # refuse new connections (rp_refuse.c): their closes reset none.
        # Without it, a connection completed between a child's last accept
        # and its close was reset (12-64 in 4 of 80 stops).
        for r in (r_fresh, r_keep):
            # The stop came under load (600-9,000 requests before it, beside
            # two busy loops or not).
            self.assertGreater(r.requests, 100, msg)
            # wrk counts a refused connect (nobody listens any more) as a
            # write error; a read error is an answer that never came.
            errs = re.search(r"read (\d+), write \d+, timeout (\d+)", r.output)
            if errs:
                self.assertEqual(int(errs.group(1)), 0, msg)
                self.assertEqual(int(errs.group(2)), 0, msg)
        # Connections reset after the handshake (either side).
        self.assertEqual(resets["TcpEstabResets"], 0, msg)
        self.assertIn("new connections are refused from now on", h.log(), msg)


class FullRestart(HttpdTestCase):
    @reuseport_only
    def test_full_restarts_leave_queued_connections_to_the_next_generation(self):
        """SIGHUP (`apachectl -k restart`) replaces every child within
        RP_BRIEF_GRACE (250 ms); connections still in the listeners'
        queues wait there for the next generation, and a request already on
        its way on a kept-alive connection is answered (Connection: close)
        rather than reset.  mpm_reuseport's children used to take the whole
        queue on the way out and cut it too (147-150 failed requests for 3
        restarts at 50 new connections), and then cut every kept-alive
        connection with its request (44-47 for 3 restarts at 16, where
        mpm_event fails 19-34 in the same run; Debian's mpm_event run here
        with this suite's modules also logs segfaults of its stopping
        children: reuseport only)."""
        h = self.httpd(conf(2), files={"file.bin": os.urandom(500)})
        h.wait_children(2)
        self.wait_workers(h, 64)
        fresh = Wrk(h.url("/file.bin"), 11, 50, close=True).start()
        keep = Wrk(h.url("/file.bin"), 11, 16).start()
        try:
            time.sleep(2)
            for _ in range(3):
                before = h.generation_count()
                h.send_signal(signal.SIGHUP)
                self.wait_until(lambda: h.generation_count() > before, 20,
                                "the next generation")
                time.sleep(2)
        finally:
            res, kres = fresh.result(), keep.result()
        said = sum(int(n) for n in re.findall(
            r"full restart or stop: (\d+) connection\(s\) not done", h.log()))
        msg = ("3 full restarts under 50 new connections at a time: %s; under 16 "
               "kept-alive ones: %s; connections the children logged as cut: %d"
               % (res, kres, said))
        print("\n    " + msg, end=" ")
        self.assertGreater(res.requests, 1000, msg)
        self.assertGreater(kres.requests, 1000, msg)
        # None but those the children say they cut: a request not done
        # within the grace is cut, as stock MPMs cut it at once (none of
        # these needs 250 ms, but a child starved of CPU may: 1 of 42,379
        # once in a clean-clone check with builds beside it).  A connection
        # cut for being queued would add 50 each, a kept-alive one cut with
        # its request 16 each, unsaid.
        self.assertLessEqual(res.failures + kres.failures, said, msg)

    @reuseport_only
    def test_a_full_restart_cuts_a_long_request_and_answers_one_on_its_way(self):
        """Stock meaning kept: a full restart does not wait for a request in
        progress (a CGI answering after 20 s is cut within 3 s), while
        a request sent 30 ms after SIGHUP on a kept-alive connection (the
        old child alive, stopping) gets a whole answer that closes the
        connection; the next generation serves."""
        h = self.httpd(conf(1), cgi={"slow.py": CGI_SLOW},
                       files={"index.html": "fresh\n"})
        self.wait_workers(h, 32)
        slow = connect(h.host, h.port)
        slow.sendall(request_bytes("GET", "/cgi-bin/slow.py?20", h.host))
        slow_rd = ResponseReader(slow)
        slow_rd.wait_for(b"begin")
        idle = []
        for _ in range(3):
            s = connect(h.host, h.port)
            s.sendall(request_bytes("GET", "/index.html", h.host))
            rd = ResponseReader(s)
            self.assertEqual(rd.read_response().status, 200)
            idle.append((s, rd))
        before = h.generation_count()
        t0 = time.monotonic()
        h.send_signal(signal.SIGHUP)
        time.sleep(0.03)    # the scenario: a request 30 ms into the restart
        # All three sent before any is read: one round trip after another
        # could take a starved test past the grace.
        for s, _ in idle:
            s.sendall(request_bytes("GET", "/index.html", h.host))
        answers = []
        for s, rd in idle:
            try:
                r = rd.read_response()
                answers.append((r.status, r.body, r.header("connection")))
            except (EOFError, ConnectionError) as e:
                answers.append(repr(e))
            s.close()
        cut = slow_rd.wait_close(5)
        cut_after = time.monotonic() - t0
        slow.close()
        self.wait_until(lambda: h.generation_count() > before, 20, "the next generation")
        r = http_get(h.host, h.port, "/index.html")
        self.assertEqual([a[:2] if isinstance(a, tuple) else a for a in answers],
                         [(200, b"fresh\n")] * 3,
                         "requests sent 30 ms after SIGHUP on kept-alive connections")
        self.assertIsNotNone(cut, "the 20 s CGI request was not cut within 5 s")
        self.assertNotIn(b"end", slow_rd.buf, "the CGI request was answered, not cut")
        # Within RP_BRIEF_GRACE (250 ms) and the parent's SIGTERM; 3 s
        # allows a loaded machine, far from the CGI's 20 s.
        self.assertLess(cut_after, 3, "the CGI request was cut %.2f s after SIGHUP"
                        % cut_after)
        self.assertEqual((r.status, r.body), (200, b"fresh\n"))
        # Said in the log: the CGI's connection, maybe a kept-alive one.
        self.assertRegex(h.log(), r"full restart or stop: \d+ connection\(s\) not done "
                         r"within 250 ms are cut")


class BusyHttp2(HttpdTestCase):
    @needs_modules("http2")
    def test_busy_http2_connections_do_not_keep_the_old_children(self):
        """A graceful restart tells HTTP/2 connections to go (GOAWAY: the
        child says STOPPING, as mpm_event's do): clients that keep 4 streams
        open at all times lose none (but for mod_http2's faults, common.py
        H2_RACE_LOST) and the old children leave within seconds.  Before,
        such a connection kept its old child until GracefulShutdownTimeout
        (none by default: for ever)."""
        size = 16385
        h = self.httpd(conf(2) + "Protocols h2c http/1.1\n" + h2c_file_directives(),
                       modules=("http2",),
                       files={"f.bin": os.urandom(size)})
        h.wait_children(2)
        self.wait_workers(h, 64)
        clients = H2Clients(h.host, h.port, "/f.bin", size).start()
        try:
            time.sleep(1)       # the clients' streams under way
            # The children now: one that ended since the start (a child
            # added for a bucket and given back) would leave those that
            # hold the connections unwatched (2 connections once).
            old_kids = set(h.children())
            before = h.generation_count()
            h.send_signal(signal.SIGUSR1)
            self.wait_until(lambda: h.generation_count() > before, 20, "the next generation")
            self.wait_gone(old_kids, 10, "the old children")
        finally:
            clients.stop()
        msg = clients.summary()
        print("\n    " + msg, end=" ")
        self.assertLessEqual(len(clients.lost()), 2 * H2_RACE_LOST, msg)    # 2 clients
        self.assertEqual(clients.errors, [], msg)
        self.assertGreaterEqual(len(clients.conns), 3, msg)
