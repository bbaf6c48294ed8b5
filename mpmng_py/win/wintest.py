"""Helpers the Windows tests (test/win/test_*.py) share: payloads, wrk
runs and their checks, the Windows tools of test/win/tools/."""
import hashlib
import os
import re
import signal
import subprocess
import time
import unittest

from mpmng_py import ROOT
from mpmng_py.win.winhttpd import WINE, wine_env

TOOLS = os.path.join(ROOT, "test", "win", "tools")


# `python3 -m mpmng_py.win --short` (make check) sets this.
SHORT_ENV = "MPMNG_WIN_SHORT"


def short_run():
    """Whether this is make check's short run."""
    return os.environ.get(SHORT_ENV) == "1"


def long_test(why):
    """Marks a test that `make check` skips (`make win-check` runs it):
    `why` names the shorter test that covers the same ground."""
    def mark(fn):
        return unittest.skipIf(short_run(),
                               "long; make win-check runs it (%s)" % why)(fn)
    return mark


class WinTool:
    """A program of test/win/tools/ (NAME.c), cross-built into dir and run
    under the tests' wineserver, so what it does meets the server's
    Windows (sharing rules, the completion port's order)."""

    def __init__(self, name, dir):
        self.exe = os.path.join(dir, name + ".exe")
        subprocess.run(["x86_64-w64-mingw32-gcc", "-O2", "-Wall", "-o", self.exe,
                        os.path.join(TOOLS, name + ".c")], check=True)

    def run(self, *args, timeout=60):
        """The finished process (text output)."""
        return subprocess.run([WINE, self.exe] + [str(a) for a in args], env=wine_env(),
                              capture_output=True, text=True, errors="replace",
                              timeout=timeout)


def payload(n, seed):
    out = bytearray()
    block = hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:n])


def start_wrk(port, path="/small.txt", seconds=5, conns=16, close=False):
    cmd = ["wrk", "-t2", "-c%d" % conns, "-d%ds" % seconds, "--latency",
           "http://127.0.0.1:%d%s" % (port, path)]
    if close:
        cmd[1:1] = ["-H", "Connection: close"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wrk_result(proc, timeout):
    """(requests, socket errors, non-2xx answers, output) of a finished
    (or finishing) wrk."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    m = re.search(r"(\d+) requests in", out)
    if not m:
        raise AssertionError("wrk printed no result (rc %s): %s" % (proc.returncode, err))
    reqs = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", out)
    errors = sum(map(int, m.groups())) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    non2xx = int(m.group(1)) if m else 0
    return reqs, errors, non2xx, out


def wrk(port, path="/small.txt", seconds=5, conns=16, close=False):
    return wrk_result(start_wrk(port, path, seconds, conns, close), seconds + 60)


def under_load(port, during, conns=8, after=1.0, most=180):
    """Runs wrk twice at once, with a new connection per request and with
    keep-alive, from before during() starts until `after` seconds after it
    returns (wrk stops at SIGINT and reports), so that the load covers all
    of it however long a loaded machine makes it; returns
    {"close": wrk(...), "keepalive": wrk(...)}.  Fails if during() took
    more than `most` seconds."""
    procs = {k: start_wrk(port, seconds=most, conns=conns, close=k == "close")
             for k in ("close", "keepalive")}
    try:
        during()
        time.sleep(after)
        ended = [k for k, p in procs.items() if p.poll() is not None]
        if ended:
            raise AssertionError("the load (%s) ended before the test's actions did (%d s)"
                                 % (", ".join(ended), most))
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        results = {k: wrk_result(p, 60) for k, p in procs.items()}
    return results


def assert_no_failed_request(tc, results, label):
    for k, (reqs, errors, non2xx, out) in results.items():
        print("%s, %s: %d requests, %d errors, %d non-2xx"
              % (label, k, reqs, errors, non2xx))
        tc.assertGreater(reqs, 100, out)
        tc.assertEqual(non2xx, 0, k + "\n" + out)
        tc.assertEqual(errors, 0, k + "\n" + out)


def wait_for(cond, timeout, what, step=0.1):
    """cond()'s first true value within timeout seconds, else a failure
    naming what was waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(step)
    raise AssertionError("not within %d s: %s" % (timeout, what))
