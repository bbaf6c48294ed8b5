"""mpm-ng on older httpd releases: build each, build our modules with its
apxs, and test them there.

    python3 -m mpmng_py.compat [--short] [--only 2.4.37]... [--no-regress] [--no-integration]
    python3 -m mpmng_py.compat --list [--short] [--only 2.4.37]...

For each httpd-2.4.N.tar.gz that build/compat/sources.sh finds
(MPMNG_HTTPD_SOURCES, default ../shared/httpd-src beside the checkout):

1. build that httpd with Debian's APR, PCRE, OpenSSL and nghttp2
   (build/compat/build-httpd.sh, kept by key in /var/cache/mpm-ng/httpd);
2. build mod_mpm_reuseport.so and mod_fhcache.so with its apxs into
   out/compat/<version>/: any compiler warning fails the version;
3. the integration suite against that httpd (APACHE2, MPMNG_SYSMODS,
   MPMNG_OUT), including the upgrade under load from that httpd to
   Debian's /usr/sbin/apache2 (MPMNG_UPGRADE_TO); tests that cannot apply
   to a release skip with the reason (common.needs_httpd) and are listed;
4. unless --short or --no-regress: httpd's regression suite with that
   release's own mpm_event against mpm_reuseport, each also with
   mod_fhcache (test/regress/run.sh event reuseport --with-fhcache).

--short (make check) tests one release per path through the httpd seam
(seampaths.py: the newest of the releases that compile the same way and
bundle the same mod_http2), and runs step 3 for the serving, keep-alive,
pipelining, TLS, HTTP/2, restart, upgrade and mod_fhcache tests only.
--list prints the tarballs it would test, one per line (build-all.sh).
Without sources it says where to get them and passes.  Last line:
`compat: N passed, N failed`; logs in out/compat/<version>/.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

from mpmng_py import ROOT
from mpmng_py.compat import seampaths

OUT = os.path.join(ROOT, "out", "compat")
BUILD = os.path.join(ROOT, "build", "compat")
# make check's part of the suite: what differs between httpd releases.
SHORT_TESTS = [
    "test_serving.",                                    # keep-alive, pipelining, framing
    "test_tls_h2.TlsServing.test_files_of_every_size",  # TLS, with and without the cache
    "test_tls_h2.Http2.",                               # HTTP/2: windows, restarts, stops
    "test_lifecycle.GracefulRestart.", "test_lifecycle.Stop.", "test_lifecycle.Restart.",
    "test_upgrade.BinaryUpgrade.test_an_upgrade_to_another",    # to Debian's 2.4.71
    "test_fhcache.FHCache_reuseport.",
]
UPGRADE_TO = "/usr/sbin/apache2"


def log(msg):
    print("compat: " + msg, flush=True)


class Version:
    """One httpd release: its tarball, build and results."""

    def __init__(self, tarball):
        self.tarball = tarball
        self.name = re.sub(r"^httpd-|\.tar\.gz$", "", os.path.basename(tarball))
        self.out = os.path.join(OUT, self.name)
        self.prefix = None
        self.passed = self.failed = 0
        self.skips = []
        self.notes = []

    def fail(self, what):
        self.failed += 1
        self.notes.append("FAILED: " + what)
        log("%s: FAILED: %s" % (self.name, what))

    def ok(self, what):
        self.passed += 1
        log("%s: ok: %s" % (self.name, what))

    def env(self):
        return dict(os.environ, APACHE2=os.path.join(self.prefix, "bin", "httpd"),
                    MPMNG_SYSMODS=os.path.join(self.prefix, "modules"),
                    MPMNG_APXS=os.path.join(self.prefix, "bin", "apxs"),
                    MPMNG_OUT=self.out, MPMNG_UPGRADE_TO=UPGRADE_TO)


def run_logged(cmd, logfile, env=None, echo=None):
    """Run cmd with its output in logfile; lines matching echo are shown."""
    with open(logfile, "w", buffering=1) as f:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace")
        for line in p.stdout:
            f.write(line)
            if echo and re.search(echo, line):
                print("    " + line.rstrip()[:300], flush=True)
        return p.wait()


def build_httpd(v, short):
    """make check's build has the modules the integration suite loads,
    make compat's every module (build-httpd.sh --modules)."""
    logfile = os.path.join(v.out, "build-httpd.log")
    t0 = time.monotonic()
    rc = run_logged([os.path.join(BUILD, "build-httpd.sh"), "--modules",
                     "check" if short else "all", v.tarball], logfile)
    with open(logfile) as f:
        lines = f.read().splitlines()
    if rc != 0 or not lines or not os.path.isfile(os.path.join(lines[-1], "bin", "httpd")):
        v.fail("httpd %s did not build (%s)" % (v.name, logfile))
        return False
    v.prefix = lines[-1]
    v.ok("httpd %s in %s (%.0f s here)" % (v.name, v.prefix, time.monotonic() - t0))
    return True


def build_modules(v):
    """Our modules with this release's apxs; every warning counts."""
    logfile = os.path.join(v.out, "build-modules.log")
    apxs = os.path.join(v.prefix, "bin", "apxs")
    # Everything compiled again: warnings are counted from this build.
    shutil.rmtree(os.path.join(v.out, "obj-plain"), ignore_errors=True)
    rc = run_logged(["make", "-s", "-j2", "APXS=" + apxs, "OUT=" + v.out, "all"], logfile,
                    echo=r"warning:|error:")
    with open(logfile) as f:
        text = f.read()
    warnings = len(re.findall(r"\bwarning:", text))
    errors = len(re.findall(r"\berror:", text))
    if rc != 0 or errors or warnings:
        v.fail("our modules with %s: %d errors, %d warnings (%s)" % (
            apxs, errors, warnings, logfile))
        return False
    v.ok("our modules built with %s, no warning" % apxs)
    return True


def integration(v, short):
    logfile = os.path.join(v.out, "integration.log")
    cmd = [sys.executable, "-m", "mpmng_py.integration"]
    for k in SHORT_TESTS if short else []:
        cmd += ["-k", k]
    run_logged(cmd, logfile, env=v.env(), echo=r"^(FAIL|ERROR):|^integration: \d")
    with open(logfile) as f:
        text = f.read()
    m = re.findall(r"^integration: (\d+) passed, (\d+) failed, (\d+) skipped", text, re.M)
    if not m:
        v.fail("the integration suite printed no summary (%s)" % logfile)
        return
    p, f, s = map(int, m[-1])
    v.passed += p
    v.failed += f
    # "<test> ... skip: httpd 2.4.N: <why> (0.0s)", subtests without the time
    v.skips = [(t, re.sub(r" \(\d+\.\ds\)$", "", why)) for t, why in
               re.findall(r"^(\S+(?: \([^)]*\))?) \.\.\. skip: (httpd \d.*)$", text, re.M)]
    log("%s: integration: %d passed, %d failed, %d skipped (%s)" % (
        v.name, p, f, s, logfile))
    if f:
        v.notes.append("FAILED: %d integration tests (%s)" % (f, logfile))


def regress(v):
    """httpd's regression suite: that release's event against ours."""
    logfile = os.path.join(v.out, "regress.log")
    env = v.env()
    framework = os.path.join(ROOT, "out", "regress", "cache", "perl-framework")
    if os.path.isdir(framework):
        env.setdefault("REGRESS_FRAMEWORK_SRC", framework)
    rc = run_logged([os.path.join(ROOT, "test", "regress", "run.sh"), "event", "reuseport",
                     "--with-fhcache"], logfile, env=env,
                    echo=r"regressions\)|^regress: (event|reuseport)|Error|commented out")
    with open(logfile) as f:
        text = f.read()
    # What counts is each comparison's regressions: files that fail with
    # both MPMs of a release (its suite is Debian's newer one) are listed
    # by the runner, not ours to count.
    counts = [int(n) for n in re.findall(r"\(regressions\): (\d+)$", text, re.M)]
    if rc not in (0, 1) or len(counts) != 3:
        v.fail("the regression suite did not compare three runs (exit %d, %s)" % (rc, logfile))
        return
    for n in counts:
        if n:
            v.fail("%d regression(s) in httpd's suite (%s)" % (n, logfile))
        else:
            v.passed += 1
    log("%s: regress: event vs reuseport, event vs event+fhcache, reuseport vs "
        "reuseport+fhcache: %s regressions (%s)" % (v.name, "/".join(map(str, counts)), logfile))


def main():
    ap = argparse.ArgumentParser(prog="python3 -m mpmng_py.compat",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", action="store_true",
                    help="make check's part: the integration tests of what differs")
    ap.add_argument("--only", action="append", default=[], metavar="VERSION",
                    help="only this release (2.4.N); may be repeated")
    ap.add_argument("--no-regress", action="store_true", help="skip httpd's regression suite")
    ap.add_argument("--no-integration", action="store_true", help="skip the integration suite")
    ap.add_argument("--list", action="store_true",
                    help="print the release tarballs it would test, and stop")
    args = ap.parse_args()

    tarballs = subprocess.run([os.path.join(BUILD, "sources.sh")], capture_output=True,
                              text=True, check=True).stdout.split()
    stands_for = {}
    if args.short:
        chosen = seampaths.one_per_path(tarballs)
        tarballs = [t for t, _ in chosen]
        stands_for = {t: others for t, others in chosen}
    versions = [Version(t) for t in tarballs]
    if args.only:
        versions = [v for v in versions if v.name in args.only]
    if args.list:
        print("\n".join(v.tarball for v in versions))
        return 0
    if not versions:
        log("no httpd sources found: put httpd-2.4.N.tar.gz release tarballs "
            "(https://archive.apache.org/dist/httpd/) in a directory and set "
            "MPMNG_HTTPD_SOURCES to it (default: ../shared/httpd-src); nothing tested")
        print("compat: 0 passed, 0 failed")
        return 0
    log("httpd %s, from %s" % (", ".join(v.name for v in versions),
                               os.path.dirname(versions[0].tarball)))
    for v in versions:
        others = [Version(t).name for t in stands_for.get(v.tarball, [])]
        if others:
            log("%s also stands for %s: the same path through the httpd seam "
                "(make compat tests each)" % (v.name, ", ".join(others)))
    for v in versions:
        os.makedirs(v.out, exist_ok=True)
        t0 = time.monotonic()
        if build_httpd(v, args.short) and build_modules(v):
            if not args.no_integration:
                integration(v, args.short)
            if not (args.short or args.no_regress):
                regress(v)
        log("%s: %d passed, %d failed in %.0f s" % (v.name, v.passed, v.failed,
                                                     time.monotonic() - t0))
    print()
    for v in versions:
        log("httpd %s: %d passed, %d failed" % (v.name, v.passed, v.failed))
        for note in v.notes:
            log("    " + note)
        for test, why in v.skips:
            log("    does not apply: %s: %s" % (test, why))
    passed = sum(v.passed for v in versions)
    failed = sum(v.failed for v in versions)
    print("compat: %d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
