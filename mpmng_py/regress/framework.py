"""What the suite needs on the machine: Debian packages and the
perl-framework from Debian's apache2 source package (cached).
"""
import glob
import os
import re
import shutil
import tarfile
import tempfile

from mpmng_py.regress.base import CACHE, FRAMEWORK, PACKAGES_FILE, SOURCE_SPECS, SetupError, log
from mpmng_py.regress.procs import run


def read_packages():
    with open(PACKAGES_FILE) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def ensure_packages():
    pkgs = read_packages()
    missing = []
    for p in pkgs:
        r = run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", p])
        if r.returncode != 0 or not r.stdout.startswith("ii"):
            missing.append(p)
    if not missing:
        return
    if os.geteuid() != 0:
        raise SetupError("missing Debian packages (install them as root): "
                         + " ".join(missing))
    log("regress: installing missing packages: " + " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "--no-install-recommends",
           "-o", "DPkg::Lock::Timeout=600"] + missing
    r = run(cmd, env=env)
    if r.returncode != 0:
        run(["apt-get", "update"], env=env)
        r = run(cmd, env=env)
    if r.returncode != 0:
        raise SetupError("apt-get install failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])


def deb_src_enabled():
    for path in glob.glob("/etc/apt/sources.list.d/*.sources"):
        with open(path) as f:
            for line in f:
                if re.match(r"^\s*Types:.*\bdeb-src\b", line):
                    return True
    for path in ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.list"):
        try:
            with open(path) as f:
                if any(re.match(r"^\s*deb-src\s", l) for l in f):
                    return True
        except OSError:
            pass
    return False


def enable_deb_src():
    path = "/etc/apt/sources.list.d/debian.sources"
    if not os.path.exists(path):
        raise SetupError("no deb-src entries and no %s to add them to" % path)
    with open(path) as f:
        text = f.read()
    new = re.sub(r"(?m)^Types:[ \t]*deb[ \t]*$", "Types: deb deb-src", text)
    if new == text:
        raise SetupError("could not enable deb-src in %s" % path)
    with open(path, "w") as f:
        f.write(new)
    log("regress: enabled deb-src in %s" % path)


def ensure_framework():
    """The perl-framework, unpacked once into out/regress/cache/."""
    if os.path.exists(os.path.join(CACHE, ".complete")):
        return
    shutil.rmtree(CACHE, ignore_errors=True)
    os.makedirs(CACHE)
    local = os.environ.get("REGRESS_FRAMEWORK_SRC")
    if local:
        shutil.copytree(local, FRAMEWORK, symlinks=True)
        source = "local copy of " + local
    else:
        source = download_framework()
    with open(os.path.join(CACHE, "SOURCE"), "w") as f:
        f.write(source + "\n")
    open(os.path.join(CACHE, ".complete"), "w").close()
    log("regress: perl-framework cached in %s (%s)" % (FRAMEWORK, source))


def download_framework():
    if os.geteuid() != 0:
        raise SetupError("the perl-framework is not cached yet and fetching it "
                         "needs root (apt-get); or set REGRESS_FRAMEWORK_SRC")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not deb_src_enabled():
        enable_deb_src()
        run(["apt-get", "update"], env=env)
    tmp = tempfile.mkdtemp(prefix="dl-", dir=CACHE)
    os.chmod(tmp, 0o755)
    try:
        tarball, errors, updated = None, [], False
        for spec in SOURCE_SPECS:
            for attempt in (1, 2):
                r = run(["apt-get", "source", "--download-only", spec], cwd=tmp, env=env)
                found = glob.glob(os.path.join(tmp, "*.debian.tar.xz"))
                if r.returncode == 0 and found:
                    tarball = found[0]
                    break
                errors.append("%s: %s" % (spec, (r.stderr or r.stdout).strip()[-400:]))
                # "Unable to find a source package": lists never fetched.
                if attempt == 1 and not updated and "Unable to find" in r.stderr:
                    run(["apt-get", "update"], env=env)
                    updated = True
                    continue
                break
            if tarball:
                break
        if not tarball:
            raise SetupError("apt-get source failed:\n" + "\n".join(errors))
        with tarfile.open(tarball) as tf:
            members = [m for m in tf.getmembers()
                       if m.name.startswith("debian/perl-framework/")]
            if not members:
                raise SetupError("%s has no debian/perl-framework" % tarball)
            tf.extractall(tmp, members=members)
        os.rename(os.path.join(tmp, "debian", "perl-framework"), FRAMEWORK)
        return os.path.basename(tarball)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
