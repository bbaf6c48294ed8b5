"""The unprivileged test user, loopback and network-namespace checks,
free port ranges.
"""
import os
import pwd
import socket

from mpmng_py.regress.base import BASE_PORTS, NETNS_SETUP, SetupError, TEST_USER, log
from mpmng_py.regress.procs import run


def ensure_user():
    """Name of the unprivileged user the suite runs as (root only)."""
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        r = run(["useradd", "--system", "--user-group", "--no-create-home",
                 "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                 TEST_USER])
        if r.returncode != 0:
            raise SetupError("useradd %s failed: %s" % (TEST_USER, r.stderr))
        log("regress: created system user %s" % TEST_USER)
    return TEST_USER


def localhost_check():
    addrs = {ai[4][0] for ai in socket.getaddrinfo("localhost", None)}
    if addrs != {"127.0.0.1"}:
        log("regress: WARNING: localhost resolves to %s; the suite assumes it is "
            "only 127.0.0.1 (Debian's run-test-suite removes localhost from "
            "the ::1 line of /etc/hosts). Clients fall back from ::1 to "
            "127.0.0.1, but access tests may be affected." % sorted(addrs))


def netns_available():
    if os.geteuid() != 0 or os.environ.get("REGRESS_NETNS", "1") == "0":
        return False
    r = run(["unshare", "--net", "--", "sh", "-c", NETNS_SETUP, "sh", "true"])
    return r.returncode == 0


def port_range_free(base, count=80):
    for port in range(base, base + count):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def pick_ports(n):
    ports = []
    for base in BASE_PORTS + list(range(9029, 20000, 100)):
        if len(ports) == n:
            break
        if port_range_free(base):
            ports.append(base)
    if len(ports) < n:
        raise SetupError("no free loopback port ranges")
    return ports
