"""Part `slow`: normal clients beside many slow ones.

For each variant and scenario, in interleaved rounds: wrk -t1 -c50 keep-alive
for the 500 B file alone, then again beside COUNT slow clients that hold
their connections open (mpmng_py/slowclients.py):

  heads       a request head trickling in, one header line every 5 s
  handshakes  a TLS ClientHello and nothing more (the normal clients use
              HTTPS keep-alive too)
  readers     a GET for the 1 MiB file, then one byte read a second
  uploads     a POST of a 200 KB body to the 500 B file, 1 KB a second
              (httpd reads the body before it answers 405; nginx answers
              at once and discards the body as it comes); only when named
              (--slow-scenarios)

  hostile     all at once, as the issue's hostile load: --hostile-mix
              (default 5,000 trickling heads, 5,000 slow readers, 1,000
              stalled TLS handshakes); the normal clients use plain HTTP

httpd variants load mod_reqtimeout with its defaults here, as Debian's
apache2 does (it cuts slow heads after 20-40 s, longer than a run).

Recorded per run: the normal clients' requests per second, p99 and errors,
alone and beside the slow ones; the server's threads and memory (PSS)
before and after the slow clients connected, so the memory each slow
connection costs; and how many slow connections were still open at the end
(a server may shed them).  Nothing here passes or fails on numbers."""
import time

from mpmng_py.bench import loadgen, procstat
from mpmng_py.slowclients import SlowClients, raise_nofile
from mpmng_py.bench.variants import rotated

# Kinds of slow client: slowclients kind, pace, path, on the TLS port.
SLOW_KINDS = {
    "heads": {"kind": "headers", "interval": 5.0, "path": "/500B.bin", "tls": False},
    "handshakes": {"kind": "handshake", "interval": 5.0, "path": "/", "tls": True},
    "readers": {"kind": "readers", "interval": 1.0, "path": "/1M.bin", "tls": False},
    "uploads": {"kind": "body", "interval": 1.0, "path": "/500B.bin", "tls": False,
                "body": 200000, "chunk": 1000},
}
# Scenario -> (normal clients over TLS, slow kinds it opens).  A one-kind
# scenario opens --slow-conns of its kind; "hostile" opens --hostile-mix.
SCENARIOS = {
    "heads": (False, ("heads",)),
    "handshakes": (True, ("handshakes",)),
    "readers": (False, ("readers",)),
    "uploads": (False, ("uploads",)),
    "hostile": (False, ("heads", "readers", "handshakes")),
}
HOSTILE_MIX = {"heads": 5000, "readers": 5000, "handshakes": 1000}
HOSTILE_MIX_QUICK = {"heads": 500, "readers": 500, "handshakes": 100}
DEFAULT_VARIANTS = ("reuseport", "event", "nginx")
SETTLE_S = 2.0          # after the slow clients connected, before measuring

COLS = ["time", "round", "variant", "scenario", "slow", "slow_open", "slow_outcomes",
        "alone_rps", "alone_p99_ms", "alone_errors", "beside_rps", "beside_p99_ms",
        "beside_errors", "ratio", "threads_before", "threads_beside", "pss_before_kb",
        "pss_beside_kb", "dpss_per_slow_kb", "server_cpu_us_per_req", "note"]


def _wrk(srv, tls, duration):
    wl = loadgen.parse_workload("ka-500B-c50")
    base = ("https://%s:%d" % (srv.host, srv.tls_port)) if tls else srv.url("")
    pids = srv.pids()
    c0 = procstat.tree_cpu_ns(srv.root_pid, pids)
    res = loadgen.finish(wl, loadgen.start(wl, base, duration))
    c1 = procstat.tree_cpu_ns(srv.root_pid, sorted(set(pids) | set(srv.pids())))
    secs = res["duration_us"] / 1e6 if res.get("duration_us") else duration
    res["rps"] = res["requests"] / secs if secs else 0
    res["cpu_us_per_req"] = (c1 - c0) / 1e3 / res["requests"] if res["requests"] else ""
    return res


def slow_counts(name, args):
    """{slow kind: connections} for a scenario."""
    tls_normal, kinds = SCENARIOS[name]
    if name == "hostile":
        return dict(args.hostile_mix)
    return {k: args.slow_conns for k in kinds}


def open_slow(srv, counts):
    """Start every group of slow clients; returns them (started)."""
    groups = []
    try:
        for kind, n in counts.items():
            sk = SLOW_KINDS[kind]
            port = srv.tls_port if sk["tls"] else srv.port
            groups.append(SlowClients(srv.host, port, n, sk["kind"], interval=sk["interval"],
                                      path=sk["path"], body=sk.get("body", 10000),
                                      chunk=sk.get("chunk", 1000), connect_timeout=60).start())
    except Exception:
        for g in groups:
            g.stop()
        raise
    return groups


def outcomes_of(groups):
    out = {}
    for g in groups:
        for k, n in g.outcomes().items():
            out[k] = out.get(k, 0) + n
    return out


def _one(v, name, rnd, args, docroot, tsv, log):
    from mpmng_py.bench import servers
    tls_normal, _ = SCENARIOS[name]
    counts = slow_counts(name, args)
    total = sum(counts.values())
    need_tls = tls_normal or any(SLOW_KINDS[k]["tls"] for k in counts)
    srv = servers.make_server(v, "slow", docroot, tls=need_tls)
    row = {"time": time.strftime("%H:%M:%S"), "round": rnd, "variant": v.name,
           "scenario": name, "slow": total}
    groups = []
    try:
        srv.start()
        srv.settle(timeout=120)
        _wrk(srv, tls_normal, 1)                    # warm up
        alone = _wrk(srv, tls_normal, args.duration)
        m0 = procstat.tree_memory(srv.root_pid)
        groups = open_slow(srv, counts)
        time.sleep(SETTLE_S)
        m1 = procstat.tree_memory(srv.root_pid)
        beside = _wrk(srv, tls_normal, args.duration)
        outcomes = outcomes_of(groups)
        still = sum(n for k, n in outcomes.items() if k == "open" or k.startswith("reading"))
        row.update({
            "slow_open": still,
            "slow_outcomes": " ".join("%s=%d" % (k.replace(" ", "_"), n)
                                      for k, n in sorted(outcomes.items())),
            "alone_rps": alone["rps"], "alone_p99_ms": alone["p99_us"] / 1000.0,
            "alone_errors": alone["errors"], "beside_rps": beside["rps"],
            "beside_p99_ms": beside["p99_us"] / 1000.0, "beside_errors": beside["errors"],
            "ratio": beside["rps"] / alone["rps"] if alone["rps"] else 0,
            "threads_before": m0["threads"], "threads_beside": m1["threads"],
            "pss_before_kb": m0["pss_kb"], "pss_beside_kb": m1["pss_kb"],
            "dpss_per_slow_kb": (m1["pss_kb"] - m0["pss_kb"]) / total,
            "server_cpu_us_per_req": beside["cpu_us_per_req"]})
        log("slow r%d %-10s %-14s %7.0f -> %7.0f req/s (x%.2f), p99 %6.1f ms, errors %d, "
            "threads %d -> %d, +%.1f KiB PSS per slow conn, %d of %d slow still open" % (
                rnd, name, v.name, alone["rps"], beside["rps"], row["ratio"],
                row["beside_p99_ms"], beside["errors"], m0["threads"], m1["threads"],
                row["dpss_per_slow_kb"], still, total))
    except Exception as e:  # a failed run is recorded, the part goes on
        row["note"] = "failed: %s" % str(e)[:200]
        log("slow %s %s failed: %s" % (name, v.name, str(e)[:400]))
    finally:
        for g in groups:
            g.stop()
        srv.cleanup()
    tsv.row(row)


def run(args, variants, docroot, tsv, log):
    names = args.slow_scenarios
    raise_nofile(max(sum(slow_counts(n, args).values()) for n in names) + 4096)
    for rnd in range(1, args.rounds + 1):
        for name in names:
            for v in rotated(variants, rnd):
                _one(v, name, rnd, args, docroot, tsv, log)


def pick(variants, explicit):
    return [v for v in variants if v.name in DEFAULT_VARIANTS or v.name in explicit]
