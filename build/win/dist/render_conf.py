"""Writes the distribution's conf/ from httpd's own templates.

    python3 render_conf.py TEMPLATES BUILT_HTTPD_CONF OUTDIR "LEFT_OUT_MODULES"

TEMPLATES is docs/conf of httpd's source (httpd.conf.in, extra/*.conf.in,
mime.types, magic, charset.conv).  Every @var@ / @@var@@ is given a value
for the zip's layout, with every path under ${SRVROOT} (httpd's CMake build
leaves exp_sysconfdir, exp_runtimedir and exp_logfiledir empty, so its
httpd-ssl.conf names "/server.crt"); a template with a variable not known
here fails, so a change in httpd's templates is noticed rather than
shipped half-done.  The LoadModule lines are the ones httpd's build wrote
for the modules it built (BUILT_HTTPD_CONF), less LEFT_OUT_MODULES.
Added: `Define SRVROOT "c:/Apache24"` above ServerRoot, mod_fhcache's
lines after the LoadModule lines, and mpm_winnt_ng's block in
extra/httpd-mpm.conf.
"""
import os
import re
import shutil
import sys

SRVROOT = "${SRVROOT}"
VALUES = {
    "ServerRoot": SRVROOT,
    "exp_cgidir": SRVROOT + "/cgi-bin",
    "exp_htdocsdir": SRVROOT + "/htdocs",
    "exp_iconsdir": SRVROOT + "/icons",
    "exp_errordir": SRVROOT + "/error",
    "exp_manualdir": SRVROOT + "/manual",
    "exp_logfiledir": SRVROOT + "/logs",
    "exp_runtimedir": SRVROOT + "/logs",
    "exp_sysconfdir": SRVROOT + "/conf",
    "rel_logfiledir": "logs",
    "rel_runtimedir": "logs",
    "rel_sysconfdir": "conf",
    "Port": "80",
    "SSLPort": "443",
}

DEFINE = """#
# SRVROOT: where this directory tree is.  Unzipped to C:\\Apache24 this is
# right as it is; elsewhere, change it (forward slashes, e.g. "d:/web/Apache24").
# Every path below that is not absolute is under it.
#
Define SRVROOT "c:/Apache24"

"""

FHCACHE = """
# mod_fhcache (mpm-ng): keeps static files open with their metadata and
# serves them with TransmitFile; a file that changes on disk is dropped
# at once (ReadDirectoryChangesW).  Uncomment the LoadModule line to use it.
#LoadModule fhcache_module modules/mod_fhcache.so
<IfModule fhcache_module>
    FHCache On
</IfModule>
"""

MPM_NG = """
# mpm_winnt_ng (mpm-ng), the Windows MPM this httpd is built with:
# ThreadsPerChild: requests served at once (idle keep-alive connections
#                  wait on the completion port, without a thread)
# MaxConnectionsPerChild: connections a child serves before it is replaced
#                  (0: never)
<IfModule mpm_winnt_ng_module>
    ThreadsPerChild         64
    MaxConnectionsPerChild   0
</IfModule>
"""


def fail(msg):
    sys.exit("render_conf: " + msg)


def render(text, values, name):
    def value(m):
        var = m.group(1)
        if var not in values:
            fail("%s: no value for @%s@" % (name, var))
        return values[var]
    text = text.replace("@@", "@")
    return re.sub(r"@([A-Za-z_][A-Za-z0-9_]*)@", value, text)


def built_loadmodules(path, left_out):
    """The LoadModule lines (active or commented) httpd's build wrote."""
    with open(path) as f:
        lines = [l for l in f if re.match(r"^#? ?LoadModule \w+_module ", l)]
    if not lines:
        fail("%s: no LoadModule lines" % path)
    keep = []
    for l in lines:
        name = re.search(r"LoadModule (\w+)_module", l).group(1)
        if name not in left_out:
            keep.append(re.sub(r"^# LoadModule", "#LoadModule", l))
    return "".join(keep).rstrip("\n")


def insert_after(text, anchor_re, addition, name):
    m = None
    for m in re.finditer(anchor_re, text, flags=re.M | re.S):
        pass
    if not m:
        fail("%s: no %r to add after" % (name, anchor_re))
    return text[:m.end()] + addition + text[m.end():]


def main():
    templates, built_conf, out, left_out = sys.argv[1], sys.argv[2], sys.argv[3], \
        sys.argv[4].split()
    values = dict(VALUES, LoadModule=built_loadmodules(built_conf, left_out))
    for dirpath, _, files in os.walk(templates):
        rel = os.path.relpath(dirpath, templates)
        os.makedirs(os.path.join(out, rel), exist_ok=True)
        for f in files:
            src = os.path.join(dirpath, f)
            if not f.endswith(".conf.in"):
                shutil.copy(src, os.path.join(out, rel, f))
                continue
            name = os.path.join(rel, f[:-3])
            with open(src) as fh:
                text = render(fh.read(), values, name)
            if name == "./httpd.conf":
                if 'ServerRoot "${SRVROOT}"' not in text:
                    fail("httpd.conf: no ServerRoot line")
                text = text.replace('ServerRoot "${SRVROOT}"',
                                    DEFINE + 'ServerRoot "${SRVROOT}"', 1)
                text = insert_after(text, r"^#?LoadModule [^\n]*\n", FHCACHE, name)
            elif name == "extra/httpd-mpm.conf":
                text = insert_after(text, r"<IfModule mpm_winnt_module>.*?</IfModule>\n",
                                    MPM_NG, name)
            with open(os.path.join(out, name), "w") as fh:
                fh.write(text)


if __name__ == "__main__":
    main()
