"""HTTP/2 load for the soak with curl: batches of requests multiplexed on
one connection (h2 over TLS by ALPN), single requests over h2c with prior
knowledge, and uploads over HTTP/2.  curl writes each body to a file and a line per
transfer (-w), from which every response is checked like the HTTP/1.1
ones: status, protocol, content."""
import os
import subprocess
import threading
import time

from mpmng_py.soak import content
from mpmng_py.soak.httpclient import Response
from mpmng_py.soak.loads import cgi_hello, get, upload

# One tab-separated line per transfer.
FIELDS = ("filename_effective", "http_code", "http_version", "local_port", "exitcode",
          "time_total", "errormsg")
WRITE_OUT = "\\t".join("%%{%s}" % f for f in FIELDS) + "\\n"


class CurlH2(threading.Thread):
    """Every `every` seconds one curl process fetches the specs over one
    HTTP/2 connection (all at once with multiplex, else the next one);
    every `upload_every`-th round also an upload.  curl 7.88 cannot send a
    second request on an h2c prior-knowledge connection (its second
    transfer fails with "Error in the HTTP2 framing layer", against stock
    mpm_event too), so h2c runs one request per connection."""

    def __init__(self, kind, rec, stop, h, tls, every, workdir, uploads, upload_every=4,
                 multiplex=True):
        super().__init__(name="load-" + kind, daemon=True)
        self.kind, self.rec, self.stop_ev, self.every = kind, rec, stop, every
        self.port = h.tls_port if tls else h.port
        self.tls = tls
        self.dir = os.path.join(workdir, kind)
        os.makedirs(self.dir, exist_ok=True)
        self.uploads = self._upload_files(uploads)
        self.upload_every, self.multiplex = upload_every, multiplex
        self.proc = None
        self.rounds = 0

    def _upload_files(self, uploads):
        out = []
        for i, data in enumerate(uploads):
            path = os.path.join(self.dir, "upload%d.bin" % i)
            with open(path, "wb") as f:
                f.write(data)
            out.append((path, upload(data)))
        return out

    def base_cmd(self):
        scheme = "https" if self.tls else "http"
        cmd = ["curl", "-sS", "--max-time", "30", "-w", WRITE_OUT,
               "--resolve", "localhost:%d:127.0.0.1" % self.port]
        cmd += ["-k", "--http2"] if self.tls else ["--http2-prior-knowledge"]
        return cmd, "%s://localhost:%d" % (scheme, self.port)

    def specs(self):
        paths = ["/static/s500.bin", "/static/s16k.bin", "/static/s1m.bin",
                 content.DEPLOY_PATH, "/backend/be16k.bin"]
        specs = [get(p) for p in paths] + [cgi_hello(self.rounds % 50)]
        return specs if self.multiplex else [specs[self.rounds % len(specs)]]

    def run(self):
        nxt = time.monotonic()
        while not self.stop_ev.is_set():
            self.rounds += 1
            self.batch()
            if self.rounds % self.upload_every == 0:
                self.upload_one()
            nxt = max(nxt + self.every, time.monotonic() - 1)
            self.stop_ev.wait(max(0.0, nxt - time.monotonic()))

    def batch(self):
        cmd, base = self.base_cmd()
        if self.multiplex:
            cmd.append("--parallel")
        files = {}
        for i, spec in enumerate(self.specs()):
            out = os.path.join(self.dir, "b%d" % i)
            files[out] = spec
            cmd += [base + spec.path, "-o", out]
        self.run_curl(cmd, files)

    def upload_one(self):
        path, spec = self.uploads[self.rounds // self.upload_every % len(self.uploads)]
        cmd, base = self.base_cmd()
        out = os.path.join(self.dir, "up")
        cmd += ["--data-binary", "@" + path, "-H", "Content-Type: application/octet-stream",
                base + spec.path, "-o", out]
        self.run_curl(cmd, {out: spec})

    def run_curl(self, cmd, files):
        for f in files:
            if os.path.exists(f):
                os.unlink(f)
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        try:
            out, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        recs = [dict(zip(FIELDS, line.split("\t"))) for line in out.splitlines()]
        # curl's clock starts once it runs, some milliseconds after t0 (more
        # under load), so t0 + time_total can fall before a transfer really
        # ended, e.g. before the kill of the child that cut it (7 ms short
        # once, and not excused): what the run took beyond its longest
        # transfer is that start-up (and exit), added to each.
        longest = max([_secs(r.get("time_total")) for r in recs] or [0.0])
        late = max(0.0, time.monotonic() - t0 - longest)
        seen = set()
        for rec in recs:
            spec = files.get(rec.get("filename_effective"))
            if spec is not None:
                seen.add(rec["filename_effective"])
                self.judge(spec, rec, t0, late)
        for f in set(files) - seen:
            self.rec.failure(self.kind, files[f].path, t0, time.monotonic(), 0,
                             "curl rc=%s gave no result line: %s" % (self.proc.returncode,
                                                                    err.strip()[-200:]))

    def judge(self, spec, r, t0, late):
        t_end = t0 + late + _secs(r.get("time_total"))
        port = int(r.get("local_port") or 0)
        err = None
        if r.get("exitcode") != "0":
            err = "curl exit %s: %s" % (r.get("exitcode"), r.get("errormsg", ""))
        elif r.get("http_code") != "200":
            err = "HTTP %s" % r.get("http_code")
        elif r.get("http_version") != "2":
            err = "HTTP/%s instead of HTTP/2" % r.get("http_version")
        else:
            with open(r["filename_effective"], "rb") as f:
                resp = Response(200, {}, f.read())
            err = spec.check(resp)
        if err:
            self.rec.failure(self.kind, spec.path, t0, t_end, port, err)
            return
        if spec.deploy:
            self.rec.deploy_read(self.kind, content.deploy_version(resp.body), t0)
        self.rec.success(self.kind)

    def kill(self):
        p = self.proc
        if p and p.poll() is None:
            p.kill()
            p.wait()


def _secs(text):
    try:
        return float(text or 0)
    except ValueError:
        return 0.0


def h2_generators(rec, stop, h, workdir, uploads):
    return [CurlH2("h2-tls", rec, stop, h, True, 1.0, workdir, uploads),
            CurlH2("h2c", rec, stop, h, False, 0.5, workdir, uploads, upload_every=8,
                   multiplex=False)]
