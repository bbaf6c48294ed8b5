"""mpm_winnt_ng as a Windows service, under Wine's service manager.

Runs in a private copy of the wineprefix (mpmng_py.win.wineprefix), so a
failed step cannot leave a service behind in the prefix other tests use.
The steps run in order (test_01 ... test_09) on one installed service."""
import os
import subprocess
import unittest

from mpmng_py.win.wineprefix import WinePrefix, wait_until
from mpmng_py.win.winhttpd import WinHttpd, available, winpath

SERVICES_KEY = r"HKLM\SYSTEM\CurrentControlSet\Services"


@unittest.skipUnless(available("ng"), "no cross-built mpm_winnt_ng "
                     "(build/win/build.sh ng)")
class Service(unittest.TestCase):
    """install, config, start, restart, stop, a failing start, uninstall."""

    @classmethod
    def setUpClass(cls):
        cls.pfx = WinePrefix()
        cls.name = "wnsvc%d" % os.getpid()
        cls.h = WinHttpd()
        cls.h.put("hello.txt", b"hello from the service\n")
        cls.h.write_conf()

    @classmethod
    def tearDownClass(cls):
        try:
            cls.httpd("-k", "uninstall", "-n", cls.name)
        finally:
            cls.pfx.close()

    @classmethod
    def httpd(cls, *args):
        return cls.pfx.run(cls.h.exe, *args)

    def sc_state(self):
        return self.sc_state_of(self.name)

    def sc_state_of(self, name):
        rc, out = self.pfx.run("sc", "query", name)
        self.assertEqual(rc, 0, out)
        for line in out.splitlines():
            if "STATE" in line:
                return line.split()[-1]
        self.fail(out)

    def reg(self, key):
        return self.pfx.reg_query(key)

    def assert_no_key(self, key):
        rc, out = self.reg(key)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("Unable to find", out)

    def hello(self):
        r = subprocess.run(["curl", "-sS", "-m", "10", "http://127.0.0.1:%d/"
                            "hello.txt" % self.h.port],
                           capture_output=True, timeout=30)
        return r.stdout == b"hello from the service\n"

    def port_closed(self):
        r = subprocess.run(["curl", "-sS", "-m", "5", "http://127.0.0.1:%d/"
                            % self.h.port], capture_output=True, timeout=30)
        return r.returncode == 7          # could not connect

    def test_01_install_creates_the_service_and_its_arguments(self):
        rc, out = self.httpd("-k", "install", "-n", self.name,
                             "-f", winpath(self.h.conf))
        self.assertEqual(rc, 0, out)
        self.assertIn("installed", out)
        rc, out = self.reg(SERVICES_KEY + "\\" + self.name)
        self.assertEqual(rc, 0, out)
        self.assertIn("httpd.exe\" -k runservice", out)
        self.assertRegex(out, r"Start\s+REG_DWORD\s+0x2")      # auto start
        rc, out = self.reg(SERVICES_KEY + "\\" + self.name + "\\Parameters")
        self.assertEqual(rc, 0, out)
        self.assertIn("-f\\0" + winpath(self.h.conf), out)
        # the default ServerRoot (-d) is worked out at each start, not stored
        self.assertNotIn("-d\\0", out)
        rc, out = self.reg(SERVICES_KEY + "\\EventLog\\Application\\"
                           + self.name)
        self.assertIn("netmsg.dll", out)
        self.assertEqual(self.sc_state(), "STOPPED")

    def test_02_install_again_is_refused(self):
        rc, out = self.httpd("-k", "install", "-n", self.name,
                             "-f", winpath(self.h.conf))
        self.assertNotEqual(rc, 0, out)
        self.assertIn("already installed", out)

    def test_03_config_changes_the_arguments(self):
        rc, out = self.httpd("-k", "config", "-n", self.name,
                             "-f", winpath(self.h.conf), "-D", "WNSVC")
        self.assertEqual(rc, 0, out)
        rc, out = self.reg(SERVICES_KEY + "\\" + self.name + "\\Parameters")
        self.assertEqual(rc, 0, out)
        self.assertIn(winpath(self.h.conf) + "\\0-D\\0WNSVC", out)

    def test_04_start_serves_requests(self):
        rc, out = self.httpd("-k", "start", "-n", self.name)
        self.assertEqual(rc, 0, out + self.h.error_log())
        self.assertIn("is running", out)
        self.assertEqual(self.sc_state(), "RUNNING")
        self.assertTrue(wait_until(self.hello, 30), self.h.error_log())
        self.assertIn("-D WNSVC", self.h.error_log())   # ConfigArgs used
        self.assertTrue(wait_until(lambda: "service is running"
                                   in self.pfx.event_log(), 10),
                        self.pfx.event_log())

    def test_05_restart_hands_over_to_a_new_child(self):
        first = self.h.status()["WinNTNGChildPid"]
        rc, out = self.httpd("-k", "restart", "-n", self.name)
        self.assertEqual(rc, 0, out)
        new = wait_until(lambda: self.h.status()["WinNTNGChildPid"] != first,
                         60)
        self.assertTrue(new, self.h.error_log())
        self.assertTrue(self.hello())
        self.assertEqual(self.sc_state(), "RUNNING")

    def test_06_stop_ends_every_process(self):
        rc, out = self.httpd("-k", "stop", "-n", self.name)
        self.assertEqual(rc, 0, out + self.h.error_log())
        self.assertEqual(self.sc_state(), "STOPPED")
        self.assertTrue(self.port_closed())
        self.assertTrue(wait_until(lambda: not self.pfx.pids(b"httpd.exe"),
                                   30), self.pfx.pids(b"httpd.exe"))
        self.assertIn("service stopped", self.pfx.event_log())
        rc, out = self.httpd("-k", "stop", "-n", self.name)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("not running", out)

    def test_07_wines_net_start_and_net_stop_work_too(self):
        # Wine's net.exe returns while the service is still pending.
        rc, out = self.pfx.run("net", "start", self.name)
        self.assertEqual(rc, 0, out)
        self.assertTrue(wait_until(lambda: self.sc_state() == "RUNNING", 60),
                        self.h.error_log())
        self.assertTrue(wait_until(self.hello, 30), self.h.error_log())
        rc, out = self.pfx.run("net", "stop", self.name)
        self.assertEqual(rc, 0, out)
        self.assertTrue(wait_until(lambda: self.sc_state() == "STOPPED", 60),
                        self.h.error_log())
        self.assertTrue(self.port_closed())

    def test_08_a_failed_start_is_reported_in_the_event_log(self):
        with open(self.h.conf) as f:
            good = f.read()
        try:
            with open(self.h.conf, "a") as f:
                f.write("\nNoSuchDirectiveHere on\n")
            rc, out = self.httpd("-k", "start", "-n", self.name)
            self.assertNotEqual(rc, 0, out)
            self.assertIn("did not start", out)
            self.assertEqual(self.sc_state(), "STOPPED")
            log = wait_until(lambda: (lambda l: "during start-up" in l and l)(
                self.pfx.event_log()), 10) or self.pfx.event_log()
            # what httpd wrote to stderr before any ErrorLog was open
            self.assertIn("NoSuchDirectiveHere", log)
            self.assertIn("err:eventlog", log)
            self.assertIn("stopped during start-up", log)
        finally:
            with open(self.h.conf, "w") as f:
                f.write(good)

    def test_09_uninstall_removes_it(self):
        rc, out = self.httpd("-k", "uninstall", "-n", self.name)
        self.assertEqual(rc, 0, out)
        self.assertIn("removed", out)
        rc, out = self.pfx.run("sc", "query", self.name)
        self.assertNotEqual(rc, 0, out)
        self.assert_no_key(SERVICES_KEY + "\\" + self.name)
        self.assert_no_key(SERVICES_KEY + "\\EventLog\\Application\\" + self.name)
        self.assertEqual(self.pfx.pids(b"httpd.exe"), [])

    def test_10_default_name_is_apache24_and_k_without_n_controls_it(self):
        rc, out = self.httpd("-k", "install", "-f", winpath(self.h.conf))
        try:
            self.assertEqual(rc, 0, out)
            self.assertIn("Apache2.4", out)
            rc, out = self.reg(SERVICES_KEY + "\\Apache2.4")
            self.assertEqual(rc, 0, out)
            # as stock httpd: -k start and -k stop act on the installed
            # Apache2.4 service (not on a console server)
            rc, out = self.httpd("-k", "start")
            self.assertEqual(rc, 0, out + self.h.error_log())
            self.assertIn("Apache2.4 service is running", out)
            self.assertEqual(self.sc_state_of("Apache2.4"), "RUNNING")
            self.assertTrue(wait_until(self.hello, 30), self.h.error_log())
            rc, out = self.httpd("-k", "stop")
            self.assertEqual(rc, 0, out + self.h.error_log())
            self.assertIn("Apache2.4 service stopped", out)
            self.assertTrue(self.port_closed())
        finally:
            rc, out = self.httpd("-k", "uninstall")
        self.assertEqual(rc, 0, out)
        self.assert_no_key(SERVICES_KEY + "\\Apache2.4")

    def test_11_bad_usage_is_refused_clearly(self):
        cases = [
            (("-k", "start", "-n", "wnsvc-missing"), "no service named"),
            (("-k", "stop", "-n", "wnsvc-missing"), "no service named"),
            (("-k", "uninstall", "-n", "wnsvc-missing"), "no service named"),
            (("-n", self.name), "needs -k"),
            (("-k", "runservice"), "service manager"),
            (("-k", "bogus", "-n", self.name), "unknown"),
            (("-k", "install", "-n", "a/b"), "service name"),
            (("-k", "install", "-n", "wnsvc-badconf", "-f", "Z:/nonexistent/"
              "httpd.conf"), "Could not open configuration file"),
        ]
        for args, text in cases:
            rc, out = self.httpd(*args)
            self.assertNotEqual(rc, 0, (args, out))
            self.assertIn(text, out, args)
        # a configuration that does not parse installs nothing
        self.assert_no_key(SERVICES_KEY + "\\wnsvc-badconf")


if __name__ == "__main__":
    unittest.main()
