"""Signals and how a server process ends (mpm_reuseport/rp_parent.c,
rp_crash.c): what an operator sends through the PidFile is handled from
the moment it names the parent; a fatal signal leaves a report in the
error log (signal, parent or child, generation, stack) and a core in
CoreDumpDirectory; the test runner knows how the parent ended (it reaps
the servers it starts: privhttpd.reap_servers_here())."""
import os
import re
import signal
import time

from mpmng_py import privhttpd
from mpmng_py.integration.common import (SANITIZED, HttpdTestCase, http_get, mpm_directives,
                                         reuseport_only)

ROUNDS = 8


def signal_at_first_sight(h, sig):
    """Start h and send sig the moment its PidFile names a live process;
    returns that pid."""
    h.write_config()
    res = h.run_ctl("-k", "start")
    if res.returncode != 0:
        raise RuntimeError("start failed: %s%s" % (res.stdout, res.stderr))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pid = h.pidfile_pid()
        if pid and privhttpd.pid_alive(pid):
            os.kill(pid, sig)
            h.pid = pid
            return pid
        time.sleep(0.0005)
    raise RuntimeError("no PidFile after 20 s\n" + h.log_tail())


@reuseport_only
class EarlySignals(HttpdTestCase):
    """A graceful restart or stop sent right after a start (a deploy script,
    logrotate) must not kill the parent: httpd writes the PidFile before
    its MPM installs its handlers, and stock MPMs die silently there
    (SIGUSR1's default action: 17 of 20 parents, mpm_event's too)."""

    def test_a_graceful_restart_as_soon_as_the_pidfile_appears(self):
        for n in range(ROUNDS):
            h = self.httpd(mpm_directives(buckets=2, start=2), start=False,
                           files={"index.html": "up\n"})
            pid = signal_at_first_sight(h, signal.SIGUSR1)
            self.wait_until(lambda: h.generation_count() >= 2 or not privhttpd.pid_alive(pid),
                            20, "the restart, round %d" % n)
            self.assertTrue(privhttpd.pid_alive(pid), "round %d: the parent %s\n%s" % (
                n, privhttpd.how_it_ended(pid), h.log_tail()))
            self.assertEqual(h.stop(), [])
            h.cleanup()

    def test_a_graceful_stop_as_soon_as_the_pidfile_appears(self):
        for n in range(ROUNDS):
            h = self.httpd(mpm_directives(buckets=2, start=2), start=False)
            pid = signal_at_first_sight(h, signal.SIGWINCH)
            self.wait_gone([pid], 20, "the parent, round %d" % n)
            self.assertEqual(privhttpd.how_it_ended(pid), "exited with status 0",
                             "round %d\n%s" % (n, h.log_tail()))
            h.pid = None
            h.cleanup()


@reuseport_only
class FatalSignals(HttpdTestCase):
    def _crashing_server(self):
        # Two children, no spares: the set of children is known.
        h = self.httpd(mpm_directives(buckets=2, start=2, min_spare=25, max_spare=75),
                       files={"index.html": "up\n"})
        h.crashes_expected = True
        self.wait_workers(h, 50)
        return h

    @staticmethod
    def _only_new_children(h, old):
        """The parent's two children when none is one of `old`, else None."""
        now = h.children()
        return now if len(now) == 2 and not old & set(now) else None

    def _report(self, h, where):
        """The report's first line about `where` and the stack lines after it."""
        lines = h.log().splitlines()
        for i, line in enumerate(lines):
            if "SIGSEGV (segmentation fault) in " + where in line:
                stack = [l for l in lines[i + 2:i + 60] if re.search(r"\[0x[0-9a-f]+\]$", l)]
                return line, stack
        return None, []

    @staticmethod
    def cores_kept():
        """Cores land in CoreDumpDirectory: core_pattern is relative, and
        no ASan runtime is preloaded (it sets RLIMIT_CORE to 0 unless
        told disable_coredump=0: a sanitized core is terabytes of shadow)."""
        return privhttpd.core_pattern().startswith(("core", "%")) and not SANITIZED

    def _core_backtrace(self, h):
        self.wait_until(lambda: any(n.startswith("core") for n in os.listdir(h.core_dir)),
                        20, "a core in CoreDumpDirectory (core_pattern %r)"
                        % privhttpd.core_pattern())
        text = privhttpd.core_backtraces(h.core_dir, h.binary)
        self.assertIn("#0 ", text, "gdb reads the core")
        return text

    def test_a_crashed_child_is_reported_with_its_stack_and_leaves_a_core(self):
        h = self._crashing_server()
        child = h.children()[0]
        os.kill(child, signal.SIGSEGV)
        self.wait_until(lambda: "child pid %d exit signal Segmentation fault" % child
                        in h.log(), 20, "the parent to reap the child")
        line, stack = self._report(h, "a child (slot ")
        self.assertIsNotNone(line, h.log_tail())
        self.assertIn("[pid %d]" % child, line)
        self.assertIn("generation 0, sent by pid %d" % os.getpid(), line)
        self.assertGreater(len(stack), 3, "the stack's frames follow:\n" + h.log_tail())
        self.assertTrue(any("rp_child_main" in l for l in stack), stack)
        if self.cores_kept():
            self._core_backtrace(h)
        self.assertEqual(http_get(h.host, h.port, "/index.html").status, 200,
                         "another child serves its bucket")

    def test_a_crashed_parent_is_reported_and_the_runner_knows_how_it_ended(self):
        h = self._crashing_server()
        old = set(h.children())
        h.graceful()            # generation 1: the report names it
        # The new generation's two children, the old ones gone: the parent
        # logs its generation before it forks, and old children finishing
        # beside busy loops were still there at the crash (4 reports, not 2).
        parent = h.pid
        kids = self.wait_until(lambda: self._only_new_children(h, old), 20,
                               "generation 1's two children, generation 0's gone")
        os.kill(parent, signal.SIGSEGV)
        self.wait_gone([parent], 20, "the parent")
        line, stack = self._report(h, "the parent")
        self.assertIsNotNone(line, h.log_tail())
        self.assertIn("generation 1", line)
        self.assertTrue(any("rp_run" in l for l in stack), stack)
        ended = privhttpd.how_it_ended(parent)
        if self.cores_kept():
            self.assertEqual(ended, "killed by signal 11 (SIGSEGV), core dumped")
            self._core_backtrace(h)
        else:
            self.assertTrue(ended.startswith("killed by signal 11 (SIGSEGV)"), ended)
        # Its children learn that it is gone and leave (they would share the
        # port with the next server's sockets otherwise).
        h.pid = None
        self.wait_gone(kids, 20, "the orphaned children")
        for kid in kids:
            self.assertIn("exited with status 0", privhttpd.how_it_ended(kid))
        self.assertEqual(h.log().count("the parent (pid %d) is gone" % parent), len(kids),
                         h.log_tail())
        self.assertFalse(privhttpd.wait_for_port(h.host, h.port, 0.5), "nobody listens")
