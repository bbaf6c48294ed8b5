"""Part `uploads`: what a request body costs the server when it comes fast.

mpm_reuseport reads bodies up to ReusePortBodyReadAhead (1 MiB) before a
worker takes the request, spooling them to a file only while they wait for
a slow client (the slow part's `uploads` scenario); stock MPMs have the
worker read them.  Here a fast client (ab -k -c8 on loopback) POSTs bodies
of 300 KB and 1 MB to the 500 B file: httpd reads each body (the default
handler discards it) and answers 405.  Recorded per run: requests per
second and the server's CPU time per request.  httpd variants only: nginx
answers such a POST without reading its body.  Nothing here passes or
fails on numbers."""
import os
import re
import subprocess
import tempfile
import time

from mpmng_py.bench import procstat
from mpmng_py.bench.variants import rotated

SIZES = (300000, 1000000)
DEFAULT_VARIANTS = ("reuseport", "event")
CONCURRENCY = 8
COLS = ["time", "round", "variant", "body_bytes", "requests", "failed", "rps",
        "server_cpu_us_per_req", "note"]


def _body(size, where):
    path = os.path.join(where, "body-%d" % size)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(os.urandom(size))
    return path


def _ab(url, body, n):
    p = subprocess.run(["ab", "-k", "-n", str(n), "-c", str(CONCURRENCY), "-p", body,
                        "-T", "application/octet-stream", url],
                       capture_output=True, text=True, timeout=300)
    done = re.search(r"^Complete requests:\s+(\d+)", p.stdout, re.M)
    failed = re.search(r"^Failed requests:\s+(\d+)", p.stdout, re.M)
    if p.returncode or not done:
        raise RuntimeError("ab failed: %s" % (p.stderr or p.stdout)[-300:])
    return int(done.group(1)), int(failed.group(1)) if failed else 0


def _one(v, size, rnd, args, docroot, tmp, tsv, log):
    from mpmng_py.bench import servers
    srv = servers.make_server(v, "uploads", docroot)
    row = {"time": time.strftime("%H:%M:%S"), "round": rnd, "variant": v.name,
           "body_bytes": size}
    body = _body(size, tmp)
    url = srv.url("/500B.bin")
    n = max(200, int(args.upload_mb * 1e6 / size))
    try:
        srv.start()
        srv.settle(timeout=120)
        _ab(url, body, max(50, n // 10))            # warm up
        pids = srv.pids()
        c0 = procstat.tree_cpu_ns(srv.root_pid, pids)
        t0 = time.monotonic()
        done, failed = _ab(url, body, n)
        secs = time.monotonic() - t0
        c1 = procstat.tree_cpu_ns(srv.root_pid, sorted(set(pids) | set(srv.pids())))
        row.update({"requests": done, "failed": failed, "rps": done / secs,
                    "server_cpu_us_per_req": (c1 - c0) / 1e3 / done})
        log("uploads r%d %-9s %8d B: %6.0f req/s, %7.1f us server CPU per request, "
            "%d failed" % (rnd, v.name, size, row["rps"], row["server_cpu_us_per_req"], failed))
    except Exception as e:  # a failed run is recorded, the part goes on
        row["note"] = "failed: %s" % str(e)[:200]
        log("uploads %s %d failed: %s" % (v.name, size, str(e)[:400]))
    finally:
        srv.cleanup()
    tsv.row(row)


def run(args, variants, docroot, tsv, log):
    with tempfile.TemporaryDirectory(prefix="mpmng-bench-uploads-") as tmp:
        for rnd in range(1, args.rounds + 1):
            for size in SIZES:
                for v in rotated(variants, rnd):
                    _one(v, size, rnd, args, docroot, tmp, tsv, log)


def pick(variants, explicit):
    return [v for v in variants if v.kind == "httpd"
            and (v.name in DEFAULT_VARIANTS or v.name in explicit)]
