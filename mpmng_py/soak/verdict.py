"""The soak's targets, judged from one run's records, and summary.md.

Targets (issue #25): no failed request beyond the killed children's
in-flight ones, no stale answer once the notification delay has passed
after a deploy, RSS and open descriptors flat (<= 5% growth over the last
two thirds of the run, like compared with like), no crash line; plus the
run's own health: every restart and kill handled, every load kind ran."""
import os
import statistics

from mpmng_py.soak import analyze
from mpmng_py.soak import report


def classify_retries(retries, events, kills, t0):
    """Why the server had closed each kept-alive connection a retry was
    sent on: a graceful restart's drain (old children close idle
    connections), a killed child, KeepAliveTimeout, or unexplained."""
    restarts = events.times("restart")
    for r in retries:
        if any(abs(r["t"] - (k.t - t0)) <= analyze.EXCUSE_WINDOW and r["port"] in k.ports
               for k in kills):
            r["cause"] = "killed child"
        elif any(0 <= r["t"] - t <= 15 for t in restarts):
            r["cause"] = "graceful restart"
        elif r["idle"] >= 4.5:
            r["cause"] = "KeepAliveTimeout"
        else:
            r["cause"] = "unexplained"
    return sum(1 for r in retries if r["cause"] == "unexplained")


def stale_text(rec):
    lags = sorted(rec.lags)
    if not lags:
        return ("no request sent after a rename returned got an older version (measured "
                "delay: none)")
    return ("an older version was answered %d times to requests sent after a newer "
            "one's rename had returned: %.0f ms after it at the median, %.0f ms at most" % (
                len(lags), 1000 * statistics.median(lags), 1000 * lags[-1]))


def growth_check(name, g, scale, unit):
    if g is None:
        return (name, "no samples", False)
    first, last, rate, limit = g
    text = "%s (%.1f -> %.1f%s, pre-restart medians%s)" % (
        report.pct(rate), first / scale, last / scale, unit,
        "" if limit == analyze.GROWTH_LIMIT else "; few generations: up to %s"
        % report.pct(limit))
    return (name, text, rate <= limit)


def checks(run, res):
    unexcused = [f for f in run.rec.failures if f["excused_by"] is None]
    health = run.restarter.failed + run.killer.failed + res["leftover"] + res["health"]
    planned, sent = len(run.restarter.schedule()), len(run.events.times("restart"))
    if sent < planned:
        health.append("%d of %d planned graceful restarts sent" % (sent, planned))
    idle_kinds = [k for k in res["kinds"] if run.rec.ok[k] == 0]
    growth = [growth_check("RSS growth, last 2/3 of the run", res["rss"], 1024, " MiB"),
              growth_check("open descriptors growth, last 2/3", res["fds"], 1, "")]
    if os.environ.get("MPMNG_LD_PRELOAD"):
        # Sanitizer runtimes hold freed memory in quarantine: RSS grows
        # by design, so only correctness is judged.
        growth = []
    return [
        ("failed requests (not excused by a kill)", "%d of %d" % (
            len(unexcused), res["total"]), not unexcused),
        ("stale responses (sent > D=%.1f s after a deploy)" % run.args.stale_delay,
         "%d of %d deploy reads" % (len(run.rec.stale), run.rec.deploy_reads),
         not run.rec.stale),
    ] + growth + [
        ("no crash lines in the error log", "%d" % len(res["crashes"]), not res["crashes"]),
        ("restarts, kills and stop handled", "; ".join(health) or "all", not health),
        ("every load kind ran", ", ".join(idle_kinds) or "all", not idle_kinds),
    ]


def summary(run, res, checks_):
    rec, kills = run.rec, run.killer.kills
    lines = ["# Soak: mpm_reuseport + mod_fhcache, %d s (seed %d)" % (
        run.args.seconds, run.seed), "",
        "Results in `%s`." % run.out, ""]
    lines += report.targets_table(checks_) + [""]
    lines += ["## Load", "", "%d requests answered correctly, %.0f/s; CPU on average: "
              "server %.2f cores, clients (this script and its curl runs) %.2f; %d "
              "keep-alive retries (%d unexplained; see retries.tsv)." % (
                  sum(rec.ok.values()), sum(rec.ok.values()) / run.args.seconds,
                  res["cpu"], res["client_cpu"], len(rec.retries), res["unexplained"]), ""]
    lines += report.load_table(rec, res["kinds"], rec.retries) + [
        "", "A keep-alive retry is a GET sent on a kept-alive connection that the server "
        "closed before any byte of the answer came back: sent again once on a new "
        "connection, as HTTP clients do (RFC 9112 9.3.1), and not counted as failed; "
        "retries.tsv gives each one's cause (killed child, graceful restart, "
        "KeepAliveTimeout, or unexplained).  A connection found closed before the request "
        "was sent (idle, readable) is replaced without sending on it.", ""]
    lines += ["## Events", ""] + event_lines(run, res) + [""]
    lines += ["## Stale check", "", "D = %.1f s (the notification delay allowed after a "
              "rename returned); %s; %d deploys." % (
                  run.args.stale_delay, stale_text(rec), run.deploys.count()), ""]
    lines += ["## Memory and descriptors", ""] + sample_lines(res) + [""]
    if rec.failures:
        lines += ["## Failures", ""] + report.failure_lines(rec.failures) + [""]
    lines += ["## Error log by kind", "", "%d lines; %d `exit signal Killed` lines for the "
              "children we killed (%d kills; httpd's ap_process_child_status logs no line "
              "for a child ended by SIGKILL, so 0 is expected)." % (
                  sum(res["errkinds"].values()), res["ourkills"], len(kills)), ""]
    lines += ["- %d x %s: `%s`" % (n, k, analyze.message(res["errexamples"][k])[:90])
              for k, n in res["errkinds"].most_common(30)]
    lines += ["- crash: " + c for c in res["crashes"][:20]]
    return "\n".join(lines) + "\n"


def event_lines(run, res):
    ev, kills, t0 = run.events, run.killer.kills, run.t0
    done = [d for _, k, d in ev.rows if k == "restart-done"]
    out = ["- graceful restarts: %d (%d completed; new generation up after %s)" % (
        len(ev.times("restart")), len(done), ", ".join(done[:10]) or "-"),
        "- deploys (rename-over): %d" % run.deploys.count(),
        "- children killed: %d" % len(kills)]
    for i, (k, (held, n, conns)) in enumerate(zip(kills, res["per_kill"])):
        out.append("  - kill %d at %.1f s: pid %d held %d connections; excused %d requests "
                   "on %d of them; replaced after %s" % (
                       i + 1, k.t - t0, k.pid, held, n, conns,
                       "%.2f s" % k.replaced_after if k.replaced_after else "-"))
    return out


def sample_lines(res):
    pts = res["points"]
    out = ["%d samples.  Compared like with like: for each graceful restart from "
           "%.0f s on (not the first: the parent grows once at its first restart) and "
           "the end, the median of the samples in the 40 s before it, none within 20 s "
           "after a restart or a kill, those with the usual number of processes (each "
           "generation looked at in the same state; not beside a child the MPM added for a "
           "while); growth = "
           "median of the last quarter of these points over that of the first." % (
               res["nsamples"], pts[0][0] if pts else 0)]
    out += ["", "| before (s) | RSS (MiB) | descriptors | threads | processes | "
            "parent RSS (MiB) | parent descriptors | connections in CLOSE-WAIT |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    out += ["| %.0f | %.1f | %.0f | %.0f | %.0f | %.2f | %.0f | %.0f |" % (
        p[0], p[1] / 1024, p[2], p[3], p[4], p[6] / 1024, p[7], p[10]) for p in pts]
    return out
