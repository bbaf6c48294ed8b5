"""Runtime faults degrade gracefully: logged once, the child survives and
recovers when the cause goes away."""
import socket
import time
import unittest

from mpmng_py.integration.common import HttpdTestCase, http_get, mpm_directives, reuseport_only


class AcceptFaults(HttpdTestCase):
    @reuseport_only
    def test_emfile_on_accept_logged_once_and_recovers(self):
        # A low open-files limit: after the start-up descriptors a child has
        # room for a few connections only; connections that send a byte and
        # then nothing hold workers, and beyond that accept fails with EMFILE
        # (they stay queued in the kernel).
        h = self.httpd(mpm_directives(buckets=1, start=1, server_limit=1, threads=40,
                                      max_workers=40, min_spare=1, max_spare=80),
                       files={"index.html": "fine\n"}, nofile=40)
        (kid,) = h.wait_children(1)
        self.assertEqual(http_get(h.host, h.port, "/index.html").status, 200)
        held = []
        try:
            for _ in range(40):
                s = socket.create_connection((h.host, h.port), timeout=5)
                s.sendall(b"G")  # past TCP_DEFER_ACCEPT, then silence
                held.append(s)
            deadline = time.monotonic() + 5
            while "accept on" not in h.log() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)  # ten more 100 ms back-off rounds
            lines = [l for l in h.log().splitlines() if "accept on" in l]
            self.assertEqual(len(lines), 1, "\n".join(lines) or h.log_tail())
            self.assertIn("open-files limit", lines[0])
        finally:
            for s in held:
                s.close()
        # Same child, serving again: nothing was restarted.
        for _ in range(20):
            self.assertEqual(http_get(h.host, h.port, "/index.html").status, 200)
        self.assertEqual(h.children(), [kid])


if __name__ == "__main__":
    unittest.main()
