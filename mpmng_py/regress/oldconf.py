"""The suite's configuration for an older httpd release (make compat).

The perl-framework comes from Debian's current apache2 source: some lines of
its configuration templates (t/conf/*.conf.in) use what only later httpd
releases parse (2.4.37 refuses `ProxyPassMatch ... http://host:port$1`).
Such a line is commented out in the run's copy, one at a time, as httpd -t
names them; the tests that need it then fail with every MPM of that release
alike, so they are reported, never counted as regressions.  Debian's own
httpd gets the suite untouched.
"""
import os
import re

from mpmng_py import privhttpd
from mpmng_py.regress.base import SetupError, log
from mpmng_py.regress.procs import run

MAX_TRIMMED = 40
MARK = "# mpm-ng: not parsed by this httpd release: "


def _template_pattern(line):
    """A regex matching lines generated from a template line like this one:
    the @VARIABLES@ Apache::Test substitutes may be anything."""
    parts = re.split(r"@[A-Za-z_]+@", line.strip())
    return re.compile(r"^\s*" + ".*".join(re.escape(p) for p in parts) + r"\s*$")


def _comment_template_line(conf_dir, generated, text):
    """Comment out the template line that produced `text` in `generated`
    (t/conf/NAME.conf from NAME.conf.in); returns the template's name."""
    template = os.path.join(conf_dir, os.path.basename(generated) + ".in")
    if not os.path.exists(template):
        return None
    with open(template) as f:
        lines = f.readlines()
    for i, tl in enumerate(lines):
        if tl.strip() and not tl.lstrip().startswith("#") \
                and _template_pattern(tl).match(text.strip()):
            lines[i] = MARK + tl
            with open(template, "w") as f:
                f.writelines(lines)
            return os.path.basename(template)
    return None


def trim_unparsed(mpm_run, configure, check):
    """configure(): regenerate t/conf from the templates; check(): run
    httpd -t on it, returning its CompletedProcess.  Returns the lines
    commented out, [(template, line, httpd's message)]."""
    if privhttpd.SYSMODS == privhttpd.DEBIAN_MODS:
        return []
    conf_dir = os.path.join(mpm_run.fw, "t", "conf")
    trimmed = []
    while True:
        configure()
        r = check()
        if r.returncode == 0:
            break
        out = r.stdout + r.stderr
        m = re.search(r"Syntax error on line (\d+) of (\S+):\s*\n?(.*)", out)
        if not m or len(trimmed) >= MAX_TRIMMED:
            raise SetupError("%s: httpd -t refuses the suite's configuration:\n%s" % (
                mpm_run.mpm, out[-2000:]))
        number, generated, why = int(m.group(1)), m.group(2), m.group(3).strip()
        with open(generated) as f:
            text = f.readlines()[number - 1]
        template = _comment_template_line(conf_dir, generated, text)
        if not template:
            raise SetupError("%s: %s line %d (%s) is refused by this httpd and comes "
                             "from no template line: %s" % (mpm_run.mpm, generated, number,
                                                            text.strip(), why))
        trimmed.append((template, text.strip(), why))
        log("regress: [%s] %s: commented out for this httpd release: %s (%s)" % (
            mpm_run.mpm, template, text.strip(), why))
    return trimmed
