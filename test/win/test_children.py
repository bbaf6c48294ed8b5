"""mpm_winnt_ng with several child processes (ChildProcesses) under
wine64: both accept, a killed one is replaced while the other serves, a
graceful restart replaces them one by one (bad values: BadConfig in
test_winnt_ng.py)."""
import collections
import re
import subprocess
import threading
import time
import unittest

from mpmng_py.win.winhttpd import WinHttpd, available, wine_env, winpath
from mpmng_py.win.wintest import (assert_no_failed_request, long_test, payload, short_run,
                                   under_load, wrk)

PID_LOG = 'LogFormat "%P" pidonly\nCustomLog "{d}/logs/pids.log" pidonly\n'


def two_children(extra="", threads=32):
    h = WinHttpd(threads=threads, extra="ChildProcesses 2\n" + extra + "\n")
    h.extra += PID_LOG.format(d=winpath(h.dir))
    h.put("small.txt", payload(500, "small"))
    return h


def serving(h):
    """Pids of the children accepting now, as server-status lists them."""
    return set(int(p) for p in h.status()["WinNTNGServingPids"].split())


def wait_serving(h, test, timeout=90, what="two children serving"):
    """Polls until test(pids) holds; returns the pids."""
    deadline = time.time() + timeout
    pids = set()
    while time.time() < deadline:
        try:
            pids = serving(h)
            if test(pids):
                return pids
        except (OSError, AssertionError, KeyError, IndexError, ValueError):
            pass
        time.sleep(0.3)
    raise AssertionError("no %s within %d s (last %s)\n%s" % (
        what, timeout, sorted(pids), h.error_log()))


def pids_in_access_log(h):
    with open(h.dir + "/logs/pids.log") as f:
        return collections.Counter(int(p) for p in f.read().split())


def start_two(h):
    h.start()
    return wait_serving(h, lambda p: len(p) == 2)


@unittest.skipUnless(available("ng"), "no cross-built mpm_winnt_ng")
class TwoChildren(unittest.TestCase):

    def test_both_children_accept_new_connections(self):
        h = two_children()
        try:
            kids = start_two(h)
            r = subprocess.run(["ab", "-q", "-s", "60", "-n", "2000", "-c", "16",
                                "http://127.0.0.1:%d/small.txt" % h.port],
                               capture_output=True, text=True, timeout=300)
            out = r.stdout + r.stderr
            self.assertRegex(out, r"Complete requests:\s+2000\b", out)
            self.assertRegex(out, r"Failed requests:\s+0\b", out)
            time.sleep(1)         # access log lines are written after the response
            served = pids_in_access_log(h)
            print("2 children, ab 2000 new connections: %s" % dict(served))
            self.assertEqual(set(served), kids, served)
            # Both take a fair part, not one doing nearly everything.
            for pid in kids:
                self.assertGreater(served[pid], 200, served)
        finally:
            h.stop()

    def test_a_killed_child_is_replaced_while_the_other_serves(self):
        h = two_children()
        try:
            kids = start_two(h)
            victim, survivor = sorted(kids)
            results = []            # (time, ok)
            stop = threading.Event()

            def requests():
                while not stop.is_set():
                    try:
                        ok = h.get("/small.txt", timeout=10)[0] == 200
                    except OSError:
                        ok = False
                    results.append((time.time(), ok))
            t = threading.Thread(target=requests)
            t.start()
            time.sleep(1)
            killed_at = time.time()
            r = subprocess.run(["/usr/lib/wine/wine64", "taskkill", "/F", "/PID",
                                str(victim)], env=wine_env(),
                               capture_output=True, timeout=60)
            now = wait_serving(h, lambda p: victim not in p and len(p) == 2,
                               what="replacement")
            replaced_at = time.time()
            time.sleep(1)
            stop.set()
            t.join(30)
            log = h.error_log()
            self.assertIn(survivor, now, log)          # left alone
            gap = [ok for at, ok in results if killed_at < at < replaced_at]
            failed = [at - killed_at for at, ok in results if not ok]
            print("killed child: %d requests while it was replaced in %.1f s, "
                  "%d failed overall" % (len(gap), replaced_at - killed_at,
                                         len(failed)))
            self.assertGreater(sum(gap), 5, (r.stdout, r.stderr, log))
            # Only a request the killed child had in hand may be lost.
            self.assertLessEqual(len(failed), 1, (failed, log))
            self.assertIn("starting another (other children serving: 1)", log)
        finally:
            h.stop()

    def test_graceful_restart_replaces_both_with_no_failed_request(self):
        """Graceful restarts under load, the load lasting until the last
        new generation has served a while: one in make check (8 s here
        under the load, 10-16 s beside two busy loops: Wine starting two
        children), two in make win-check."""
        h = two_children(threads=64)
        count = 1 if short_run() else 2
        try:
            generation = start_two(h)
            took = []

            def restarts():
                nonlocal generation
                time.sleep(2)
                for i in range(count):
                    old = generation
                    t0 = time.monotonic()
                    r = h.httpd("-k", "graceful")
                    self.assertEqual(r.returncode, 0, r.stderr)
                    generation = wait_serving(
                        h, lambda p: len(p) == 2 and not p & old,
                        what="new generation")
                    took.append(time.monotonic() - t0)
                    time.sleep(2)
            results = under_load(h.port, restarts)
            print("%d graceful restart(s), each until both new children served: %s s"
                  % (count, ", ".join("%.1f" % t for t in took)))
            assert_no_failed_request(self, results, "2 children, graceful restart")
            self.assertEqual(h.error_log().count(
                "stops accepting and finishes"), 2 * count, h.error_log())
        finally:
            h.stop()

    @long_test("Lifecycle.test_max_connections_per_child_replaces_the_child_seamlessly")
    def test_max_connections_per_child_retires_one_child_at_a_time(self):
        h = two_children("MaxConnectionsPerChild 150")
        try:
            first = start_two(h)
            reqs, errors, non2xx, out = wrk(h.port, seconds=6, conns=8,
                                             close=True)
            self.assertEqual(errors + non2xx, 0, out)
            self.assertGreater(reqs, 400, out)
            # Each retirement stops just that child, once its successor
            # accepts; wait for the last one to get there.  How far each
            # child got depends on how the load spread.
            def settled(pids):
                log = h.error_log()
                retired = log.count("reached MaxConnectionsPerChild")
                return (len(pids) == 2 and pids != first and retired > 0
                        and log.count("stops accepting and finishes") == retired)
            wait_serving(h, settled, what="replaced children")
        finally:
            h.stop()

    @long_test("the other TwoChildren restarts")
    def test_a_restart_may_lower_the_count_but_not_raise_it(self):
        h = two_children()
        try:
            old = start_two(h)
            h.write_conf(h.extra.replace("ChildProcesses 2", "ChildProcesses 1"))
            self.assertEqual(h.httpd("-k", "graceful").returncode, 0)
            one = wait_serving(h, lambda p: len(p) == 1 and not p & old,
                               what="one new child")
            h.write_conf(h.extra.replace("ChildProcesses 2", "ChildProcesses 5"))
            self.assertEqual(h.httpd("-k", "graceful").returncode, 0)
            wait_serving(h, lambda p: len(p) == 2 and not p & one,
                         what="two new children")
            log = h.error_log()
            self.assertIn("ChildProcesses is now 1", log)
            self.assertIn("ChildProcesses 5 needs a full stop and start (the "
                          "scoreboard was sized for 2); keeping 2", log)
            self.assertEqual(h.get("/small.txt")[0], 200)
        finally:
            h.stop()


if __name__ == "__main__":
    unittest.main()
