"""What the soak's clients observed: successful requests counted per kind,
every failure and every keep-alive retry kept with its time, port and
error, and each answer for the deployed file judged fresh or stale against
the deploy log."""
import bisect
import collections
import threading


class DeployLog:
    """Versions of the deployed file with the (monotonic) time each rename
    returned.  Version 0 was there before the server started."""

    def __init__(self):
        self.lock = threading.Lock()
        self.times = [float("-inf")]

    def add(self, version, t):
        with self.lock:
            assert version == len(self.times)
            self.times.append(t)

    def version_at(self, t):
        """The newest version whose rename had returned by time t."""
        with self.lock:
            return bisect.bisect_right(self.times, t) - 1

    def deployed_at(self, version):
        with self.lock:
            return self.times[version] if version < len(self.times) else None

    def count(self):
        with self.lock:
            return len(self.times) - 1


class Recorder:
    """Thread-safe collection of outcomes.  Times are seconds since t0."""

    def __init__(self, t0, deploys, stale_delay):
        self.t0, self.deploys, self.stale_delay = t0, deploys, stale_delay
        self.lock = threading.Lock()
        self.ok = collections.Counter()
        # Kept-alive connections found closed by the server before a request
        # was sent on them (a new one was opened instead; not a failure).
        self.idle_closed = collections.Counter()
        self.failures = []
        self.retries = []
        self.stale = []
        # How long after a newer version's rename an older one was still
        # answered (requests sent within stale_delay): the measured delay.
        self.lags = []
        self.deploy_reads = 0

    def rel(self, t):
        return round(t - self.t0, 3)

    def success(self, kind):
        with self.lock:
            self.ok[kind] += 1

    def idle_close(self, kind):
        with self.lock:
            self.idle_closed[kind] += 1

    def failure(self, kind, what, t_start, t_end, port, error, got=0, reused=False):
        with self.lock:
            self.failures.append({
                "kind": kind, "what": what, "start": self.rel(t_start),
                "end": self.rel(t_end), "port": port, "error": str(error)[:300],
                "got": got, "reused": reused, "excused_by": None})

    def retry(self, kind, what, t_send, port, idle, error):
        """A request on a kept-alive connection that the server had closed
        (no response byte came back): sent again on a new connection, as
        HTTP clients do (RFC 9112 9.3.1)."""
        with self.lock:
            self.retries.append({"kind": kind, "what": what, "t": self.rel(t_send),
                                 "port": port, "idle": round(idle, 3),
                                 "error": str(error)[:200]})

    def deploy_read(self, kind, version, t_send):
        """Judge one answer for the deployed file (a complete, untorn body
        of `version`) requested at t_send; returns True if stale."""
        fresh_floor = self.deploys.version_at(t_send - self.stale_delay)
        newest = self.deploys.version_at(t_send)
        with self.lock:
            self.deploy_reads += 1
        if version >= newest:
            return False
        lag = t_send - self.deploys.deployed_at(version + 1)
        with self.lock:
            self.lags.append(lag)
            if version < fresh_floor:
                self.stale.append({"kind": kind, "t": self.rel(t_send), "got": version,
                                   "expected": fresh_floor, "lag": round(lag, 3)})
        return version < fresh_floor
