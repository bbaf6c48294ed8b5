"""The timing-sensitive tests (`make check-stress`, `python3 -m
mpmng_py.integration --stress`): restarts, stops, upgrades, how a process
ends, idle memory, slow clients and busy workers; what a loaded machine
(a CI run with the Windows build beside it) is most likely to break.  Each runs
--repeat times under --hogs busy loops; the report gives each test's
failure rate."""

# unittest name patterns (module, class or method), as -k takes them
TESTS = [
    "test_restart.",
    "test_graceful_stop.",
    "test_lifecycle.",
    "test_upgrade.",
    "test_sdstore.",
    "test_signals.",
    "test_eventloop.IdleConnections.",
    "test_eventloop.BusyWorkers.",          # requests that wait for a busy worker
    "test_eventloop.NewConnectionFlood.",   # kept-alive clients beside new ones
    "test_slowclients.",
    "test_tls_h2.Http2.test_graceful_",
]


def report(stats, rounds, hogs, out):
    """stats: {test id: [outcome per round]}; prints a line per test that
    failed at least once, then the totals; returns the failures."""
    failed = 0
    out.write("\nstress: %d rounds under %d cpu hog(s)\n" % (rounds, hogs))
    for tid in sorted(stats):
        runs = [o for o in stats[tid] if not o.startswith("skip")]
        bad = sum(1 for o in runs if o == "FAIL")
        failed += bad
        if bad:
            out.write("  %-90s %d of %d failed (%.0f%%)\n"
                      % (tid, bad, len(runs), 100.0 * bad / len(runs)))
    ran = sum(len([o for o in v if not o.startswith("skip")]) for v in stats.values())
    out.write("stress: %d tests, %d runs, %d failed\n" % (len(stats), ran, failed))
    return failed
