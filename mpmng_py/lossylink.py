"""A network link with delay and loss, emulated in user space.

This kernel has no netem (CONFIG_NET_SCH_NETEM is not set: `tc qdisc add
... netem` says "Specified qdisc kind is unknown"), so the link is made of
two TUN devices and a relay process between them:

    namespace of the caller            namespace made here (clients)
    tun "lsyNs" 10.203.7.1/30  <-->  relay  <-->  tun "lsyNc" 10.203.7.2/30

The relay reads each IP packet from one device, drops it with probability
`loss` (independently per packet and direction, from a seeded generator)
or keeps it in a queue ordered by release time (a heap) and writes it to
the other device `delay_ms` later.  25 ms each way makes a 50 ms round
trip.  It counts packets forwarded and dropped each way, so a test can
check that the link really delayed and dropped.

    link = LossyLink(delay_ms=25, loss=0.01, seed=1)
    link.start()            # raises Unavailable(reason) if it cannot
    link.ns.run(fn)         # fn() in a thread inside the clients' namespace
    link.stats()            # {"s2c": {...}, "c2s": {...}, ...}
    link.close()

The clients' namespace belongs to no process and has no name: a file
descriptor holds it, and it disappears (with its device) once that
descriptor, the relay's descriptors and every thread inside it are gone,
whatever way the test ends.  Needs root and /dev/net/tun.

Python 3.11 has no os.setns or os.unshare: they are called through ctypes.
Both act on the calling thread only, which is what lets a thread of the
test live in the other namespace while the rest stays where it was.
"""
import ctypes
import errno
import fcntl
import heapq
import json
import os
import random
import select
import shutil
import struct
import subprocess
import sys
import threading
import time

CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000

SERVER_ADDR = "10.203.7.1"
CLIENT_ADDR = "10.203.7.2"
PREFIX = 30

_libc = ctypes.CDLL(None, use_errno=True)


class Unavailable(Exception):
    """The link cannot be made here (the message says why)."""


def _check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def setns(fd):
    """Move the calling thread into the network namespace fd refers to."""
    _check(_libc.setns(fd, CLONE_NEWNET), "setns")


def missing():
    """Why a link cannot be made here ([] if it can)."""
    reasons = []
    if os.geteuid() != 0:
        reasons.append("not root (TUN devices and namespaces need CAP_NET_ADMIN)")
    if not os.path.exists("/dev/net/tun"):
        reasons.append("no /dev/net/tun")
    if not shutil.which("ip"):
        reasons.append("no ip command (iproute2)")
    return reasons


def _in_thread(fn, ns_fd=None):
    """fn() in a new thread (first moved into namespace ns_fd if given);
    its result, or its exception raised here."""
    box = {}

    def body():
        try:
            if ns_fd is not None:
                setns(ns_fd)
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


class NetNs:
    """A new network namespace with lo up, held by a descriptor only."""

    def __init__(self):
        def make():
            # A fresh thread unshares and ends: the namespace is kept by
            # the descriptor alone, no process lives in it.
            _check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
            fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            subprocess.run(["ip", "link", "set", "lo", "up"], check=True,
                           capture_output=True, timeout=10)
            return fd

        self.fd = _in_thread(make)

    def run(self, fn):
        """fn() in a thread inside this namespace; returns its result.
        Sockets it creates (and processes it starts) belong here."""
        return _in_thread(fn, self.fd)

    def enter(self):
        """Move the calling thread into this namespace (for the client
        threads of a test: call first thing in the thread)."""
        setns(self.fd)

    def ip(self, *args):
        return self.run(lambda: _ip(*args))

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _ip(*args):
    p = subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=10)
    if p.returncode != 0:
        raise OSError("ip %s: %s" % (" ".join(args), p.stderr.strip()))
    return p.stdout


def open_tun(name):
    """A TUN device (IP packets, no extra header) in the calling thread's
    namespace (the namespace is taken when /dev/net/tun is opened);
    returns its non-blocking descriptor."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", name.encode(), IFF_TUN | IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    return fd


def tcp_counters():
    """TCP counters of the calling thread's namespace (/proc/net follows
    the process's first thread, /proc/thread-self/net this thread)."""
    out = {}
    for name in ("snmp", "netstat"):
        with open("/proc/thread-self/net/" + name) as f:
            lines = f.read().splitlines()
        for names, vals in zip(lines[::2], lines[1::2]):
            prefix, names = names.split(":", 1)
            for k, v in zip(names.split(), vals.split(":", 1)[1].split()):
                try:
                    out[prefix + k] = int(v)
                except ValueError:
                    pass
    return out


def _link_drops(dev):
    """Packets the kernel dropped on dev (its queue to the relay full)."""
    try:
        info = json.loads(_ip("-j", "-s", "link", "show", "dev", dev))[0]["stats64"]
        return info["tx"]["dropped"] + info["rx"]["dropped"]
    except (OSError, ValueError, LookupError):
        return None


class LossyLink:
    """The two devices, the clients' namespace and the relay; see the
    module's docstring."""

    def __init__(self, delay_ms=25.0, loss=0.01, seed=None, server_addr=SERVER_ADDR,
                 client_addr=CLIENT_ADDR, mtu=1500):
        self.delay_ms, self.loss, self.mtu = float(delay_ms), float(loss), mtu
        self.seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
        self.server_addr, self.client_addr = server_addr, client_addr
        tag = os.getpid() % 100000
        self.dev_s, self.dev_c = "lsy%ds" % tag, "lsy%dc" % tag
        self.ns = None
        self.relay = None
        self._fds = []

    def start(self):
        reasons = missing()
        if reasons:
            raise Unavailable("; ".join(reasons))
        try:
            self.ns = NetNs()
        except OSError as e:
            raise Unavailable("cannot create a network namespace: %s" % e)
        try:
            self._fds.append(open_tun(self.dev_s))
            self._fds.append(self.ns.run(lambda: open_tun(self.dev_c)))
        except OSError as e:
            self.close()
            raise Unavailable("cannot create a TUN device: %s" % e)
        try:
            for run, dev, addr in ((lambda f: f(), self.dev_s, self.server_addr),
                                   (self.ns.run, self.dev_c, self.client_addr)):
                run(lambda: _ip("addr", "add", "%s/%d" % (addr, PREFIX), "dev", dev))
                # No IPv6 link-local address: its router solicitations
                # would be the only other traffic on the link.
                run(lambda: _ip("link", "set", dev, "addrgenmode", "none", "mtu",
                                str(self.mtu), "txqueuelen", "1000", "up"))
            self.relay = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "relay", str(self._fds[0]),
                 str(self._fds[1]), str(self.delay_ms), str(self.loss), str(self.seed)],
                pass_fds=self._fds, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            # The relay holds the devices now: when it exits they go.
            for fd in self._fds:
                os.close(fd)
            self._fds = []
            ready = self.relay.stdout.readline()
            if ready.strip() != "ready":
                raise OSError("relay did not start: %r" % ready)
        except BaseException:
            self.close()
            raise
        return self

    def describe(self):
        return "%s <-> %s, %.0f ms each way, loss %.2f%%, seed %d" % (
            self.server_addr, self.client_addr, self.delay_ms, 100 * self.loss, self.seed)

    def stats(self):
        """The relay's counters: per direction (s2c: server to clients,
        c2s) packets, bytes, dropped, and lateness of releases (ms); plus
        the kernel's drops on each device (relay too slow)."""
        self.relay.stdin.write("stats\n")
        self.relay.stdin.flush()
        out = json.loads(self.relay.stdout.readline())
        out["dev_drops"] = {"s": _link_drops(self.dev_s),
                            "c": self.ns.run(lambda: _link_drops(self.dev_c))}
        return out

    def close(self):
        if self.relay is not None:
            try:
                self.relay.stdin.close()    # EOF: the relay exits
            except OSError:
                pass
            try:
                self.relay.wait(5)
            except subprocess.TimeoutExpired:
                self.relay.kill()
                self.relay.wait()
            self.relay.stdout.close()
            self.relay = None
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        if self.ns is not None:
            self.ns.close()
            self.ns = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


# ---- the relay (its own process, so the test's threads do not delay it) ----
def relay(fd_s, fd_c, delay_ms, loss, seed):
    """Forward packets between fd_s and fd_c until stdin ends; "stats" on
    stdin writes the counters as one JSON line."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -5)   # late releases add delay
    except OSError:
        pass
    rng = random.Random(seed)
    delay = delay_ms / 1000.0
    names = {fd_s: "s2c", fd_c: "c2s"}
    peer = {fd_s: fd_c, fd_c: fd_s}
    stats = {d: {"packets": 0, "bytes": 0, "dropped": 0, "write_errors": 0}
             for d in names.values()}
    late = {"max_ms": 0.0, "sum_ms": 0.0, "n": 0}
    queue = []          # (release time, sequence, out fd, packet)
    seq = 0
    ctl = sys.stdin.fileno()
    ep = select.epoll()
    for fd in (fd_s, fd_c, ctl):
        ep.register(fd, select.EPOLLIN)
    print("ready", flush=True)
    while True:
        timeout = max(0.0, queue[0][0] - time.monotonic()) if queue else -1
        for fd, _ in ep.poll(timeout):
            if fd == ctl:
                line = sys.stdin.readline()
                if not line:
                    return
                out = dict(stats, late_max_ms=round(late["max_ms"], 2),
                           late_mean_ms=round(late["sum_ms"] / max(1, late["n"]), 3),
                           queued=len(queue), seed=seed)
                print(json.dumps(out), flush=True)
                continue
            st = stats[names[fd]]
            now = time.monotonic()
            for _ in range(256):        # then look at the other side again
                try:
                    pkt = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if rng.random() < loss:
                    st["dropped"] += 1
                    continue
                st["packets"] += 1
                st["bytes"] += len(pkt)
                seq += 1
                heapq.heappush(queue, (now + delay, seq, peer[fd], pkt))
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            due, _, out, pkt = heapq.heappop(queue)
            ms = (now - due) * 1000.0
            late["max_ms"] = max(late["max_ms"], ms)
            late["sum_ms"] += ms
            late["n"] += 1
            try:
                os.write(out, pkt)
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.ENOBUFS, errno.EINVAL, errno.EIO):
                    raise
                stats[names[peer[out]]]["write_errors"] += 1


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "relay":
        relay(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]),
              int(sys.argv[6]))
    else:
        sys.exit("usage: lossylink.py relay FD_S FD_C DELAY_MS LOSS SEED "
                 "(started by LossyLink)")
