"""mod_fhcache: hits skip open/stat, invalidation on every change kind,
responses identical with the cache on and off, permissions still decide.

Every case runs under each MPM of fhcache_mpms.MPMS (mpm_reuseport, event,
worker, prefork; MPMNG_FHCACHE_MPMS narrows it): one class per MPM below.
The cache is per child, so most cases run one child and read its counters
from server-status?auto; those about several caches at once run two."""
import os
import shutil
import signal
import sys
import subprocess
import time
import unittest
from email.utils import parsedate_to_datetime

from mpmng_py import netcounters, privhttpd
from mpmng_py.integration.common import (HttpdTestCase, all_threads_stopped, http_get, connect,
                                         request_bytes, ResponseReader, Wrk)
from mpmng_py.integration.fhcache_mpms import FHCACHE_SO as SO, MPMS, one_child, two_children


class FHCacheCases:
    """The cases; a subclass per MPM below sets MPM."""
    MPM = None

    def directives(self, extra="", enable="FHCache On\n", children=1):
        sizing = one_child(self.MPM) if children == 1 else two_children(self.MPM)
        return ("LoadModule fhcache_module %s\n" % SO) + sizing + enable + extra

    def start(self, extra="", enable="FHCache On\n", files=None, children=1, **kw):
        h = self.httpd(self.directives(extra, enable, children), mpm=self.MPM,
                       files=files, **kw)
        self.wait_until(lambda: len(h.children()) == children, 10,
                        "%d child(ren)" % children)
        return h

    def get(self, h, path, headers=(), method="GET"):
        return http_get(h.host, h.port, path, method=method, headers=headers)

    def stats(self, h):
        st = h.status()
        return {k[len("FHCache"):]: v for k, v in st.items() if k.startswith("FHCache")}

    def hits(self, h):
        return int(self.stats(h)["Hits"])

    # ---- basics -----------------------------------------------------------
    def test_hit_after_first_request(self):
        h = self.start(files={"a.html": "hello\n"})
        self.assertEqual(self.get(h, "/a.html").body, b"hello\n")
        before = self.hits(h)
        for _ in range(5):
            r = self.get(h, "/a.html")
            self.assertEqual((r.status, r.body), (200, b"hello\n"))
        self.assertGreaterEqual(self.hits(h) - before, 5)
        st = self.stats(h)
        self.assertEqual(st["Mode"], "inotify")
        self.assertEqual(st["Entries"], "1")
        self.assertGreater(int(st["Watches"]), 0)

    def test_off_scope_not_served(self):
        h = self.start(enable="<Directory /nowhere>\nFHCache On\n</Directory>\n",
                       files={"a.html": "x"})
        for _ in range(3):
            self.assertEqual(self.get(h, "/a.html").body, b"x")
        self.assertEqual(self.stats(h)["Entries"], "0")

    # ---- identical responses ---------------------------------------------
    def _responses(self, h, path, lm):
        out = []
        reqs = [("GET", ()), ("HEAD", ()),
                ("GET", (("Range", "bytes=0-9"),)),
                ("GET", (("Range", "bytes=5-9,20-29,-3"),)),
                ("GET", (("If-Modified-Since", lm),)),
                ("GET", (("If-None-Match", '"nope"'),)),
                ("GET", (("Range", "bytes=99999-"),)),
                ("GET", (("Accept-Encoding", "gzip"),))]
        for method, hdrs in reqs:
            r = self.get(h, path, headers=hdrs, method=method)
            heads = sorted((k, v) for k, v in r.headers.items() if k != "date")
            if "multipart" in r.header("content-type", ""):
                # The boundary is random per response: compare structure.
                b = r.header("content-type").split("boundary=")[1]
                body = r.body.replace(b.encode(), b"BOUNDARY")
                # Its length varies too, and with it Content-Length.
                heads = [(k, v.replace(b, "BOUNDARY")) for k, v in heads
                         if k != "content-length"]
            else:
                body = r.body
            out.append((method, hdrs, r.status, heads, body))
        return out

    def test_identical_sendfile_mmap_variants(self):
        """Cache on vs off, same docroot, for EnableSendfile/EnableMMAP
        combinations and with mod_deflate (the cache flushes small bodies
        only where no filter transforms them: Content-Length stays);
        small (memory) and large (descriptor) files."""
        src = self.start(files={"small.txt": "0123456789" * 100,
                                "big.bin": bytes(range(256)) * 400})
        docroot = src.docroot
        src.stop()
        # httpd makes the ETag weak for files modified within the last
        # second; keep timing out of the comparison.
        for name in os.listdir(docroot):
            os.utime(os.path.join(docroot, name), (time.time() - 100,) * 2)
        for variant in ("EnableSendfile On\n", "EnableSendfile Off\n",
                        "EnableMMAP Off\nEnableSendfile Off\n",
                        "EnableMMAP Off\nEnableSendfile On\n",
                        "AddOutputFilterByType DEFLATE text/plain\n"):
            got = {}
            for enable in ("FHCache On\n", "FHCache Off\n"):
                h = self.start(enable=enable, extra=variant, docroot=docroot,
                               modules=("deflate", "filter") if "DEFLATE" in variant else ())
                got[enable] = []
                for name in ("small.txt", "big.bin"):
                    lm = self.get(h, "/" + name).header("last-modified")
                    got[enable] += self._responses(h, "/" + name, lm)
                    got[enable] += self._responses(h, "/" + name, lm)
                if enable == "FHCache On\n":
                    self.assertGreater(self.hits(h), 20, variant)
                h.stop()
            self.assertEqual(got["FHCache On\n"], got["FHCache Off\n"], variant)

    def test_identical_including_etag_same_docroot(self):
        # One docroot, two servers one after the other: ETag/Last-Modified
        # must match byte for byte too.
        src = self.start(files={"f.css": "body{}\n" * 300, "t.txt": "t" * 40})
        docroot = src.docroot
        src.stop()
        # httpd makes the ETag weak for files modified within the last
        # second; keep timing out of the comparison.
        for name in os.listdir(docroot):
            os.utime(os.path.join(docroot, name), (time.time() - 100,) * 2)
        got = {}
        for enable in ("FHCache On\n", "FHCache Off\n"):
            h = self.start(enable=enable, docroot=docroot)
            got[enable] = []
            for name in ("f.css", "t.txt"):
                lm = self.get(h, "/" + name).header("last-modified")
                got[enable] += self._responses(h, "/" + name, lm)
                got[enable] += self._responses(h, "/" + name, lm)
            h.stop()
        self.assertEqual(got["FHCache On\n"], got["FHCache Off\n"])

    def _validators(self, servers, paths):
        """{server: [(path, ETag, Last-Modified, Content-Length)]}"""
        out = {}
        for name, h in servers.items():
            out[name] = []
            for path in paths:
                r = self.get(h, path)
                self.assertEqual(r.status, 200, path)
                out[name].append((path, r.header("etag"), r.header("last-modified"),
                                  r.header("content-length")))
        return out

    def test_stored_headers_only_where_httpd_agrees(self):
        """The cache makes Last-Modified, ETag and Content-Length once per
        file version; a response must still carry httpd's own values where
        they differ: a file changed within the last second (weak ETag),
        another FileETag setting for the same file (here by an Alias), a
        modification time in the future (Last-Modified is the request
        time).  Compared with a server without the cache on the same files,
        side by side."""
        first = self.start(files={"f.txt": "f" * 50, "g.bin": b"g" * 20000})
        docroot = first.docroot
        alias = ("Alias /alt %s\n<Location /alt>\nFileETag INode MTime Size\n"
                 "</Location>\n" % docroot)
        first.stop()
        servers = {enable: self.start(enable=enable, extra=alias, docroot=docroot)
                   for enable in ("FHCache On\n", "FHCache Off\n")}
        paths = ["/f.txt", "/alt/f.txt", "/g.bin", "/alt/g.bin"]

        def compare(order):
            got = self._validators(servers, order)
            self.assertEqual(got["FHCache On\n"], got["FHCache Off\n"])
            return got["FHCache On\n"]

        # Changed just now: weak ETags while the first second lasts.
        for name in ("f.txt", "g.bin"):
            os.utime(os.path.join(docroot, name))
        fresh = compare(paths)
        self.assertTrue(all(v[1].startswith("W/") for v in fresh), fresh)
        # Strong a second later, each scope with its own FileETag setting.
        cached = servers["FHCache On\n"]
        self.wait_until(lambda: not self.get(cached, "/f.txt").header("etag").startswith("W/"),
                        5, "a strong ETag")
        strong = compare(paths) + compare(paths[::-1])
        self.assertEqual(len({v[1] for v in strong if v[0].endswith("f.txt")}), 2, strong)
        # In the future: Last-Modified is capped at the request's time.
        ahead = time.time() + 3600
        os.utime(os.path.join(docroot, "f.txt"), (ahead, ahead))
        self.wait_until(lambda: self.get(cached, "/f.txt").header("etag") != strong[0][1],
                        5, "the new mtime to be seen")
        for h in servers.values():
            r = self.get(h, "/f.txt")
            # httpd takes the clock again for a future mtime (Date is the
            # request's time): a second may pass between the two.
            lm, date = (parsedate_to_datetime(r.header(k)).timestamp()
                        for k in ("last-modified", "date"))
            self.assertTrue(0 <= lm - date <= 1, (r.header("last-modified"), r.header("date")))
        self.assertGreater(self.hits(cached), 10)

    # ---- syscalls -----------------------------------------------------------
    @unittest.skipUnless(shutil.which("strace"), "strace not installed")
    def test_hit_skips_open_and_stat(self):
        """Hits make no open, stat or close of their file: a small file kept
        in memory and a 64 KiB one served from the cached descriptor (by
        mmap, and by sendfile).  A control file outside the cache, asked for
        on the same connection before and after the hits, must show its open
        in the trace: strace was attached and recording all along."""
        files = {"s.html": b"x" * 500, "big.bin": bytes(range(256)) * 256,
                 "nocache/c.txt": b"control\n"}
        for sendfile in ("Off", "On"):
            with self.subTest(EnableSendfile=sendfile):
                h = self.start(files=files, extra="EnableSendfile %s\n<Location /nocache>\n"
                               "FHCache Off\n</Location>\n" % sendfile)
                self._hits_skip_open_and_stat(h, files)
                h.stop()

    def _hits_skip_open_and_stat(self, h, files):
        cached = [p for p in files if not p.startswith("nocache/")]
        for name in cached:
            self.get(h, "/" + name)
        child = h.children()[0]
        log = os.path.join(h.dir, "strace.txt")
        # -f: every thread of the child (it is attached by its pid).
        tr = subprocess.Popen(["strace", "-f", "-qq", "-y", "-e",
                               "trace=openat,open,stat,newfstatat,statx,lstat,fstat,close",
                               "-o", log, "-p", str(child)])
        self.addCleanup(tr.kill)
        # Read before and after the connection: one prefork child serves
        # nothing else while it is open.
        before = self.hits(h)
        s = connect(h.host, h.port)
        reader = ResponseReader(s)

        def fetch(name):
            s.sendall(request_bytes("GET", "/" + name))
            self.assertEqual(reader.read_response().body, files[name])

        def control_opens():
            with open(log) as f:
                return sum(1 for l in f if "openat(" in l and "nocache/c.txt" in l)

        def control_seen(n):
            fetch("nocache/c.txt")
            return control_opens() >= n

        self.wait_until(lambda: os.path.exists(log) and control_seen(1), 10,
                        "strace to record the control request's open")
        for _ in range(20):
            for name in cached:
                fetch(name)
        seen = control_opens()
        self.wait_until(lambda: control_seen(seen + 1), 10,
                        "strace to record a control request after the hits")
        s.close()
        tr.terminate()
        tr.wait(10)
        with open(log) as f:
            calls = [l for l in f if any(name in l for name in cached)]
        self.assertEqual(calls, [], "file syscalls on hits:\n" + "".join(calls))
        self.assertGreaterEqual(self.hits(h) - before, 20 * len(cached))

    # ---- invalidation -------------------------------------------------------
    def _warm(self, h, path, expect):
        for _ in range(2):
            self.assertEqual(self.get(h, path).body, expect)

    def _after_change(self, h, path):
        # No grace: a lookup applies the queued notifications first.
        return self.get(h, path)

    def test_inplace_write_truncate_append(self):
        h = self.start(files={"f.txt": "one\n"})
        p = os.path.join(h.docroot, "f.txt")
        self._warm(h, "/f.txt", b"one\n")
        with open(p, "r+b") as f:
            f.write(b"ONE\n")
        self.assertEqual(self._after_change(h, "/f.txt").body, b"ONE\n")
        with open(p, "ab") as f:
            f.write(b"two\n")
        self.assertEqual(self._after_change(h, "/f.txt").body, b"ONE\ntwo\n")
        os.truncate(p, 2)
        self.assertEqual(self._after_change(h, "/f.txt").body, b"ON")
        self.assertGreaterEqual(int(self.stats(h)["Invalidations"]), 3)

    def test_rename_over_and_delete(self):
        h = self.start(files={"f.txt": "old\n"})
        p = os.path.join(h.docroot, "f.txt")
        self._warm(h, "/f.txt", b"old\n")
        tmp = p + ".tmp"
        with open(tmp, "wb") as f:
            f.write(b"new!\n")
        os.chmod(tmp, 0o644)
        os.rename(tmp, p)
        self.assertEqual(self._after_change(h, "/f.txt").body, b"new!\n")
        os.unlink(p)
        self.assertEqual(self._after_change(h, "/f.txt").status, 404)

    def test_chmod_000_not_served(self):
        h = self.start(files={"secret.txt": "s\n"})
        p = os.path.join(h.docroot, "secret.txt")
        self._warm(h, "/secret.txt", b"s\n")
        os.chmod(p, 0)
        self.assertEqual(self._after_change(h, "/secret.txt").status, 403)
        os.chmod(p, 0o644)
        self.assertEqual(self._after_change(h, "/secret.txt").body, b"s\n")

    def test_directory_rename_and_removal(self):
        h = self.start(files={"d/e/f.txt": "deep\n"})
        self._warm(h, "/d/e/f.txt", b"deep\n")
        os.rename(os.path.join(h.docroot, "d"), os.path.join(h.docroot, "d2"))
        self.assertEqual(self._after_change(h, "/d/e/f.txt").status, 404)
        self.assertEqual(self.get(h, "/d2/e/f.txt").body, b"deep\n")
        self._warm(h, "/d2/e/f.txt", b"deep\n")
        shutil.rmtree(os.path.join(h.docroot, "d2"))
        self.assertEqual(self._after_change(h, "/d2/e/f.txt").status, 404)

    def _parent_chmod_forbids(self, h, path, body):
        """path under /p/, cached, is refused once p/ loses its search bit."""
        self._warm(h, path, body)
        os.chmod(os.path.join(h.docroot, "p"), 0o700)   # www-data: no search
        try:
            self.assertEqual(self._after_change(h, path).status, 403)
        finally:
            os.chmod(os.path.join(h.docroot, "p"), 0o755)

    def test_parent_directory_chmod(self):
        h = self.start(files={"p/q/f.txt": "x\n"})
        self._parent_chmod_forbids(h, "/p/q/f.txt", b"x\n")

    def test_symlink_retarget(self):
        h = self.start(files={"v1/f.txt": "v1\n", "v2/f.txt": "v2\n"},
                       extra="<Directory />\nOptions FollowSymLinks\n</Directory>\n")
        cur = os.path.join(h.docroot, "cur")
        os.symlink("v1", cur)
        self._warm(h, "/cur/f.txt", b"v1\n")
        tmp = cur + ".new"
        os.symlink("v2", tmp)
        os.rename(tmp, cur)      # atomic symlink swap
        self.assertEqual(self._after_change(h, "/cur/f.txt").body, b"v2\n")

    def test_forbidden_symlink_not_served(self):
        # Options without FollowSymLinks: a path that becomes a symlink must
        # be refused even though its target was cached.
        h = self.start(files={"real/f.txt": "r\n"},
                       extra="<Directory %s>\nOptions None\n</Directory>\n"
                       % "/tmp")
        self.assertEqual(self.get(h, "/real/f.txt").body, b"r\n")
        self._warm(h, "/real/f.txt", b"r\n")
        os.symlink("real", os.path.join(h.docroot, "link"))
        self.assertEqual(self.get(h, "/link/f.txt").status, 403)
        self.assertEqual(self.get(h, "/link/f.txt").status, 403)

    def test_atomic_deploy_under_load(self):
        """Writer renames new versions over the file while clients fetch it:
        no response mixes versions, and none sent after the rename
        returned is stale."""
        import threading
        size = 64 * 1024      # descriptor-served
        # Two children: two caches, each must drop the old version.
        h = self.start(files={"app.js": b"A" * size}, children=2)
        p = os.path.join(h.docroot, "app.js")
        self._warm(h, "/app.js", b"A" * size)
        stop = time.monotonic() + 4
        errors, answers, samples = [], [], []
        # Every version whose rename has returned, in order.
        versions = [b"A"]

        def reader():
            while time.monotonic() < stop:
                # Fresh request per connection (keep-alive ends after
                # MaxKeepAliveRequests anyway).
                first = len(versions) - 1
                r = self.get(h, "/app.js")
                samples.append(r.status)
                if len(set(r.body)) != 1 or len(r.body) != size:
                    errors.append(r.body[:20])
                else:
                    answers.append((first, bytes([r.body[0]])))

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        n = 0
        while time.monotonic() < stop - 0.5:
            n += 1
            v = bytes([ord("A") + n % 26])
            tmp = p + ".tmp"
            with open(tmp, "wb") as f:
                f.write(v * size)
            os.chmod(tmp, 0o644)
            os.rename(tmp, p)
            versions.append(v)
            time.sleep(0.05)
        for t in threads:
            t.join(30)
        self.assertEqual(errors, [], "mixed or short bodies")
        # Judged once every rename is listed: an answer may be newer than
        # the list was when it asked.  25 later versions: letters repeat
        # after 26, so an older one cannot pass for one of them.
        stale = [(v, versions[first]) for first, v in answers
                 if v not in versions[first:first + 25]]
        self.assertEqual(stale, [], "answers older than the version renamed in before asking")
        self.assertGreater(n, 20)
        self.assertGreater(len(samples), 200)
        self.assertEqual(set(samples), {200})

    def test_overflow_drops_everything(self):
        """Changes the child never hears of (its inotify queue overflowed
        while it was stopped) must not leave stale files in the cache."""
        h = self.start(files={"f.txt": "v1\n", "a": "", "b": ""})
        self._warm(h, "/f.txt", b"v1\n")
        with open("/proc/sys/fs/inotify/max_queued_events") as f:
            queue = int(f.read())
        child = h.children()[0]
        d = h.docroot
        flushes = int(self.stats(h)["Flushes"])
        os.kill(child, signal.SIGSTOP)
        try:
            # kill() returns before the child has stopped: a watcher thread
            # still running reads events meanwhile, and a queue that never
            # fills never overflows (seen: all 16,490 events delivered).
            self.wait_until(lambda: all_threads_stopped(child), 10, "the child to stop")
            # Alternate names: the kernel merges identical consecutive
            # events, so each of these takes a queue slot.
            for i in range(queue + 1000):
                os.utime(os.path.join(d, "ab"[i % 2]))
            # Same size, so only the lost event can tell the cache.
            with open(os.path.join(d, "f.txt"), "r+b") as f:
                f.write(b"v2\n")
        finally:
            os.kill(child, signal.SIGCONT)
        self.wait_until(lambda: int(self.stats(h)["Flushes"]) > flushes, 10,
                        "the overflow to be handled")
        self.assertEqual(self.get(h, "/f.txt").body, b"v2\n")
        st = self.stats(h)
        self.assertGreaterEqual(int(st["Overflows"]), 1)
        # Logged once, after the flush it counted (outside the lock).
        self.wait_until(lambda: "notifications were lost" in h.log(), 5, "the overflow's line")
        self.assertEqual(h.log().count("notifications were lost"), 1)

    def test_status_counts_polling_children_from_start(self):
        """A child that revalidates by stat (here: FHCacheNotify poll; in
        practice prefork children beyond fs.inotify.max_user_instances)
        is counted in FHCacheChildrenPolling before it served anything."""
        h = self.start(extra="FHCacheNotify poll\n", children=2)

        def both_counted():
            # A process may exist before its child_init ran.
            st = self.stats(h)
            return st if st["Children"] == "2" else None

        st = self.wait_until(both_counted, 10, "both children in the totals")
        self.assertEqual(st["ChildrenPolling"], "2")

    def test_status_totals_over_children(self):
        """server-status sums every child's counters, and keeps those of
        children that exited (MaxConnectionsPerChild)."""
        h = self.start(extra="MaxConnectionsPerChild 40\n", children=2,
                       files={"t.txt": "t\n"})
        n = 150
        for _ in range(n):
            self.assertEqual(self.get(h, "/t.txt").body, b"t\n")
        def total_of(st):
            return int(st["TotalHits"]) + int(st["TotalMisses"])
        # Children publish about once a second.
        self.wait_until(lambda: total_of(self.stats(h)) >= n, 10,
                        "the totals to include %d requests" % n)
        st = self.stats(h)
        total = total_of(st)
        own = int(st["Hits"]) + int(st["Misses"])
        # Status requests walk the filesystem too (a miss each).
        self.assertGreaterEqual(total, n)
        self.assertLess(total, n + 30)
        self.assertLess(own, total)
        self.assertGreaterEqual(int(st["ChildrenExited"]), 1)
        self.assertGreaterEqual(int(st["Children"]), 1)
        self.assertLessEqual(int(st["Children"]), 2)
        self.assertLessEqual(int(st["TotalEntries"]), int(st["Children"]))

    def test_notification_delay(self):
        """A request sent after a writer's rename returned gets the new
        file, also with every worker busy (a lookup applies the queued
        notifications first): asked on a keep-alive connection at once
        after each of 40 renames, retrying to measure any delay."""
        h = self.start(files={"d.txt": "0" * 100, "busy.txt": "b" * 500})
        p = os.path.join(h.docroot, "d.txt")
        self._warm(h, "/d.txt", b"0" * 100)
        load = None
        if shutil.which("wrk"):
            # Every worker thread busy with other hits meanwhile.
            load = Wrk(h.url("/busy.txt"), 30, 16)
            load.start()
            self.addCleanup(load.kill)
            self.wait_until(lambda: netcounters.held([h.port]) > 0, 10,
                            "wrk's connections to be seen")
        conn = {}

        def fetch():
            # mpm_event closes keep-alive connections when its workers are
            # all busy: a closed idle connection is retried on a new one.
            for attempt in (0, 1):
                if not conn:
                    conn["s"] = connect(h.host, h.port)
                    conn["r"] = ResponseReader(conn["s"])
                try:
                    conn["s"].sendall(request_bytes("GET", "/d.txt"))
                    return conn["r"].read_response().body
                except (EOFError, ConnectionResetError, BrokenPipeError):
                    conn["s"].close()
                    conn.clear()
                    if attempt:
                        raise

        delays, stale = [], 0
        for n in range(1, 41):
            stale_here = 0
            v = str(n % 10).encode() * 100
            with open(p + ".tmp", "wb") as f:
                f.write(v)
            os.chmod(p + ".tmp", 0o644)
            os.rename(p + ".tmp", p)
            t0 = time.monotonic()
            while True:
                sent = time.monotonic()
                if fetch() == v:
                    delays.append(sent - t0 if stale_here else 0.0)
                    break
                stale += 1
                stale_here += 1
                self.assertLess(sent - t0, 5, "never fresh")
            # The cache must have taken the new file again.
            self.assertEqual(fetch(), v)
        if conn:
            conn["s"].close()
        if load:
            load.kill()
            # Stock mpm_event crashes now and then when SIGTERM finds
            # connections being closed (9 of 60 such stops without
            # mod_fhcache, 0 of 40 once they were gone): stop after that.
            self.wait_until(lambda: netcounters.held([h.port]) == 0, 10,
                            "wrk's connections to be closed by the server")
        delays.sort()
        # 0 means the first request sent after the rename was fresh.
        sys.stderr.write("[notification delay over %d renames: median %d us,"
                         " max %d us, %d stale answers] "
                         % (len(delays), delays[len(delays) // 2] * 1e6,
                            delays[-1] * 1e6, stale))
        self.assertEqual(stale, 0, "answers with the old file")
        self.assertGreater(int(self.stats(h)["Invalidations"]), 30)

    @unittest.skipUnless(shutil.which("openssl"), "openssl not installed")
    def test_filters_read_correct_bytes_under_concurrency(self):
        """mod_deflate, mod_ssl and mod_include read the cached file through
        the filter chain (no sendfile) from many threads at once: every
        body must be exactly the file (no shared file offsets)."""
        import gzip
        import hashlib
        import ssl
        import threading
        import http.client
        # Lines numbered so that bytes from the wrong offset show.
        big = "".join("line %06d of the big file\n" % i for i in range(12000))
        part = "".join("part %05d\n" % i for i in range(9000))
        page = ("<html>\n<!--#include virtual=\"/part.txt\" -->\nmiddle\n"
                "<!--#include virtual=\"/part.txt\" -->\n</html>\n")
        expect = {"/big.txt": big.encode(), "/part.txt": part.encode(),
                  "/page.shtml": page.replace(
                      '<!--#include virtual="/part.txt" -->', part).encode()}
        tls_port = privhttpd.free_port()
        h = self.httpd(self.directives(
            "EnableMMAP Off\nEnableSendfile Off\n"
            "AddOutputFilterByType DEFLATE text/plain\n"
            "AddType text/html .shtml\nAddOutputFilter INCLUDES .shtml\n"
            "<Directory \"%(root)s\">\nOptions +Includes\n</Directory>\n"
            "Listen 127.0.0.1:%(port)d https\n"
            "<VirtualHost 127.0.0.1:%(port)d>\nSSLEngine on\n"
            "SSLCertificateFile %(dir)s/tls.crt\n"
            "SSLCertificateKeyFile %(dir)s/tls.key\n</VirtualHost>\n", children=2),
            mpm=self.MPM, modules=("filter", "deflate", "include", "ssl", "socache_shmcb"),
            files={"big.txt": big, "part.txt": part, "page.shtml": page},
            start=False)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                        "-nodes", "-days", "1", "-subj", "/CN=localhost",
                        "-keyout", os.path.join(h.dir, "tls.key"),
                        "-out", os.path.join(h.dir, "tls.crt")],
                       check=True, capture_output=True)
        h.directives = h.directives % {"root": h.docroot, "port": tls_port,
                                       "dir": h.dir}
        h.start()
        self.wait_until(lambda: len(h.children()) == 2, 10, "two children")
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
        cases = [(False, "/big.txt", True), (True, "/big.txt", False),
                 (True, "/big.txt", True), (False, "/page.shtml", False),
                 (True, "/page.shtml", True), (False, "/part.txt", False)]
        bad, done = [], []

        def client(k):
            use_tls, path, gz = cases[k % len(cases)]
            if use_tls:
                conn = http.client.HTTPSConnection("127.0.0.1", tls_port,
                                                   context=tls, timeout=30)
            else:
                conn = http.client.HTTPConnection(h.host, h.port, timeout=30)
            hdrs = {"Accept-Encoding": "gzip"} if gz else {}
            def get():
                # A reused connection the server closed meanwhile (mpm_event
                # does that to idle ones when its workers are all busy): the
                # request is idempotent, retry it once on a new connection.
                for attempt in (0, 1):
                    try:
                        conn.request("GET", path, headers=hdrs)
                        resp = conn.getresponse()
                        return resp, resp.read()
                    except (http.client.RemoteDisconnected,
                            ConnectionResetError, BrokenPipeError):
                        conn.close()
                        if attempt:
                            raise

            try:
                for _ in range(12):
                    resp, body = get()
                    if resp.getheader("Content-Encoding") == "gzip":
                        body = gzip.decompress(body)
                    elif gz and path.endswith(".txt"):
                        bad.append((path, "not compressed"))
                    if body != expect[path]:
                        bad.append((use_tls, path, gz, len(body),
                                    hashlib.sha256(body).hexdigest()[:12]))
                    done.append(1)
            except Exception as e:
                bad.append((use_tls, path, gz, repr(e)))
            finally:
                conn.close()

        threads = [threading.Thread(target=client, args=(k,))
                   for k in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(bad, [])
        self.assertEqual(len(done), 24 * 12)
        self.wait_until(lambda: int(self.stats(h)["TotalHits"]) > 200, 10,
                        "more than 200 hits over both children")

    def test_poll_mode_revalidates(self):
        h = self.start(extra="FHCacheNotify poll\nFHCacheRevalidate 1\n",
                       files={"f.txt": "a\n"})
        self._warm(h, "/f.txt", b"a\n")
        self.assertEqual(self.stats(h)["Mode"], "poll")
        p = os.path.join(h.docroot, "f.txt")
        with open(p, "wb") as f:
            f.write(b"bb\n")
        time.sleep(1.2)
        self.assertEqual(self.get(h, "/f.txt").body, b"bb\n")

    def test_poll_mode_by_default_answers_every_change_at_once(self):
        """Without FHCacheRevalidate a file no notification watches is
        stat'ed on every request (FHCacheNotify poll here; in practice
        network filesystems, watch limits, prefork children beyond
        fs.inotify.max_user_instances): never stale, never served after its
        permissions forbid it.  The changes alter size, inode or mode: a
        same-size rewrite within one clock tick leaves the stat as it was."""
        h = self.start(extra="FHCacheNotify poll\n",
                       files={"f.txt": "a\n", "p/g.txt": "g\n"})
        self.assertEqual(self.stats(h)["Mode"], "poll")
        p = os.path.join(h.docroot, "f.txt")
        self._warm(h, "/f.txt", b"a\n")
        hits = self.hits(h)
        self._warm(h, "/f.txt", b"a\n")
        self.assertGreaterEqual(self.hits(h) - hits, 2, "still served from the cache")
        with open(p, "ab") as f:
            f.write(b"b\n")
        self.assertEqual(self.get(h, "/f.txt").body, b"a\nb\n")
        os.chmod(p, 0)
        self.assertEqual(self.get(h, "/f.txt").status, 403)
        os.chmod(p, 0o644)
        self.assertEqual(self.get(h, "/f.txt").body, b"a\nb\n")
        with open(p + ".tmp", "wb") as f:
            f.write(b"new\n")
        os.chmod(p + ".tmp", 0o644)
        os.rename(p + ".tmp", p)
        self.assertEqual(self.get(h, "/f.txt").body, b"new\n")
        os.unlink(p)
        self.assertEqual(self.get(h, "/f.txt").status, 404)
        self._parent_chmod_forbids(h, "/p/g.txt", b"g\n")

    def test_config_validation(self):
        for bad in ("FHCacheMaxEntries 0", "FHCacheMaxEntries lots",
                    "FHCacheMemoryFileMax 1T", "FHCacheNotify maybe",
                    "<VirtualHost 127.0.0.1:1>\nFHCacheMaxEntries 5\n</VirtualHost>"):
            h = self.httpd(self.directives(bad + "\n"), mpm=self.MPM, start=False)
            res = h.configtest()
            self.assertNotEqual(res.returncode, 0, bad)
            self.assertIn("FHCache", res.stderr + res.stdout, bad)
        h = self.httpd(self.directives("FHCacheMaxEntries 10\nFHCacheMemoryFileMax 4K\n"
                                       "FHCacheMaxDescriptors auto\n"), mpm=self.MPM,
                       start=False)
        self.assertEqual(h.configtest().returncode, 0)


# One test class per MPM, e.g. FHCache_event.test_symlink_retarget.
for _mpm in MPMS:
    globals()["FHCache_" + _mpm] = unittest.skipUnless(
        os.path.exists(SO), "out/mod_fhcache.so not built")(
        type("FHCache_" + _mpm, (FHCacheCases, HttpdTestCase), {"MPM": _mpm}))
del _mpm


if __name__ == "__main__":
    unittest.main()
