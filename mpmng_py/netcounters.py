"""TCP counters of the current network namespace, for tests and benchmarks
that must tell whether connections were reset or left half-closed."""
import subprocess


def tcp_counters():
    """TCP counters of this network namespace (what `nstat -az` shows):
    {"TcpOutRsts": n, "TcpExtTCPAbortOnClose": n, ...}."""
    out = {}
    for path in ("/proc/net/snmp", "/proc/net/netstat"):
        with open(path) as f:
            lines = f.read().splitlines()
        for names, vals in zip(lines[::2], lines[1::2]):
            prefix, names = names.split(":", 1)
            _, vals = vals.split(":", 1)
            for k, v in zip(names.split(), vals.split()):
                try:
                    out[prefix + k] = int(v)
                except ValueError:
                    pass
    return out


RESET_COUNTERS = ("TcpOutRsts", "TcpExtTCPAbortOnClose", "TcpExtTCPAbortOnData",
                  "TcpEstabResets")


def reset_delta(before, after):
    return {k: after.get(k, 0) - before.get(k, 0) for k in RESET_COUNTERS}


def _count(states, ports):
    """Server-side TCP sockets on ports in any of states (ss's names)."""
    filt = "( %s )" % " or ".join("sport = :%d" % p for p in ports)
    args = []
    for st in states:
        args += ["state", st]
    out = subprocess.run(["ss", "-Htn"] + args + [filt], capture_output=True,
                         text=True, timeout=10).stdout
    return sum(1 for line in out.splitlines() if line.strip())


def close_wait(ports):
    """Connections on the server's ports that the client has closed and
    the server not yet."""
    return _count(["close-wait"], ports)


def held(ports):
    """Connections on the server's ports that the server has not finished
    with: open, closing by either side, or in its lingering close (every
    state but LISTEN and TIME-WAIT)."""
    return _count(["established", "syn-recv", "close-wait", "fin-wait-1", "fin-wait-2",
                   "last-ack", "closing"], ports)
