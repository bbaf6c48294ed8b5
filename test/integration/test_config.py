"""Configuration: the MPM's name, rejected directive values, clamped values."""
import unittest

from mpmng_py.integration.common import (HttpdTestCase, IS_REUSEPORT, MPM, http_get, mpm_directives,
                                         ss_lines, wait_for_log)


class Identity(HttpdTestCase):
    def test_dash_V_names_the_mpm(self):
        h = self.httpd(start=False)
        h.write_config()
        res = h.run_ctl("-V")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("Server MPM:     %s\n" % MPM, res.stdout)

    def test_status_names_the_mpm(self):
        h = self.httpd()
        self.assertEqual(h.status().get("ServerMPM"), MPM)


# (test name, directives, directive names of which the output must name one)
BAD = [
    ("threads_per_child_0", "ThreadsPerChild 0", ["ThreadsPerChild"]),
    ("threads_per_child_negative", "ThreadsPerChild -1", ["ThreadsPerChild"]),
    ("threads_per_child_over_thread_limit", "ThreadLimit 64\nThreadsPerChild 100",
     ["ThreadsPerChild", "ThreadLimit"]),
    ("start_servers_0", "StartServers 0", ["StartServers"]),
    ("server_limit_0", "ServerLimit 0", ["ServerLimit"]),
    ("max_request_workers_0", "MaxRequestWorkers 0", ["MaxRequestWorkers"]),
    ("buckets_0", "ReusePortBuckets 0", ["ReusePortBuckets"]),
    ("buckets_not_a_number", "ReusePortBuckets abc", ["ReusePortBuckets"]),
    ("buckets_over_server_limit", "ServerLimit 4\nReusePortBuckets 64",
     ["ReusePortBuckets", "ServerLimit"]),
    ("reuseport_not_a_flag", "ReusePort maybe", ["ReusePort"]),
    ("min_spare_threads_negative", "MinSpareThreads -5", ["MinSpareThreads"]),
    ("thread_limit_0", "ThreadLimit 0", ["ThreadLimit"]),
    ("async_factor_0", "AsyncRequestWorkerFactor 0", ["AsyncRequestWorkerFactor"]),
    ("async_factor_text", "AsyncRequestWorkerFactor lots", ["AsyncRequestWorkerFactor"]),
    ("body_read_ahead_negative", "ReusePortBodyReadAhead -1", ["ReusePortBodyReadAhead"]),
    ("body_read_ahead_text", "ReusePortBodyReadAhead 1M", ["ReusePortBodyReadAhead"]),
    ("body_read_ahead_dir_missing", "ReusePortBodyReadAheadDir /nonexistent/mpmng",
     ["ReusePortBodyReadAheadDir"]),
    ("body_read_ahead_dir_a_file", "ReusePortBodyReadAheadDir /etc/hostname",
     ["ReusePortBodyReadAheadDir"]),
]


@unittest.skipUnless(IS_REUSEPORT, "stock MPMs clamp these values instead of rejecting "
                     "them (MPMNG_TEST_MPM=%s)" % MPM)
class BadDirectives(HttpdTestCase):
    """Each bad value must make both `apache2 -t` and `-k start` fail with a
    message naming the directive."""

    def check_rejected(self, directives, names):
        h = self.httpd(start=False)
        # Control: the same server without the bad line is fine, so a failure
        # below is about the directive (not e.g. a missing module).
        ok = h.configtest()
        self.assertEqual(ok.returncode, 0, "control config fails: %s%s" % (ok.stdout, ok.stderr))
        h.directives = directives + "\n"
        res = h.configtest()
        out = res.stdout + res.stderr
        self.assertNotEqual(res.returncode, 0, "apache2 -t accepted %r:\n%s" % (directives, out))
        self.assertTrue(any(n in out for n in names),
                        "apache2 -t output does not name %s:\n%s" % (" or ".join(names), out))
        res = h.start(expect_fail=True)
        out = res.stdout + res.stderr + h.log()
        self.assertNotEqual(res.returncode, 0, "-k start accepted %r:\n%s" % (directives, out))
        self.assertTrue(any(n in out for n in names),
                        "-k start output does not name %s:\n%s" % (" or ".join(names), out))
        self.assertIsNone(h.pid, "a server started anyway")
        self.assertEqual(ss_lines(h.port), [], "something listens on the port")


def _make_bad_test(directives, names):
    def test(self):
        self.check_rejected(directives, names)
    test.__doc__ = "rejects: %s" % directives.replace("\n", "; ")
    return test


for _name, _directives, _names in BAD:
    setattr(BadDirectives, "test_" + _name, _make_bad_test(_directives, _names))


class EventCompatibility(HttpdTestCase):
    def test_event_directives_are_accepted(self):
        """An mpm_event configuration works unchanged."""
        h = self.httpd(mpm_directives(extra="AsyncRequestWorkerFactor 2.5"),
                       files={"index.html": "e\n"})
        self.assertEqual(http_get(h.host, h.port, "/index.html").status, 200)


class ClampedValues(HttpdTestCase):
    def test_max_request_workers_rounded_with_log_line(self):
        """MaxRequestWorkers 130 with ThreadsPerChild 25 is not a multiple:
        httpd semantics round it down (to 125) and say so."""
        directives = mpm_directives(server_limit=16, threads=25, max_workers=130,
                                    start=2, buckets=2, min_spare=25, max_spare=250)
        h = self.httpd(directives, start=False, files={"index.html": "c\n"})
        t = h.configtest()
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr)
        res = h.start()
        said = t.stdout + t.stderr + res.stdout + res.stderr
        self.assertTrue("MaxRequestWorkers" in said or wait_for_log(h, "MaxRequestWorkers", 5),
                        "no message names the adjusted MaxRequestWorkers:\n%s\n%s" % (
                            said, h.log()))
        self.assertEqual(http_get(h.host, h.port, "/index.html").status, 200)


if __name__ == "__main__":
    unittest.main()
