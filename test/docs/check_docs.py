#!/usr/bin/env python3
"""Checks that docs/ documents every directive the C sources register.

    python3 test/docs/check_docs.py [--self-test] [--root DIR]

From the repository root (or with --root) it

1. collects the directives each module registers: every
   AP_INIT_*("Name", ...) in <dir>/*.c, plus the directives of the httpd
   macros (LISTEN_COMMANDS, ...) that appear in a command_rec table;
2. checks that the module's page (PAGES) has, under its "## Directives"
   heading, a "### Name" section for each of them with Syntax, Default and
   Context fields (table rows "| Syntax | ... |" or list items
   "- **Syntax:** ...") and an example: a fenced code block with a line
   that starts with the directive's name;
3. checks the reverse: every "### Name" under "## Directives" names a
   directive the module registers, and every "### Name" under "## Related
   core directives" names a directive of httpd's core (CORE_READ) whose
   value the module's sources read, so no section outlives its directive;
4. checks that README.md links every docs/*.md page;
5. where httpd's headers are installed (HTTPD_INCLUDE, else
   /usr/include/apache2 and the like), checks that MACROS lists every
   directive their macros register.

Each problem is printed on its own line; the last line is a summary such as
"docs: 43 directives documented in 3 pages, 0 problems".  Exit status: 0
when there is no problem, 1 when there are problems, 2 when the self-test
fails.  The self-test (run first by default, alone with --self-test) feeds
the checker fake sources and pages with known mistakes and makes sure it
reports each one, and that a correct fake tree passes.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

# Source directory -> the page that documents its directives.
PAGES = {
    "mpm_reuseport": "docs/mod_mpm_reuseport.md",
    "mod_fhcache": "docs/mod_fhcache.md",
    "mpm_winnt_ng": "docs/mod_mpm_winnt_ng.md",
}

# Macros from httpd's headers that stand for command_rec entries.  Only the
# ones our command tables use; a table that names any other macro is
# reported, so this list grows when the code does.
MACROS = {
    # ap_listen.h; "ALL MPMs should include LISTEN_COMMANDS".
    # ListenTCPDeferAccept joined it in httpd 2.4.66.
    "LISTEN_COMMANDS": ["ListenBacklog", "ListenCoresBucketsRatio", "Listen",
                        "SendBufferSize", "ReceiveBufferSize",
                        "ListenTCPDeferAccept"],
    # mpm_common.h
    "AP_GRACEFUL_SHUTDOWN_TIMEOUT_COMMAND": ["GracefulShutdownTimeout"],
}
# Where each macro is defined, to compare MACROS with the installed headers.
MACRO_HEADERS = {
    "LISTEN_COMMANDS": "ap_listen.h",
    "AP_GRACEFUL_SHUTDOWN_TIMEOUT_COMMAND": "mpm_common.h",
}

# Directives registered by httpd's core (not by our modules) that a page may
# describe under "## Related core directives", because the module reads
# their value: the symbol must occur in the module's sources.
CORE_READ = {
    "MaxConnectionsPerChild": "ap_max_requests_per_child",
    "MaxMemFree": "ap_max_mem_free",
    "PidFile": "ap_pid_fname",
    "AcceptFilter": "accf_map",
}

DIRECTIVES_HEADING = "Directives"
CORE_HEADING = "Related core directives"
REQUIRED_FIELDS = ("Syntax", "Default", "Context")

AP_INIT_RE = re.compile(r'\bAP_INIT_[A-Z0-9_]+\s*\(\s*"([A-Za-z0-9_]+)"')
TABLE_RE = re.compile(r'\bcommand_rec\s+\w+\s*\[\s*\]\s*=\s*\{')
MACRO_RE = re.compile(r'\b([A-Z][A-Z0-9_]*)\b')


# ---- sources ---------------------------------------------------------------

def strip_comments(text):
    """C source without comments (string literals are kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))  # keep line numbers
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def table_bodies(text):
    """The initialiser text of every `command_rec name[] = { ... };`."""
    for m in TABLE_RE.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
            i += 1
        yield text[m.end():i - 1]


def top_level_entries(body):
    """Split a table body at the commas outside parentheses and braces."""
    entries, depth, start = [], 0, 0
    for i, c in enumerate(body):
        if c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
        elif c == "," and depth == 0:
            entries.append(body[start:i].strip())
            start = i + 1
    entries.append(body[start:].strip())
    return [e for e in entries if e]


def registered(src_dir, macros, problems):
    """{directive: "file:line"} for one source directory."""
    found = {}
    for name in sorted(os.listdir(src_dir)):
        if not name.endswith(".c"):
            continue
        path = os.path.join(src_dir, name)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read())
        rel = os.path.join(os.path.basename(src_dir), name)
        for m in AP_INIT_RE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.setdefault(m.group(1), "%s:%d" % (rel, line))
        for body in table_bodies(text):
            for entry in top_level_entries(body):
                if entry.startswith("AP_INIT_") or entry.startswith("{"):
                    continue
                m = MACRO_RE.fullmatch(entry)
                if not m:
                    problems.append("%s: command table entry %r is neither an "
                                    "AP_INIT_* entry nor a known macro"
                                    % (rel, entry[:60]))
                elif m.group(1) not in macros:
                    problems.append("%s: command table uses macro %s, whose "
                                    "directives this checker does not know: "
                                    "add them to MACROS in %s"
                                    % (rel, m.group(1), os.path.basename(__file__)))
                else:
                    for d in macros[m.group(1)]:
                        found.setdefault(d, "%s (%s)" % (rel, m.group(1)))
    return found


def unmapped_dirs(root, pages):
    """Top-level directories whose C files register directives but that
    have no page in `pages`."""
    out = []
    for d in sorted(os.listdir(root)):
        path = os.path.join(root, d)
        if d.startswith(".") or d in pages or not os.path.isdir(path):
            continue
        for name in os.listdir(path):
            if name.endswith(".c"):
                with open(os.path.join(path, name), encoding="utf-8",
                          errors="replace") as f:
                    if AP_INIT_RE.search(strip_comments(f.read())):
                        out.append(d)
                        break
    return out


def source_text(src_dir):
    text = []
    for name in sorted(os.listdir(src_dir)):
        if name.endswith((".c", ".h")):
            with open(os.path.join(src_dir, name), encoding="utf-8",
                      errors="replace") as f:
                text.append(strip_comments(f.read()))
    return "\n".join(text)


def compare_with_headers(include_dir, macros, headers, problems, notes):
    """Compares MACROS with the macro definitions in httpd's headers, if
    they are installed: a directive the headers add is a problem (it needs
    documenting), one they lack (an older httpd) only a note.  Returns the
    header directory used, or None."""
    if not include_dir:
        return None
    for macro, header in headers.items():
        path = os.path.join(include_dir, header)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return None
        m = re.search(r"#define\s+%s\b((?:[^\n]*\\\n)*[^\n]*)" % macro, text)
        if not m:
            problems.append("%s: no #define %s; update MACROS" % (path, macro))
            continue
        names = AP_INIT_RE.findall(m.group(1))
        extra = [n for n in names if n not in macros[macro]]
        lacking = [n for n in macros[macro] if n not in names]
        if extra:
            problems.append("%s in %s also registers %s: add to MACROS and "
                            "document" % (macro, path, ", ".join(extra)))
        if lacking:
            notes.append("%s in %s lacks %s (an older httpd?)"
                         % (macro, path, ", ".join(lacking)))
    return include_dir


def httpd_include_dir():
    env = os.environ.get("HTTPD_INCLUDE")
    if env:
        return env
    for d in ("/usr/include/apache2", "/usr/include/httpd",
              "/usr/local/apache2/include"):
        if os.path.exists(os.path.join(d, "ap_listen.h")):
            return d
    return None


# ---- pages -----------------------------------------------------------------

def parse_page(text):
    """Sections of a page: [(group, name, line, body)] where group is
    "directives" or "core" for "### Name" under those "## " headings."""
    sections, group, current = [], None, None
    fence = None
    for no, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            if current:
                current[3].append(line)
            continue
        m = re.match(r"(`{3,}|~{3,})", stripped)
        if m:
            fence = m.group(1)
            if current:
                current[3].append(line)
            continue
        h = re.match(r"(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if h and len(h.group(1)) <= 3:
            level, title = len(h.group(1)), h.group(2).strip()
            if current:
                sections.append(current)
                current = None
            if level <= 2:
                group = {DIRECTIVES_HEADING: "directives",
                         CORE_HEADING: "core"}.get(title) if level == 2 else None
            elif level == 3 and group:
                current = [group, title.strip("`"), no, []]
            continue
        if current:
            current[3].append(line)
    if current:
        sections.append(current)
    return [(g, n, no, "\n".join(body)) for g, n, no, body in sections]


def field(body, name):
    """Value of a "| Name | value |" row or "- **Name:** value" item."""
    for pat in (r"^\|\s*(?:\*\*)?%s(?:\*\*)?\s*\|\s*(.*?)\s*\|\s*$",
                r"^[-*]\s+\*\*%s:?\*\*:?\s*(.*?)\s*$"):
        m = re.search(pat % re.escape(name), body, re.M)
        if m and m.group(1).strip():
            return m.group(1)
    return None


def code_blocks(body):
    return re.findall(r"^\s*(?:`{3,}|~{3,})[^\n]*\n(.*?)^\s*(?:`{3,}|~{3,})\s*$",
                      body, re.M | re.S)


def check_section(page, name, line, body, problems):
    where = "%s:%d: %s" % (page, line, name)
    for f in REQUIRED_FIELDS:
        if field(body, f) is None:
            problems.append("%s: no %s field" % (where, f))
    syntax = field(body, "Syntax")
    if syntax and not re.search(r"(^|[`\s])%s\b" % re.escape(name), syntax):
        problems.append("%s: the Syntax field does not start with the "
                        "directive's name" % where)
    used = re.compile(r"^\s*(?:<[^>]*>\s*)?%s\b" % re.escape(name),
                      re.M | re.I)
    if not any(used.search(b) for b in code_blocks(body)):
        problems.append("%s: no example (a code block with a line starting "
                        "with %s)" % (where, name))


def check_page(root, page, regs, src_dir, problems):
    """Returns how many registered directives the page documents."""
    path = os.path.join(root, page)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        problems.append("%s: cannot read (%s)" % (page, e.strerror))
        return 0
    sections = parse_page(text)
    if not any(g == "directives" for g, _, _, _ in sections) and regs:
        problems.append("%s: no '## %s' heading with '### Name' sections"
                        % (page, DIRECTIVES_HEADING))
    seen = {}
    src = None
    for group, name, line, body in sections:
        if name in seen:
            problems.append("%s:%d: %s is described twice (also line %d)"
                            % (page, line, name, seen[name]))
            continue
        seen[name] = line
        if group == "directives":
            if name not in regs:
                problems.append("%s:%d: section '### %s' under '## %s', but "
                                "%s/ registers no such directive (stale or "
                                "misspelt?)" % (page, line, name,
                                                DIRECTIVES_HEADING,
                                                os.path.basename(src_dir)))
                continue
        else:
            if src is None:
                src = source_text(src_dir)
            if name in regs:
                problems.append("%s:%d: %s is registered by %s/: move its "
                                "section under '## %s'" % (
                                    page, line, name,
                                    os.path.basename(src_dir),
                                    DIRECTIVES_HEADING))
                continue
            sym = CORE_READ.get(name)
            if not sym:
                problems.append("%s:%d: section '### %s' under '## %s', but "
                                "it is not a core directive this checker "
                                "knows (CORE_READ)" % (page, line, name,
                                                       CORE_HEADING))
                continue
            if not re.search(r"\b%s\b" % re.escape(sym), src):
                problems.append("%s:%d: section '### %s' under '## %s', but "
                                "%s/ never reads it (%s)" % (
                                    page, line, name, CORE_HEADING,
                                    os.path.basename(src_dir), sym))
                continue
        check_section(page, name, line, body, problems)
    documented = 0
    for name in sorted(regs):
        if name not in seen:
            problems.append("%s: %s (registered in %s) is not documented: "
                            "add '### %s' under '## %s'" % (
                                page, name, regs[name], name,
                                DIRECTIVES_HEADING))
        else:
            documented += 1
    return documented


def check_readme(root, problems):
    try:
        with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
            readme = f.read()
    except OSError:
        problems.append("README.md: missing")
        return
    docs = os.path.join(root, "docs")
    pages = sorted(p for p in os.listdir(docs) if p.endswith(".md")) \
        if os.path.isdir(docs) else []
    links = set(re.findall(r"\]\(\s*(?:\./)?docs/([^)#\s]+\.md)(?:#[^)]*)?\s*\)",
                           readme))
    for p in pages:
        if p not in links:
            problems.append("README.md: does not link docs/%s" % p)
    for p in sorted(links):
        if p not in pages:
            problems.append("README.md: links docs/%s, which does not exist"
                            % p)


def check_results_block(root, problems):
    """What `mpmng_py.bench --update-doc` rewrites holds only its own output
    (one '## Latest results' section): anything else there is lost on the
    next update."""
    path = os.path.join(root, "docs", "PERFORMANCE.md")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return
    # The markers mpmng_py/bench/report.py writes (BEGIN, END there).
    a, b = text.find("<!-- BEGIN RESULTS"), text.find("<!-- END RESULTS -->")
    if a < 0 or b < a:
        problems.append("docs/PERFORMANCE.md: results markers missing or out of order")
        return
    heads = re.findall(r"^## .*$", text[a:b], flags=re.M)
    for h in heads:
        if h != "## Latest results":
            problems.append("docs/PERFORMANCE.md: '%s' is inside the block "
                            "`bench --update-doc` rewrites; move it after "
                            "<!-- END RESULTS -->" % h)


def check(root, pages=PAGES, macros=MACROS, headers=MACRO_HEADERS,
          include_dir=None):
    """Returns (problems, documented directive count, notes)."""
    problems, notes, documented = [], [], 0
    used = compare_with_headers(include_dir, macros, headers, problems, notes)
    notes.append("macro lists compared with %s" % used if used else
                 "httpd headers not found: macro lists not compared")
    for d in unmapped_dirs(root, pages):
        problems.append("%s/: registers directives but has no page in PAGES"
                        % d)
    for src, page in sorted(pages.items()):
        src_dir = os.path.join(root, src)
        if not os.path.isdir(src_dir):
            problems.append("%s/: source directory missing" % src)
            continue
        regs = registered(src_dir, macros, problems)
        if not regs:
            problems.append("%s/: no directives found (parser broken?)" % src)
        documented += check_page(root, page, regs, src_dir, problems)
    check_readme(root, problems)
    check_results_block(root, problems)
    return problems, documented, notes


# ---- self-test -------------------------------------------------------------

FAKE_C = r'''
static const char *f(cmd_parms *c, void *d, const char *a) { return NULL; }
static const command_rec fake_cmds[] = {
    FAKE_LIST,
    AP_INIT_TAKE1("FakeDocumented", f, NULL, RSRC_CONF,
                  "has a complete section (see http://example.org/)"),
    AP_INIT_FLAG("FakeUndocumented", f, NULL, RSRC_CONF, "no section"),
    /* AP_INIT_TAKE1("FakeCommentedOut", f, NULL, RSRC_CONF, "gone"), */
    AP_INIT_TAKE1("FakeNoDefault", f, NULL, RSRC_CONF, "section lacks Default"),
    AP_INIT_TAKE1("FakeNoExample", f, NULL, RSRC_CONF, "section lacks example"),
    FAKE_UNKNOWN_COMMANDS,
    { NULL }
};
'''

SECTION = """### {name}

| | |
|---|---|
| Description | a fake directive |
| Syntax | `{name} value` |
| Default | `{name} 1` |
| Context | server config |
| Valid values | 1 to 9 |

Text.

```apache
{name} 2
```
"""


def fake_tree(good):
    root = tempfile.mkdtemp(prefix="check_docs-")
    os.makedirs(os.path.join(root, "mod_fake"))
    os.makedirs(os.path.join(root, "docs"))
    c = FAKE_C
    if good:
        c = c.replace('    FAKE_UNKNOWN_COMMANDS,\n', '')
    with open(os.path.join(root, "mod_fake", "fake.c"), "w") as f:
        f.write(c)
    names = ["FakeDocumented", "FakeFromMacro", "FakeNoDefault",
             "FakeNoExample", "FakeUndocumented"]
    secs = []
    for n in names:
        s = SECTION.format(name=n)
        if not good:
            if n == "FakeFromMacro" or n == "FakeUndocumented":
                continue
            if n == "FakeNoDefault":
                s = s.replace("| Default | `FakeNoDefault 1` |\n", "")
            if n == "FakeNoExample":
                s = s.replace("```apache\nFakeNoExample 2\n```\n", "")
        secs.append(s)
    if not good:
        secs.append(SECTION.format(name="FakeStale"))
        core = "## Related core directives\n\n" + SECTION.format(name="MaxMemFree")
    else:
        core = "## Related core directives\n\n" + SECTION.format(
            name="MaxConnectionsPerChild")
    page = ("# mod_fake\n\nIntro.\n\n```apache\n## Directives\n### NotAHeading\n```\n\n"
            "## Directives\n\n" + "\n".join(secs) + "\n## Notes\n\n"
            "### Not a directive section\n\nText.\n\n" + core)
    with open(os.path.join(root, "docs", "mod_fake.md"), "w") as f:
        f.write(page)
    with open(os.path.join(root, "docs", "extra.md"), "w") as f:
        f.write("# extra\n")
    readme = ("# fake\n\n- [fake](docs/mod_fake.md)\n"
              "- [perf](docs/PERFORMANCE.md)\n")
    if good:
        readme += "- [extra](./docs/extra.md#top)\n"
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write(readme)
    kept = "" if good else "## Kept by hand\n\n"
    with open(os.path.join(root, "docs", "PERFORMANCE.md"), "w") as f:
        f.write("# Performance\n\n<!-- BEGIN RESULTS -->\n" + kept
                + "## Latest results\n\n### Throughput\n<!-- END RESULTS -->\n"
                + "## Kept by hand, after\n")
    if good:
        with open(os.path.join(root, "mod_fake", "reads.c"), "w") as f:
            f.write("int n(void) { return ap_max_requests_per_child; }\n")
    else:
        os.makedirs(os.path.join(root, "mod_unmapped"))
        with open(os.path.join(root, "mod_unmapped", "u.c"), "w") as f:
            f.write('command_rec u[] = { AP_INIT_NO_ARGS("Unmapped", 0, 0, 0, ""), {NULL} };\n')
    return root


def self_test():
    """Returns a list of failures (empty when the checker works)."""
    pages = {"mod_fake": "docs/mod_fake.md"}
    macros = {"FAKE_LIST": ["FakeFromMacro"]}
    failures = []
    expect = [
        ("undocumented directive", r"FakeUndocumented .* is not documented"),
        ("directive from a macro", r"FakeFromMacro .*FAKE_LIST.* is not documented"),
        ("unknown macro", r"uses macro FAKE_UNKNOWN_COMMANDS"),
        ("stale section", r"'### FakeStale'.*registers no such directive"),
        ("missing Default", r"FakeNoDefault: no Default field"),
        ("missing example", r"FakeNoExample: no example"),
        ("core directive not read", r"'### MaxMemFree'.*never reads it"),
        ("page not linked", r"does not link docs/extra\.md"),
        ("unmapped source directory", r"mod_unmapped/: registers directives"),
        ("section inside the bench's results",
         r"'## Kept by hand' is inside the block"),
    ]
    unexpected = [("commented-out entry", r"FakeCommentedOut"),
                  ("heading inside a code block", r"NotAHeading"),
                  ("section outside the directive headings",
                   r"Not a directive section"),
                  ("complete section", r"FakeDocumented")]
    root = fake_tree(good=False)
    try:
        problems, _, _ = check(root, pages, macros, {}, None)
    finally:
        shutil.rmtree(root)
    text = "\n".join(problems)
    for what, pat in expect:
        if not re.search(pat, text):
            failures.append("self-test: %s was not reported" % what)
    for what, pat in unexpected:
        if re.search(pat, text):
            failures.append("self-test: %s was reported as a problem" % what)
    root = fake_tree(good=True)
    try:
        problems, documented, _ = check(root, pages, macros, {}, None)
    finally:
        shutil.rmtree(root)
    for p in problems:
        failures.append("self-test: a correct tree gave: %s" % p)
    if documented != 5:
        failures.append("self-test: a correct tree has 5 directives "
                        "documented, counted %d" % documented)
    if failures:
        failures.append("self-test: the problems reported were:\n  "
                        + text.replace("\n", "\n  "))
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--self-test", action="store_true",
                    help="only check that the checker finds known mistakes")
    ap.add_argument("--root", default=os.path.abspath(
        os.path.join(os.path.dirname(__file__), "..", "..")),
        help="repository root (default: two levels above this file)")
    args = ap.parse_args()

    failures = self_test()
    for f in failures:
        print(f)
    if failures:
        print("docs: self-test failed; the checker cannot be trusted")
        return 2
    if args.self_test:
        print("docs: self-test passed")
        return 0

    problems, documented, notes = check(args.root,
                                        include_dir=httpd_include_dir())
    for p in problems:
        print(p)
    for n in notes:
        print("docs: " + n)
    print("docs: %d directives documented in %d pages, %d problem%s" % (
        documented, len(PAGES), len(problems),
        "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
