"""The soak's HTTP/1.1 load generators: one thread each, paced to a fixed
rate, over plain or TLS connections kept alive or opened per request.
Every response is checked (status, length, content); failures go to the
Recorder with the local port and times needed to attribute them."""
import itertools
import threading
import time

from mpmng_py.soak import content
from mpmng_py.soak.httpclient import Connection, HttpError, tls_context


class Spec:
    """One request: method, path, body, and check(resp) -> error or None.
    deploy: the answer is the deployed file (judged for staleness)."""

    def __init__(self, method, path, check, body=b"", deploy=False):
        self.method, self.path, self.check = method, path, check
        self.body, self.deploy = body, deploy


def check_hash(expected):
    def check(resp):
        if content.sha(resp.body) != expected:
            return "body differs (%d bytes, sha %s)" % (len(resp.body), content.sha(resp.body)[:12])
        return None
    return check


def check_equal(expected):
    def check(resp):
        if resp.body != expected:
            return "body differs: %r" % resp.body[:80]
        return None
    return check


def check_deploy(resp):
    if content.deploy_version(resp.body) is None:
        return "deployed file torn or unknown: %r (%d bytes)" % (resp.body[:40], len(resp.body))
    return None


def get(path):
    hashes = content.expected_hashes()
    if path == content.DEPLOY_PATH:
        return Spec("GET", path, check_deploy, deploy=True)
    return Spec("GET", path, check_hash(hashes[path]))


def cgi_hello(n):
    q = "n%d" % n
    return Spec("GET", "/cgi-bin/hello.sh?" + q, check_equal(content.hello_body(q)))


def upload(data):
    return Spec("POST", "/cgi-bin/sha.sh", check_equal(content.sha_reply(data)), body=data)


class H1Load(threading.Thread):
    """Sends specs (cycled) at `rate` per second on one connection.
    keepalive False: a new connection per request (Connection: close);
    otherwise the connection is kept, and closed by us every `recycle`
    requests so that new handshakes keep happening too."""

    def __init__(self, kind, rec, stop, port, specs, rate, tls=False, keepalive=True,
                 recycle=0):
        super().__init__(name="load-" + kind, daemon=True)
        self.kind, self.rec, self.stop_ev = kind, rec, stop
        self.specs, self.interval = specs, 1.0 / rate
        self.keepalive, self.recycle = keepalive, recycle
        self.conn = Connection("127.0.0.1", port, tls_context() if tls else None)

    def run(self):
        nxt = time.monotonic()
        for spec in itertools.cycle(self.specs):
            if self.stop_ev.is_set():
                break
            self.one(spec)
            if self.recycle and self.conn.uses >= self.recycle:
                self.conn.close()
            nxt = max(nxt + self.interval, time.monotonic() - 1)
            self.stop_ev.wait(max(0.0, nxt - time.monotonic()))
        self.conn.close()

    def one(self, spec):
        c = self.conn
        if c.closed_by_server():
            self.rec.idle_close(self.kind)
            c.close()
        reused = c.sock is not None
        t_send = time.monotonic()
        try:
            resp = self.send(spec)
        except HttpError as e:
            if not (reused and e.got == 0 and spec.method == "GET"):
                self.fail(spec, t_send, reused, e, e.got)
                return
            # The server closed the kept-alive connection before reading
            # this request: retried once on a new connection.
            self.rec.retry(self.kind, spec.path, t_send, c.local_port,
                           t_send - (c.t_last or t_send), e)
            reused = False
            try:
                resp = self.send(spec)
            except HttpError as e2:
                self.fail(spec, t_send, False, e2, e2.got)
                return
        self.judge(spec, resp, t_send, reused)

    def send(self, spec):
        return self.conn.request(spec.method, spec.path, spec.body, close=not self.keepalive)

    def start_time(self, t_send, reused):
        """When the request was in flight from: its send on a reused
        connection, the connect() on a new one."""
        return t_send if reused else (self.conn.t_open or t_send)

    def fail(self, spec, t_send, reused, error, got):
        self.rec.failure(self.kind, spec.path, self.start_time(t_send, reused),
                         time.monotonic(), self.conn.local_port, error, got, reused)

    def judge(self, spec, resp, t_send, reused):
        err = "HTTP %d" % resp.status if resp.status != 200 else spec.check(resp)
        if err:
            self.fail(spec, t_send, reused, err, len(resp.body))
            self.conn.close()
            return
        if spec.deploy:
            self.rec.deploy_read(self.kind, content.deploy_version(resp.body), t_send)
        self.rec.success(self.kind)


def h1_generators(rec, stop, h, uploads):
    """The HTTP/1.1 mix: about 210 requests/s in all (the aim is correctness
    over time on 2 CPUs, not throughput: the server uses ~0.15 of a core)."""
    dep = content.DEPLOY_PATH
    s = ["/static/s500.bin", "/static/s16k.bin", "/static/s1m.bin"]
    ka_mix = [get(p) for p in (s[0], s[1], s[0], dep, s[1], s[0], dep, s[2])]
    tls_mix = [get(p) for p in (s[0], s[1], dep, s[2], s[1], dep)]
    P, Q = h.port, h.tls_port
    return [
        H1Load("keepalive-a", rec, stop, P, ka_mix, 40),
        H1Load("keepalive-b", rec, stop, P, ka_mix, 40),
        H1Load("deploy-reader", rec, stop, P, [get(dep)], 25),
        H1Load("new-conn", rec, stop, P, [get(p) for p in (s[0], dep, s[1])], 30,
               keepalive=False),
        H1Load("tls-keepalive", rec, stop, Q, tls_mix, 20, tls=True, recycle=40),
        H1Load("tls-new-conn", rec, stop, Q, [get(s[1]), get(dep)], 5, tls=True,
               keepalive=False),
        H1Load("cgi", rec, stop, P, [cgi_hello(n) for n in range(50)], 8),
        H1Load("proxy", rec, stop, P, [get("/backend/be500.bin"),
                                      get("/backend/be16k.bin")], 20),
        H1Load("upload", rec, stop, P, [upload(d) for d in uploads], 3, keepalive=False),
    ]
