"""Which httpd releases take different paths through the httpd seam
(include/mpmng_httpd.h), for make check's short compat run.

Two releases take the same path when their module magic numbers meet the
same MPMNG_HTTPD_MMN(N) thresholds of the seam (what our code compiles) and
they bundle the same mod_http2 major.minor (what our MPM meets at run time).
make check tests the newest release of each path; `make compat` tests every
release.  A threshold added to the seam splits a path on its own.
"""
import os
import re
import tarfile

from mpmng_py import ROOT

SEAM = os.path.join(ROOT, "include", "mpmng_httpd.h")


def seam_thresholds(seam=SEAM):
    """The module magic minors the seam tests, ascending."""
    with open(seam) as f:
        text = f.read()
    return sorted({int(n) for n in re.findall(r"MPMNG_HTTPD_MMN\((\d+)\)", text)})


def _member_text(tar, name, member):
    f = tar.extractfile("%s/%s" % (name, member))
    if f is None:
        raise ValueError("%s: no %s" % (tar.name, member))
    return f.read().decode(errors="replace")


def release_facts(tarball):
    """(module magic minor, bundled mod_http2 "major.minor") of a release
    tarball (httpd-2.4.N.tar.gz)."""
    name = os.path.basename(tarball)[:-len(".tar.gz")]
    with tarfile.open(tarball) as tar:
        mmn = _member_text(tar, name, "include/ap_mmn.h")
        h2 = _member_text(tar, name, "modules/http2/h2_version.h")
    minor = re.search(r"#define\s+MODULE_MAGIC_NUMBER_MINOR\s+(\d+)", mmn)
    h2v = re.search(r'#define\s+MOD_HTTP2_VERSION\s+"(\d+)\.(\d+)', h2)
    if not (minor and h2v):
        raise ValueError("%s: no module magic minor or mod_http2 version" % tarball)
    return int(minor.group(1)), "%s.%s" % h2v.groups()


def path_of(tarball, thresholds):
    """The path a release takes: the seam thresholds it meets and its
    mod_http2 major.minor."""
    minor, h2 = release_facts(tarball)
    return tuple(t for t in thresholds if minor >= t), h2


def one_per_path(tarballs, thresholds=None):
    """[(tarball, [tarballs it stands for])]: the newest release of each
    path, in the order given (tarballs oldest first)."""
    thresholds = seam_thresholds() if thresholds is None else thresholds
    groups = {}
    for t in tarballs:
        groups.setdefault(path_of(t, thresholds), []).append(t)
    chosen = {members[-1]: members[:-1] for members in groups.values()}
    return [(t, chosen[t]) for t in tarballs if t in chosen]
