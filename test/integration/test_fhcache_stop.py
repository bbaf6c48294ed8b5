"""mod_fhcache: servers stopped right after use do not crash, under every
MPM (#24).

Each cycle starts a server with the cache (one child), loads it (requests
on new and kept-alive connections, files from memory and from the cached
descriptor), changes a file and waits until the new content is served,
then stops it at once (SIGTERM: an ungraceful stop of the children).  Core
dumps are on (CoreDumpDirectory in the instance); a cycle fails on a core,
on a signal in the error log ("exit signal ..."), or on a sanitizer report.

Stock mpm_event crashes in such stops without this module too (httpd's own
race, see mod_fhcache/fhc_stopguard.c and docs/mod_fhcache.md): about 1 in
20 cycles before the guard.  MPMNG_STOP_CYCLES sets the cycles per MPM."""
import glob
import os
import resource
import signal
import time

from mpmng_py.integration.common import (CRASH_RE, TEST_TIMEOUT, HttpdTestCase, ResponseReader,
                                         connect, http_get, request_bytes)
from mpmng_py.integration.fhcache_mpms import FHCACHE_SO, MPMS, one_child

CYCLES = int(os.environ.get("MPMNG_STOP_CYCLES", "100"))
SMALL = b"s" * 500
BIG = bytes(range(256)) * 256      # 64 KiB: served from the cached descriptor


class StopCycles(HttpdTestCase):

    def setUp(self):
        super().setUp()
        # Children inherit the limit from `apache2 -k start`, started by us.
        old = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (old[1], old[1]))
        self.addCleanup(resource.setrlimit, resource.RLIMIT_CORE, old)
        signal.alarm(max(TEST_TIMEOUT, 3 * CYCLES))

    def _load(self, h):
        for path, body in (("/s.txt", SMALL), ("/big.bin", BIG)):
            for hdrs in ((), (("Range", "bytes=0-9"),)):
                r = http_get(h.host, h.port, path, headers=hdrs)
                self.assertIn(r.status, (200, 206))
            s = connect(h.host, h.port)
            reader = ResponseReader(s)
            for _ in range(3):
                s.sendall(request_bytes("GET", path))
                try:
                    r = reader.read_response()
                except EOFError:
                    # A server may close a kept-alive connection before it
                    # reads the next request (mpm_event does when short of
                    # workers on a loaded machine): a client sends it again.
                    s.close()
                    s = connect(h.host, h.port)
                    reader = ResponseReader(s)
                    s.sendall(request_bytes("GET", path))
                    r = reader.read_response()
                self.assertEqual(r.body, body)
            s.close()

    def _change(self, h, n):
        path = os.path.join(h.docroot, "s.txt")
        new = b"%d" % (n % 10) * 500
        with open(path + ".tmp", "wb") as f:
            f.write(new)
        os.chmod(path + ".tmp", 0o644)
        os.rename(path + ".tmp", path)
        self.wait_until(lambda: http_get(h.host, h.port, "/s.txt").body == new, 5,
                        "the new s.txt to be served")

    def _cycle(self, mpm, n):
        h = self.httpd(start=False, mpm=mpm, files={"s.txt": SMALL, "big.bin": BIG})
        cores = h.core_dir          # the instance's CoreDumpDirectory
        h.directives = ("LoadModule fhcache_module %s\nFHCache On\n%s"
                        % (FHCACHE_SO, one_child(mpm)))
        h.start()
        self._load(h)
        self._change(h, n)
        leftover = h.stop(signal.SIGTERM)
        crashes = CRASH_RE.findall(h.log()) + glob.glob(os.path.join(cores, "core*"))
        self.assertEqual(leftover, [], "cycle %d: processes left after stop" % n)
        self.assertEqual(crashes, [], "cycle %d crashed:\n%s" % (n, h.log_tail(20)))
        h.cleanup()

    def _cycles(self, mpm):
        """CYCLES cycles; fewer (20 at least) where the stock MPM itself
        takes seconds to stop (mpm_worker of httpd 2.4.37 to 2.4.58: 5.4 s, with or
        without the cache), so they fit the test's time (3 s a cycle)."""
        t0 = time.monotonic()
        self._cycle(mpm, 0)
        first = time.monotonic() - t0
        cycles = min(CYCLES, max(20, int(0.8 * 3 * CYCLES / max(first, 0.01))))
        for n in range(1, cycles):
            self._cycle(mpm, n)
        print("[%d cycles in %.0fs] " % (cycles, time.monotonic() - t0), end="", flush=True)


for _mpm in MPMS:
    def _test(self, mpm=_mpm):
        self._cycles(mpm)
    _test.__doc__ = "%d start/load/change/stop cycles under %s" % (CYCLES, _mpm)
    setattr(StopCycles, "test_" + _mpm, _test)
del _mpm, _test
