"""Samples the server every few seconds from /proc: resident memory and open
descriptors summed over its apache2 processes (parent, children, mod_cgid's
daemon; not the CGI scripts), threads, processes and CPU time, and the
parent's own RSS and descriptors (it lives through every restart, so a leak
there shows plainly), and the server's connections in CLOSE-WAIT (closed by
the client, not yet by the server).  Written to samples.tsv as they come (a run that dies
still leaves its data), each process's figures to procs.tsv."""
import os
import threading
import time

from mpmng_py.netcounters import close_wait

COLUMNS = ("t", "rss_kb", "fds", "threads", "procs", "cpu_s", "parent_rss_kb", "parent_fds",
           "restarts", "kills", "close_wait")
PROC_COLUMNS = ("t", "pid", "role", "rss_kb", "fds", "threads")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()


def server_pids(root, exe=None):
    """root and its descendants that run exe (all of them if exe is None;
    zombies left out)."""
    kids = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                st = _stat(int(name))
            except OSError:
                continue
            if st[0] != "Z":
                kids.setdefault(int(st[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        try:
            if exe is None or os.readlink("/proc/%d/exe" % p) == exe:
                out.append(p)
        except OSError:
            continue
        todo.extend(kids.get(p, ()))
    return out


def _status(pid):
    vals = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "Threads"):
                vals[k] = int(v.split()[0])
    return vals


def one_process(pid):
    """(rss_kb, fds, threads, cpu ticks, reaped children's cpu ticks)."""
    st = _status(pid)
    fds = len(os.listdir("/proc/%d/fd" % pid))
    f = _stat(pid)
    return (st.get("VmRSS", 0), fds, st.get("Threads", 0), int(f[11]) + int(f[12]),
            int(f[13]) + int(f[14]))


def measure(root, exe):
    """One sample: the sums (rss_kb, fds, threads, procs, cpu_s), the
    parent's (rss_kb, fds), and per process [(pid, role, rss, fds, threads)]."""
    per = []
    cpu = 0
    parent = (0, 0)
    for p in server_pids(root, exe):
        try:
            rss, fds, threads, ticks, reaped = one_process(p)
        except OSError:
            continue
        # The parent's reaped children: killed ones, old generations.
        cpu += ticks + (reaped if p == root else 0)
        role = "parent" if p == root else ("child" if threads > 1 else "single")
        if p == root:
            parent = (rss, fds)
        per.append((p, role, rss, fds, threads))
    sums = tuple(sum(x[i] for x in per) for i in (2, 3, 4))
    return sums + (len(per), round(cpu / CLK_TCK, 2)), parent, per


class Sampler(threading.Thread):
    def __init__(self, stop, t0, h, events, path, every=2.0):
        super().__init__(name="sampler", daemon=True)
        self.stop_ev, self.t0, self.h, self.events = stop, t0, h, events
        self.path, self.every = path, every
        self.procs_path = os.path.join(os.path.dirname(path), "procs.tsv")
        self.exe = os.readlink("/proc/%d/exe" % h.pid)
        self.rows = []

    def sample(self):
        t = round(time.monotonic() - self.t0, 2)
        sums, parent, per = measure(self.h.pid, self.exe)
        row = (t,) + sums + parent + (len(self.events.times("restart")),
                                      len(self.events.times("kill")),
                                      close_wait((self.h.port, self.h.tls_port)))
        self.rows.append(row)
        with open(self.path, "a") as f:
            f.write("\t".join(str(x) for x in row) + "\n")
        with open(self.procs_path, "a") as f:
            for p in per:
                f.write("\t".join(str(x) for x in (t,) + p) + "\n")

    def run(self):
        for path, cols in ((self.path, COLUMNS), (self.procs_path, PROC_COLUMNS)):
            with open(path, "w") as f:
                f.write("\t".join(cols) + "\n")
        nxt = time.monotonic()
        while not self.stop_ev.is_set():
            self.sample()
            nxt += self.every
            self.stop_ev.wait(max(0.0, nxt - time.monotonic()))
