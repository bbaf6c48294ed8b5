"""systemd's file descriptor store (mpm_reuseport/rp_sdstore.c), with this test
in systemd's place: the parent hands its listening sockets to NOTIFY_SOCKET
(FDSTOREREMOVE, then FDSTORE with the sockets) each generation; a server
started with them as LISTEN_FDS adopts them, and a connection that arrived
while no server ran is answered.  After a binary upgrade the new parent
says it is the main process (MAINPID=).  test/deb does the same under
systemd itself (systemctl restart and upgrades under load)."""
import array
import os
import signal
import socket
import tempfile

from mpmng_py import privhttpd
from mpmng_py.integration.common import (HttpdTestCase, ResponseReader, connect,
                                         mpm_directives, reuseport_only, wait_for_log)

NAME = "mpmng-listen"


class NotifySocket:
    """A datagram socket where systemd's would be; keeps what arrives."""

    def __init__(self, test):
        self.dir = tempfile.mkdtemp(prefix="mpmng-notify-")
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        os.chmod(self.dir, 0o755)
        os.chmod(self.path, 0o777)      # the server's parent runs as root; children don't send
        self.sock.settimeout(10)
        test.addCleanup(self.close)

    def receive(self):
        """(text, [fds]) of the next message."""
        fds = array.array("i")
        data, anc, _flags, _addr = self.sock.recvmsg(4096, socket.CMSG_SPACE(256 * fds.itemsize))
        for level, kind, body in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(body[:len(body) - len(body) % fds.itemsize])
        return data.decode(), list(fds)

    def close(self):
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


def listening_at(fd):
    s = socket.socket(fileno=os.dup(fd))
    try:
        port = s.getsockname()[1]
        on = s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        return port if on else None
    finally:
        s.close()


def inode(fd):
    return os.fstat(fd).st_ino


@reuseport_only
class SystemdFdStore(HttpdTestCase):
    def _store_messages(self, notify, h):
        """The two messages of one generation: the sockets it handed over."""
        text, fds = notify.receive()
        self.assertEqual(text, "FDSTOREREMOVE=1\nFDNAME=" + NAME)
        self.assertEqual(fds, [])
        text, fds = notify.receive()
        self.addCleanup(lambda: [os.close(fd) for fd in fds])
        self.assertEqual(text, "FDSTORE=1\nFDNAME=" + NAME)
        self.assertEqual([listening_at(fd) for fd in fds], [h.port] * len(fds),
                         "every socket handed over listens on the server's port")
        return fds

    def test_sockets_go_to_the_store_and_a_start_takes_them_back(self):
        notify = NotifySocket(self)
        conf = mpm_directives(buckets=2, start=2) + "GracefulShutdownTimeout 10\n"
        h = self.httpd(conf, files={"index.html": "from the store\n"}, start=False)
        h.env = {"NOTIFY_SOCKET": notify.path, "MPMNG_SYSTEMD_FDSTORE": "1"}
        h.start()
        fds = self._store_messages(notify, h)
        self.assertEqual(len(fds), 2, "one socket per bucket")

        # A graceful restart hands the same sockets again (systemd keeps one
        # copy of each), after taking the set back.
        h.graceful()
        again = self._store_messages(notify, h)
        self.assertEqual(sorted(map(inode, again)), sorted(map(inode, fds)))

        # The server stops; the store's copies keep the port: a client that
        # connects now waits in an accept queue instead of being refused.
        procs = h.processes()
        h.run_ctl("-k", "graceful-stop")
        self.assertEqual(h.wait_exit(procs, 20), [], "the server stopped by itself")
        waiting = connect(h.host, h.port, timeout=5)
        self.addCleanup(waiting.close)
        waiting.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")

        # The next start gets them as systemd passes them (fd 3 on,
        # LISTEN_PID naming the process that starts httpd: apachectl's
        # place) and adopts them.
        h.fds_at_3 = fds
        h.env.update({"LISTEN_FDS": str(len(fds)), "LISTEN_PID": str(os.getpid()),
                      "LISTEN_FDNAMES": ":".join([NAME] * len(fds))})
        h.start()
        self.assertTrue(wait_for_log(h, "took over 2 listening socket(s) from systemd's "
                                     "file descriptor store", 10), h.log_tail())
        waiting.settimeout(10)
        answer = ResponseReader(waiting).read_response()
        self.assertEqual((answer.status, answer.body), (200, b"from the store\n"), answer)
        taken = self._store_messages(notify, h)
        self.assertEqual(sorted(map(inode, taken)), sorted(map(inode, fds)),
                         "the new server listens on the very sockets it was passed")

    def test_an_upgraded_server_says_it_is_the_main_process(self):
        """systemd takes the old parent for the main process until told: the
        new one says so as it takes over, before the old one may exit."""
        notify = NotifySocket(self)
        conf = mpm_directives(buckets=2, start=2) + "GracefulShutdownTimeout 10\n"
        h = self.httpd(conf, start=False)
        h.env = {"NOTIFY_SOCKET": notify.path}
        h.start()
        h.wait_children(2)
        old = h.pid
        os.kill(old, signal.SIGUSR2)
        text, fds = notify.receive()
        new = h.pidfile_pid()
        self.assertEqual((text, fds), ("MAINPID=%d" % new, []), h.log_tail())
        self.assertNotEqual(new, old)
        self.assertTrue(wait_for_log(h, "binary upgrade: the new server accepts", 10),
                        h.log_tail())
        h.pid = new
        self.wait_until(lambda: not privhttpd.pid_alive(old), 20, "the old parent gone")
        notify.sock.settimeout(0.5)
        with self.assertRaises(socket.timeout, msg="one message, from the new parent"):
            notify.receive()
