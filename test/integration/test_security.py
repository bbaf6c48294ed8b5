"""Privileges and descriptor hygiene: children run as www-data, the parent
as root; no listening socket or other server descriptor leaks into CGIs."""
import os
import re
import tempfile
import unittest

from mpmng_py.integration.common import (CGI_BODY, CGI_FDS, HttpdTestCase, curl, mpm_directives,
                                         proc_ids, proc_status, reuseport_only, sha256,
                                         www_data_ids)
from mpmng_py.privhttpd import free_port


def proc_groups(pid):
    return sorted(int(g) for g in proc_status(pid).get("Groups", "").split())


class Privileges(HttpdTestCase):
    @unittest.skipUnless(os.geteuid() == 0, "needs root (children switch to www-data)")
    def test_children_run_as_www_data_parent_as_root(self):
        h = self.httpd(mpm_directives(buckets=2, start=3, server_limit=4, threads=10,
                                      max_workers=40, min_spare=10, max_spare=40))
        kids = h.wait_children(3)
        self.wait_workers(h, 30)  # children drop privileges before starting threads
        uid, gid = www_data_ids()
        self.assertEqual(proc_ids(h.pid), (0, 0), "parent must stay root")
        for pid in kids:
            self.assertEqual(proc_ids(pid), (uid, gid), "child %d ids" % pid)
            self.assertIn(proc_groups(pid), ([], [gid]),
                          "child %d supplementary groups" % pid)


class DescriptorLeaks(HttpdTestCase):
    def test_cgi_gets_no_server_descriptors(self):
        # Several buckets and two logs: plenty of descriptors that could leak.
        h = self.httpd(mpm_directives(buckets=4, start=4, server_limit=8, threads=10,
                                      max_workers=80, min_spare=10, max_spare=80),
                       cgi={"fds.py": CGI_FDS}, access_log=True)
        uid, gid = www_data_ids()
        for attempt in range(8):  # new connections: reach several children/buckets
            p = curl("-H", "Connection: close", h.url("/cgi-bin/fds.py"))
            self.assertEqual(p.returncode, 0, p.stderr)
            text = p.stdout.decode()
            self.assertIn("uid=%d gid=%d" % (uid, gid), text, "CGI must run as www-data")
            fds = {int(m.group(1)): m.group(2)
                   for m in re.finditer(r"^fd (\d+) (.*)$", text, re.M)}
            self.assertTrue({0, 1, 2} <= set(fds), text)
            extra = {fd: t for fd, t in fds.items() if fd not in (0, 1, 2)}
            self.assertEqual(extra, {}, "descriptors leaked into the CGI: %s" % extra)


@reuseport_only
class ForkHygiene(HttpdTestCase):
    def test_cgi_gets_request_bodies_with_several_listeners_and_buckets(self):
        """mod_cgid's daemon is forked from the parent, which lets go of the
        extra buckets' sockets there.  They were closed, freeing their
        numbers, while APR still closed those numbers before each script's
        exec: a body arriving on a pipe that took such a number was lost
        (the script read nothing; 2 Listen addresses x 2 buckets)."""
        h = self.httpd(mpm_directives(buckets=2, start=2, server_limit=4, threads=8,
                                      max_workers=32, min_spare=8, max_spare=32),
                       start=False, cgi={"sum.py": CGI_BODY})
        h.listen.append("127.0.0.1:%d" % free_port())
        h.start()
        body = os.urandom(100000)
        with tempfile.NamedTemporaryFile() as f:
            f.write(body)
            f.flush()
            for attempt in range(6):   # new connections: both buckets
                p = curl("-H", "Connection: close", "--data-binary", "@" + f.name,
                         h.url("/cgi-bin/sum.py"))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn(("length=%d\nsha256=%s" % (len(body), sha256(body))).encode(),
                              p.stdout, "attempt %d" % attempt)


if __name__ == "__main__":
    unittest.main()
