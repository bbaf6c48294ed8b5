"""Load generators: wrk (HTTP/1.1), h2load (HTTP/2) and openssl s_time
(a full TLS handshake per request), run in their own session (own
autogroup) with their CPU time taken from wait4()."""
import json
import os
import re
import socket
import subprocess
import tempfile
import time

from mpmng_py.bench import BENCH, procstat

WRK_LUA = os.path.join(BENCH, "wrk_report.lua")


# Connection modes: HTTP/1.1 keep-alive or a new connection per request,
# cleartext or over TLS; HTTP/2 cleartext (prior knowledge) or over TLS
# (h2load, ALPN h2).  TLS with a new connection per request comes twice:
# tls-close is wrk's, which resumes its TLS session on every new connection
# (a TLS 1.3 ticket: key exchange, no certificate), tls-new is openssl
# s_time -new, a full handshake each time (cN: N s_time processes).
MODES = ("ka", "close", "h2", "tls-ka", "tls-close", "tls-new", "h2s")
TOOLS = {"h2": "h2load", "h2s": "h2load", "tls-new": "s_time"}


class Workload:
    """name like ka-500B-c50: connection mode, file, concurrency, tool."""

    SIZES = {"500B": 500, "16K": 16 * 1024, "1M": 1024 * 1024}

    def __init__(self, mode, size, conns, tool="wrk", streams=1):
        self.mode, self.size, self.conns = mode, size, conns
        self.tool, self.streams = tool, streams
        self.path = "/%s.bin" % size
        self.close = mode in ("close", "tls-close", "tls-new")
        self.tls = mode in ("tls-ka", "tls-close", "tls-new", "h2s")
        self.h2 = mode in ("h2", "h2s")
        self.name = "%s-%s-c%d" % (mode, size, conns)
        if self.h2:
            self.name += "-m%d" % streams

    def __repr__(self):
        return self.name


def parse_workload(name):
    m = re.match(r"^(%s)-(500B|16K|1M)-c(\d+)(?:-m(\d+))?$" % "|".join(MODES), name)
    if not m:
        raise ValueError("bad workload name %r (want %s-500B|16K|1M-cN[-mM])" % (
            name, "|".join(MODES)))
    mode, size, c, s = m.groups()
    return Workload(mode, size, int(c), tool=TOOLS.get(mode, "wrk"), streams=int(s or 10))


def _spawn(args, nice=None):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, text=True)
    if nice is not None:
        procstat.set_autogroup_nice(p.pid, nice)
    return p


def _finish(p):
    """Read all output, then reap with wait4 to get the client's CPU time."""
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    cpu_ns = int((ru.ru_utime + ru.ru_stime) * 1e9)
    return out, err, cpu_ns


def start(wl, url_base, duration, nice=None, threads=1, timeout_s=5):
    """Start the client; returns a handle for finish()."""
    url = url_base + wl.path
    if wl.tool == "wrk":
        args = ["wrk", "-t%d" % threads, "-c%d" % wl.conns, "-d%ds" % max(1, round(duration)),
                "--timeout", "%ds" % timeout_s, "-s", WRK_LUA]
        if wl.close:
            args += ["-H", "Connection: close"]
        args.append(url)
        return _spawn(args, nice)
    if wl.tool == "s_time":
        return _start_s_time(wl, url_base, duration, nice)
    fd, logpath = tempfile.mkstemp(prefix="mpmng-h2load-", suffix=".log")
    os.close(fd)
    args = ["h2load", "-t%d" % threads, "-c%d" % wl.conns, "-m%d" % wl.streams,
            "-D%d" % max(1, round(duration)), "-T%d" % timeout_s,
            "--log-file=%s" % logpath, url]
    p = _spawn(args, nice)
    p.h2log = logpath
    return p


def start_script(url, conns, duration, script, threads=1, timeout_s=5):
    """wrk with a Lua script of the caller's (which must report as
    WRK_LUA does); finish() it as a wrk Workload."""
    return _spawn(["wrk", "-t%d" % threads, "-c%d" % conns,
                   "-d%ds" % max(1, round(duration)), "--timeout", "%ds" % timeout_s,
                   "-s", script, url])


class _Group:
    """Several client processes run as one (s_time is one connection at a
    time): their outputs and CPU times added up."""

    def __init__(self, procs):
        self.procs = procs
        self.t0 = time.monotonic()


def _start_s_time(wl, url_base, duration, nice):
    hostport = url_base.split("://", 1)[1]
    args = ["openssl", "s_time", "-connect", hostport, "-www", wl.path, "-new",
            "-time", str(max(1, round(duration)))]
    return _Group([_spawn(args, nice) for _ in range(wl.conns)])


def _finish_s_time(wl, g):
    """s_time prints "N connections in T real seconds, B bytes read per
    connection" (whole seconds: the wall time is ours); fewer bytes than
    the file is a failed run."""
    reqs = nbytes = cpu = 0
    bad = []
    for p in g.procs:
        out, err, c = _finish(p)
        cpu += c
        m = re.search(r"^(\d+) connections in \d+ real seconds, (\d+) bytes read per "
                      r"connection", out, re.M)
        if not m or p.returncode or int(m.group(2)) < Workload.SIZES[wl.size]:
            bad.append("rc %d: %s %s" % (p.returncode, out[-300:], err[-300:]))
            continue
        reqs += int(m.group(1))
        nbytes += int(m.group(1)) * int(m.group(2))
    if bad and not reqs:
        raise RuntimeError("s_time gave no result: " + " | ".join(bad))
    secs = time.monotonic() - g.t0
    return {"client_cpu_ns": cpu, "client_rc": 0, "duration_us": int(secs * 1e6),
            "requests": reqs, "bytes": nbytes, "err_connect": len(bad), "err_read": 0,
            "err_write": 0, "err_status": 0, "err_timeout": 0, "non2xx": 0,
            "errors": len(bad), "p50_us": "", "p75_us": "", "p90_us": "", "p99_us": "",
            "p999_us": "", "lat_mean_us": "", "lat_stdev_us": "", "lat_max_us": ""}


def finish(wl, p):
    if wl.tool == "s_time":
        return _finish_s_time(wl, p)
    out, err, cpu_ns = _finish(p)
    res = {"client_cpu_ns": cpu_ns, "client_rc": p.returncode}
    if wl.tool == "wrk":
        m = re.search(r"^WRKJSON (\{.*\})$", out, re.M)
        if not m:
            raise RuntimeError("wrk gave no result (rc %d): %s %s" % (p.returncode, out, err))
        d = json.loads(m.group(1))
        res.update(d)
        res["non2xx"] = d["err_status"]  # wrk counts status > 399
        res["errors"] = sum(d[k] for k in ("err_connect", "err_read", "err_write",
                                           "err_status", "err_timeout"))
    else:
        res.update(parse_h2load(out, err, p.returncode))
        try:
            res.update(h2load_log_stats(p.h2log))
        finally:
            os.unlink(p.h2log)
    return res


def h2load_log_stats(path):
    """Percentiles and status classes from h2load --log-file lines:
    start_us <TAB> status <TAB> duration_us."""
    lat, non2xx = [], 0
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3:
                continue
            st, d = int(parts[1]), int(parts[2])
            lat.append(d)
            if not 200 <= st < 300:
                non2xx += 1
    if not lat:
        return {}
    lat.sort()

    def pct(p):
        return lat[min(len(lat) - 1, int(p / 100.0 * len(lat)))]
    mean = sum(lat) / len(lat)
    sd = (sum((x - mean) ** 2 for x in lat) / len(lat)) ** 0.5
    return {"p50_us": pct(50), "p75_us": pct(75), "p90_us": pct(90), "p99_us": pct(99),
            "p999_us": pct(99.9), "lat_mean_us": mean, "lat_stdev_us": sd,
            "lat_max_us": lat[-1], "non2xx": non2xx, "err_status": non2xx}


def parse_h2load(out, err, rc):
    def num(pat, default=0, cast=float):
        m = re.search(pat, out, re.M)
        return cast(m.group(1)) if m else default
    done = num(r"requests: \d+ total, \d+ started, (\d+) done", cast=int)
    ok2 = num(r"status codes: (\d+) 2xx", cast=int)
    failed = num(r"requests: .* (\d+) failed", cast=int)
    errored = num(r"requests: .* (\d+) errored", cast=int)
    timeout = num(r"requests: .* (\d+) timeout", cast=int)
    secs = num(r"finished in ([\d.]+)s", 0.0)
    if not done and not secs:
        raise RuntimeError("h2load gave no result (rc %d): %s %s" % (rc, out, err))
    # "time for request:  min  max  mean  sd  +/- sd" with units
    m = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", out)

    def us(v):
        mm = re.match(r"([\d.]+)(us|ms|s)", v)
        if not mm:
            return 0.0
        return float(mm.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[mm.group(2)]
    mean = sd = mn = mx = 0.0
    if m:
        mn, mx, mean, sd = (us(x) for x in m.groups())
    return {"duration_us": int(secs * 1e6), "requests": done,
            "bytes": num(r"traffic: .*?\((\d+)\) total", cast=int),
            "err_connect": 0, "err_read": errored, "err_write": 0,
            "err_status": done - ok2, "err_timeout": timeout,
            "lat_mean_us": mean, "lat_stdev_us": sd, "lat_min_us": mn, "lat_max_us": mx,
            # h2load 1.52 prints no percentiles
            "p50_us": "", "p75_us": "", "p90_us": "", "p99_us": "", "p999_us": "",
            "non2xx": done - ok2, "errors": failed + timeout}


def probe(host, port, path, close=False, timeout=5):
    """One HTTP/1.1 request on a raw socket: (status, total response bytes).
    Used to check a server serves the file and to know what wrk's bytes per
    request should be."""
    req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n" % (
        path, host, port, "Connection: close\r\n" if close else ""))
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(req.encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        m = re.search(rb"\r\ncontent-length:\s*(\d+)", head, re.I)
        clen = int(m.group(1)) if m else 0
        while len(body) < clen:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            body += chunk
        return status, len(head) + 4 + clen
