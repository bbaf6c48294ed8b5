"""The profile part: where one request's server CPU goes.

One variant at a time, per workload: a run of wrk/h2load without the
profiler gives the server CPU per request (from /proc); a second run under
`perf record -g` on all server processes gives the shares.  The samples are
grouped into the stages of a request (flame.GROUPS: kernel TCP/IP, system
calls, wake-ups, request parsing, httpd's hooks, filters, pools, the MPM,
TLS, ...) and each share is turned into microseconds of that CPU per
request.  Writes profile.tsv, and per variant and workload a flame graph
(profile-<variant>-<workload>.svg) and the folded stacks (.folded)."""
import os
import shutil
import subprocess
import time

from mpmng_py.bench import flame, loadgen, procstat, servers

COLS = ["time", "variant", "workload", "requests", "cpu_us_per_req", "samples", "group",
        "group_samples", "share", "us_per_req"]
DEFAULT_WORKLOADS = ["ka-500B-c50", "close-500B-c50", "ka-1M-c50"]
DEFAULT_VARIANTS = ["reuseport+fhcache", "reuseport", "nginx", "h2o", "lighttpd"]


def pick(variants, explicit):
    if explicit:
        return [v for v in variants if v.name in explicit]
    return [v for v in variants if v.name in DEFAULT_VARIANTS]


def available():
    return shutil.which("perf") is not None


def _cpu_per_request(srv, wl, duration):
    before = procstat.tree_cpu_ns(srv.root_pid)
    res = loadgen.finish(wl, loadgen.start(wl, srv.url_for(wl), duration))
    used = procstat.tree_cpu_ns(srv.root_pid) - before
    reqs = res["requests"]
    return (used / 1e3 / reqs if reqs else 0.0), reqs


def _record(srv, wl, duration, data):
    """perf record over `duration` seconds of load; returns its exit code."""
    p = loadgen.start(wl, srv.url_for(wl), duration + 2)
    try:
        time.sleep(1)
        pids = ",".join(str(x) for x in srv.pids())
        rc = subprocess.run(["perf", "record", "-q", "-g", "-F", "999", "-p", pids,
                             "-o", data, "--", "sleep", str(duration)],
                            capture_output=True, timeout=duration + 60).returncode
    finally:
        loadgen.finish(wl, p)
    return rc


def _one(v, wl, args, docroot, outdir, tsv, log):
    srv = servers.make_server(v, "throughput", docroot, h2=wl.h2, tls=wl.tls)
    try:
        srv.start()
        srv.settle(timeout=120)
        loadgen.finish(wl, loadgen.start(wl, srv.url_for(wl), 1))     # warm up
        cpu, reqs = _cpu_per_request(srv, wl, args.duration)
        data = os.path.join(outdir, "perf-%s-%s.data" % (v.name, wl.name))
        rc = _record(srv, wl, args.duration, data)
    finally:
        srv.cleanup()
    stacks = flame.perf_script(data) if rc == 0 and os.path.exists(data) else []
    if not stacks:
        log("profile %s %s: perf recorded nothing (exit %s); left out" % (v.name, wl.name, rc))
        return
    base = os.path.join(outdir, "profile-%s-%s" % (v.name, wl.name))
    with open(base + ".folded", "w") as f:
        f.write("\n".join(flame.folded(stacks)) + "\n")
    with open(base + ".svg", "w") as f:
        f.write(flame.svg(stacks, "%s, %s: %.1f us of server CPU per request" % (
            v.name, wl.name, cpu)))
    os.unlink(data)
    total = len(stacks)
    top = []
    for group, n in flame.groups(stacks).most_common():
        share = n / total
        tsv.row({"time": time.strftime("%H:%M:%S"), "variant": v.name, "workload": wl.name,
                 "requests": reqs, "cpu_us_per_req": cpu, "samples": total, "group": group,
                 "group_samples": n, "share": share, "us_per_req": share * cpu})
        top.append("%s %.1f" % (group.split(" (")[0], share * cpu))
    log("profile %-18s %-15s %.1f us/req: %s" % (v.name, wl.name, cpu, ", ".join(top[:5])))


def run(args, variants, docroot, tsv, log):
    if not available():
        log("profile part skipped: perf not installed (linux-perf)")
        return
    outdir = os.path.dirname(os.path.abspath(tsv.f.name))
    wls = [loadgen.parse_workload(w) for w in args.profile_workloads]
    for v in variants:
        for wl in wls:
            try:
                _one(v, wl, args, docroot, outdir, tsv, log)
            except Exception as e:  # a variant that fails is reported, not fatal
                log("profile %s %s failed: %s" % (v.name, wl.name, str(e)[:400]))
