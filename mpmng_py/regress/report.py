"""Results files, per-run totals and the comparison of two runs
(including the summary line test/check.sh counts).
"""
import os
import re
import time

from mpmng_py import privhttpd
from mpmng_py.regress.base import CACHE, ROOT, log
from mpmng_py.regress.parse import info_t_mpm_only_difference, parse_log
from mpmng_py.regress.procs import run


def write_results(run_, results, info, known):
    with open(run_.txtfile, "w") as f:
        f.write("# mpm: %s (%s %s, sha256 %s)\n" % (run_.mpm, run_.sym, run_.so, run_.so_sha))
        if run_.fhcache:
            f.write("# fhcache: FHCache On, %d responses served by mod_fhcache\n"
                    % getattr(run_, "fhcache_count", 0))
        # a runner with another server (mpmng_py.winregress) names it itself
        version = getattr(run_, "server_version", None)
        f.write("# %s\n" % version if version else "# apache2: %s\n" % apache_version())
        for line in getattr(run_, "header_lines", ()):
            f.write("# %s\n" % line)
        with open(os.path.join(CACHE, "SOURCE")) as s:
            f.write("# suite: perl-framework from %s\n" % s.read().strip())
        f.write("# harness: %s | Result: %s\n" % (info["files_line"] or "(no totals line)",
                                                  info["result"] or "(none)"))
        f.write("# duration: %ds%s\n" % (getattr(run_, "duration_main", run_.duration),
                                         " (TIMED OUT)" if getattr(run_, "timed_out_main",
                                                                   run_.timed_out) else ""))
        f.write("# format: FILE ok | FILE skipped REASON | FILE failed [SUBTESTS] [REASON]"
                " | FILE known-difference ...\n")
        for name in sorted(results):
            r = results[name]
            if name in known:
                f.write("%s known-difference %s\n" % (name, known[name]))
            elif r["status"] == "failed":
                line = "%s failed %s %s" % (name, r["failed"] or "-", r["reason"])
                f.write(line.rstrip() + "\n")
            elif r["status"] == "skipped":
                f.write("%s skipped %s\n" % (name, r["reason"]))
            else:
                f.write("%s ok\n" % name)


_apache_version = None


def apache_version():
    global _apache_version
    if _apache_version is None:
        r = run([privhttpd.APACHE2, "-v"], env=privhttpd.server_env())
        m = re.search(r"Server version:\s*(.*)", r.stdout)
        if privhttpd.SYSMODS == privhttpd.DEBIAN_MODS:
            dpkg = run(["dpkg-query", "-W", "-f=${Version}", "apache2-bin"]).stdout
            origin = "Debian apache2-bin " + dpkg
        else:
            origin = privhttpd.APACHE2
        _apache_version = "%s, %s" % (m.group(1) if m else "?", origin)
    return _apache_version


def classify(results):
    return {n for n, r in results.items() if r["status"] == "failed"}


def slowest(run_, n=5):
    prog = getattr(run_, "progress_main", run_.progress) + [
        (getattr(run_, "duration_main", run_.duration), None)]
    spans = [(prog[i + 1][0] - prog[i][0], prog[i][1]) for i in range(len(prog) - 1)]
    return sorted(spans, reverse=True)[:n]


def analyse(r):
    """results, info, known-differences of one run's main log."""
    results, info = parse_log(r.logfile)
    known = {}
    if results.get("t/modules/info.t", {}).get("status") == "failed":
        diff = info_t_mpm_only_difference(r.logfile, r.loaded_so)
        if diff:
            known["t/modules/info.t"] = (
                "suite expects MPM module name %s (derived from the .so file name; "
                "only stock MPMs are mapped), mod_info lists %s; all other modules "
                "match" % (diff[0], diff[1] or "nothing"))
    if not info["files_line"]:
        results["(harness) incomplete run"] = {
            "status": "failed", "failed": "",
            "reason": "no Files=/Tests= totals line in %s%s" % (
                os.path.relpath(r.logfile, ROOT), " (timed out)" if r.timed_out else ""),
            "notok": []}
    return results, info, known


def failing(results, known):
    return {n for n, x in results.items() if x["status"] == "failed" and n not in known}


def compare(runs, parsed, pairs, t0):
    """Print each run's totals and the comparison of every pair (B against
    A); returns the exit status."""
    log("")
    for r, (res, info, known) in zip(runs, parsed):
        summarize_run(r, res, info, known)
    status = 0
    for i, j in pairs:
        status = max(status, compare_pair(runs[i], runs[j], parsed[i], parsed[j]))
    log("regress: total %dm%02ds" % ((time.monotonic() - t0) // 60, (time.monotonic() - t0) % 60))
    incomplete = [r.mpm for r, p in zip(runs, parsed) if "(harness) incomplete run" in p[0]]
    if incomplete:
        log("regress: ERROR: the suite did not complete with %s: no valid comparison"
            % " and ".join(incomplete))
    # the closing line: the totals of every B per test file (known
    # differences apart; a file that passed when re-run counts as passed:
    # it is reported above)
    st = []
    for _, j in pairs:
        rb, kb = parsed[j][0], parsed[j][2]
        st += ["ok" if x.get("flaky") else x["status"] for n, x in rb.items() if n not in kb]
    log("regress: %d passed, %d failed, %d skipped" % (
        st.count("ok"), st.count("failed"), st.count("skipped")))
    return 2 if incomplete else status


def summarize_run(r, res, info, known):
    st = [x["status"] for n, x in res.items() if n not in known]
    dur = getattr(r, "duration_main", r.duration)
    log("regress: %-9s %3d files: %d ok, %d failed, %d skipped%s; %s; Result: %s; %dm%02ds; %s" % (
        r.mpm, len(res), st.count("ok"), st.count("failed"), st.count("skipped"),
        ", %d known difference" % len(known) if known else "",
        info["files_line"].split(",")[1].strip() if info["files_line"].count(",") else "?",
        info["result"] or "?", dur // 60, dur % 60, os.path.relpath(r.txtfile, ROOT)))
    if r.fhcache:
        log("regress:           %d responses served by mod_fhcache"
            % getattr(r, "fhcache_count", 0))
    sl = slowest(r)
    if sl:
        log("regress:           slowest (approx.): " + ", ".join(
            "%s %ds" % (n, s) for s, n in sl if n))


def compare_pair(a, b, pa, pb):
    """Print how B compares with A; 1 if B has regressions, else 0."""
    (ra, ia, ka), (rb, ib, kb) = pa, pb
    flaky_b = {n for n, x in rb.items() if x.get("flaky")}
    fa = failing(ra, ka)
    fb = failing(rb, kb) - flaky_b
    log("regress: ===== %s (A) vs %s (B) =====" % (a.mpm, b.mpm))

    def detail(name, res):
        x = res.get(name)
        if not x:
            return "not run"
        out = []
        if x["failed"]:
            out.append("failed subtests " + x["failed"])
        if x["reason"]:
            out.append(x["reason"][:300])
        return "; ".join(out) or x["status"]

    def fmt(name, res):
        return "%s (%s)" % (name, detail(name, res))

    regressions = sorted(fb - fa)
    # files A ran but B never reported (e.g. B aborted) count as failures of B
    missing_b = sorted(n for n in ra if n not in rb and not n.startswith("("))
    fixed = sorted(fa - failing(rb, kb))
    both = sorted(fa & failing(rb, kb))
    skip_diff = sorted(n for n in set(ra) & set(rb)
                       if (ra[n]["status"] == "skipped") != (rb[n]["status"] == "skipped")
                       and n not in fa | fb)

    log("regress: fail with %s but not with %s (regressions): %d" % (
        b.mpm, a.mpm, len(regressions) + len(missing_b)))
    for n in regressions:
        log("regress:   - " + fmt(n, rb))
    for n in missing_b:
        log("regress:   - %s (ran with %s, no result with %s)" % (n, a.mpm, b.mpm))
    if flaky_b - fa:
        log("regress: failed with %s, passed when re-run (flaky, not counted): %d" % (
            b.mpm, len(flaky_b - fa)))
        for n in sorted(flaky_b - fa):
            log("regress:   - " + fmt(n, rb))
    log("regress: fail with %s but not with %s: %d" % (a.mpm, b.mpm, len(fixed)))
    for n in fixed:
        log("regress:   - " + fmt(n, ra))
    log("regress: fail with both (reported, not counted as regressions): %d" % len(both))
    for n in both:
        log("regress:   - %s (%s: %s | %s: %s)" % (n, a.mpm, detail(n, ra), b.mpm, detail(n, rb)))
    for mpm, known in ((a.mpm, ka), (b.mpm, kb)):
        for n, why in sorted(known.items()):
            log("regress: known difference with %s, not counted as a regression: %s: %s"
                % (mpm, n, why))
    if skip_diff:
        log("regress: skipped with only one of them (not failures):")
        for n in skip_diff:
            who, res = (a.mpm, ra) if ra[n]["status"] == "skipped" else (b.mpm, rb)
            log("regress:   - %s skipped with %s: %s" % (n, who, res[n]["reason"]))
    return 1 if regressions or missing_b else 0
