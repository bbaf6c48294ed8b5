"""Writes the soak's results directory: summary.md (numbers and a verdict
per target), failures.tsv, retries.tsv, events.tsv, errorlog.tsv and
soak.png (RSS and descriptors over time, restarts and kills marked, drawn
with gnuplot when it is installed).  samples.tsv is written by the sampler."""
import os
import shutil

from mpmng_py.bench.report import gnuplot


def write_tsv(path, columns, rows):
    with open(path, "w") as f:
        f.write("\t".join(columns) + "\n")
        for r in rows:
            f.write("\t".join(str(x).replace("\t", " ").replace("\n", " ") for x in r) + "\n")


def write_records(out, rec, events, kinds, examples):
    fcols = ("start", "end", "kind", "what", "port", "reused", "got", "excused_by", "error")
    write_tsv(os.path.join(out, "failures.tsv"), fcols,
              [[f[c] for c in fcols] for f in rec.failures])
    rcols = ("t", "kind", "what", "port", "idle", "cause", "error")
    write_tsv(os.path.join(out, "retries.tsv"), rcols,
              [[r.get(c, "") for c in rcols] for r in rec.retries])
    write_tsv(os.path.join(out, "events.tsv"), ("t", "event", "detail"), events.rows)
    write_tsv(os.path.join(out, "errorlog.tsv"), ("count", "kind", "example"),
              [(n, k, examples[k]) for k, n in kinds.most_common()])


def plot(out, events, seconds):
    """soak.png from samples.tsv; False (and a note) without gnuplot."""
    if not shutil.which("gnuplot"):
        return False
    marks = []
    for t in events.times("restart"):
        marks.append("set arrow from %s, graph 0 to %s, graph 1 nohead lc rgb '#9e9e9e' dt 2"
                     % (t, t))
    for t in events.times("kill"):
        marks.append("set arrow from %s, graph 0 to %s, graph 1 nohead lc rgb '#d7191c' lw 1.5"
                     % (t, t))
    script = "\n".join([
        "set terminal pngcairo size 1100,700 font 'Sans,9' noenhanced",
        "set output 'soak.png'",
        "set datafile separator '\\t'",
        "set multiplot layout 2,1 title 'soak: server processes over time "
        "(grey dashed: graceful restart, red: child killed)'",
        # Same left margin in both panels, so that their time axes line up.
        "set grid", "set xrange [0:%d]" % seconds, "set key top left", "set lmargin 12",
    ] + marks + [
        "set ylabel 'RSS (MiB, sum)'", "set yrange [0:*]",
        "plot 'samples.tsv' skip 1 using 1:($2/1024) with lines lw 2 lc rgb '#7b3294' "
        "title 'RSS'",
        "set ylabel 'count'", "set xlabel 'seconds'",
        "plot 'samples.tsv' skip 1 using 1:3 with lines lw 2 lc rgb '#1f78b4' "
        "title 'open descriptors', '' skip 1 using 1:4 with lines lc rgb '#33a02c' "
        "title 'threads', '' skip 1 using 1:11 with lines lc rgb '#ff7f00' "
        "title 'connections in CLOSE-WAIT'",
        "unset multiplot",
    ])
    return gnuplot(script, out)


def pct(x):
    return "%+.1f%%" % (100 * x)


def targets_table(checks):
    lines = ["| target | measured | verdict |", "|---|---|---|"]
    for name, measured, ok in checks:
        lines.append("| %s | %s | %s |" % (name, measured, "PASS" if ok else "**FAIL**"))
    return lines


def load_table(rec, kinds, retries):
    lines = ["| load | ok | failed | excused (killed child) | keep-alive retries | "
             "idle connections closed by the server |", "|---|---:|---:|---:|---:|---:|"]
    for k in kinds:
        failed = sum(1 for f in rec.failures if f["kind"] == k and f["excused_by"] is None)
        exc = sum(1 for f in rec.failures if f["kind"] == k and f["excused_by"] is not None)
        rt = sum(1 for r in retries if r["kind"] == k)
        lines.append("| %s | %d | %d | %d | %d | %d |" % (k, rec.ok[k], failed, exc, rt,
                                                         rec.idle_closed[k]))
    return lines


def failure_lines(failures, limit=40):
    """Unexcused failures first, then those a kill excuses."""
    failures = sorted(failures, key=lambda f: (f["excused_by"] is not None, f["start"]))
    out = []
    for f in failures[:limit]:
        out.append("- %.3f-%.3f s %s %s port %s%s: %s%s" % (
            f["start"], f["end"], f["kind"], f["what"], f["port"],
            " (reused conn)" if f["reused"] else "", f["error"],
            "" if f["excused_by"] is None else " (excused: kill %d)" % (f["excused_by"] + 1)))
    if len(failures) > limit:
        out.append("- ... %d more in failures.tsv" % (len(failures) - limit))
    return out
