"""Part `flood`: clients already connected, beside a flood of new connections.

For each variant, in interleaved rounds: wrk -t1 -c16 keep-alive for the
500 B file alone, then again beside a second wrk -t1 -c50 that opens a new
connection for every request (`Connection: close`, the same file).  A
server that keeps taking new connections while requests wait on the ones
it already has starves its kept-alive clients: their requests per second
fall far below the flood's and their p99 grows to seconds.

Recorded per run: the kept-alive clients' requests per second, p99 and
errors, alone and beside the flood; the flood's requests per second and
errors; and the server's CPU time per request beside the flood (both
clients' requests).  Nothing here passes or fails on numbers."""
import time

from mpmng_py.bench import loadgen, procstat
from mpmng_py.bench.variants import rotated

DEFAULT_VARIANTS = ("reuseport", "event", "nginx")
KEPT = "ka-500B-c16"
FLOOD = "close-500B-c50"
COLS = ["time", "round", "variant", "alone_rps", "alone_p99_ms", "alone_errors",
        "kept_rps", "kept_p99_ms", "kept_errors", "flood_rps", "flood_errors",
        "kept_share", "server_cpu_us_per_req", "note"]


def _rps(res, duration):
    secs = res["duration_us"] / 1e6 if res.get("duration_us") else duration
    return res["requests"] / secs if secs else 0


def _alone(srv, duration):
    wl = loadgen.parse_workload(KEPT)
    return loadgen.finish(wl, loadgen.start(wl, srv.url(""), duration))


def _beside(srv, duration):
    """Both clients at once; returns (kept, flood, server CPU ns)."""
    kept, flood = loadgen.parse_workload(KEPT), loadgen.parse_workload(FLOOD)
    pids = srv.pids()
    c0 = procstat.tree_cpu_ns(srv.root_pid, pids)
    pf = loadgen.start(flood, srv.url(""), duration)
    pk = loadgen.start(kept, srv.url(""), duration)
    rk = loadgen.finish(kept, pk)
    rf = loadgen.finish(flood, pf)
    c1 = procstat.tree_cpu_ns(srv.root_pid, sorted(set(pids) | set(srv.pids())))
    return rk, rf, c1 - c0


def _one(v, rnd, args, docroot, tsv, log):
    from mpmng_py.bench import servers
    srv = servers.make_server(v, "flood", docroot)
    row = {"time": time.strftime("%H:%M:%S"), "round": rnd, "variant": v.name}
    try:
        srv.start()
        srv.settle(timeout=120)
        _alone(srv, 1)                              # warm up
        alone = _alone(srv, args.duration)
        rk, rf, cpu_ns = _beside(srv, args.duration)
        kept_rps, flood_rps = _rps(rk, args.duration), _rps(rf, args.duration)
        both = rk["requests"] + rf["requests"]
        row.update({
            "alone_rps": _rps(alone, args.duration), "alone_p99_ms": alone["p99_us"] / 1e3,
            "alone_errors": alone["errors"], "kept_rps": kept_rps,
            "kept_p99_ms": rk["p99_us"] / 1e3, "kept_errors": rk["errors"],
            "flood_rps": flood_rps, "flood_errors": rf["errors"],
            "kept_share": kept_rps / (kept_rps + flood_rps) if kept_rps + flood_rps else 0,
            "server_cpu_us_per_req": cpu_ns / 1e3 / both if both else ""})
        log("flood r%d %-14s kept-alive %7.0f req/s alone, %7.0f beside %7.0f new "
            "(share %.2f), kept p99 %7.1f ms, errors %d/%d" % (
                rnd, v.name, row["alone_rps"], kept_rps, flood_rps, row["kept_share"],
                row["kept_p99_ms"], rk["errors"], rf["errors"]))
    except Exception as e:  # a failed run is recorded, the part goes on
        row["note"] = "failed: %s" % str(e)[:200]
        log("flood %s failed: %s" % (v.name, str(e)[:400]))
    finally:
        srv.cleanup()
    tsv.row(row)


def run(args, variants, docroot, tsv, log):
    for rnd in range(1, args.rounds + 1):
        for v in rotated(variants, rnd):
            _one(v, rnd, args, docroot, tsv, log)


def pick(variants, explicit):
    return [v for v in variants if v.name in DEFAULT_VARIANTS or v.name in explicit]
