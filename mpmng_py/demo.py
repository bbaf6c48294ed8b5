"""`make demo` / `make demo-stop` (`python3 -m mpmng_py.demo start|stop`):
a private httpd with mpm_reuseport and mod_fhcache on 127.0.0.1 (Debian's
apache2 binary, ServerRoot/conf/logs under out/demo, or DIR/demo after
`make demo OUT=DIR`)."""
import argparse
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time

from mpmng_py import ROOT, privhttpd

WORKDIR = os.path.join(privhttpd.OUT, "demo")
PIDFILE = os.path.join(WORKDIR, "run", "httpd.pid")
SITE = os.path.join(ROOT, "build", "demo-site")
# Names the copy of SITE made for the children (see children_can_read).
SITE_COPY_NOTE = os.path.join(WORKDIR, "run", "site-copy")
CHILD_USER = "www-data"  # privhttpd's User and Group when started as root


def children_can_read(path):
    """Whether the server's children can list and read directory path.  As
    root they run as www-data, which e.g. a clone under /root (0700) keeps
    out: every request would be a 403."""
    if os.geteuid() != 0:
        return os.access(path, os.R_OK | os.X_OK)
    try:
        res = subprocess.run(["test", "-r", path, "-a", "-x", path],
                             user=CHILD_USER, group=CHILD_USER, extra_groups=[])
    except (KeyError, OSError):
        return True  # no www-data: apache2 says so itself when it starts
    return res.returncode == 0


def copy_site():
    """SITE copied where www-data can read it; stop() removes it."""
    d = tempfile.mkdtemp(prefix="mpmng-demo-site-")
    os.chmod(d, 0o755)
    for name in os.listdir(SITE):
        shutil.copyfile(os.path.join(SITE, name), os.path.join(d, name))
        os.chmod(os.path.join(d, name), 0o644)
    with open(SITE_COPY_NOTE, "w") as f:
        f.write(d)
    return d


def drop_site_copy():
    try:
        with open(SITE_COPY_NOTE) as f:
            d = f.read().strip()
        os.unlink(SITE_COPY_NOTE)
    except OSError:
        return
    if os.path.basename(d).startswith("mpmng-demo-site-"):
        shutil.rmtree(d, ignore_errors=True)


def wait_ready(h, timeout=20):
    """server-status?auto once every bucket has a child accepting and the
    cache answers: what the start message reports."""
    deadline = time.monotonic() + timeout
    st = {}
    while time.monotonic() < deadline:
        try:
            st = h.status()
        except (OSError, RuntimeError, http.client.HTTPException):
            st = {}
        n = int(st.get("ReusePortBuckets", 0))
        if n and "FHCacheMode" in st and all(
                int(st.get("ReusePortBucket%dAccepting" % b, 0)) > 0 for b in range(n)):
            return st
        time.sleep(0.1)
    ours = ["%s: %s" % kv for kv in st.items() if kv[0].startswith(("ReusePort", "FHCache"))]
    raise RuntimeError("after %ds, not every bucket has a child accepting or the cache is "
                       "not on; server-status?auto says:\n%s\nerror log:\n%s" % (
                           timeout, "\n".join(ours) or "(no ReusePort or FHCache lines)",
                           h.log_tail()))


def stop_command():
    default = os.path.join(privhttpd.ROOT, "out")
    if os.path.realpath(privhttpd.OUT) == os.path.realpath(default):
        return "make demo-stop"
    return "make demo-stop OUT=%s" % privhttpd.OUT


def start(port, docroot):
    if os.path.exists(PIDFILE):
        stop(quiet=True)
    for so in ("mod_mpm_reuseport.so", "mod_fhcache.so"):
        if not os.path.exists(os.path.join(privhttpd.OUT, so)):
            sys.exit("demo: no %s in %s: start it with make demo" % (so, privhttpd.OUT))
    os.makedirs(os.path.join(WORKDIR, "run"), exist_ok=True)
    if docroot:
        docroot = os.path.abspath(docroot)
        if not os.path.isdir(docroot):
            sys.exit("demo: DOCROOT %s is not a directory" % docroot)
        if not children_can_read(docroot):
            sys.exit("demo: the server's children run as %s and cannot read DOCROOT %s "
                     "(or a directory above it)" % (CHILD_USER, docroot))
    else:
        docroot = SITE if children_can_read(SITE) else copy_site()
    fhcache = os.path.join(privhttpd.OUT, "mod_fhcache.so")
    h = privhttpd.Httpd(mpm="reuseport", port=port, docroot=docroot, workdir=WORKDIR,
                        directives='LoadModule fhcache_module "%s"\n'
                                   '<Directory "%s">\n  FHCache On\n</Directory>'
                                   % (fhcache, docroot))
    if privhttpd.wait_for_port(h.host, port, 0.2):
        drop_site_copy()
        sys.exit("demo: 127.0.0.1:%d is already in use; choose another "
                 "with PORT=..." % port)
    try:
        h.start()
        st = wait_ready(h)
    except RuntimeError as e:
        h.stop()
        drop_site_copy()
        sys.exit("demo: the server did not come up: %s" % e)
    buckets = int(st["ReusePortBuckets"])
    children = sum(int(st.get("ReusePortBucket%dChildren" % b, 0)) for b in range(buckets))
    status = h.url("/server-status")
    lines = [
        "mpm-ng demo: %s" % h.url("/"),
        "  httpd pid %d, MPM mpm_reuseport: %d bucket(s) (listener sockets, each with "
        "its own children), %d children" % (h.pid, buckets, children),
        "  mod_fhcache: FHCache On for %s (mode %s)" % (docroot, st["FHCacheMode"]),
    ]
    if os.path.exists(SITE_COPY_NOTE):
        lines.append("    (a copy of %s: the children run as %s, which cannot read the "
                     "checkout)" % (SITE, CHILD_USER))
    lines += [
        "  watch them at work: %s (loopback only)" % status,
        '    table "mpm_reuseport buckets": listener sockets, children, connections '
        'accepted and waiting',
        '    table "mod_fhcache": hits, misses, cached files; reload the page and Hits grows',
        "    as text: curl -s '%s?auto' | grep -E '^(ReusePort|FHCache)'" % status,
        "    listener sockets: ss -ltn 'sport = :%d'" % port,
        "  config %s, logs %s" % (h.conf, os.path.join(WORKDIR, "logs")),
        "  stop it with: %s" % stop_command(),
    ]
    print("\n".join(lines))


def stop(quiet=False):
    try:
        with open(PIDFILE) as f:
            pid = int(f.read())
    except (OSError, ValueError):
        drop_site_copy()
        if not quiet:
            print("demo: not running")
        return
    h = privhttpd.Httpd(mpm="reuseport", workdir=WORKDIR, port=1)
    h.pid = pid if privhttpd.pid_alive(pid) else None
    leftover = h.stop() if h.pid else []
    if os.path.exists(PIDFILE):
        os.unlink(PIDFILE)
    drop_site_copy()
    if not quiet:
        print("demo: stopped" + (" (killed %s)" % leftover if leftover else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("action", choices=["start", "stop"])
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--docroot")
    a = ap.parse_args()
    start(a.port, a.docroot) if a.action == "start" else stop()


if __name__ == "__main__":
    main()
