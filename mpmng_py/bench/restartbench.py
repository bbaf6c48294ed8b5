"""Part `restart`: what clients see while the server reloads its
configuration under load.

For each variant, one at a time: new-connection and keep-alive load (wrk,
500 B file, 16 connections each) for a steady window without reloads, then
for a window with RELOADS graceful restarts (httpd: SIGUSR1; nginx: SIGHUP)
EVERY seconds apart, then (httpd only: nginx has no such thing) a window
with FULL full restarts (SIGHUP, `apachectl -k restart`) FULL_EVERY seconds
apart, then, where the server has one, a window with UPGRADES binary
upgrades EVERY seconds apart (mpm_reuseport: SIGUSR2; nginx: USR2, WINCH,
QUIT).  Recorded per window and load: requests, failed requests by kind,
p99 latency, and TCP connections reset after their handshake
(TcpEstabResets of the namespace, counted while the reloads run, not at the
end where wrk closes busy connections itself), and per reload the time from
the signal until every process of the old generation has exited (its
parent too after an upgrade): from then on only the new one serves."""
import statistics
import threading
import time

from mpmng_py.bench import loadgen
from mpmng_py import netcounters, privhttpd
from mpmng_py.bench.variants import rotated

RELOADS = 10
EVERY = 2.0
FULL = 3
FULL_EVERY = 3.0
UPGRADES = 10
STEADY_S = 12
DEFAULT_VARIANTS = ("reuseport", "event", "event-buckets", "worker", "nginx")

COLS = ["time", "round", "variant", "window", "window_s", "load", "reloads", "requests",
        "err_connect", "err_read", "err_write", "err_timeout", "p99_ms", "estab_resets",
        "old_gone_s", "old_gone_max_s"]
OLD_GONE_LIMIT_S = 60.0


class OldGeneration:
    """Times, per reload, how long the processes that ran before it (less
    the parent that runs after it) take to exit, each in a thread of its
    own polling every 10 ms."""

    def __init__(self, srv):
        self.srv, self.took, self.threads = srv, [], []

    def act(self, act):
        def timed():
            before = set(self.srv.pids())
            t0 = time.monotonic()
            act()
            old = before - {self.srv.root_pid}
            th = threading.Thread(target=self._watch, args=(old, t0), daemon=True)
            th.start()
            self.threads.append(th)
        return timed

    def _watch(self, old, t0):
        while any(privhttpd.pid_alive(p) for p in old):
            if time.monotonic() - t0 > OLD_GONE_LIMIT_S:
                self.took.append(None)
                return
            time.sleep(0.01)
        self.took.append(time.monotonic() - t0)

    def result(self):
        """(median, max) seconds; None where a generation outlived the limit."""
        for th in self.threads:
            th.join(OLD_GONE_LIMIT_S + 5)
        if not self.took:
            return "", ""
        if None in self.took:
            return None, None
        return statistics.median(self.took), max(self.took)


def _estab_resets():
    return netcounters.tcp_counters().get("TcpEstabResets", 0)


def _window(srv, seconds, reloads, every=EVERY, act=None):
    """Both loads for `seconds`; `reloads` calls of act (default: a
    graceful reload) paced `every` s apart from 1 s in.  Returns ({load:
    wrk result}, resets while reloading)."""
    gens = OldGeneration(srv)
    act = gens.act(act or srv.reload)
    loads = {"new-conn": loadgen.parse_workload("close-500B-c16"),
             "keep-alive": loadgen.parse_workload("ka-500B-c16")}
    procs = {k: loadgen.start(wl, srv.url(""), seconds) for k, wl in loads.items()}
    time.sleep(1)
    r0 = _estab_resets()
    t0 = time.monotonic()
    for i in range(reloads):
        time.sleep(max(0.0, t0 + every * i - time.monotonic()))
        act()
    time.sleep(max(0.0, t0 + every * reloads - time.monotonic()))
    resets = _estab_resets() - r0
    res = {k: loadgen.finish(loads[k], p) for k, p in procs.items()}
    return res, resets, gens.result()


def _one(v, rnd, docroot, tsv, log):
    from mpmng_py.bench import servers
    srv = servers.make_server(v, "restart", docroot)
    try:
        srv.start()
        srv.settle(timeout=120)
        warm = loadgen.parse_workload("ka-500B-c16")
        loadgen.finish(warm, loadgen.start(warm, srv.url(""), 1))
        plan = [("steady", STEADY_S, 0, EVERY, None),
                ("reloading", int(RELOADS * EVERY + 3), RELOADS, EVERY, None)]
        if srv.full_restart:
            plan.append(("full-restart", int(FULL * FULL_EVERY + 3), FULL, FULL_EVERY,
                         srv.full_restart))
        if srv.can_upgrade():
            plan.append(("upgrading", int(UPGRADES * EVERY + 3), UPGRADES, EVERY,
                         srv.upgrade))
        for window, seconds, reloads, every, act in plan:
            res, resets, (gone, gone_max) = _window(srv, seconds, reloads, every, act)
            for load, r in res.items():
                tsv.row({"time": time.strftime("%H:%M:%S"), "round": rnd,
                         "variant": v.name, "window": window, "window_s": seconds,
                         "load": load, "reloads": reloads,
                         "requests": r["requests"], "err_connect": r["err_connect"],
                         "err_read": r["err_read"], "err_write": r["err_write"],
                         "err_timeout": r["err_timeout"],
                         "p99_ms": r["p99_us"] / 1000.0, "estab_resets": resets,
                         "old_gone_s": _secs(gone), "old_gone_max_s": _secs(gone_max)})
                log("restart r%d %-14s %-9s %-10s %7d req, errors c/r/w/t "
                    "%d/%d/%d/%d, p99 %7.1f ms, resets %d%s" % (
                        rnd, v.name, window, load, r["requests"], r["err_connect"],
                        r["err_read"], r["err_write"], r["err_timeout"],
                        r["p99_us"] / 1000.0, resets,
                        "" if gone == "" else ", old generation gone after %s s (max %s)"
                        % (_secs(gone), _secs(gone_max))))
    except Exception as e:
        log("restart %s failed: %s" % (v.name, str(e)[:400]))
    finally:
        srv.cleanup()


def _secs(v):
    """Seconds for the table: "" without reloads, ">60" past the limit."""
    if v == "":
        return ""
    return ">%g" % OLD_GONE_LIMIT_S if v is None else "%.2f" % v


def run(args, variants, docroot, tsv, log):
    """args.rounds rounds, variants rotated each round."""
    for rnd in range(1, args.rounds + 1):
        for v in rotated(variants, rnd):
            _one(v, rnd, docroot, tsv, log)


def pick(variants, explicit):
    return [v for v in variants if v.name in DEFAULT_VARIANTS or v.name in explicit]
