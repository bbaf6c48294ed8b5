"""Processes the runner starts, tracked and ended by PID (a child
subreaper keeps the daemonised httpd in our process tree).
"""
import ctypes
import os
import signal
import subprocess
import time

from mpmng_py import privhttpd


class Reaper:
    """Tracks what we started and ends all of it, by PID."""

    def __init__(self):
        self.pidfiles = []
        self.managed = set()
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_CHILD_SUBREAPER = 36
        self.subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0

    def descendants(self):
        out, todo = [], [os.getpid()]
        while todo:
            kids = privhttpd.children_of(todo.pop())
            out += kids
            todo += kids
        return out

    def reap_zombies(self):
        """Reap orphans re-parented to us (httpd after it exits).  Children
        that subprocess.Popen waits for itself (self.managed) are left to
        it, so their exit status is not lost."""
        me = os.getpid()
        for pid, state, parent in privhttpd.processes():
            if pid in self.managed or state != "Z" or parent != me:
                continue
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass

    def stop_httpd(self, pidfile, timeout=15):
        """SIGTERM an httpd parent from its pidfile so it cleans up its
        children, scoreboard and sockets itself; wait for all of them."""
        try:
            with open(pidfile) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            return
        if not privhttpd.pid_alive(pid):
            return
        procs = [pid] + privhttpd.children_of(pid)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(privhttpd.pid_alive(p) for p in procs):
            self.reap_zombies()
            time.sleep(0.1)
        for p in procs:
            if privhttpd.pid_alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def stop_all(self):
        for pf in self.pidfiles:
            self.stop_httpd(pf)
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            pids = self.descendants()
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self.descendants():
                self.reap_zombies()
                time.sleep(0.1)
        self.reap_zombies()
        return self.descendants()


def on_signal(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(cmd, **kw)
