"""Busy-loop processes beside a test run, as a loaded machine has them
(the CI run builds Windows libraries beside the suite): `with CpuHogs(2):`.

Each hog runs in its own session, so the kernel's autogroup scheduling
gives it a share of its own rather than a slice of the runner's.  The
hogs check that they really spin: a hog that is not burning CPU makes
CpuHogs.check() fail, so a stress run cannot pass without its stress."""
import os
import signal
import subprocess
import sys
import time

# A hog ends with the runner however the runner ends (a killed stress run
# left its hogs spinning): PR_SET_PDEATHSIG (1), then a check that the
# runner, argv[1], was not gone before that.
SPIN = ("import ctypes, os, signal, sys\n"
        "ctypes.CDLL(None).prctl(1, signal.SIGKILL)\n"
        "if os.getppid() != int(sys.argv[1]):\n"
        "    sys.exit(0)\n"
        "while True:\n"
        "    pass\n")


def cpu_seconds(pid):
    """utime + stime of pid in seconds (from /proc)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuHogs:
    def __init__(self, count):
        self.count = count
        self.procs = []
        self.t0 = None

    def __enter__(self):
        for _ in range(self.count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", SPIN, str(os.getpid())],
                                               start_new_session=True))
        self.t0 = time.monotonic()
        return self

    def check(self):
        """Raise unless every hog has used at least a quarter of a CPU
        since it started (they compete with the tests for the same cores)."""
        elapsed = time.monotonic() - self.t0
        for p in self.procs:
            used = cpu_seconds(p.pid)
            if p.poll() is not None or (elapsed > 2 and used < elapsed / 4):
                raise RuntimeError("cpu hog %d is not spinning: %.1fs of CPU in %.1fs"
                                   % (p.pid, used, elapsed))
        return elapsed

    def usage(self):
        """CPU seconds the hogs used so far."""
        return sum(cpu_seconds(p.pid) for p in self.procs if p.poll() is None)

    def __exit__(self, *exc):
        for p in self.procs:
            try:
                p.send_signal(signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        self.procs = []


def main(argv):
    """`python3 -m mpmng_py.cpuhogs K -- COMMAND ARGS...`: COMMAND's exit
    status, run beside K hogs (non-zero too if a hog did not spin)."""
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python3 -m mpmng_py.cpuhogs K -- COMMAND ARGS...", file=sys.stderr)
        return 2
    with CpuHogs(int(argv[0])) as hogs:
        rc = subprocess.call(argv[2:])
        elapsed = hogs.check()
        print("cpuhogs: %d hog(s) used %.0f CPU seconds in %.0f s" % (
            hogs.count, hogs.usage(), elapsed), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
