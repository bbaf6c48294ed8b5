"""What happens to the server during the soak, each in its own thread:
a deploy of the versioned file by rename-over every few seconds, a
graceful restart (SIGUSR1) every minute (one in a shorter run), and now
and then a SIGKILL of one child, with the connections that child held
noted first (so that only requests in flight on them are excused)."""
import os
import random
import re
import signal
import subprocess
import threading
import time

from mpmng_py.soak import content, servers


class Events:
    """Thread-safe log of (time since t0, kind, detail) for the report."""

    def __init__(self, t0):
        self.t0 = t0
        self.lock = threading.Lock()
        self.rows = []

    def add(self, kind, detail="", t=None):
        t = time.monotonic() if t is None else t
        with self.lock:
            self.rows.append((round(t - self.t0, 3), kind, detail))

    def times(self, kind):
        with self.lock:
            return [t for t, k, _ in self.rows if k == kind]


class Periodic(threading.Thread):
    """Calls self.tick() at the times from self.schedule() (seconds after
    start) until stop is set."""

    def __init__(self, name, stop, t0):
        super().__init__(name=name, daemon=True)
        self.stop_ev, self.t0 = stop, t0

    def run(self):
        for at in self.schedule():
            if self.stop_ev.wait(max(0.0, self.t0 + at - time.monotonic())):
                return
            self.tick()


class Deployer(Periodic):
    """Writes version N to a temporary file and renames it over the served
    one (the atomic deploy every site does), logging when rename returned."""

    def __init__(self, stop, t0, h, deploys, every, seconds):
        super().__init__("deployer", stop, t0)
        self.path = os.path.join(h.docroot, content.DEPLOY_PATH.lstrip("/"))
        self.deploys, self.every, self.seconds = deploys, every, seconds

    def schedule(self):
        return [self.every * i for i in range(1, int(self.seconds / self.every) + 1)]

    def tick(self):
        version = self.deploys.count() + 1
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(content.deploy_body(version))
        os.chmod(tmp, 0o644)
        os.rename(tmp, self.path)
        self.deploys.add(version, time.monotonic())


class Restarter(Periodic):
    """SIGUSR1 to the parent every `every` seconds; waits for the new
    generation's "resuming normal operations" line."""

    def __init__(self, stop, t0, h, events, every, seconds):
        super().__init__("restarter", stop, t0)
        self.h, self.events, self.every, self.seconds = h, events, every, seconds
        self.failed = []
        # Children of the generations before the latest restart.
        self.old = set()

    def schedule(self):
        # Not in the last 5 s: the run ends with a settled generation.
        out = [self.every * i for i in range(1, int((self.seconds - 5) / self.every) + 1)]
        # At least one in every run of 10 s or more: make check-stress runs
        # the soak for a minute, and restarts are what a loaded machine breaks.
        return out or ([round(self.seconds / 2, 1)] if self.seconds >= 10 else [])

    def tick(self):
        self.old |= set(self.h.children())
        t = time.monotonic()
        self.events.add("restart", "SIGUSR1", t)
        try:
            self.h.graceful(timeout=30)
            self.events.add("restart-done", "%.0f ms" % ((time.monotonic() - t) * 1000))
        except RuntimeError as e:
            self.failed.append(str(e).splitlines()[0])
            self.events.add("restart-failed", str(e).splitlines()[0])


class Kill:
    def __init__(self, t, pid, ports):
        self.t, self.pid, self.ports = t, pid, ports
        self.replaced_after = None


class Killer(Periodic):
    """SIGKILLs a random serving child of the current generation at
    randomised times (mean `every` seconds, from the seed).  The child is
    stopped first (SIGSTOP: it accepts nothing more), its connections
    listed with ss, then killed; the parent must start a new child."""

    def __init__(self, stop, t0, h, events, every, seconds, seed, restarter):
        super().__init__("killer", stop, t0)
        self.h, self.events, self.restarter = h, events, restarter
        self.rnd = random.Random(seed)
        self.times = self._times(every, seconds)
        self.kills = []
        self.failed = []

    def _times(self, every, seconds):
        out, t = [], 0.0
        while True:
            t += self.rnd.uniform(0.5, 1.5) * every
            if t > seconds - 10:
                break
            out.append(round(t, 1))
        # At least one kill in every run, however short.
        return out or [round(self.rnd.uniform(0.3, 0.7) * seconds, 1)]

    def schedule(self):
        return self.times

    def current(self):
        return [p for p in servers.worker_children(self.h) if p not in self.restarter.old]

    def tick(self):
        # During a restart's first ~50 ms the new generation has no child yet.
        deadline = time.monotonic() + 5
        kids = self.current()
        while not kids and time.monotonic() < deadline:
            time.sleep(0.05)
            kids = self.current()
        if not kids:
            self.failed.append("no serving child of the current generation to kill")
            return
        pid = self.rnd.choice(kids)
        try:
            os.kill(pid, signal.SIGSTOP)
            wait_stopped(pid, 2.0)
            ports = held_ports(pid, (self.h.port, self.h.tls_port))
            t = time.monotonic()
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            self.events.add("kill-missed", "pid %d exited first" % pid)
            return
        k = Kill(t, pid, ports)
        self.kills.append(k)
        self.events.add("kill", "pid %d holding %d connections (client ports %s)"
                        % (pid, len(ports), " ".join(str(p) for p in sorted(ports))), t)
        self.wait_replaced(k, set(kids))

    def wait_replaced(self, k, before):
        """Until a new child of the current generation runs.  Where the
        parent had added children for a stuck bucket (the load or the
        SIGSTOP itself makes one), the killed one may have been such an
        extra: then it is replaced once the sizing's children remain."""
        extra = len(before) > servers.FRONT_CHILDREN
        while time.monotonic() < k.t + 10 and not self.stop_ev.is_set():
            now = set(self.current())
            if now - before or (extra and len(now) >= servers.FRONT_CHILDREN
                                and time.monotonic() > k.t + 5):
                k.replaced_after = time.monotonic() - k.t
                self.events.add("kill-replaced", "after %.2f s%s" % (
                    k.replaced_after, "" if now - before else " (an extra child)"))
                return
            time.sleep(0.02)
        if not self.stop_ev.is_set():
            self.failed.append("child %d not replaced within 10 s" % k.pid)


def wait_stopped(pid, timeout):
    """Until every thread of pid is stopped (SIGSTOP takes effect later)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        if states and all(s in "Tt" for s in states):
            return
        time.sleep(0.005)


_SS_ADDR = re.compile(r"127\.0\.0\.1:(\d+)\s+127\.0\.0\.1:(\d+)\s")


def held_ports(pid, server_ports):
    """Client ports of the connections (any state but LISTEN) that pid
    holds on the server's ports."""
    filt = "( %s )" % " or ".join("sport = :%d" % p for p in server_ports)
    out = subprocess.run(["ss", "-Htnp", filt], capture_output=True, text=True,
                         timeout=10).stdout
    ports = set()
    for line in out.splitlines():
        m = _SS_ADDR.search(line)
        pids = {int(p) for p in re.findall(r"\bpid=(\d+),", line)}
        if m and pid in pids and int(m.group(1)) in server_ports:
            ports.add(int(m.group(2)))
    return ports
