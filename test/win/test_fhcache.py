"""mod_fhcache on Windows (cross-built, under wine64) with mpm_winnt_ng and
stock mpm_winnt: one overlapped handle TransmitFile'd by many threads,
invalidation by ReadDirectoryChangesW, and deploys done by a Windows
process (test/win/tools/fsops.c) under the server's own wineserver, so
Windows sharing rules between the two apply."""
import os
import re
import threading
import time
import unittest

from mpmng_py.win.winhttpd import WINOUT, WinHttpd, available, winpath
from mpmng_py.win.wintest import WinTool, payload

MODULE = os.path.join(WINOUT, "fhcache", "mod_fhcache.so")
BIG = 1 << 20


def fhc_available(flavour):
    return available(flavour) and os.path.exists(MODULE)


def cache_conf(extra=""):
    return ('LoadModule fhcache_module "%s"\nFHCache On\n'
            'FHCacheRevalidate 2\n%s' % (winpath(MODULE), extra))


class Fsops(WinTool):
    """The Windows-side deploy tool, built once per class into dir."""

    def __init__(self, dir):
        super().__init__("fsops", dir)

    def run(self, *args):
        """(exit code, stderr) of fsops.exe args."""
        r = super().run(*args)
        return r.returncode, r.stderr


def fetch_all(h, path, clients, rounds):
    """`clients` threads, each `rounds` requests on fresh connections;
    returns the list of (status, body)."""
    out, lock = [], threading.Lock()

    def client():
        for _ in range(rounds):
            try:
                code, _, body = h.get(path, timeout=120)
            except OSError as e:
                code, body = repr(e), b""
            with lock:
                out.append((code, body))
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return out


def eventually(fn, want, timeout):
    """Polls fn() until it returns want; returns the last value."""
    deadline = time.time() + timeout
    got = fn()
    while got != want and time.time() < deadline:
        time.sleep(0.2)
        got = fn()
    return got


class CacheChecks:
    """Checks shared by the mpm_winnt_ng and stock mpm_winnt classes."""
    flavour = "ng"

    @classmethod
    def setUpClass(cls):
        cls.h = WinHttpd(cls.flavour, threads=64)
        d = winpath(cls.h.docroot)
        cls.h.extra = cache_conf(
            'EnableSendfile On\n'
            '<Directory "%s/nosendfile">\n  EnableSendfile Off\n</Directory>\n'
            '<Directory "%s/nommap">\n  EnableSendfile Off\n  EnableMMAP Off\n'
            '</Directory>\n' % (d, d))
        cls.big = payload(BIG, "fhc-big")
        for name in ("big.bin", "nosendfile/big.bin", "nommap/big.bin"):
            cls.h.put(name, cls.big)
        cls.h.start()

    @classmethod
    def tearDownClass(cls):
        cls.h.stop()

    def tearDown(self):
        # Nothing worse than notice from the server, and no warning of the
        # cache's (EMFILE, lost notifications, no watcher).
        bad = [l for l in self.h.error_log().splitlines()
               if re.search(r":(emerg|alert|crit|error)\]", l)
               or ("mod_fhcache" in l and ":warn]" in l)]
        self.assertEqual(bad, [])

    def fhc(self):
        return {k[7:]: v for k, v in self.h.status().items()
                if k.startswith("FHCache")}

    def body(self, path):
        code, _, body = self.h.get(path, timeout=60)
        return body if code == 200 else code

    def test_fifty_clients_get_identical_bodies_from_one_handle(self):
        """TransmitFile (EnableSendfile On) and mmap (Off) over the one
        cached overlapped handle, 50 clients at once."""
        for path in ("/big.bin", "/nosendfile/big.bin"):
            # One request fills the entry first: 50 clients arriving at a
            # cold entry all miss (each opens the file), which left too few
            # hits to count on a slow Wine (CI: 56 of 100).
            self.assertEqual(self.body(path), self.big, path)
            before = int(self.fhc()["Hits"])
            got = fetch_all(self.h, path, clients=50, rounds=2)
            self.assertEqual(len(got), 100, path)
            bad = [(c, len(b)) for c, b in got if c != 200 or b != self.big]
            self.assertEqual(bad, [], path)
            st = self.fhc()
            # Most requests came from the cache (on Windows its handle is
            # re-opened every FHCacheRevalidate s: a few misses then).
            self.assertGreaterEqual(int(st["Hits"]) - before, 80, (path, st))
            self.assertGreaterEqual(int(st["OpenDescriptors"]), 1, st)

    def test_without_mmap_core_serves_the_body(self):
        """No mmap: APR would read through the shared handle; the cache
        leaves the body to core (the stat still comes from the cache)."""
        got = fetch_all(self.h, "/nommap/big.bin", clients=5, rounds=2)
        self.assertEqual([(c, b == self.big) for c, b in got],
                         [(200, True)] * 10)


@unittest.skipUnless(fhc_available("ng"), "no cross-built mpm_winnt_ng and "
                     "mod_fhcache (build/win/build.sh)")
class CacheWithWinntNg(CacheChecks, unittest.TestCase):
    flavour = "ng"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fsops = Fsops(cls.h.dir)

    def file(self, name, data):
        self.h.put(name, data)
        self.assertEqual(self.body("/" + name), data)
        self.assertEqual(self.body("/" + name), data)     # cached now
        return os.path.join(self.h.docroot, name)

    def test_notification_backend_watches_the_docroot(self):
        self.file("watched.txt", b"x" * 100)
        st = self.fhc()
        self.assertEqual(st["Mode"], "ReadDirectoryChangesW", st)
        self.assertGreaterEqual(int(st["Watches"]), 2, st)
        self.assertEqual(st["PolledEntries"], "0", st)

    def test_overwrite_by_windows_and_linux_takes_effect(self):
        path = self.file("over.bin", payload(BIG, "over"))
        rc, err = self.fsops.run("write", winpath(path), "windows wrote this")
        self.assertEqual(rc, 0, err)      # FILE_SHARE_WRITE: not blocked
        self.assertEqual(eventually(lambda: self.body("/over.bin"),
                                    b"windows wrote this", 5),
                         b"windows wrote this")
        with open(path, "wb") as f:
            f.write(b"linux wrote this")
        # A notified change: the very next request (no revalidation wait).
        self.assertEqual(eventually(lambda: self.body("/over.bin"),
                                    b"linux wrote this", 1.5),
                         b"linux wrote this")

    def test_rename_over_takes_effect(self):
        path = self.file("ren.bin", payload(BIG, "ren"))
        by_linux = payload(BIG, "ren-linux")
        tmp = self.h.put("ren.tmp", by_linux)
        os.replace(tmp, path)
        self.assertTrue(eventually(lambda: self.body("/ren.bin") == by_linux,
                                   True, 1.5))
        st = self.fhc()
        self.assertGreaterEqual(int(st["OpenDescriptors"]), 1, st)  # held
        # A Windows process: Wine refuses to rename over any open file
        # (Windows allows it with FILE_SHARE_DELETE, which the cache
        # gives); the cache closes handles unused for FHCacheRevalidate
        # seconds, after which the rename succeeds.
        self.h.put("ren2.tmp", b"renamed over by windows")
        self.assertEqual(eventually(lambda: self.fhc()["OpenDescriptors"],
                                    "0", 6), "0")
        rc, err = self.fsops.run("replace", winpath(os.path.join(
            self.h.docroot, "ren2.tmp")), winpath(path))
        self.assertEqual(rc, 0, err)
        self.assertEqual(eventually(lambda: self.body("/ren.bin"),
                                    b"renamed over by windows", 3),
                         b"renamed over by windows")

    def test_delete_and_replace_while_cached(self):
        data = payload(BIG, "del")
        path = self.file("del.bin", data)
        # By a Windows process, while the handle is held: the delete
        # succeeds at once (FILE_SHARE_DELETE) and takes effect when the
        # cache lets go of the handle, within FHCacheRevalidate seconds.
        rc, err = self.fsops.run("delete", winpath(path))
        self.assertEqual(rc, 0, err)
        self.assertEqual(eventually(lambda: self.body("/del.bin"), 404, 6), 404)
        self.assertFalse(os.path.exists(path))
        rc, err = self.fsops.run("write", winpath(path), "replaced by windows")
        self.assertEqual(rc, 0, err)
        self.assertEqual(eventually(lambda: self.body("/del.bin"),
                                    b"replaced by windows", 3),
                         b"replaced by windows")
        # By Linux: notified, so at once.
        self.file("del2.bin", data)
        os.remove(os.path.join(self.h.docroot, "del2.bin"))
        self.assertEqual(eventually(lambda: self.body("/del2.bin"), 404, 1.5), 404)
        self.h.put("del2.bin", b"replaced by linux")
        self.assertEqual(eventually(lambda: self.body("/del2.bin"),
                                    b"replaced by linux", 1.5),
                         b"replaced by linux")

    def test_timestamp_only_change_is_revalidated(self):
        """Wine's watcher misses mtime-only changes: revalidation by stat
        every FHCacheRevalidate seconds catches them."""
        path = self.file("stamp.txt", b"same bytes\n")
        _, h1, _ = self.h.get("/stamp.txt")
        st = os.stat(path)
        os.utime(path, (st.st_atime, st.st_mtime - 3600))
        def last_modified():
            return self.h.get("/stamp.txt")[1].get("last-modified")
        got = eventually(lambda: last_modified() != h1["last-modified"], True, 5)
        self.assertTrue(got, "Last-Modified still %s" % h1["last-modified"])


@unittest.skipUnless(fhc_available("stock"), "no cross-built stock httpd and "
                     "mod_fhcache (build/win/build.sh)")
class CacheWithStockWinnt(CacheChecks, unittest.TestCase):
    flavour = "stock"

    def test_overwrite_takes_effect(self):
        data = payload(BIG, "stock-over")
        path = self.h.put("sover.bin", data)
        self.assertEqual(self.body("/sover.bin"), data)
        self.assertEqual(self.body("/sover.bin"), data)
        with open(path, "wb") as f:
            f.write(b"new")
        self.assertEqual(eventually(lambda: self.body("/sover.bin"), b"new", 1.5),
                         b"new")


if __name__ == "__main__":
    unittest.main()
