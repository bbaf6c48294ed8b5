"""A graceful stop over a slow link (mpm_reuseport/rp_refuse.c): clients
80 ms away keep opening connections while the server stops.  The parent
has the kernel refuse new connections, then each child takes what is
queued and waits for the handshakes already under way (their SYN came
before the refusal; their ACK comes a round trip later) before it closes
its sockets.  Closing after a fixed 20 ms instead reset the connections
whose handshake finished later: the client had connected and sent its
request, and got a reset.  On loopback handshakes take microseconds, so
test_restart.py's graceful-stop test cannot see that; here it is one
round trip (mpmng_py/lossylink.py: two TUN devices and a delaying relay).

Needs root, /dev/net/tun and the suite's private network namespace."""
import os
import random
import signal
import socket
import subprocess
import threading
import time

from mpmng_py import lossylink
from mpmng_py.integration.common import (HttpdTestCase, mpm_directives, request_bytes,
                                         reuseport_only)
from mpmng_py.privhttpd import free_port

DELAY_MS = 40           # each way: an 80 ms round trip
CLIENTS = 16
BODY = os.urandom(2000)


class NewConnections:
    """Clients in the link's namespace, each opening a connection per
    request until told to stop: counts answers, refusals and the rest."""

    def __init__(self, ns, port):
        self.ns, self.port = ns, port
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.ok = self.refused = 0
        self.bad = []
        self.threads = [threading.Thread(target=self._run, daemon=True)
                        for _ in range(CLIENTS)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def _count(self, what, detail=None):
        with self.lock:
            if what == "ok":
                self.ok += 1
            elif what == "refused":
                self.refused += 1
            else:
                self.bad.append(detail)

    def _one(self):
        try:
            s = socket.create_connection((lossylink.SERVER_ADDR, self.port), timeout=10)
        except ConnectionRefusedError:
            return "refused", None
        with s:
            try:
                s.sendall(request_bytes("GET", "/f.bin", headers=(("Connection", "close"),)))
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError as e:
                return "bad", "%s after the connect" % type(e).__name__
        if data.startswith(b"HTTP/1.1 200") and data.endswith(BODY):
            return "ok", None
        return "bad", "answer of %d bytes: %r" % (len(data), data[:40])

    def _run(self):
        self.ns.enter()
        time.sleep(random.uniform(0, 0.2))     # out of step: handshakes at all times
        while not self.stop.is_set():
            what, detail = self._one()
            self._count(what, detail)
            if what == "refused":
                time.sleep(0.01)


def handshakes_under_way(port):
    """Server-side sockets in SYN_RECV on port (ss, the kernel's table)."""
    out = subprocess.run(["ss", "-Htn", "state", "syn-recv", "sport = :%d" % port],
                         capture_output=True, text=True, check=True).stdout
    return len(out.splitlines())


@reuseport_only
class SlowLinkStop(HttpdTestCase):
    def _link(self):
        reasons = lossylink.missing()
        if reasons:
            self.skipTest("cannot emulate a slow link: " + "; ".join(reasons))
        if not os.environ.get("MPMNG_IN_PRIVATE_NETNS"):
            self.skipTest("needs the suite's private network namespace (root, without "
                          "--no-netns)")
        link = lossylink.LossyLink(delay_ms=DELAY_MS, loss=0.0)
        try:
            link.start()
        except lossylink.Unavailable as e:
            self.skipTest("cannot emulate a slow link: %s" % e)
        self.addCleanup(link.close)
        return link

    def test_handshakes_under_way_at_a_graceful_stop_are_answered(self):
        link = self._link()
        port = free_port()
        h = self.httpd(mpm_directives(buckets=2, start=2, threads=32, server_limit=4,
                                      max_workers=128)
                       + "LogLevel warn mpm_reuseport:debug\n",
                       files={"f.bin": BODY}, port=port,
                       listen=["127.0.0.1:%d" % port, "%s:%d" % (lossylink.SERVER_ADDR, port)])
        h.wait_children(2)
        clients = NewConnections(link.ns, port).start()
        self.addCleanup(clients.stop.set)
        self.wait_until(lambda: clients.ok >= 100, 20, "100 answers across the link")
        # Stop while handshakes are under way (the server's side in SYN_RECV).
        self.wait_until(lambda: handshakes_under_way(port) > 0, 10, "a handshake under way",
                        interval=0.005)
        procs = h.processes()
        h.send_signal(signal.SIGWINCH)
        leftover = h.wait_exit(procs, 20)
        self.wait_until(lambda: clients.refused >= CLIENTS, 10, "refusals after the stop")
        clients.finish()
        waits = [l.split("mpm_reuseport: ")[-1] for l in h.log().splitlines()
                 if "graceful stop: took" in l]
        msg = "%d answered, %d refused, %d failed %s; children: %s" % (
            clients.ok, clients.refused, len(clients.bad), clients.bad[:5], waits)
        print("\n    " + msg, end=" ")
        self.assertEqual(leftover, [], msg)
        self.assertEqual(clients.bad, [], msg)
        self.assertTrue(waits, "each child says what it took\n" + h.log_tail())
        self.assertTrue(any(" 1 look(s)" not in w for w in waits),
                        "a child waited for handshakes under way: " + msg)

