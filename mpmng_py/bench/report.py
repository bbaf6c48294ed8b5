"""summary.md and PNG plots (gnuplot) from a results directory's TSVs."""
import collections
import csv
import json
import math
import os
import re
import shutil
import statistics
import subprocess

from mpmng_py import ROOT

DOC = os.path.join(ROOT, "docs", "PERFORMANCE.md")
DOC_IMG = os.path.join(ROOT, "docs", "performance")
BASELINES = ("event", "nginx")


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f_int(x):
    return "-" if x is None else "{:,.0f}".format(x)


def f_num(x, nd=1):
    return "-" if x is None else ("%.*f" % (nd, x))


def f_ratio(x):
    return "-" if x is None else "%.2f" % x


def order_variants(names, meta):
    want = meta.get("variants") or []
    return sorted(set(names), key=lambda n: (want.index(n) if n in want else 999, n))


MODE_ORDER = {"ka": 0, "close": 1, "h2": 2, "tls-ka": 3, "tls-close": 4, "tls-new": 4,
              "h2s": 5}


def workload_key(w):
    m = re.match(r"(%s)-(500B|16K|1M)-c(\d+)" % "|".join(MODE_ORDER), w)
    if not m:
        return (9, 0, 0, w)
    return (MODE_ORDER[m.group(1)] // 3, {"500B": 0, "16K": 1, "1M": 2}[m.group(2)],
            MODE_ORDER[m.group(1)], int(m.group(3)), w)


# ------------------------------------------------------------ throughput
class Cell:
    """All runs of one variant on one workload."""

    def __init__(self, runs):
        ok = [r for r in runs if r.get("noisy") != "fail" and num(r.get("rps"))]
        clean = [r for r in ok if r.get("noisy") == "0"]
        # Drop noisy runs only while at least two clean ones remain.
        self.used = clean if len(clean) >= 2 else ok
        self.n_runs = len(runs)
        self.n_noisy = len([r for r in ok if r.get("noisy") != "0"])
        self.n_failed = len(runs) - len(ok)
        self.dropped = len(ok) - len(self.used)
        self.by_round = {r["round"]: r for r in self.used}
        self.all_by_round = {r["round"]: r for r in ok}

    def vals(self, col):
        return [num(r.get(col)) for r in self.used if num(r.get(col)) is not None]

    def median(self, col):
        return med(self.vals(col))

    def spread(self, col):
        v = self.vals(col)
        return (min(v), max(v)) if v else (None, None)

    def total(self, col):
        return sum(num(r.get(col)) or 0 for r in self.used)


def round_ratio(cell, base, col):
    """Median over rounds of cell/base, from rounds where both runs were
    kept; when fewer than two such rounds exist, from every round where
    both ran."""
    if cell is None or base is None:
        return None
    for mine, theirs in ((cell.by_round, base.by_round),
                         (cell.all_by_round, base.all_by_round)):
        rs = []
        for rnd, r in mine.items():
            b = theirs.get(rnd)
            if b is None:
                continue
            x, y = num(r.get(col)), num(b.get(col))
            if x and y:
                rs.append(x / y)
        if len(rs) >= 2 or mine is cell.all_by_round:
            return med(rs)


def throughput_md(raw, meta, out):
    if not raw:
        return []
    variants = order_variants([r["variant"] for r in raw], meta)
    workloads = sorted(set(r["workload"] for r in raw), key=workload_key)
    cells = {}
    for v in variants:
        for w in workloads:
            runs = [r for r in raw if r["variant"] == v and r["workload"] == w]
            if runs:
                cells[(v, w)] = Cell(runs)
    lines = ["## Throughput", "",
             "Medians of %s interleaved rounds; ratios are medians of per-round "
             "ratios (variant / baseline measured in the same round; rounds where either "
             "run was dropped as noisy are left out while two rounds remain)."
             % meta.get("rounds", "?"),
             ""]

    def matrix(title, fn, note=""):
        lines.extend(["### " + title, ""])
        if note:
            lines.extend([note, ""])
        lines.append("| variant | " + " | ".join(workloads) + " |")
        lines.append("|---|" + "---:|" * len(workloads))
        for v in variants:
            row = [fn(cells.get((v, w)), w, v) for w in workloads]
            lines.append("| %s | %s |" % (v, " | ".join(row)))
        lines.append("")

    def rps(c, w, v):
        if c is None:
            return ""
        lo, hi = c.spread("rps")
        s = "%s (%s-%s)" % (f_int(c.median("rps")), f_int(lo), f_int(hi))
        return s + (" ~" if c.n_noisy and c.dropped == 0 else "")

    matrix("Requests per second: median (min-max)", rps,
           "`~` marks a cell where fewer than two clean runs existed, so noisy runs were kept.")
    for b in BASELINES:
        if b in variants:
            matrix("Requests per second relative to %s (same rounds)" % b,
                   lambda c, w, v, b=b: f_ratio(round_ratio(c, cells.get((b, w)), "rps")))

    derived = [v for v in variants if "+" in v and v.split("+")[0] in variants]
    if derived:
        def vs_base(col):
            def fn(c, w, v):
                if v not in derived:
                    return ""
                return f_ratio(round_ratio(c, cells.get((v.split("+")[0], w)), col))
            return fn
        keep = variants
        variants = derived
        matrix("Add-ons: req/s relative to the same variant without the add-on",
               vs_base("rps"))
        matrix("Add-ons: server CPU per request relative to the same variant without "
               "the add-on (lower is cheaper)", vs_base("server_cpu_us_per_req"))
        variants = keep

    def cpu(c, w, v):
        if c is None:
            return ""
        lo, hi = c.spread("server_cpu_us_per_req")
        return "%s (%s-%s)" % (f_num(c.median("server_cpu_us_per_req")), f_num(lo), f_num(hi))
    matrix("Server CPU time per request, microseconds: median (min-max)", cpu,
           "All server processes and threads, from /proc; steadier than req/s on a shared machine.")
    for b in BASELINES:
        if b in variants:
            matrix("Server CPU per request relative to %s (lower is cheaper)" % b,
                   lambda c, w, v, b=b: f_ratio(round_ratio(c, cells.get((b, w)),
                                                            "server_cpu_us_per_req")))

    fair = [v for v in variants
            if any(cells[(v, w)].vals("child_cov") for w in workloads if (v, w) in cells)]
    if fair:
        keep = variants
        variants = fair
        matrix("mpm_reuseport: how evenly children share requests, and locality",
               lambda c, w, v: "" if c is None else "%s / %s%%" % (
                   f_num(c.median("child_cov"), 3),
                   f_num(100 * (c.median("local_share") or 0), 0)),
               "Per run, from server-status before and after: coefficient of variation "
               "of the requests each child served (target <= 0.1) / share of sampled "
               "requests served on the CPU that received them.")
        variants = keep

    lines.extend(["### Per workload details", ""])
    for w in workloads:
        lines.extend(["#### " + w, "",
                      "| variant | req/s | min-max | x event | x nginx | CPU us/req | "
                      "p50 ms | p99 ms | stdev ms | errors | non-2xx | RSS MB | PSS MB | "
                      "procs/threads | other CPU | runs (noisy, dropped) |",
                      "|---" + "|---:" * 15 + "|"])
        for v in variants:
            c = cells.get((v, w))
            if c is None:
                continue
            lo, hi = c.spread("rps")
            lines.append("| %s | %s | %s-%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
                         "%s/%s | %s%% | %d (%d, %d)%s |" % (
                             v, f_int(c.median("rps")), f_int(lo), f_int(hi),
                             f_ratio(round_ratio(c, cells.get(("event", w)), "rps")),
                             f_ratio(round_ratio(c, cells.get(("nginx", w)), "rps")),
                             f_num(c.median("server_cpu_us_per_req")),
                             f_num((c.median("p50_us") or 0) / 1000, 2),
                             f_num((c.median("p99_us") or 0) / 1000, 2),
                             f_num((c.median("lat_stdev_us") or 0) / 1000, 2),
                             f_int(c.total("errors")), f_int(c.total("non2xx")),
                             f_num((c.median("rss_kb") or 0) / 1024),
                             f_num((c.median("pss_kb") or 0) / 1024),
                             f_int(c.median("procs")), f_int(c.median("threads")),
                             f_num(100 * (c.median("other_share") or 0)),
                             c.n_runs, c.n_noisy, c.dropped,
                             " (%d failed)" % c.n_failed if c.n_failed else ""))
        lines.append("")
    notes = [r for r in raw if r.get("note")]
    if notes:
        lines.extend(["### Run notes", ""])
        for r in notes:
            lines.append("- round %s %s %s: %s" % (
                r["round"], r["variant"], r["workload"], r["note"]))
        lines.append("")
    plots_throughput(cells, variants, workloads, out)
    return lines


# ------------------------------------------------------------ idle
def idle_md(rows, meta, out):
    failed = [r for r in rows if not r.get("target")]
    rows = [r for r in rows if r.get("target")]
    if not rows and not failed:
        return []
    variants = order_variants([r["variant"] for r in rows], meta)
    lines = ["## Idle keep-alive connections", "",
             "Each connection made one request for the 500 B file, then stayed open and idle. "
             "`KiB/conn` is the server's whole PSS divided by the connections held (what holding "
             "them costs, pre-spawned capacity included); `+KiB/conn` is the growth over the "
             "same server with no connection. Kernel socket memory is not in PSS.", "",
             "| variant | conns | held / alive | PSS MB | KiB/conn | +KiB/conn | RSS MB | "
             "procs | threads | threads/conn | idle CPU ms/s | note |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for v in variants:
        for r in sorted((r for r in rows if r["variant"] == v), key=lambda r: int(r["target"])):
            t = int(r["target"])
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                v, f_int(t) if t else "0 (idle)",
                "%s / %s" % (r["held"], r["alive"]) if t else "-",
                f_num((num(r["pss_kb"]) or 0) / 1024),
                f_num(num(r["pss_per_conn_kb"])) if t else "-",
                f_num(num(r["dpss_per_conn_kb"])) if t else "-",
                f_num((num(r["rss_kb"]) or 0) / 1024),
                r["procs"], r["threads"],
                f_num(num(r["threads_per_conn"]), 2) if t else "-",
                f_num(num(r["idle_cpu_ms_per_s"])), r.get("note", "")))
    for r in failed:
        lines.append("| %s | - | - | - | - | - | - | - | - | - | - | %s |" % (
            r["variant"], r.get("note", "")))
    lines.append("")
    plot_idle(rows, variants, out)
    return lines


# ------------------------------------------------------------ syscalls
def syscalls_md(rows, meta, out):
    if not rows:
        return []
    variants = order_variants([r["variant"] for r in rows], meta)
    workloads = sorted(set(r["workload"] for r in rows), key=workload_key)
    lines = ["## System calls per request (500 B file)", "",
             "Counted in the kernel (bpftrace, raw_syscalls:sys_enter) over all server "
             "processes; the same-length window without load is subtracted. Rows: syscalls "
             "with at least 0.05 per request in some variant.", ""]
    for w in workloads:
        sub = [r for r in rows if r["workload"] == w]
        per = {(r["variant"], r["syscall"]): num(r["per_req"]) or 0 for r in sub}
        reqs = {r["variant"]: r["requests"] for r in sub}
        names = sorted({r["syscall"] for r in sub if r["syscall"] != "TOTAL"
                        and abs(num(r["per_req"]) or 0) >= 0.05},
                       key=lambda n: -max(per.get((v, n), 0) for v in variants))
        vs = [v for v in variants if v in reqs]
        lines.extend(["### " + w, "",
                      "| syscall | " + " | ".join(vs) + " |",
                      "|---|" + "---:|" * len(vs),
                      "| **total** | " + " | ".join(
                          "**%.2f**" % per.get((v, "TOTAL"), 0) for v in vs) + " |"])
        for n in names:
            lines.append("| %s | %s |" % (n, " | ".join(
                "%.2f" % per[(v, n)] if (v, n) in per else "" for v in vs)))
        lines.append("| (requests counted) | " + " | ".join(f_int(num(reqs[v])) for v in vs) + " |")
        lines.append("")
    return lines


# ------------------------------------------------------------ restart
def restart_md(rows, meta, out):
    if not rows:
        return []
    variants = order_variants([r["variant"] for r in rows], meta)
    by = {}
    for r in rows:
        by.setdefault((r["variant"], r["load"]), {}).setdefault(
            r.get("round") or "1", {})[r["window"]] = r
    errs = ("err_connect", "err_read", "err_write", "err_timeout")
    lines = ["## Graceful restarts under load", "",
             "Per variant, one at a time, rounds rotated: 16 new-connection and 16 "
             "keep-alive wrk clients (500 B file), first 12 s without reloads, then "
             "10 graceful restarts (nginx: reloads) in 20 s. p99: medians over rounds; "
             "ratio: median of per-round ratios (with / without). Failed: requests wrk "
             "counted as errors (connect, read, write, timeout), all rounds. Resets: "
             "connections reset after their handshake while the reloads ran "
             "(TcpEstabResets), all rounds. Old gone: seconds from a reload's signal "
             "until every process of the old generation had exited, from when only the "
             "new one serves (median over rounds of each round's median; max: the "
             "longest of all).", "",
             "| variant | load | rounds | req/s without | p99 without (ms) | "
             "p99 with (ms) | p99 ratio | failed with | resets with | old gone (s) | max |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in variants:
        for load in ("new-conn", "keep-alive"):
            rounds = [d for d in by.get((v, load), {}).values()
                      if "steady" in d and "reloading" in d]
            if not rounds:
                continue
            pa = [num(d["steady"]["p99_ms"]) for d in rounds]
            pb = [num(d["reloading"]["p99_ms"]) for d in rounds]
            rps = [num(d["steady"]["requests"]) / (num(d["steady"]["window_s"]) or 1)
                   for d in rounds]
            ratios = [b / a for a, b in zip(pa, pb) if a]
            failed = sum(int(num(d["reloading"][k]) or 0) for d in rounds for k in errs)
            resets = sum(int(num(d["reloading"]["estab_resets"]) or 0) for d in rounds)
            lines.append("| %s | %s | %d | %s | %s | %s | %s | %d | %d | %s | %s |" % (
                v, load, len(rounds), f_int(med(rps)), f_num(med(pa)), f_num(med(pb)),
                f_ratio(med(ratios) if ratios else None), failed, resets,
                *_old_gone([d["reloading"] for d in rounds])))
    lines.append("")
    return lines + full_restart_md(by, variants)


def full_restart_md(by, variants):
    """The windows of full restarts (httpd's SIGHUP) and binary upgrades,
    where a variant had them."""
    from mpmng_py.bench.restartbench import FULL, FULL_EVERY, UPGRADES, EVERY
    return (_window_md(by, variants, "full-restart", "Full restarts (SIGHUP) under load",
                       "The same loads, then %d full restarts (`apachectl -k restart`: the "
                       "children stop at once and the requests they run are cut) %g s apart; "
                       "httpd variants only." % (FULL, FULL_EVERY))
            + _window_md(by, variants, "upgrading", "Binary upgrades under load",
                         "The same loads, then %d binary upgrades %g s apart: a new server "
                         "process from the binary on disk takes the listeners over, the old "
                         "one finishes (mpm_reuseport: SIGUSR2, what `mpmng-upgrade` sends; "
                         "nginx: USR2, then WINCH and QUIT to the old master)."
                         % (UPGRADES, EVERY)))


def _window_md(by, variants, window, title, what):
    errs = ("err_connect", "err_read", "err_write", "err_timeout")
    rows = []
    for v in variants:
        for load in ("new-conn", "keep-alive"):
            rounds = [d[window] for d in by.get((v, load), {}).values() if window in d]
            if not rounds:
                continue
            failed = [sum(int(num(d[k]) or 0) for k in errs) for d in rounds]
            rows.append("| %s | %s | %d | %s | %s | %d | %s | %s |" % (
                v, load, len(rounds), f_num(med([num(d["p99_ms"]) for d in rounds])),
                ", ".join(str(f) for f in failed),
                sum(int(num(d["estab_resets"]) or 0) for d in rounds), *_old_gone(rounds)))
    if not rows:
        return []
    return ["### " + title, "",
            what + " Failed: requests wrk counted as errors, per round. Old gone: as "
            "above.", "",
            "| variant | load | rounds | p99 with (ms) | failed per round | resets | "
            "old gone (s) | max |",
            "|---|---|---:|---:|---|---:|---:|---:|"] + rows + [""]


def _old_gone(windows):
    """(median, max) of the windows' old-generation exit times, as text;
    a window past the limit (">60") counts as the longest."""
    meds, maxes = [], []
    for d in windows:
        for k, into in (("old_gone_s", meds), ("old_gone_max_s", maxes)):
            v = str(d.get(k) or "")
            if v.startswith(">"):
                into.append(float("inf"))
            elif v:
                into.append(float(v))
    show = lambda x: "-" if x is None else (">60" if x == float("inf") else "%.2f" % x)  # noqa
    return show(med(meds) if meds else None), show(max(maxes) if maxes else None)


# ------------------------------------------------------------ slow clients
SLOW_WHAT = {"heads": "request heads trickling in (a header line every 5 s)",
             "handshakes": "TLS handshakes never finished (normal clients over HTTPS)",
             "readers": "readers of the 1 MiB file taking a byte a second",
             "uploads": "uploads of 200 KB sending 1 KB a second",
             "hostile": "all at once (hostile load)"}


def slow_md(rows, meta, out):
    rows = [r for r in rows if not r.get("note")]
    if not rows:
        return []
    variants = order_variants([r["variant"] for r in rows], meta)
    lines = ["## Slow clients beside normal ones", "",
             "wrk -t1 -c50 keep-alive (500 B) alone, then beside %s slow connections "
             "(one kind, or the mix named), per variant and scenario, rounds "
             "interleaved; medians over rounds. ratio: req/s beside / alone. Threads: "
             "the server's, before and after the slow clients connected. KiB/slow: PSS "
             "growth per slow connection. Open: slow connections the server still held "
             "at the end." % f_int(num(next(
                 (r["slow"] for r in rows if r["scenario"] != "hostile"), rows[0]["slow"]))),
             ""]
    mix = meta.get("hostile_mix") or {}
    for sc in ("heads", "handshakes", "readers", "uploads", "hostile"):
        sub = [r for r in rows if r["scenario"] == sc]
        if not sub:
            continue
        what = SLOW_WHAT[sc]
        if sc == "hostile" and mix:
            what += ": " + ", ".join("%s %s" % (f_int(n), k) for k, n in mix.items())
        lines += ["### %s" % what, "",
                  "| variant | rounds | req/s alone | req/s beside | ratio | p99 beside (ms) "
                  "| errors beside | threads | KiB/slow | open |",
                  "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
        for v in variants:
            vr = [r for r in sub if r["variant"] == v]
            if not vr:
                continue
            def m(k):
                return med([num(r[k]) for r in vr if num(r[k]) is not None])
            lines.append("| %s | %d | %s | %s | %s | %s | %d | %s -> %s | %s | %s |" % (
                v, len(vr), f_int(m("alone_rps")), f_int(m("beside_rps")),
                f_ratio(m("ratio")), f_num(m("beside_p99_ms")),
                sum(int(num(r["beside_errors"]) or 0) for r in vr),
                f_int(m("threads_before")), f_int(m("threads_beside")),
                f_num(m("dpss_per_slow_kb")), f_int(m("slow_open"))))
        lines.append("")
    return lines


# ------------------------------------------------------------ flood of new connections
def flood_md(rows, meta, out):
    rows = [r for r in rows if not r.get("note")]
    if not rows:
        return []
    variants = order_variants([r["variant"] for r in rows], meta)
    lines = ["## Kept-alive clients beside a flood of new connections", "",
             "wrk -t1 -c16 keep-alive (500 B) alone, then beside wrk -t1 -c50 opening a new "
             "connection per request (the same file); medians over rounds. share: the "
             "kept-alive clients' part of all requests beside the flood (a server that "
             "starves connections it already has shows a small share and a p99 of seconds).",
             "", "| variant | rounds | kept req/s alone | kept req/s beside | new req/s "
             "| share | kept p99 beside (ms) | errors beside | us/req beside |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in variants:
        vr = [r for r in rows if r["variant"] == v]

        def m(k):
            return med([num(r[k]) for r in vr if num(r[k]) is not None])
        errors = sum(int(num(r["kept_errors"]) or 0) + int(num(r["flood_errors"]) or 0)
                     for r in vr)
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %d | %s |" % (
            v, len(vr), f_int(m("alone_rps")), f_int(m("kept_rps")), f_int(m("flood_rps")),
            f_ratio(m("kept_share")), f_num(m("kept_p99_ms")), errors,
            f_num(m("server_cpu_us_per_req"))))
    return lines + [""]


# ------------------------------------------------------------ fast uploads
def uploads_md(rows, meta, out):
    rows = [r for r in rows if not r.get("note")]
    if not rows:
        return []
    variants = order_variants([r["variant"] for r in rows], meta)
    sizes = sorted({int(num(r["body_bytes"])) for r in rows})
    lines = ["## Fast uploads", "",
             "ab -k -c8 POSTing bodies to the 500 B file (httpd reads each body, then "
             "answers 405); medians over rounds. Server CPU per request in microseconds, "
             "and the ratio to the first variant.", "",
             "| variant | " + " | ".join("%s B: us/req | ratio" % f_int(z) for z in sizes)
             + " |", "|---|" + "---:|---:|" * len(sizes)]
    first = {}
    for v in variants:
        cells = []
        for z in sizes:
            vr = [num(r["server_cpu_us_per_req"]) for r in rows
                  if r["variant"] == v and int(num(r["body_bytes"])) == z]
            m = med([x for x in vr if x is not None]) if vr else None
            first.setdefault(z, m)
            cells += [f_num(m), f_ratio(m / first[z]) if m and first[z] else "-"]
        lines.append("| %s | %s |" % (v, " | ".join(cells)))
    return lines + [""]


# ------------------------------------------------------------ app workload
def app_md(rows, meta, out):
    """The app part: medians over rounds, ratios to nginx where it ran."""
    rows = [r for r in rows if not r.get("note")]
    if not rows:
        return []
    variants = order_variants([r["variant"] for r in rows], meta)

    def m(v, col):
        return med([num(r[col]) for r in rows if r["variant"] == v])
    ref = {c: m("nginx", c) for c in ("rps", "p99_ms", "server_pss_mb")}

    def ratio(x, col):
        return f_ratio(x / ref[col]) if x and ref.get(col) else "-"
    lines = ["## The app workload (PHP + large static files)", "",
             "wrk -t2 at %s keep-alive connections: a PHP page through php-fpm (prefork: "
             "mod_php) and large static files; medians over %d round(s); x nginx = the "
             "ratio to nginx's median." % (rows[0]["conns"], len({r["round"] for r in rows})),
             "", "| variant | PHP | req/s | x nginx | p50 ms | p99 ms | x nginx | errors | "
             "server PSS MB | x nginx | threads | php-fpm PSS MB |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in variants:
        rps, p99, pss = m(v, "rps"), m(v, "p99_ms"), m(v, "server_pss_mb")
        errs = med([sum(num(r[k]) or 0 for k in ("err_connect", "err_read", "err_write",
                                                  "err_timeout", "err_status"))
                    for r in rows if r["variant"] == v])
        php = sorted({r["php"] for r in rows if r["variant"] == v})
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            v, "/".join(php), f_int(rps), ratio(rps, "rps"), f_num(m(v, "p50_ms")),
            f_num(p99), ratio(p99, "p99_ms"), f_int(errs), f_num(pss),
            ratio(pss, "server_pss_mb"), f_int(m(v, "server_threads")),
            f_num(m(v, "fpm_pss_mb"))))
    return lines + [""]


# ------------------------------------------------------------ plots
def publish(outdir, text):
    """A run's summary.md, also printed, and where it is."""
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write(text)
    print(text)
    print("results: %s" % outdir)


def gnuplot(script, out):
    if not shutil.which("gnuplot"):
        return False
    path = os.path.join(out, "plot.gp")
    with open(path, "a") as f:
        f.write(script + "\n")
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True, cwd=out)
    if r.returncode != 0:
        print("gnuplot failed:", r.stderr[-2000:])
    return r.returncode == 0


def q(s):
    return '"%s"' % s.replace('"', "'")


# One colour per variant in every chart, whatever the charts' order.
VARIANT_COLOURS = {
    "reuseport": "#7b3294", "reuseport+fhcache": "#c51b7d", "reuseport-cpu": "#b2abd2",
    "event": "#1f78b4", "event+fhcache": "#a6cee3",
    "event-buckets": "#33a02c", "event-buckets+fhcache": "#b2df8a",
    "worker": "#ff7f00", "worker+fhcache": "#fdbf6f",
    "prefork": "#8c510a", "prefork+fhcache": "#d8b365",
    "nginx": "#e41a1c", "nginx-reuseport": "#fb9a99", "h2o": "#525252", "lighttpd": "#17becf",
}
SPARE_COLOURS = ["#01665e", "#5ab4ac", "#bf812d", "#80cdc1", "#762a83", "#969696"]


def colour(variant):
    c = VARIANT_COLOURS.get(variant)
    if c is None:
        c = SPARE_COLOURS[sum(map(ord, variant)) % len(SPARE_COLOURS)]
    return " lc rgb '%s'" % c


HIST = """set style data histograms
set style fill solid 0.85 border -1
set boxwidth 0.85
set grid ytics
set key outside right top vertical
"""


def plots_throughput(cells, variants, workloads, out):
    # One data file: rows = workloads, per variant median/min/max of rps,
    # ratio to event, CPU per request; then grouped histograms.
    with open(os.path.join(out, "throughput.dat"), "w") as f:
        f.write("# workload " + " ".join(
            "%s_rps %s_min %s_max %s_xevent %s_cpu" % ((v,) * 5) for v in variants) + "\n")
        for w in workloads:
            vals = []
            for v in variants:
                c = cells.get((v, w))
                if c is None:
                    vals += ["NaN"] * 5
                    continue
                lo, hi = c.spread("rps")
                if c.median("rps") is None:     # every run failed
                    vals += ["NaN"] * 5
                    continue
                x = round_ratio(c, cells.get(("event", w)), "rps")
                vals += ["%.1f" % c.median("rps"), "%.1f" % lo, "%.1f" % hi,
                         "%.4f" % x if x else "NaN",
                         "%.3f" % (c.median("server_cpu_us_per_req") or float("nan"))]
            f.write(w + " " + " ".join(vals) + "\n")
        # latency percentiles: rows = variant x workload
    nv = len(variants)
    width = min(1900, max(1100, 90 * len(workloads) * max(1, nv) // 3))
    s = ["set terminal pngcairo size %d,560 font 'Sans,9' noenhanced" % width, HIST,
         "set style histogram errorbars gap 1 lw 1",
         "set output 'rps.png'",
         "set title 'Requests per second (median, bars: min-max over rounds)'",
         "set logscale y", "set ylabel 'req/s (log)'", "set xtics rotate by -30",
         "plot " + ", ".join(
             "'throughput.dat' using %d:%d:%d%s title %s" % (
                 2 + 5 * i, 3 + 5 * i, 4 + 5 * i, ":xtic(1)" if i == 0 else "", q(v) + colour(v))
             for i, v in enumerate(variants))]
    gnuplot("\n".join(s), out)
    if "event" in variants:
        s = ["set terminal pngcairo size %d,560 font 'Sans,9' noenhanced" % width, HIST,
             "set style histogram clustered gap 1",
             "set output 'rps_vs_event.png'",
             "set title 'Requests per second relative to mpm_event in the same rounds"
             " (1.0 = event)'",
             "set ylabel 'ratio'", "set xtics rotate by -30", "set yrange [0:*]",
             "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5",
             "plot " + ", ".join(
                 "'throughput.dat' using %d%s title %s" % (
                     5 + 5 * i, ":xtic(1)" if i == 0 else "", q(v) + colour(v))
                 for i, v in enumerate(variants))]
        gnuplot("\n".join(s), out)
    s = ["set terminal pngcairo size %d,560 font 'Sans,9' noenhanced" % width, HIST,
         "set style histogram clustered gap 1",
         "set output 'cpu_per_request.png'",
         "set title 'Server CPU time per request (median, all server processes)'",
         "set ylabel 'microseconds (log)'", "set logscale y", "set xtics rotate by -30",
         "plot " + ", ".join(
             "'throughput.dat' using %d%s title %s" % (
                 6 + 5 * i, ":xtic(1)" if i == 0 else "", q(v) + colour(v))
             for i, v in enumerate(variants))]
    gnuplot("\n".join(s), out)
    # Latency percentiles: one panel per workload, clusters = variants
    # (workloads whose tool measures them: not s_time's).
    pcts = (("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99"), ("p999_us", "p99.9"))
    workloads = [w for w in workloads
                 if any(cells.get((v, w)) and cells[(v, w)].median("p99_us") for v in variants)]
    if not workloads:
        return
    for i, w in enumerate(workloads):
        with open(os.path.join(out, "latency_%d.dat" % i), "w") as f:
            f.write("# variant " + " ".join(p for _, p in pcts) + "\n")
            for v in variants:
                c = cells.get((v, w))
                vals = [(c.median(col) if c else None) for col, _ in pcts]
                f.write(v + " " + " ".join("%.3f" % (x / 1000) if x else "NaN"
                                           for x in vals) + "\n")
    ncol = 3 if len(workloads) > 4 else max(1, len(workloads))
    nrow = int(math.ceil(len(workloads) / float(ncol)))
    s = ["set terminal pngcairo size %d,%d font 'Sans,8' noenhanced" % (
        420 * ncol + 60, 300 * nrow + 40), HIST,
        "set style histogram clustered gap 1",
        "set output 'latency.png'",
        "set multiplot layout %d,%d title "
        "'Latency percentiles by variant (ms, log; median of rounds)'" % (
            nrow, ncol),
        "set logscale y", "set xtics rotate by -35", "set key inside left top horizontal font ',7'"]
    for i, w in enumerate(workloads):
        s.append("set title %s" % q(w))
        s.append("plot " + ", ".join(
            "'latency_%d.dat' using %d%s %s" % (
                i, 2 + j, ":xtic(1)" if j == 0 else "",
                ("title " + q(p)) if i == 0 else "notitle")
            for j, (_, p) in enumerate(pcts)))
    s.append("unset multiplot")
    gnuplot("\n".join(s), out)


def plot_idle(rows, variants, out):
    levels = sorted({int(r["target"]) for r in rows} - {0})
    if not levels:
        return
    with open(os.path.join(out, "idle.dat"), "w") as f:
        f.write("# variant " + " ".join("kib_per_conn_%d" % n for n in levels) + "\n")
        for v in variants:
            vals = []
            for n in levels:
                r = [x for x in rows if x["variant"] == v and int(x["target"]) == n]
                x = num(r[0]["pss_per_conn_kb"]) if r else None
                vals.append("%.2f" % x if x else "NaN")
            f.write(v + " " + " ".join(vals) + "\n")
    s = ["set terminal pngcairo size 1000,520 font 'Sans,9' noenhanced", HIST,
         "set style histogram clustered gap 1",
         "set output 'idle_memory.png'",
         "set title 'Server memory per idle keep-alive connection"
         " (PSS of all server processes / connections held)'",
         "set ylabel 'KiB per connection (log)'", "set logscale y",
         "plot " + ", ".join("'idle.dat' using %d%s title '%d connections'" % (
             2 + i, ":xtic(1)" if i == 0 else "", n) for i, n in enumerate(levels))]
    gnuplot("\n".join(s), out)


# ------------------------------------------------------------ main
def header_md(meta):
    L = ["# mpm-ng benchmark results", "",
         "- Date: %s" % meta.get("date", "?"),
         "- Machine: %s, %s CPUs, %s GiB, kernel %s, Debian %s, autogroup %s" % (
             meta.get("cpu", "?"), meta.get("ncpu", "?"), meta.get("mem_gib", "?"),
             meta.get("kernel", "?"), meta.get("debian", "?"), meta.get("autogroup", "?")),
         "- Software: %s; %s; %s; %s" % (meta.get("apache2", ""), meta.get("nginx", ""),
                                          meta.get("wrk", ""), meta.get("bpftrace", "")),
         "- Tree: %s" % meta.get("git", "?"),
         "- Command: `%s`" % meta.get("command", "?"),
         "- Rounds %s, %ss per run after %ss warm-up, wrk -t1, 127.0.0.1; idle levels %s; "
         "noisy = other processes or steal above %d%% of the machine" % (
             meta.get("rounds"), meta.get("duration"), meta.get("warmup"),
             meta.get("idle_conns"), round(100 * (meta.get("max_other") or 0))),
         "- Run time: %s s (%s)" % (meta.get("total_seconds", "?"), ", ".join(
             "%s %ss" % kv for kv in (meta.get("part_seconds") or {}).items())), ""]
    if meta.get("descriptions"):
        L.append("Variants:")
        L.append("")
        for n, d in meta["descriptions"].items():
            L.append("- `%s`: %s" % (n, d))
        L.append("")
    if meta.get("skipped"):
        L.append("Skipped (not built yet): " + ", ".join(
            "`%s`" % n for n, _ in meta["skipped"]))
        L.append("")
    return L


def profile_md(rows, meta, out):
    """Per workload: the stages of a request (rows) by variant (columns),
    microseconds of server CPU per request, and the flame graphs."""
    if not rows:
        return []
    lines = ["## Where a request's CPU goes (profile part)", "",
             "Server CPU per request from a run without the profiler; its split from "
             "`perf record -g` on all server processes in a second run, each sample "
             "counted for the first stage its stack shows from the leaf up "
             "(mpmng_py/bench/flame.py, GROUPS). Microseconds per request.", ""]
    for w in sorted({r["workload"] for r in rows}, key=workload_key):
        sub = [r for r in rows if r["workload"] == w]
        variants = order_variants([r["variant"] for r in sub], meta)
        cell = {(r["variant"], r["group"]): num(r["us_per_req"]) for r in sub}
        cpu = {r["variant"]: num(r["cpu_us_per_req"]) for r in sub}
        totals = collections.Counter()
        for r in sub:
            totals[r["group"]] += num(r["us_per_req"]) or 0
        lines += ["### " + w, "", "| stage | " + " | ".join(variants) + " |",
                  "|---" + "|---:" * len(variants) + "|",
                  "| **CPU per request** | " + " | ".join(
                      "**%s**" % f_num(cpu.get(v)) for v in variants) + " |"]
        for g, _ in totals.most_common():
            lines.append("| %s | %s |" % (g, " | ".join(
                f_num(cell.get((v, g))) if cell.get((v, g)) else "" for v in variants)))
        lines += ["", "Flame graphs: " + ", ".join(
            "[%s](profile-%s-%s.svg)" % (v, v, w) for v in variants), ""]
    return lines


def make(out, update_doc=False):
    try:
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
    except OSError:
        meta = {}
    gp = os.path.join(out, "plot.gp")
    if os.path.exists(gp):
        os.unlink(gp)
    lines = header_md(meta)
    lines += throughput_md(read_tsv(os.path.join(out, "raw.tsv")), meta, out)
    lines += idle_md(read_tsv(os.path.join(out, "idle.tsv")), meta, out)
    lines += syscalls_md(read_tsv(os.path.join(out, "syscalls.tsv")), meta, out)
    lines += restart_md(read_tsv(os.path.join(out, "restart.tsv")), meta, out)
    lines += slow_md(read_tsv(os.path.join(out, "slow.tsv")), meta, out)
    lines += flood_md(read_tsv(os.path.join(out, "flood.tsv")), meta, out)
    lines += uploads_md(read_tsv(os.path.join(out, "uploads.tsv")), meta, out)
    lines += app_md(read_tsv(os.path.join(out, "app.tsv")), meta, out)
    lines += profile_md(read_tsv(os.path.join(out, "profile.tsv")), meta, out)
    pngs = [p for p in ("rps.png", "rps_vs_event.png", "cpu_per_request.png", "latency.png",
                        "idle_memory.png") if os.path.exists(os.path.join(out, p))]
    if pngs:
        lines.extend(["## Plots", ""] + ["![%s](%s)" % (p, p) for p in pngs] + [""])
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    if update_doc:
        update_performance_doc(text, out, pngs)
    return text


BEGIN = "<!-- BEGIN RESULTS (python3 -m mpmng_py.bench --update-doc) -->"
END = "<!-- END RESULTS -->"


def update_performance_doc(text, out, pngs):
    """Put the summary (with plots copied to docs/performance/) between the
    markers in docs/PERFORMANCE.md."""
    os.makedirs(DOC_IMG, exist_ok=True)
    for p in pngs:
        shutil.copy(os.path.join(out, p), os.path.join(DOC_IMG, p))
    body = re.sub(r"^(#+) ", r"#\1 ", text, flags=re.M)
    body = body.replace("## mpm-ng benchmark results", "## Latest results", 1)
    for p in pngs:
        body = body.replace("](%s)" % p, "](performance/%s)" % p)
    try:
        with open(DOC) as f:
            doc = f.read()
    except OSError:
        doc = "# Performance\n\n%s\n%s\n" % (BEGIN, END)
    if BEGIN not in doc:
        doc += "\n%s\n%s\n" % (BEGIN, END)
    a = doc.index(BEGIN) + len(BEGIN)
    b = doc.index(END)
    doc = doc[:a] + "\n" + body + doc[b:]
    with open(DOC, "w") as f:
        f.write(doc)
