#!/usr/bin/env python3
"""Build files that list sources name exactly the C files of their module
directory, so a file added or removed here cannot be forgotten there:
the in-tree build's object lists (build/intree/) and Makefile.win's MPM
file list.  Prints each difference; exit status 1 if any."""
import glob
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# build file -> (pattern whose first group holds the listed names, how a
# listed name is written for foo.c, source dir)
LISTS = {
    "build/intree/mpm_reuseport/config3.m4":
        (r"^APACHE_MPM_MODULE\((?:[^,]*,){2}\s*\[([^\]]*)\]", "%s.lo", "mpm_reuseport"),
    "build/intree/mod_fhcache/config.m4":
        (r"^APACHE_MODULE\((?:[^,]*,){2}\s*\[([^\]]*)\]", "%s.lo", "mod_fhcache"),
    "Makefile.win":
        (r"^MPM_FILES\s*=((?:.*\\\n)*.*)$", r"$(MPM_DIR)\%s.c", "mpm_winnt_ng"),
}


def listed_names(text, pattern, form):
    m = re.search(pattern, text, re.M)
    if not m:
        return None
    head, tail = form.split("%s")
    # names separated by blanks (m4) or ';' (nmake), lines joined by '\'
    words = re.split(r"[\s;]+", m.group(1).replace("\\\n", " "))
    return sorted(w[len(head):len(w) - len(tail)] for w in words
                  if w.startswith(head) and w.endswith(tail))


def main():
    problems = []
    for path, (pattern, form, srcdir) in LISTS.items():
        with open(os.path.join(ROOT, path)) as f:
            listed = listed_names(f.read(), pattern, form)
        if not listed:
            problems.append("%s: no source list found" % path)
            continue
        sources = sorted(os.path.basename(p)[:-2]
                         for p in glob.glob(os.path.join(ROOT, srcdir, "*.c")))
        for name in sorted(set(sources) - set(listed)):
            problems.append("%s: %s/%s.c is not listed (add %s)"
                            % (path, srcdir, name, form % name))
        for name in sorted(set(listed) - set(sources)):
            problems.append("%s: %s has no %s/%s.c" % (path, form % name, srcdir, name))
    for p in problems:
        print("build-files: " + p)
    print("build-files: %d lists checked, %d problems" % (len(LISTS), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
