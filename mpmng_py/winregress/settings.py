"""Settings of the Windows regression runner: paths, the runs it knows, the
short subset, the MPM sizing, and the template wineprefix.
"""
import os
import pwd
import shutil
import subprocess

from mpmng_py import ROOT
from mpmng_py.regress.base import OUT, SetupError, log
from mpmng_py.win.winhttpd import WINE

RESULTS = os.path.join(OUT, "winregress")
TOOLS = os.path.join(ROOT, "test", "win", "regress")
WRAPPER = os.path.join(TOOLS, "httpd-wine")
APXS = os.path.join(TOOLS, "apxs-mingw")
CGI_RELAY_SRC = os.path.join(TOOLS, "cgi-relay.c")
WINESERVER = os.path.join(os.path.dirname(WINE), "wineserver")
OBJDUMP = "x86_64-w64-mingw32-objdump"
CROSS_CC = "x86_64-w64-mingw32-gcc"


def default_winout():
    return os.environ.get("MPMNG_WINOUT") or os.path.join(ROOT, "build", "win", "out")


# A test file that prints nothing for this long is killed (and fails); the
# whole run stops after REGRESS_STALL (mpmng_py.regress.base.STALL) without
# output.  The slowest files print something every few seconds.
# (REGRESS_FILE_STALL overrides it, and SUBSET_FILE_STALL below.)
FILE_STALL = 240

# name -> (the MPM's module symbol, how httpd-wine stops and restarts it)
BUILDS = {
    "stock": ("mpm_winnt_module", "kill"),    # -k only talks to services
    "ng": ("mpm_winnt_ng_module", "signal"),  # -k stop|restart through the PidFile
}

# Sizing of mpm_winnt_ng: what Apache::Test's template gives stock mpm_winnt
# (its <IfModule mpm_winnt.c> block), so both serve with 50 threads.
# REGRESS_WINNT_NG_CONF replaces the block's body (e.g. to add
# "AcceptSocketReuse off").
WINNT_NG_CONF = "<IfModule mpm_winnt_ng_module>\n%s\n</IfModule>\n" % os.environ.get(
    "REGRESS_WINNT_NG_CONF", "ThreadsPerChild 50\nMaxConnectionsPerChild 0")

# Modules of the build never loaded (none so far); REGRESS_WIN_SKIP_MODULES
# adds file names (mod_x.so) to it.
SKIP_MODULES = set(os.environ.get("REGRESS_WIN_SKIP_MODULES", "").split())
# Loaded only inside a private network namespace (they multicast).
MULTICAST_MODULES = ("mod_heartbeat.so", "mod_heartmonitor.so")

# c-modules whose configuration uses other modules' directives unguarded
# (Debian's build always has them): left out when the build lacks one.
CMODULE_NEEDS = {"authany": ("authn_core", "auth_basic", "authz_user", "version")}

# `--subset mpm` (make check): test files that exercise the MPM's
# connection handling (keep-alive, pipelining, half-closed and protocol
# connections, request bodies, large and ranged responses, CGI pipes,
# proxying) and what the cache serves, and that pass with stock mpm_winnt
# under Wine (make check counts a file failing with both as failed).
# Those whose modules the build lacks skip, and run once it has them.
SUBSET_MPM = [
    "t/apache/byterange5.t", "t/apache/byterange7.t",  # ranges (cache: offsets)
    "t/apache/chunkinput.t", "t/apache/contentlength.t", "t/apache/post.t",
    "t/apache/teclchunk.t", "t/apache/pr18757.t", "t/apache/limits.t",
    "t/apache/etags.t",                                # validators
    "t/apache/getfile.t",                              # the docroot, sendfile/mmap
    "t/apache/rwrite.t",                               # large responses
    "t/apache/hostcheck.t",                            # the client half-closes
    "t/http11/basicauth.t", "t/http11/chunked.t", "t/http11/chunked2.t",
    "t/http11/clength.t", "t/http11/post.t",           # keep-alive connections
    "t/protocol/echo.t",                               # a protocol module's connection
    "t/modules/asis.t", "t/modules/buffer.t", "t/modules/cache.t", "t/modules/dir.t",
    "t/modules/status.t", "t/modules/cgi.t", "t/modules/proxy.t",
    "t/modules/proxy_balancer.t", "t/modules/deflate.t", "t/modules/reflector.t",
    "t/ssl/all.t", "t/ssl/http.t", "t/ssl/headers.t",
]
# The subset's files print something within seconds: a hang fails sooner.
SUBSET_FILE_STALL = 60


def user_ids(user):
    if user is None:
        return os.getuid(), os.getgid()
    pw = pwd.getpwnam(user)
    return pw.pw_uid, pw.pw_gid


def as_user(user, cmd):
    return (["runuser", "-u", user, "--"] + cmd) if user else cmd


def wine_env_cmd(prefix, home):
    return ["/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home,
            "WINEPREFIX=" + prefix, "WINEDEBUG=-all",
            "WINEDLLOVERRIDES=mscoree,mshtml=;winedbg.exe=d"]


def wait_wineserver(user, prefix, home, timeout=60):
    """Waits until the wineserver of `prefix` has exited (it lingers a few
    seconds after its last process): the next wine process must start its
    own, in the network namespace it runs in."""
    if not os.path.isdir(prefix):
        return
    try:
        subprocess.run(as_user(user, wine_env_cmd(prefix, home) + [WINESERVER, "-w"]),
                       capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        subprocess.run(as_user(user, wine_env_cmd(prefix, home) + [WINESERVER, "-k"]),
                       capture_output=True, timeout=30)


def wine_version():
    r = subprocess.run([WINE, "--version"], capture_output=True, text=True)
    return r.stdout.strip()


def ensure_template_prefix(user):
    """A wineprefix made once by `wineboot -i` as the test user (Wine refuses
    a prefix another user owns), copied for each run."""
    cache = os.path.join(RESULTS, "cache")
    tmpl = os.path.join(cache, "wineprefix")
    stamp = os.path.join(cache, "wineprefix.ok")
    uid, gid = user_ids(user)
    want = "%s uid %d\n" % (wine_version(), uid)
    try:
        with open(stamp) as f:
            if f.read() == want and os.stat(tmpl).st_uid == uid:
                return tmpl
    except OSError:
        pass
    log("winregress: creating the template wineprefix %s (wineboot -i)" % tmpl)
    shutil.rmtree(tmpl, ignore_errors=True)
    os.makedirs(cache, exist_ok=True)
    os.chmod(cache, 0o755)
    home = os.path.join(cache, "home")
    os.makedirs(home, exist_ok=True)
    os.chown(cache, uid, gid)
    os.chown(home, uid, gid)
    env = wine_env_cmd(tmpl, home)
    r = subprocess.run(as_user(user, env + [WINE, "wineboot", "-i"]),
                       capture_output=True, text=True, timeout=600)
    wait_wineserver(user, tmpl, home)
    if r.returncode != 0 or not os.path.exists(os.path.join(tmpl, "system.reg")):
        raise SetupError("wineboot -i failed (%s):\n%s" % (r.returncode, r.stderr[-2000:]))
    with open(stamp, "w") as f:
        f.write(want)
    return tmpl


def export_symbol(so):
    """The module symbol a DLL exports (its `*_module` export), or None."""
    r = subprocess.run([OBJDUMP, "-p", so], capture_output=True, text=True)
    syms = []
    in_table = False
    for line in r.stdout.splitlines():
        if line.startswith("[Ordinal/Name Pointer] Table"):
            in_table = True
            continue
        if in_table:
            parts = line.split()
            if not parts:
                break
            if parts[-1].endswith("_module"):
                syms.append(parts[-1])
    return syms[0] if len(syms) == 1 else None


def check_tools():
    missing = [t for t in (WINE, WINESERVER) if not os.path.exists(t)]
    missing += [t for t in (OBJDUMP, CROSS_CC, "perl", "unshare", "runuser")
                if not shutil.which(t)]
    if missing:
        raise SetupError("missing: %s (apt-get install wine64 gcc-mingw-w64-x86-64 "
                         "binutils-mingw-w64-x86-64)" % " ".join(missing))
