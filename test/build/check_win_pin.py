#!/usr/bin/env python3
"""The Windows distribution is built from the newest httpd release that
Debian's source packages offer: fails when a newer apache2 source than
build/win/build.sh's HTTPD_SOURCE can be downloaded.

Debian's archive lists versions whose source a mirror may not carry (a
security update's pool answering 404): those are named and do not count.
Needs deb-src entries in the apt sources (build/fetch-source.sh adds them
as root); without them it says so and fails, since it cannot tell."""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def pinned():
    with open(os.path.join(ROOT, "build", "win", "build.sh")) as f:
        m = re.search(r'^HTTPD_SOURCE="apache2=(\S+) ', f.read(), re.M)
    if not m:
        sys.exit("win-pin: no HTTPD_SOURCE=\"apache2=VERSION ...\" in build/win/build.sh")
    return m.group(1)


def newer(a, b):
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


def listed_versions():
    out = subprocess.run(["apt-cache", "showsrc", "apache2"], capture_output=True,
                         text=True).stdout
    return sorted(set(re.findall(r"^Version: (\S+)", out, re.M)))


def orig_uri(version):
    """The upstream tarball's URI for that source version, from apt."""
    out = subprocess.run(["apt-get", "source", "--print-uris", "--download-only",
                          "apache2=" + version], capture_output=True, text=True,
                         cwd="/tmp").stdout
    m = re.search(r"^'(\S+\.orig\.tar\.[a-z0-9]+)'", out, re.M)
    return m.group(1) if m else None


def downloadable(uri):
    """From its pool, or for a security update the archive's main pool
    (where build/fetch-source.sh looks too)."""
    for u in (uri, uri.replace("/debian-security/pool/updates/", "/debian/pool/")):
        if subprocess.run(["curl", "-sfIL", "--max-time", "30", "-o", "/dev/null",
                           u]).returncode == 0:
            return True
    return False


def main():
    pin = pinned()
    versions = listed_versions()
    if not versions:
        print("win-pin: apt knows no apache2 source (no deb-src entries?): cannot tell "
              "whether %s is the newest; build/fetch-source.sh enables them as root" % pin)
        return 1
    behind = []
    for v in versions:
        if not newer(v, pin):
            continue
        uri = orig_uri(v)
        if uri and downloadable(uri):
            behind.append(v)
        else:
            print("win-pin: apache2 %s is listed but its source is not downloadable (%s): "
                  "not counted" % (v, uri or "no URI"))
    if behind:
        print("win-pin: build/win/build.sh builds httpd from apache2 %s; Debian offers %s: "
              "update HTTPD_SOURCE (and the patch, build/win/patches/)" % (
                  pin, ", ".join(behind)))
        return 1
    print("win-pin: apache2 %s is the newest source Debian offers (of %s)" % (
        pin, ", ".join(versions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
