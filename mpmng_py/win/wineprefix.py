"""A private copy of the tests' wineprefix with its own persistent
wineserver, for tests that change the prefix (install services, unzip a
distribution into drive C:) so that nothing they do can reach the prefix
other tests use.  Wine's services.exe is booted with WINEDEBUG=+eventlog
and its output kept: Wine's ReportEvent only writes the event text there,
which is how tests see the event log."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from mpmng_py.win import winhttpd
from mpmng_py.win.winhttpd import WINE

WINESERVER = os.path.join(os.path.dirname(WINE), "wineserver")


class WinePrefix:
    """A private wineprefix copy with a persistent wineserver."""

    def __init__(self, tag="wnsvc"):
        self.dir = tempfile.mkdtemp(prefix=tag + "-")
        self.path = os.path.join(self.dir, "pfx")
        subprocess.run(["cp", "-a", winhttpd.PREFIX, self.path], check=True,
                       timeout=300)
        self.boot_log = os.path.join(self.dir, "services.log")
        self.env = {"WINEPREFIX": self.path}
        self.server = subprocess.Popen(
            [WINESERVER, "-p", "-f"], env=winhttpd.wine_env(self.env),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        # services.exe (and so every service) gets this environment and
        # this stderr: the service's event log entries end up in boot_log.
        with open(self.boot_log, "wb") as log:
            subprocess.run([WINE, "wineboot"], stdin=subprocess.DEVNULL,
                           stdout=log, stderr=log, timeout=300,
                           env=winhttpd.wine_env(dict(
                               self.env, WINEDEBUG="+eventlog")))

    def drive_c(self):
        return os.path.join(self.path, "drive_c")

    def run(self, *args, timeout=240):
        """(exit code, output) of a wine command.  Output goes through a
        file: a pipe could be held open by a process the command starts."""
        with tempfile.TemporaryFile() as out:
            r = subprocess.run([WINE] + list(args), stdin=subprocess.DEVNULL,
                               stdout=out, stderr=subprocess.STDOUT,
                               env=winhttpd.wine_env(self.env),
                               timeout=timeout)
            out.seek(0)
            return r.returncode, out.read().decode(errors="replace")

    def event_log(self):
        with open(self.boot_log, errors="replace") as f:
            return "".join(l for l in f if ":eventlog:" in l)

    def pids(self, needle=b""):
        """Linux pids of this prefix's processes (whose command line holds
        needle)."""
        return winhttpd.linux_pids(
            needle, b"WINEPREFIX=" + self.path.encode() + b"\0")

    def close(self):
        subprocess.run([WINESERVER, "-k"], env=winhttpd.wine_env(self.env),
                       timeout=60)
        try:
            self.server.wait(20)
        except subprocess.TimeoutExpired:
            pass
        for pid in self.pids() + [self.server.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_until(what, timeout=60, step=0.5):
    deadline = time.time() + timeout
    while True:
        try:
            v = what()
            if v:
                return v
        except (OSError, AssertionError, KeyError, ValueError, IndexError):
            pass
        if time.time() > deadline:
            return None
        time.sleep(step)
