#!/usr/bin/env python3
"""`make demo` / `make demo-stop`: a private httpd with mpm_reuseport on
127.0.0.1 (Debian's apache2 binary, ServerRoot/conf/logs under out/demo)."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "lib"))
import privhttpd  # noqa: E402

WORKDIR = os.path.join(privhttpd.OUT, "demo")
SITE = os.path.join(HERE, "demo-site")


def start(port, docroot):
    if os.path.exists(os.path.join(WORKDIR, "run", "httpd.pid")):
        stop(quiet=True)
    os.makedirs(WORKDIR, exist_ok=True)
    docroot = os.path.abspath(docroot or SITE)
    if not os.path.isdir(docroot):
        sys.exit("demo: DOCROOT %s is not a directory" % docroot)
    h = privhttpd.Httpd(mpm="reuseport", port=port, docroot=docroot,
                        workdir=WORKDIR)
    if privhttpd.wait_for_port(h.host, port, 0.2):
        sys.exit("demo: 127.0.0.1:%d is already in use; choose another "
                 "with PORT=..." % port)
    h.start()
    print("mpm-ng demo: %s (httpd pid %d, %d children)" % (
        h.url("/"), h.pid, len(h.children())))
    print("  config %s, logs %s/logs" % (h.conf, WORKDIR))
    print("  stop it with: make demo-stop")


def stop(quiet=False):
    pidfile = os.path.join(WORKDIR, "run", "httpd.pid")
    try:
        with open(pidfile) as f:
            pid = int(f.read())
    except (OSError, ValueError):
        if not quiet:
            print("demo: not running")
        return
    h = privhttpd.Httpd(mpm="reuseport", workdir=WORKDIR, port=1)
    h.pid = pid if privhttpd.pid_alive(pid) else None
    leftover = h.stop() if h.pid else []
    if os.path.exists(pidfile):
        os.unlink(pidfile)
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
