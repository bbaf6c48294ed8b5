#!/usr/bin/env python3
"""mpm-ng benchmark suite (`make bench`, or `python3 -m mpmng_py.bench`).

Parts (--part, comma separated; default all but profile, --quick: throughput):
  throughput  every variant up at once on its own 127.0.0.1 port; for each
              round, for each workload, every variant in turn, the order
              rotated each round (A,B,C / B,C,A / C,A,B ...).  wrk per run.
  idle        one variant at a time: hold 5,000 and 10,000 idle keep-alive
              connections (mpmng_py/holdconns.py), server memory and
              threads per connection.
  syscalls    one variant at a time: syscalls per request for the 500 B file
              (keep-alive and new connection per request), counted by
              bpftrace over the server's processes, idle window subtracted.
  restart     one variant at a time: new-connection and keep-alive load
              without reloads, then with 10 graceful restarts (nginx:
              reloads) in 20 s: failed requests, resets, p99 latency
              (mpmng_py/bench/restartbench.py).
  tls         as throughput, over TLS 1.3 (the same certificate everywhere,
              session caches on): HTTPS keep-alive and a handshake per
              request, HTTP/2 by h2load; reuseport with and without the
              cache, event, nginx, h2o.  Its rows join throughput's.
  profile     on demand (not in the default run): one variant at a time,
              where a request's server CPU goes: perf -g on the server,
              samples grouped into the stages of a request, microseconds
              per request per stage, a flame graph (SVG) per variant and
              workload (mpmng_py/bench/profilebench.py).
  slow        one variant at a time: keep-alive load alone, then beside
              2,000 slow clients (request heads trickling in, TLS handshakes
              never finished, readers of 1 MiB taking a byte a second), then
              beside all three at once (hostile: 5,000 + 5,000 + 1,000):
              req/s, p99, errors, threads, memory per slow connection
              (mpmng_py/bench/slowbench.py); `uploads` (bodies trickling
              in) when named.
  flood       one variant at a time: 16 keep-alive clients alone, then
              beside 50 clients opening a new connection per request:
              req/s and p99 of each (mpmng_py/bench/floodbench.py).
  uploads     one variant at a time (httpd variants): fast clients POSTing
              300 KB and 1 MB bodies: server CPU per request
              (mpmng_py/bench/uploadbench.py).

Results go to bench/results/<date-time>/ (raw TSVs, summary.md, PNG plots);
bench/results/latest points at the newest.  See docs/PERFORMANCE.md.
Benchmarks are not tests: nothing here passes or fails on numbers.
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from mpmng_py import ROOT, holdconns
from mpmng_py.bench import BENCH

PACKAGES = os.path.join(ROOT, "build", "packages", "bench.txt")

FULL_WORKLOADS = ["%s-%s-c%d" % (m, s, c) for s in ("500B", "16K", "1M")
                  for m in ("ka", "close") for c in (50, 500)]
QUICK_WORKLOADS = ["ka-500B-c50", "close-500B-c50", "ka-16K-c500"]
SYSCALL_WORKLOADS = ["ka-500B-c50", "close-500B-c50"]
TLS_WORKLOADS = ["tls-ka-500B-c50", "tls-ka-16K-c50", "tls-ka-1M-c50", "tls-close-500B-c50",
                 "tls-new-500B-c4", "h2s-500B-c50-m10", "h2s-16K-c50-m10", "h2s-500B-c500-m1"]
TLS_VARIANTS = ["reuseport", "reuseport+fhcache", "event", "nginx", "h2o"]

RAW_COLS = [
    "time", "round", "seq", "variant", "workload", "mode", "size", "conns", "tool",
    "duration_s", "requests", "rps", "bytes_per_req", "expected_bytes",
    "lat_mean_us", "lat_stdev_us", "p50_us", "p75_us", "p90_us", "p99_us", "p999_us",
    "lat_max_us", "err_connect", "err_read", "err_write", "err_timeout", "non2xx",
    "errors", "server_cpu_s", "server_cpu_us_per_req", "client_cpu_s",
    "server_share", "client_share", "softirq_share", "steal_share", "other_share",
    "idle_share", "rss_kb", "pss_kb", "procs", "threads", "child_cov", "local_share",
    "noisy", "note"]
IDLE_COLS = [
    "time", "variant", "target", "held", "failed", "alive", "open_secs",
    "rss_kb", "pss_kb", "procs", "threads", "pss_per_conn_kb", "dpss_per_conn_kb",
    "drss_per_conn_kb", "threads_per_conn", "idle_cpu_ms_per_s",
    "memavail_drop_kb", "tcp_mem_pages", "note"]
SYS_COLS = ["time", "variant", "workload", "requests", "window_s", "idle_window_s",
            "syscall", "load_count", "idle_count", "per_req"]


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


# ---------------------------------------------------------------- packages
def required_packages():
    with open(PACKAGES) as f:
        return [l.split("#")[0].strip() for l in f if l.split("#")[0].strip()]


def missing_packages(pkgs):
    miss = []
    for p in pkgs:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p],
                           capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            miss.append(p)
    return miss


def ensure_packages(install):
    miss = missing_packages(required_packages())
    if not miss:
        return
    if not install or os.geteuid() != 0:
        sys.exit("bench: missing Debian packages: %s\n  apt-get install -y %s" % (
            " ".join(miss), " ".join(miss)))
    log("installing " + " ".join(miss))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + miss
    if subprocess.run(cmd, env=env).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env)
        if subprocess.run(cmd, env=env).returncode != 0:
            sys.exit("bench: apt-get install failed for " + " ".join(miss))
    # Debian's nginx package may start the distribution's own nginx on port
    # 80 where an init system exists; that is not ours to touch, only noted.


# ---------------------------------------------------------------- helpers
def make_docroot():
    d = tempfile.mkdtemp(prefix="mpmng-bench-docroot-")
    os.chmod(d, 0o755)
    for name, size in (("500B", 500), ("16K", 16 * 1024), ("1M", 1024 * 1024)):
        block = bytes((i * 7 + 13) % 251 for i in range(4096))
        data = (block * (size // 4096 + 1))[:size]
        p = os.path.join(d, name + ".bin")
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, 0o644)
    return d


def fmt(v):
    if isinstance(v, float):
        return "%.6g" % v
    return str(v)


class Tsv:
    def __init__(self, path, cols, append=False):
        """append: add rows to a table an earlier part began."""
        self.cols = cols
        more = append and os.path.exists(path) and os.path.getsize(path) > 0
        self.f = open(path, "a" if more else "w")
        if not more:
            self.f.write("\t".join(cols) + "\n")
        self.f.flush()

    def row(self, d):
        self.f.write("\t".join(fmt(d.get(c, "")) for c in self.cols) + "\n")
        self.f.flush()

    def close(self):
        self.f.close()


def machine_info():
    info = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "host": platform.node(), "kernel": platform.release(),
            "ncpu": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info["mem_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    try:
        with open("/etc/debian_version") as f:
            info["debian"] = f.read().strip()
    except OSError:
        pass

    def ver(cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return ""
    info["apache2"] = ver(["/usr/sbin/apache2", "-v"])
    info["nginx"] = ver(["/usr/sbin/nginx", "-v"])
    info["wrk"] = ver(["wrk", "-v"])
    info["h2load"] = ver(["h2load", "--version"])
    info["bpftrace"] = ver(["bpftrace", "--version"])
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            info["autogroup"] = f.read().strip()
    except OSError:
        pass
    try:
        r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                           capture_output=True, text=True)
        info["git"] = r.stdout.strip() or "(no commit)"
    except OSError:
        pass
    return info


def pick_variants(args):
    from mpmng_py.bench import variants
    allv = variants.load_all()
    chosen = [v for v in allv if not v.named_only]
    if args.variants:
        want = args.variants.split(",")
        unknown = [w for w in want if w not in [v.name for v in allv]]
        if unknown:
            sys.exit("bench: unknown variant(s) %s; have: %s" % (
                ", ".join(unknown), ", ".join(v.name for v in allv)))
        chosen = [v for v in allv if v.name in want]
    if args.baseline:
        chosen = with_baseline(chosen, args.baseline)
    if args.httpd:
        chosen = with_httpds(chosen, args.httpd)
    ok, skipped = [], []
    for v in chosen:
        miss = v.missing()
        if miss:
            skipped.append((v.name, "missing " + ", ".join(miss)))
            if "+" not in v.name or args.variants:
                log("note: skipping variant %s: %s does not exist (yet)" % (
                    v.name, ", ".join(miss)))
        else:
            ok.append(v)
    hidden = {}
    for n, why in skipped:
        if "+" in n and not args.variants:
            hidden.setdefault(n.split("+", 1)[1], []).append(n)
    for addon, names in sorted(hidden.items()):
        log("note: skipping %d +%s variants: its module is not built yet" % (
            len(names), addon))
    return ok, skipped


def with_baseline(chosen, out_dir):
    """Each variant that loads our modules, followed by its twin loading
    them from out_dir (<name>@base)."""
    out_dir = os.path.abspath(out_dir)
    if not os.path.isdir(out_dir):
        sys.exit("bench: --baseline %s: not a directory (make OUT=DIR all)" % out_dir)
    both = []
    for v in chosen:
        both.append(v)
        if v.uses_our_build():
            both.append(v.with_build(out_dir, "base"))
    return both


def httpd_label(prefix):
    """2.4.N of the httpd in prefix (bin/httpd -v)."""
    from mpmng_py import privhttpd
    binary = os.path.join(prefix, "bin", "httpd")
    if not os.path.exists(binary):
        sys.exit("bench: --httpd %s: no bin/httpd there (an httpd install prefix, e.g. "
                 "from build/compat/build-httpd.sh)" % prefix)
    return ".".join(map(str, privhttpd.httpd_version(binary)))


def our_build_for(prefix, label):
    """Our modules built with that httpd's apxs: out/compat/<label>/ (what
    make compat builds), built now if missing."""
    out_dir = os.path.join(ROOT, "out", "compat", label)
    if not os.path.exists(os.path.join(out_dir, "mod_mpm_reuseport.so")):
        log("bench: building our modules for httpd %s into %s" % (label, out_dir))
        subprocess.run(["make", "-s", "APXS=" + os.path.join(prefix, "bin", "apxs"),
                        "OUT=" + out_dir, "all"], cwd=ROOT, check=True)
    return out_dir


def with_httpds(chosen, prefixes):
    """Each httpd variant, followed by its twins on the other httpd builds
    (<name>@<version>): each release's mpm_event beside mpm_reuseport."""
    twins = []
    for prefix in prefixes:
        prefix = os.path.abspath(prefix)
        label = httpd_label(prefix)
        twins.append((prefix, label, our_build_for(prefix, label)))
    out = []
    for v in chosen:
        out.append(v)
        if v.kind == "httpd":
            out += [v.with_httpd(prefix, label, d) for prefix, label, d in twins]
    return out


# ---------------------------------------------------------------- throughput
def mpm_events(srv):
    """mpm_reuseport's warnings and notices about buckets (a child added for
    a stuck bucket, ...) from a server's error log: they explain a run."""
    h = getattr(srv, "h", None)
    if h is None:
        return []
    try:
        text = h.log()
    except OSError:
        return []
    return [l[:300] for l in text.splitlines() if "mpm_reuseport: bucket" in l][:20]


def reuseport_counters(srv):
    """mpm_reuseport's server-status numbers: {child pid: requests served},
    and (sampled, local) requests for the locality share; None for other
    servers or without an answer."""
    h = getattr(srv, "h", None)
    if h is None or srv.variant.meta.get("mpm") != "reuseport":
        return None
    try:
        st = h.status(timeout=5)
    except Exception:       # noqa: BLE001 (the run is reported without them)
        return None
    kids, sampled, local = {}, 0, 0
    for key, val in st.items():
        if re.match(r"ReusePortChild\d+$", key):
            f = val.split()
            kids[int(f[1])] = int(f[5])
        elif re.match(r"ReusePortBucket\d+Sampled$", key):
            sampled += int(val)
        elif re.match(r"ReusePortBucket\d+Local$", key):
            local += int(val)
    return kids, sampled, local


def fairness(before, after):
    """Coefficient of variation of the requests each child served between
    two counter snapshots, and the share of sampled requests served on
    their receiving CPU."""
    if not before or not after:
        return {}
    served = [n - before[0].get(pid, 0) for pid, n in after[0].items()]
    out = {}
    if len(served) > 1 and sum(served) > 0:
        mean = sum(served) / len(served)
        sd = (sum((x - mean) ** 2 for x in served) / len(served)) ** 0.5
        out["child_cov"] = round(sd / mean, 4)
    sampled = after[1] - before[1]
    if sampled > 0:
        out["local_share"] = round((after[2] - before[2]) / sampled, 4)
    return out


def measure_run(srv, wl, duration, nice, max_other):
    from mpmng_py.bench import loadgen, procstat
    counters0 = reuseport_counters(srv)
    pids = srv.pids()
    c0 = procstat.tree_cpu_ns(srv.root_pid, pids)
    s0 = procstat.system_cpu()
    t0 = time.monotonic()
    p = loadgen.start(wl, srv.url_for(wl), duration, nice=nice)
    res = loadgen.finish(wl, p)
    t1 = time.monotonic()
    s1 = procstat.system_cpu()
    pids1 = srv.pids()
    c1 = procstat.tree_cpu_ns(srv.root_pid, sorted(set(pids) | set(pids1)))
    mem = procstat.tree_memory(srv.root_pid, pids1)
    server_ns = c1 - c0
    split = procstat.cpu_split(s0, s1, server_ns, res["client_cpu_ns"], t1 - t0)
    secs = res["duration_us"] / 1e6 if res["duration_us"] else duration
    reqs = res["requests"]
    row = dict(res)
    row.update(split)
    row.update(mem)
    row.update(fairness(counters0, reuseport_counters(srv)))
    row.update({
        "duration_s": round(secs, 3), "rps": reqs / secs if secs else 0,
        "bytes_per_req": res["bytes"] / reqs if reqs else 0,
        "server_cpu_s": server_ns / 1e9,
        "server_cpu_us_per_req": server_ns / 1e3 / reqs if reqs else "",
        "client_cpu_s": res["client_cpu_ns"] / 1e9,
    })
    noisy = []
    if split["other_share"] > max_other:
        noisy.append("other")
    if split["steal_share"] > max_other:
        noisy.append("steal")
    row["noisy"] = ",".join(noisy) if noisy else "0"
    return row


def part_throughput(args, variants_, docroot, outdir, info, workloads=None):
    from mpmng_py.bench import loadgen, servers
    wls = [loadgen.parse_workload(w) for w in workloads or args.workloads]
    tsv = Tsv(os.path.join(outdir, "raw.tsv"), RAW_COLS, append=True)
    running = []
    try:
        want_h2 = any(wl.h2 for wl in wls)
        want_tls = any(wl.tls for wl in wls)
        for v in variants_:
            h2 = want_h2 and v.meta.get("h2", "yes") != "no"
            if want_h2 and not h2:
                log("note: %s does not do HTTP/2; its h2 workloads are skipped" % v.name)
            srv = servers.make_server(v, "throughput", docroot, h2=h2, tls=want_tls)
            srv.h2 = h2
            try:
                srv.start()
                srv.settle(timeout=120)
            except Exception as e:  # a variant that cannot start is reported, not fatal
                log("variant %s failed to start, left out: %s" % (v.name, str(e)[:400]))
                srv.cleanup()
                continue
            if args.nice is not None:
                from mpmng_py.bench import procstat
                procstat.set_autogroup_nice(srv.root_pid, args.nice)
            running.append((v, srv))
            log("started %-16s pid %d port %d" % (v.name, srv.root_pid, srv.port))
        if not running:
            log("no variant could start; throughput part skipped")
            return
        # What a correct response looks like, per variant and workload.
        expected = {}
        for v, srv in running:
            for wl in wls:
                if wl.tool != "wrk":
                    continue
                st, nbytes = loadgen.probe(srv.host, srv.port, wl.path, close=wl.close)
                if st != 200:
                    raise RuntimeError("%s answered %d for %s" % (v.name, st, wl.path))
                expected[(v.name, wl.name)] = nbytes
        n = len(running)
        total = args.rounds * len(wls) * n
        secs = total * (args.duration + 0.6) + args.warmup * (
            total if args.warmup_every else len(wls) * n)
        log("throughput: %d rounds x %d workloads x %d variants = %d runs, ~%.0f min" % (
            args.rounds, len(wls), n, total, secs / 60))
        seq = 0
        for r in range(args.rounds):
            order = running[r % n:] + running[:r % n]
            log("round %d order: %s" % (r + 1, ", ".join(v.name for v, _ in order)))
            for wl in wls:
                for v, srv in order:
                    if wl.h2 and not srv.h2:
                        continue
                    seq += 1
                    if args.warmup > 0 and (r == 0 or args.warmup_every):
                        try:
                            p = loadgen.start(wl, srv.url_for(wl), args.warmup, nice=args.nice)
                            loadgen.finish(wl, p)
                        except Exception as e:
                            log("warm-up %s %s failed: %s" % (v.name, wl.name, str(e)[:200]))
                    try:
                        row = measure_run(srv, wl, args.duration, args.nice, args.max_other)
                    except Exception as e:
                        log("run %s %s failed: %s" % (v.name, wl.name, e))
                        row = {"note": "failed: %s" % str(e)[:200], "noisy": "fail"}
                    exp = expected.get((v.name, wl.name), "")
                    row.update({"time": time.strftime("%H:%M:%S"), "round": r + 1,
                                "seq": seq, "variant": v.name, "workload": wl.name,
                                "mode": wl.mode, "size": wl.size, "conns": wl.conns,
                                "tool": wl.tool, "expected_bytes": exp})
                    if exp and row.get("bytes_per_req") and \
                            abs(row["bytes_per_req"] - exp) > 0.05 * exp:
                        row["note"] = (row.get("note", "") + " bytes/request %.0f != %d" % (
                            row["bytes_per_req"], exp)).strip()
                    tsv.row(row)
                    log("r%d %-15s %-16s %9.0f req/s  cpu %6.1f us/req  p99 %7.2f ms  "
                        "err %s  other %.2f%s" % (
                            r + 1, wl.name, v.name, row.get("rps", 0) or 0,
                            row.get("server_cpu_us_per_req") or 0,
                            (row.get("p99_us") or 0) / 1000.0, row.get("errors", "?"),
                            row.get("other_share", 0) or 0,
                            "  NOISY" if row.get("noisy") not in ("0", None) else ""))
    finally:
        for v, srv in running:
            left = srv.stop()
            if left:
                log("%s: killed leftover pids %s" % (v.name, left))
            for line in mpm_events(srv):
                log("%s error log: %s" % (v.name, line))
            srv.cleanup()
        tsv.close()


# ---------------------------------------------------------------- idle
def part_idle(args, variants_, docroot, outdir, info):
    from mpmng_py.bench import procstat, servers
    tsv = Tsv(os.path.join(outdir, "idle.tsv"), IDLE_COLS)
    levels = sorted(args.idle_conns)
    try:
        for v in variants_:
            if v.name.split("+")[0] == "prefork" and levels[-1] > args.prefork_max_idle:
                lv = [n for n in levels if n <= args.prefork_max_idle]
                log("idle %s: limited to %s connections (--prefork-max-idle)" % (v.name, lv))
            else:
                lv = levels
            if not lv:
                continue
            srv = servers.make_server(v, "idle", docroot)
            client = None
            try:
                t0 = time.monotonic()
                srv.start(timeout=300)
                m0 = srv.settle(timeout=300, quiet=2.0)
                log("idle %-16s started in %.1fs: %d procs, %d threads, PSS %.1f MB" % (
                    v.name, time.monotonic() - t0, m0["procs"], m0["threads"],
                    m0["pss_kb"] / 1024))
                avail0 = procstat.meminfo_kb("MemAvailable")
                row0 = dict(m0, time=time.strftime("%H:%M:%S"), variant=v.name, target=0,
                            held=0, failed=0, alive=0,
                            idle_cpu_ms_per_s=idle_cpu(srv, args.idle_window),
                            tcp_mem_pages=procstat.sockstat_tcp_mem_pages())
                tsv.row(row0)
                client = subprocess.Popen(
                    [sys.executable, holdconns.__file__,
                     srv.host, str(srv.port), "/500B.bin"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                    start_new_session=True)
                for n in lv:
                    client.stdin.write("open %d\n" % n)
                    client.stdin.flush()
                    ans = client.stdout.readline().split()
                    got = dict(kv.split("=") for kv in ans[1:]) if ans and ans[0] == "OK" else {}
                    time.sleep(2)
                    m = procstat.tree_memory(srv.root_pid)
                    cpu = idle_cpu(srv, args.idle_window)
                    client.stdin.write("check\n")
                    client.stdin.flush()
                    alive = int(client.stdout.readline().split()[1])
                    held = int(got.get("held", 0))
                    row = dict(m)
                    row.update({
                        "time": time.strftime("%H:%M:%S"), "variant": v.name, "target": n,
                        "held": held, "failed": got.get("failed", "?"), "alive": alive,
                        "open_secs": got.get("secs", ""),
                        "pss_per_conn_kb": m["pss_kb"] / n,
                        "dpss_per_conn_kb": (m["pss_kb"] - m0["pss_kb"]) / n,
                        "drss_per_conn_kb": (m["rss_kb"] - m0["rss_kb"]) / n,
                        "threads_per_conn": m["threads"] / n,
                        "idle_cpu_ms_per_s": cpu,
                        "memavail_drop_kb": avail0 - procstat.meminfo_kb("MemAvailable"),
                        "tcp_mem_pages": procstat.sockstat_tcp_mem_pages()})
                    if alive < n:
                        row["note"] = "%d of %d connections not held" % (n - alive, n)
                    tsv.row(row)
                    log("idle %-16s %5d conns: held %d alive %d, PSS %.1f MB (%.1f KiB/conn, "
                        "+%.1f KiB/conn), %d procs %d threads, %.1f ms CPU/s" % (
                            v.name, n, held, alive, m["pss_kb"] / 1024, row["pss_per_conn_kb"],
                            row["dpss_per_conn_kb"], m["procs"], m["threads"], cpu))
            except Exception as e:
                log("idle %s failed: %s" % (v.name, str(e)[:400]))
                tsv.row({"time": time.strftime("%H:%M:%S"), "variant": v.name,
                         "note": "failed: %s" % str(e)[:200]})
            finally:
                if client:
                    try:
                        client.stdin.write("quit\n")
                        client.stdin.flush()
                        client.wait(timeout=60)
                    except (OSError, subprocess.TimeoutExpired):
                        client.kill()
                        client.wait()
                srv.cleanup()
    finally:
        tsv.close()


def idle_cpu(srv, window):
    """Server CPU in ms per second while nothing is asked of it."""
    from mpmng_py.bench import procstat
    pids = srv.pids()
    c0 = procstat.tree_cpu_ns(srv.root_pid, pids)
    time.sleep(window)
    c1 = procstat.tree_cpu_ns(srv.root_pid, pids)
    return (c1 - c0) / 1e6 / window


# ---------------------------------------------------------------- restart, slow
def part_tls(args, variants_, docroot, outdir, info):
    part_throughput(args, variants_, docroot, outdir, info, workloads=args.tls_workloads)


def explicit_variants(args):
    """The variants named with --variants, with their @base twins."""
    names = args.variants.split(",") if args.variants else []
    labels = (["base"] if args.baseline else []) + [httpd_label(p) for p in args.httpd]
    return names + ["%s@%s" % (n, l) for n in names for l in labels]


def run_part_module(mod, tsv_name, args, variants_, docroot, outdir):
    """A part kept in a module of its own (COLS, pick, run): its variants
    and its TSV."""
    explicit = explicit_variants(args)
    tsv = Tsv(os.path.join(outdir, tsv_name), mod.COLS)
    try:
        mod.run(args, mod.pick(variants_, explicit), docroot, tsv, log)
    finally:
        tsv.close()


def part_app(args, variants_, docroot, outdir, info):
    from mpmng_py.bench import appbench
    run_part_module(appbench, "app.tsv", args, variants_, docroot, outdir)


def part_restart(args, variants_, docroot, outdir, info):
    from mpmng_py.bench import restartbench
    run_part_module(restartbench, "restart.tsv", args, variants_, docroot, outdir)


def part_slow(args, variants_, docroot, outdir, info):
    from mpmng_py.bench import slowbench
    run_part_module(slowbench, "slow.tsv", args, variants_, docroot, outdir)


def part_flood(args, variants_, docroot, outdir, info):
    from mpmng_py.bench import floodbench
    run_part_module(floodbench, "flood.tsv", args, variants_, docroot, outdir)


def part_uploads(args, variants_, docroot, outdir, info):
    from mpmng_py.bench import uploadbench
    run_part_module(uploadbench, "uploads.tsv", args, variants_, docroot, outdir)


# ---------------------------------------------------------------- syscalls
def part_profile(args, variants_, docroot, outdir, info):
    from mpmng_py.bench import profilebench
    run_part_module(profilebench, "profile.tsv", args, variants_, docroot, outdir)


def part_syscalls(args, variants_, docroot, outdir, info):
    from mpmng_py.bench import loadgen, servers, syscalls
    if not syscalls.available():
        log("syscalls part skipped: bpftrace not installed")
        return
    if os.geteuid() != 0:
        log("syscalls part skipped: bpftrace needs root")
        return
    tsv = Tsv(os.path.join(outdir, "syscalls.tsv"), SYS_COLS)
    names = (args.sys_workloads.split(",") if args.sys_workloads
             else SYSCALL_WORKLOADS)
    wls = [loadgen.parse_workload(w) for w in names]
    try:
        for v in variants_:
            ctr = None
            h2 = any(wl.h2 for wl in wls) and v.meta.get("h2", "yes") != "no"
            srv = servers.make_server(v, "syscalls", docroot, h2=h2,
                                      tls=any(wl.tls for wl in wls))
            try:
                srv.start()
                srv.settle(timeout=120)
                for wl in wls:   # warm up: every child has served something
                    loadgen.finish(wl, loadgen.start(wl, srv.url_for(wl), 1))
                time.sleep(0.5)
                ctr = syscalls.Counter(srv.root_pid)
                time.sleep(args.sys_duration)
                idle_s, idle_counts, idle_total = ctr.stop()
                for wl in wls:
                    ctr = syscalls.Counter(srv.root_pid)
                    res = loadgen.finish(wl, loadgen.start(wl, srv.url_for(wl),
                                                           args.sys_duration))
                    secs, counts, total = ctr.stop()
                    ctr = None
                    reqs = res["requests"]
                    scale = secs / idle_s if idle_s else 0
                    names = sorted(set(counts) | set(idle_counts))
                    per_total = 0.0
                    for nm in names:
                        c, ic = counts.get(nm, 0), idle_counts.get(nm, 0)
                        per = (c - ic * scale) / reqs if reqs else 0
                        per_total += per
                        tsv.row({"time": time.strftime("%H:%M:%S"), "variant": v.name,
                                 "workload": wl.name, "requests": reqs,
                                 "window_s": round(secs, 3), "idle_window_s": round(idle_s, 3),
                                 "syscall": nm, "load_count": c, "idle_count": ic,
                                 "per_req": per})
                    tsv.row({"time": time.strftime("%H:%M:%S"), "variant": v.name,
                             "workload": wl.name, "requests": reqs, "window_s": round(secs, 3),
                             "idle_window_s": round(idle_s, 3), "syscall": "TOTAL",
                             "load_count": total, "idle_count": idle_total,
                             "per_req": per_total})
                    top = sorted(((counts.get(nm, 0) - idle_counts.get(nm, 0) * scale, nm)
                                  for nm in names), reverse=True)[:6]
                    log("syscalls %-16s %-15s %6d req: %.2f/req (%s)" % (
                        v.name, wl.name, reqs, per_total,
                        ", ".join("%s %.2f" % (nm, c / reqs) for c, nm in top if reqs)))
            except Exception as e:
                log("syscalls %s failed: %s" % (v.name, str(e)[:400]))
            finally:
                if ctr is not None and ctr.p.poll() is None:
                    ctr.p.kill()   # our bpftrace, by its PID
                    ctr.p.wait()
                srv.cleanup()
    finally:
        tsv.close()


# ---------------------------------------------------------------- main
def parse_mix(text, quick):
    """--hostile-mix "heads=5000,readers=5000,handshakes=1000" -> {kind: n}."""
    from mpmng_py.bench import slowbench
    if not text:
        return dict(slowbench.HOSTILE_MIX_QUICK if quick else slowbench.HOSTILE_MIX)
    mix = {}
    for item in text.split(","):
        kind, _, n = item.partition("=")
        if kind not in slowbench.SLOW_KINDS or not n.isdigit() or int(n) < 1:
            sys.exit("bench: --hostile-mix wants KIND=N,... with KIND one of %s, got %r"
                     % (",".join(slowbench.SLOW_KINDS), item))
        mix[kind] = int(n)
    return mix


def main():
    ap = argparse.ArgumentParser(
        prog="python3 -m mpmng_py.bench",
        description="mpm-ng benchmarks on loopback (see docs/PERFORMANCE.md)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--quick", action="store_true",
                    help="throughput part only, 3 workloads, 2 s runs, 3 rounds (~4-5 min); "
                    "with --part idle,syscalls too: 2,000 idle connections, 1 s syscall windows")
    ap.add_argument("--part", help="comma list of throughput,idle,syscalls,restart,tls,slow,"
                    "flood,uploads,profile,app "
                    "(default: all but profile and app; --quick: throughput)")
    ap.add_argument("--variants", help="comma list of variant names (default: all available)")
    ap.add_argument("--baseline", metavar="DIR",
                    help="another build of our modules (make OUT=DIR all, e.g. of HEAD): each "
                    "variant using them runs beside <name>@base loading them from DIR")
    ap.add_argument("--httpd", action="append", default=[], metavar="PREFIX",
                    help="another httpd build (PREFIX/bin/httpd, PREFIX/modules; e.g. an "
                    "older release from build/compat/build-httpd.sh): each httpd variant runs "
                    "beside <name>@<version> on it, our modules built with its apxs; repeatable")
    ap.add_argument("--workloads", help="comma list, e.g. ka-500B-c50,close-1M-c500,"
                    "h2-16K-c50-m10 (default: all 12 HTTP/1.1 ones)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 3)")
    ap.add_argument("--duration", type=int, help="seconds per measured run (default 2; "
                    "wrk takes whole seconds)")
    ap.add_argument("--warmup", type=int, help="seconds of unrecorded load before each "
                    "variant's first run of a workload (default 1; 0 = none)")
    ap.add_argument("--warmup-every", action="store_true",
                    help="warm up before every run, not only in the first round")
    ap.add_argument("--idle-conns", help="comma list of held connection counts "
                    "(default 5000,10000)")
    ap.add_argument("--prefork-max-idle", type=int, default=10000,
                    help="cap for prefork's held connections (one process each)")
    ap.add_argument("--idle-window", type=float,
                    help="seconds over which idle server CPU is measured (default 2, quick 1)")
    ap.add_argument("--sys-workloads",
                    help="comma list of workloads for the syscalls part "
                    "(default: %s)" % ",".join(SYSCALL_WORKLOADS))
    ap.add_argument("--profile-workloads",
                    help="comma list for the profile part (default: "
                    "ka-500B-c50,close-500B-c50,ka-1M-c50)")
    ap.add_argument("--tls-workloads",
                    help="comma list for the tls part (default: %s)" % ",".join(TLS_WORKLOADS))
    ap.add_argument("--sys-duration", type=int, help="seconds per syscall window (default 3)")
    ap.add_argument("--slow-conns", type=int, help="slow clients in the slow part "
                    "(default 2000, quick 500)")
    ap.add_argument("--slow-scenarios", default="heads,handshakes,readers,hostile",
                    help="comma list for the slow part (default heads,handshakes,readers,"
                    "hostile; also: uploads)")
    ap.add_argument("--upload-mb", type=float, default=1000,
                    help="MB of request bodies per run in the uploads part (default 1000)")
    ap.add_argument("--app-seconds", type=int, default=12,
                    help="app part: seconds per run (default 12)")
    ap.add_argument("--app-files", type=int, default=100,
                    help="app part: static files (default 100)")
    ap.add_argument("--app-file-kb", type=int, default=500,
                    help="app part: KiB per static file (default 500)")
    ap.add_argument("--app-php-share", type=int, default=20,
                    help="app part: percent of requests for the PHP page (default 20)")
    ap.add_argument("--app-php-loops", type=int, default=4000,
                    help="app part: md5 rounds of the PHP page (default 4000, about 1 ms)")
    ap.add_argument("--app-fpm-children", type=int, default=16,
                    help="app part: php-fpm children, pm static (default 16)")
    ap.add_argument("--hostile-mix", help="slow connections of each kind in the slow part's "
                    "hostile scenario (default heads=5000,readers=5000,handshakes=1000; "
                    "quick a tenth)")
    ap.add_argument("--max-other", type=float, default=0.10,
                    help="a run is NOISY when other processes (or steal) used more than "
                    "this share of the machine (default 0.10 = 10%% of all cores)")
    ap.add_argument("--nice", type=int, help="autogroup niceness for server and client "
                    "(e.g. -5 to hold off other load; default: leave alone)")
    ap.add_argument("--out", help="results directory (default bench/results/<date-time>)")
    ap.add_argument("--no-install", action="store_true",
                    help="do not apt-get install missing packages, just name them")
    ap.add_argument("--report-only", metavar="DIR",
                    help="only (re)make summary.md and plots from DIR's TSVs")
    ap.add_argument("--update-doc", action="store_true",
                    help="also copy the summary and plots into docs/PERFORMANCE.md")
    ap.add_argument("--list", action="store_true", help="list variants and workloads")
    args = ap.parse_args()

    from mpmng_py.bench import report
    if args.report_only:
        report.make(args.report_only, update_doc=args.update_doc)
        return 0

    q = args.quick
    args.workloads = args.workloads.split(",") if args.workloads else (
        QUICK_WORKLOADS if q else FULL_WORKLOADS)
    args.rounds = args.rounds or 3
    args.duration = max(1, args.duration or 2)
    args.warmup = args.warmup if args.warmup is not None else 1
    args.idle_conns = [int(x) for x in args.idle_conns.split(",")] if args.idle_conns else (
        [2000] if q else [5000, 10000])
    args.idle_window = args.idle_window or (1.0 if q else 2.0)
    args.sys_duration = max(1, args.sys_duration or (1 if q else 3))
    args.slow_conns = args.slow_conns or (500 if q else 2000)
    args.slow_scenarios = args.slow_scenarios.split(",")
    args.hostile_mix = parse_mix(args.hostile_mix, q)
    args.tls_workloads = args.tls_workloads.split(",") if args.tls_workloads else TLS_WORKLOADS
    args.profile_workloads = (args.profile_workloads.split(",") if args.profile_workloads
                              else ["ka-500B-c50", "close-500B-c50", "ka-1M-c50"])
    parts = (args.part or ("throughput" if q else
                           "throughput,idle,syscalls,restart,tls,slow,flood,uploads")).split(",")
    for p in parts:
        if p not in ("throughput", "idle", "syscalls", "restart", "tls", "slow", "flood",
                     "uploads", "profile", "app"):
            sys.exit("bench: unknown part %r" % p)
    from mpmng_py.bench import slowbench
    for s in args.slow_scenarios:
        if s not in slowbench.SCENARIOS:
            sys.exit("bench: unknown slow scenario %r" % s)
    from mpmng_py.bench import loadgen
    for w in args.workloads + args.tls_workloads + args.profile_workloads:
        loadgen.parse_workload(w)

    if args.list:
        from mpmng_py.bench import variants
        listed = variants.load_all()
        if args.httpd:
            listed = with_httpds(listed, args.httpd)
        for v in listed:
            miss = v.missing()
            print("%-22s %-6s %s%s" % (v.name, v.kind, v.description,
                                       "  [missing %s]" % " ".join(miss) if miss else ""))
        print("workloads:", " ".join(FULL_WORKLOADS), "(and h2-SIZE-cN-mM)")
        return 0

    ensure_packages(not args.no_install)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < 20000 and "idle" in parts and max(args.idle_conns) + 1000 > hard:
        log("note: fd hard limit %d is below what %d held connections need" % (
            hard, max(args.idle_conns)))
    if os.geteuid() != 0:
        log("note: not root: servers run as this user, syscalls part needs root")

    from mpmng_py.bench import variants
    variants.Variant.params = {"idle_max": max(args.idle_conns)}
    vs, skipped = pick_variants(args)
    if not vs:
        sys.exit("bench: no variant can run")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    outdir = args.out or os.path.join(BENCH, "results", stamp)
    os.makedirs(outdir, exist_ok=True)
    if not args.out:
        latest = os.path.join(BENCH, "results", "latest")
        if os.path.islink(latest) or not os.path.exists(latest):
            try:
                os.unlink(latest)
            except FileNotFoundError:
                pass
            os.symlink(stamp, latest)
    info = machine_info()
    info.update({
        "command": " ".join(["python3", "-m", "mpmng_py.bench"] + sys.argv[1:]),
        "parts": parts, "variants": [v.name for v in vs],
        "skipped": skipped, "workloads": args.workloads, "rounds": args.rounds,
        "duration": args.duration, "warmup": args.warmup, "warmup_every": args.warmup_every,
        "idle_conns": args.idle_conns, "sys_duration": args.sys_duration,
        "tls_workloads": args.tls_workloads,
        "slow_conns": args.slow_conns, "slow_scenarios": args.slow_scenarios,
        "hostile_mix": args.hostile_mix,
        "max_other": args.max_other, "nice": args.nice, "fd_limit": hard,
        "descriptions": {v.name: v.description for v in vs}})
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(info, f, indent=1)
    log("results -> %s" % outdir)
    log("variants: %s" % ", ".join(v.name for v in vs))

    explicit = explicit_variants(args)
    docroot = make_docroot()
    t_start = time.monotonic()
    times = {}
    # SIGTERM/SIGINT: the finally blocks stop our servers by PID.
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        for p, fn in (("throughput", part_throughput), ("idle", part_idle),
                      ("syscalls", part_syscalls), ("restart", part_restart),
                      ("tls", part_tls), ("slow", part_slow), ("flood", part_flood),
                      ("uploads", part_uploads),
                      ("profile", part_profile), ("app", part_app)):
            if p in parts:
                t = time.monotonic()
                log("== part %s ==" % p)
                pv = [v for v in vs if v.in_part(p) or v.name in explicit]
                if p == "tls" and not explicit:
                    pv = [v for v in vs if v.name in TLS_VARIANTS]
                fn(args, pv, docroot, outdir, info)
                times[p] = round(time.monotonic() - t)
    finally:
        shutil.rmtree(docroot, ignore_errors=True)
        info["part_seconds"] = times
        info["total_seconds"] = round(time.monotonic() - t_start)
        with open(os.path.join(outdir, "meta.json"), "w") as f:
            json.dump(info, f, indent=1)
    report.make(outdir, update_doc=args.update_doc)
    log("done in %.1f min: %s/summary.md" % ((time.monotonic() - t_start) / 60, outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
