"""Server variants: one small INI file each under bench/variants/, and
add-ons (bench/variants/addons/) that derive extra httpd variants such as
"event+fhcache" once their module exists.

Variant file:
    [variant]
    name = event            # what tables and plots call it
    kind = httpd            # httpd | nginx | h2o | lighttpd (launchers in servers.py)
    mpm = event             # httpd: key of privhttpd.MPMS, or mpm_module + mpm_path
    modules =               # httpd: extra Debian modules (names, space separated)
    requires =              # files that must exist, else the variant is skipped
    order = 20              # position in tables
    parts = throughput      # parts it runs in (default all)
    description = ...
    [common]                # config for every part
    directives = ...        # httpd: server-level directives
    main = / events = / http =   # nginx: text for those contexts
    [throughput] / [idle] / [syscalls]
    ...                     # appended to [common] for that part

Add-on file (addons/*.conf):
    [addon]
    name = fhcache          # derived variants are called <variant>+<name>
    kinds = httpd           # which kinds of variant it applies to
    applies_to = *          # or a list of variant names
    requires = ...          # files that must exist, else skipped with a note
    parts = throughput syscalls   # parts the derived variants run in (default all)
    when = named            # only when named in --variants (default: always)
    [common] / [part] sections: appended to the base variant's
"""
import configparser
import glob
import os
import re

from mpmng_py.bench import BENCH

VARIANT_DIR = os.path.join(BENCH, "variants")
ROOT = os.path.dirname(BENCH)


def _subst(text, params=None):
    """@ROOT@ in a variant or add-on file stands for the repository root;
    @{expr}@ is integer arithmetic over the run's parameters (idle_max: the
    largest number of idle connections the idle part will hold)."""
    text = text.replace("@ROOT@", ROOT)
    if params:
        def ev(m):
            expr = m.group(1)
            if not re.fullmatch(r"[\w\s+\-*/()%]+", expr):
                raise ValueError("bad expression @{%s}@" % expr)
            return str(int(eval(expr, {"__builtins__": {}}, dict(params))))
        text = re.sub(r"@\{(.*?)\}@", ev, text)
    return text


def _parser():
    return configparser.ConfigParser(interpolation=None, empty_lines_in_values=False,
                                     comment_prefixes=("#", ";"),
                                     inline_comment_prefixes=None)


class Variant:
    def __init__(self, path=None, cp=None):
        self.path = path
        if cp is None:
            cp = _parser()
            with open(path) as f:
                cp.read_file(f)
        self.cp = cp
        self.meta = dict(cp["variant"])
        self.name = self.meta["name"]
        self.kind = self.meta["kind"]
        self.order = float(self.meta.get("order", 50))
        self.description = self.meta.get("description", "")
        self.modules = self.meta.get("modules", "").split()
        self.requires = _subst(self.meta.get("requires", "")).split()
        self.extra = {}  # (part, key) -> text appended by add-ons
        self.out_dir = None  # another build of our modules (with_build)
        self.httpd_prefix = None  # another httpd build (with_httpd); None: Debian's
        # parts this variant takes part in (None: all)
        self.parts = self.meta.get("parts", "").replace(",", " ").split() or None
        self.named_only = False  # runs only when named in --variants (add-ons)
        if self.kind == "httpd":
            if "mpm_module" in self.meta:
                self.mpm = (self.meta["mpm_module"], _subst(self.meta["mpm_path"]))
            else:
                from mpmng_py import privhttpd
                self.mpm = privhttpd.MPMS[self.meta["mpm"]]
            self.requires.append(self.mpm[1])

    params = {"idle_max": 10000}

    def config(self, part, key):
        out = []
        for sec in ("common", part):
            if self.cp.has_section(sec) and self.cp.has_option(sec, key):
                out.append(self.cp.get(sec, key))
        for sec in ("common", part):
            out.extend(self.extra.get((sec, key), []))
        text = _subst("\n".join(out), self.params) + "\n"
        return _rebase(text, self.out_dir) if self.out_dir else text

    def in_part(self, part):
        return self.parts is None or part in self.parts

    def missing(self):
        """Paths this variant needs that do not exist (empty: runnable)."""
        return [p for p in self.requires if not os.path.exists(p)]

    def derive(self, addon):
        v = Variant(self.path, self.cp)
        v.name = "%s+%s" % (self.name, addon.name)
        v.order = self.order + 0.5
        v.description = "%s, with %s" % (self.description, addon.name)
        v.requires = self.requires + addon.requires
        v.modules = self.modules + addon.modules
        v.extra = {k: list(x) for k, x in self.extra.items()}
        v.out_dir = self.out_dir
        v.httpd_prefix = self.httpd_prefix
        v.parts = addon.parts
        v.named_only = addon.named_only
        for sec in addon.cp.sections():
            if sec == "addon":
                continue
            for key, val in addon.cp.items(sec):
                v.extra.setdefault((sec, key), []).append(val)
        return v

    def uses_our_build(self):
        """Loads a module from out/ (ours, built by `make`)."""
        return any(p.startswith(OUR_OUT) for p in self.requires)

    def _twin(self, label):
        v = Variant(self.path, self.cp)
        v.__dict__.update({k: (dict(x) if isinstance(x, dict) else x)
                           for k, x in self.__dict__.items()})
        v.name = "%s@%s" % (self.name, label)
        v.order = self.order + 0.25
        return v

    def with_build(self, out_dir, label):
        """The same variant with our modules taken from another build
        directory (`make OUT=DIR`), called <name>@<label>: an A/B of two
        builds in one interleaved run."""
        v = self._twin(label)
        v.description = "%s, built in %s" % (self.description, out_dir)
        v.out_dir = out_dir
        v.requires = [_rebase(p, out_dir) for p in self.requires]
        if self.kind == "httpd":
            v.mpm = (self.mpm[0], _rebase(self.mpm[1], out_dir))
        return v

    def with_httpd(self, prefix, label, out_dir):
        """The same httpd variant on another httpd build: its binary and
        modules from prefix (bin/httpd, modules/), ours from out_dir (built
        with its apxs), called <name>@<label>: mpm_reuseport beside that
        release's own mpm_event in one interleaved run."""
        from mpmng_py import privhttpd
        v = self.with_build(out_dir, label) if self.uses_our_build() else self._twin(label)
        mods = os.path.join(prefix, "modules")
        own = lambda p: p.replace(privhttpd.SYSMODS.rstrip(os.sep) + os.sep, mods + os.sep)
        v.description = "%s, on httpd %s (%s)" % (self.description, label, prefix)
        v.httpd_prefix = prefix
        v.mpm = (v.mpm[0], own(v.mpm[1]))
        v.requires = [own(p) for p in v.requires] + [os.path.join(prefix, "bin", "httpd")]
        return v

    def __repr__(self):
        return "<Variant %s>" % self.name


OUR_OUT = os.path.join(ROOT, "out") + os.sep


def _rebase(text, out_dir):
    """Paths under out/ moved to out_dir."""
    return text.replace(OUR_OUT, out_dir.rstrip(os.sep) + os.sep)


class Addon:
    def __init__(self, path):
        self.path = path
        self.cp = _parser()
        with open(path) as f:
            self.cp.read_file(f)
        meta = dict(self.cp["addon"])
        self.name = meta["name"]
        self.kinds = meta.get("kinds", "httpd").split()
        self.applies_to = meta.get("applies_to", "*").split()
        self.requires = _subst(meta.get("requires", "")).split()
        self.modules = meta.get("modules", "").split()
        self.parts = meta.get("parts", "").replace(",", " ").split() or None
        self.named_only = meta.get("when", "always") == "named"

    def applies(self, v):
        return v.kind in self.kinds and ("*" in self.applies_to or v.name in self.applies_to)


def rotated(variants, rnd):
    """The run order of round rnd (1, 2, ...): rotated by one each round
    (A,B,C / B,C,A / C,A,B ...), so no variant always runs first."""
    k = (rnd - 1) % max(1, len(variants))
    return variants[k:] + variants[:k]


def load_all(vdir=VARIANT_DIR):
    """All variants, add-on derived ones included, sorted by order."""
    base = [Variant(p) for p in sorted(glob.glob(os.path.join(vdir, "*.conf")))]
    addons = [Addon(p) for p in sorted(glob.glob(os.path.join(vdir, "addons", "*.conf")))]
    out = list(base)
    for a in addons:
        out.extend(v.derive(a) for v in base if a.applies(v))
    out.sort(key=lambda v: (v.order, v.name))
    return out
