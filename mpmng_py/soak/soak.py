#!/usr/bin/env python3
"""Soak: mixed load for a long time on mpm_reuseport with mod_fhcache.

    python3 -m mpmng_py.soak --seconds 1800 [--seed N] [--stale-delay 1.0]

Starts a private httpd (mpmng_py/privhttpd.py; mpm_reuseport, mod_fhcache,
TLS, HTTP/2, CGI by mod_cgid, a reverse proxy to a second private httpd)
and for the given time drives it with keep-alive and new-connection GETs
(500 B, 16 KiB, 1 MiB, bodies checked), HTTPS, HTTP/2 over TLS and h2c
(curl), CGI, proxied GETs and uploads (checked by sha256), while it gets a
graceful restart every 60 s (one halfway through a shorter run), a deploy
of a versioned file by rename-over every 5 s and now and then a SIGKILL of
one child (randomised, seed printed).  Every failure is recorded; a
failure is excused only if it was in flight on a connection the killed
child held (listed with ss before the kill).  RSS and open descriptors are
sampled every 2 s.

Results go to out/soak/<timestamp>/ (summary.md, samples.tsv, procs.tsv,
soak.png, failures.tsv, retries.tsv, events.tsv, errorlog.tsv, error_log).
The last line is "soak: N passed, N failed" over the targets (see
verdict.py); the exit status is non-zero if one is missed.  As root it runs in a private
network namespace (loopback only) unless --no-netns is given.
"""
import argparse
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from mpmng_py.soak import (analyze, chaos, content, h2curl, loads, report, sampler, servers,
                           verdict)
from mpmng_py.soak.record import DeployLog, Recorder

NETNS_MARK = "MPMNG_IN_PRIVATE_NETNS"


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m mpmng_py.soak",
                                description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=int, default=1800)
    p.add_argument("--seed", type=int, default=None, help="for the kill times and victims")
    p.add_argument("--restart-every", type=float, default=60)
    p.add_argument("--deploy-every", type=float, default=5)
    p.add_argument("--kill-every", type=float, default=90, help="mean seconds between kills")
    p.add_argument("--stale-delay", type=float, default=1.0,
                   help="D: seconds after a deploy from which an old version is stale")
    p.add_argument("--sample-every", type=float, default=2)
    p.add_argument("--out", default=None, help="results directory")
    p.add_argument("--cgi", choices=("cgid", "cgi"), default="cgid",
                   help="CGI module of the server under test")
    p.add_argument("--directives", default="",
                   help="extra configuration for the server under test (e.g. to check "
                        "that the soak sees stale answers: 'FHCacheNotify poll' with "
                        "'FHCacheRevalidate 2')")
    p.add_argument("--no-netns", action="store_true")
    return p.parse_args(argv)


def enter_private_netns(argv):
    """Re-exec in a new network namespace with only lo (as root): our
    ports collide with nothing and ss lists only our sockets."""
    if os.environ.get(NETNS_MARK) or os.geteuid() != 0 or not shutil.which("unshare"):
        return
    if subprocess.run(["unshare", "--net", "ip", "link", "set", "lo", "up"],
                      capture_output=True).returncode != 0:
        print("soak: note: no private network namespace; running in the current one")
        return
    env = dict(os.environ, **{NETNS_MARK: "1"})
    sys.stdout.flush()
    os.execvpe("unshare", ["unshare", "--net", "--", "sh", "-c",
                           'ip link set lo up && exec "$@"', "sh", sys.executable,
                           "-m", "mpmng_py.soak"] + argv, env)


class Run:
    def __init__(self, args, seed, out):
        self.args, self.seed, self.out = args, seed, out
        self.stop = threading.Event()
        self.work = tempfile.mkdtemp(prefix="mpmng-soak-")
        self.front = self.backend = None
        self.loads, self.chaos, self.sampler = [], [], None
        self.health = []

    def start(self):
        self.backend = servers.start_backend()
        self.front = servers.start_front(self.backend.port, self.args.cgi,
                                         self.args.directives.replace("\\n", "\n"))
        h = self.front
        self.t0 = time.monotonic()
        self.deploys = DeployLog()
        self.rec = Recorder(self.t0, self.deploys, self.args.stale_delay)
        self.events = chaos.Events(self.t0)
        uploads = content.upload_bodies(self.seed)
        self.loads = (loads.h1_generators(self.rec, self.stop, h, uploads) +
                      h2curl.h2_generators(self.rec, self.stop, h, self.work, uploads[:3]))
        a, s = self.args, self.args.seconds
        self.restarter = chaos.Restarter(self.stop, self.t0, h, self.events,
                                         a.restart_every, s)
        self.killer = chaos.Killer(self.stop, self.t0, h, self.events, a.kill_every, s,
                                   self.seed, self.restarter)
        self.chaos = [chaos.Deployer(self.stop, self.t0, h, self.deploys, a.deploy_every, s),
                      self.restarter, self.killer]
        self.sampler = sampler.Sampler(self.stop, self.t0, h, self.events,
                                       os.path.join(self.out, "samples.tsv"), a.sample_every)
        print("soak: server pid %d, ports %d (http, h2c) and %d (https, h2); backend pid %d;"
              " kills planned at %s s" % (h.pid, h.port, h.tls_port, self.backend.pid,
                                          self.killer.times))
        for t in [self.sampler] + self.loads + self.chaos:
            t.start()

    def wait(self):
        """Until the time is up or the parent died; prints progress."""
        end = self.t0 + self.args.seconds
        last = 0
        while time.monotonic() < end:
            time.sleep(1)
            if not servers.privhttpd.pid_alive(self.front.pid):
                self.health.append("the parent (pid %d) died" % self.front.pid)
                return
            el = time.monotonic() - self.t0
            if el - last >= 60:
                last = el
                print("soak: %4.0f s: %d ok, %d failed, %d restarts, %d kills, %d deploys" % (
                    el, sum(self.rec.ok.values()), len(self.rec.failures),
                    len(self.events.times("restart")), len(self.killer.kills),
                    self.deploys.count()), flush=True)

    def finish(self):
        """Stops the load and the chaos, then the servers (by PID); keeps
        their logs.  Safe to call more than once and after a failed start."""
        self.stop.set()
        for t in self.loads:
            if isinstance(t, h2curl.CurlH2):
                t.kill()
        for t in self.loads + self.chaos + ([self.sampler] if self.sampler else []):
            if t.is_alive():
                t.join(45)
        self.leftover = []
        for h, name in ((self.front, "front"), (self.backend, "backend")):
            if h and h.pid:
                pids = sampler.server_pids(h.pid)
                h.stop()
                left = [p for p in pids if servers.privhttpd.pid_alive(p)]
                for p in left:
                    os.kill(p, signal.SIGKILL)
                if left:
                    self.leftover.append("%s processes left after stop: %s" % (name, left))
        self.keep_logs()

    def keep_logs(self):
        if self.front and os.path.exists(self.front.errlog):
            shutil.copy(self.front.errlog, os.path.join(self.out, "error_log"))
        for h in (self.front, self.backend):
            if h:
                shutil.rmtree(h.dir, ignore_errors=True)
        shutil.rmtree(self.work, ignore_errors=True)

    def unexcused_access_lines(self):
        """Access-log lines for the ports of unexcused failures (kept before
        the server directory goes): which child served what."""
        ports = {f["port"] for f in self.rec.failures if f["excused_by"] is None and f["port"]}
        path = os.path.join(self.front.dir, "logs", "access_log")
        if not ports or not os.path.exists(path):
            return
        with open(path) as f, open(os.path.join(self.out, "access_of_failures.log"), "w") as o:
            for line in f:
                parts = line.split(" ", 2)
                if len(parts) > 1 and parts[1].isdigit() and int(parts[1]) in ports:
                    o.write(line)


def results(run):
    """Everything verdict.py judges, as a dict."""
    rec, kills = run.rec, run.killer.kills
    per_kill = analyze.excuse(rec.failures, kills, run.t0)
    samples = run.sampler.rows
    points = analyze.restart_points(samples, run.events.times("restart"),
                                    [k.t - run.t0 for k in kills], run.args.seconds)
    with open(os.path.join(run.out, "error_log"), errors="replace") as f:
        errtext = f.read()
    errkinds, examples, ours, crashes = analyze.error_log(errtext,
                                                         {k.pid for k in kills})
    own = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    client_cpu = sum(r.ru_utime + r.ru_stime for r in own) / run.args.seconds
    cpu = 0.0
    if len(samples) > 1:
        cpu = (samples[-1][5] - samples[0][5]) / max(1e-9, samples[-1][0] - samples[0][0])
    return {
        "kinds": [t.kind for t in run.loads], "per_kill": per_kill,
        "total": sum(rec.ok.values()) + len(rec.failures),
        "points": points, "nsamples": len(samples),
        "rss": analyze.growth(points, 1), "fds": analyze.growth(points, 2),
        "errkinds": errkinds, "errexamples": examples, "ourkills": ours,
        "crashes": crashes, "cpu": cpu, "client_cpu": client_cpu,
        "leftover": run.leftover, "health": run.health,
        "unexplained": verdict.classify_retries(rec.retries, run.events, kills, run.t0),
    }


def conclude(run):
    res = results(run)
    checks = verdict.checks(run, res)
    report.write_records(run.out, run.rec, run.events, res["errkinds"], res["errexamples"])
    if not report.plot(run.out, run.events, run.args.seconds):
        print("soak: no soak.png (gnuplot not installed: Debian package gnuplot-nox)")
    text = verdict.summary(run, res, checks)
    with open(os.path.join(run.out, "summary.md"), "w") as f:
        f.write(text)
    print(text)
    passed = sum(1 for c in checks if c[2])
    print("soak: %d passed, %d failed" % (passed, len(checks) - passed))
    return passed == len(checks)


def main(argv):
    args = parse_args(argv)
    if not args.no_netns:
        enter_private_netns(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = os.path.abspath(args.out or os.path.join(servers.privhttpd.OUT, "soak", stamp))
    os.makedirs(out, exist_ok=True)
    print("soak: %d s, seed %d, results in %s" % (args.seconds, seed, out), flush=True)
    # SIGTERM ends the run like Ctrl-C: everything started is stopped.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    run = Run(args, seed, out)
    try:
        run.start()
        run.wait()
        run.stop.set()
        for t in run.loads:
            t.join(45)
        analyze.excuse(run.rec.failures, run.killer.kills, run.t0)
        run.unexcused_access_lines()
    except KeyboardInterrupt:
        print("soak: interrupted; stopping everything")
        run.finish()
        print("soak: 0 passed, 1 failed")
        return 130
    except BaseException:
        run.finish()
        raise
    run.finish()
    return 0 if conclude(run) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
