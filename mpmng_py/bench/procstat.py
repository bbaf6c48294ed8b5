"""What the benchmark reads from /proc: CPU time, memory and threads of a
set of server processes, and the whole machine's CPU split so that runs
disturbed by other work can be seen."""
import os

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()


def tree_pids(root_pid):
    """root_pid and every live descendant (servers here are two levels deep,
    but walk the whole tree anyway).  Zombies are left out."""
    parent = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = _stat_fields(int(name))
        except OSError:
            continue
        if fields[0] == "Z":
            continue
        parent[int(name)] = int(fields[1])
    out, todo = [], [root_pid]
    kids = {}
    for pid, ppid in parent.items():
        kids.setdefault(ppid, []).append(pid)
    while todo:
        p = todo.pop()
        if p in parent:
            out.append(p)
        todo.extend(kids.get(p, ()))
    return sorted(out)


def _proc_cpu_ns(pid):
    """CPU time of one process in ns: per-thread schedstat (ns precision),
    falling back to utime+stime ticks when schedstat is not there."""
    total = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    except OSError:
        pass
    if total == 0:
        try:
            fl = _stat_fields(pid)
            total = (int(fl[11]) + int(fl[12])) * 1000000000 // CLK_TCK
        except (OSError, IndexError, ValueError):
            pass
    return total


def tree_cpu_ns(root_pid, pids=None):
    """CPU used so far by the server: every live process (all threads) plus
    what the parent collected from children it already reaped."""
    pids = pids or tree_pids(root_pid)
    total = sum(_proc_cpu_ns(p) for p in pids)
    try:
        fl = _stat_fields(root_pid)
        total += (int(fl[13]) + int(fl[14])) * 1000000000 // CLK_TCK
    except (OSError, IndexError, ValueError):
        pass
    return total


def tree_memory(root_pid, pids=None):
    """Sum of Rss, Pss and Anonymous (kB) over the tree, plus process and
    thread counts.  Pss includes a share of every file page the process
    maps (libraries, the binary), which grows when other processes mapping
    them exit; Anonymous is the process's own memory alone."""
    pids = pids or tree_pids(root_pid)
    rss = pss = anon = threads = 0
    nproc = 0
    for p in pids:
        try:
            with open("/proc/%d/smaps_rollup" % p) as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
                    elif line.startswith("Anonymous:"):
                        anon += int(line.split()[1])
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("Threads:"):
                        threads += int(line.split()[1])
                        break
            nproc += 1
        except (OSError, ValueError):
            continue
    return {"rss_kb": rss, "pss_kb": pss, "anon_kb": anon, "procs": nproc,
            "threads": threads}


def smaps(pid):
    """{mapping: Pss kB} of one process, from /proc/PID/smaps; a mapping
    is named by its path or [heap]/[stack], else "anon@START" (glibc's
    thread arenas and stacks, APR's mmap'ed nodes)."""
    out = {}
    name = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                start = head[0].split("-")[0]
                path = head[5] if len(head) > 5 else ""
                name = path if path.startswith("/") else "%s@%s" % (path or "anon", start)
            elif head[0] == "Pss:" and name:
                out[name] = out.get(name, 0) + int(head[1])
    return out


def smaps_growth(before, after, top=12):
    """[(kB grown, mapping)] largest first, of two smaps() snapshots."""
    grew = [(after.get(k, 0) - before.get(k, 0), k) for k in set(before) | set(after)]
    return sorted((g for g in grew if g[0]), reverse=True)[:top]


def system_cpu():
    """Aggregate /proc/stat cpu line in ticks: dict of named fields."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    v += [0] * (10 - len(v))
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq",
             "steal", "guest", "guest_nice")
    return dict(zip(names, v))


def cpu_split(before, after, server_ns, client_ns, elapsed):
    """Shares of the machine (1.0 = all cores for the whole run) used by the
    server, the client, everything else (other sessions' builds and tests,
    kernel threads), steal (the hypervisor's other guests) and idle.

    This kernel samples /proc/stat per tick and has no IRQ time accounting,
    so softirq work done in a task's context (loopback networking of the
    run itself) is in that task's runtime but in /proc/stat's softirq
    column: "other" is therefore all non-idle, non-steal time minus server
    and client.  softirq_share is reported for information only."""
    d = {k: after[k] - before[k] for k in after}
    total_ticks = sum(d[k] for k in ("user", "nice", "system", "idle", "iowait",
                                     "irq", "softirq", "steal"))
    if total_ticks <= 0:
        total_ticks = 1
    tick_ns = 1e9 / CLK_TCK
    cap_ns = total_ticks * tick_ns
    busy_ns = (d["user"] + d["nice"] + d["system"] + d["irq"] + d["softirq"]) * tick_ns
    other_ns = max(0.0, busy_ns - server_ns - client_ns)
    return {
        "server_share": server_ns / cap_ns,
        "client_share": client_ns / cap_ns,
        "softirq_share": (d["softirq"] + d["irq"]) * tick_ns / cap_ns,
        "steal_share": d["steal"] * tick_ns / cap_ns,
        "other_share": other_ns / cap_ns,
        "idle_share": (d["idle"] + d["iowait"]) * tick_ns / cap_ns,
        "ncpu_seen": round(cap_ns / 1e9 / elapsed, 2) if elapsed > 0 else 0,
    }


def sockstat_tcp_mem_pages():
    try:
        with open("/proc/net/sockstat") as f:
            for line in f:
                if line.startswith("TCP:"):
                    parts = line.split()
                    return int(parts[parts.index("mem") + 1])
    except (OSError, ValueError):
        pass
    return 0


def meminfo_kb(field):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def set_autogroup_nice(pid, nice):
    """Autogroup scheduling makes `nice` useless for setsid()ed servers; the
    autogroup's own niceness is what counts.  Returns True when written."""
    try:
        with open("/proc/%d/autogroup" % pid, "w") as f:
            f.write(str(nice))
        return True
    except OSError:
        return False
