#!/usr/bin/env python3
"""The in-tree build's object lists (build/intree/) name exactly the C
files of their module directory, so a file added or removed here cannot be
forgotten there.  Prints each difference; exit status 1 if any."""
import glob
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# glue file -> (macro whose third argument lists the objects, source dir)
LISTS = {
    "build/intree/mpm_reuseport/config3.m4": ("APACHE_MPM_MODULE", "mpm_reuseport"),
    "build/intree/mod_fhcache/config.m4": ("APACHE_MODULE", "mod_fhcache"),
}


def listed_objects(text, macro):
    m = re.search(r"^%s\((?:[^,]*,){2}\s*\[([^\]]*)\]" % macro, text, re.M)
    if not m:
        return None
    return sorted(o[:-3] for o in m.group(1).split() if o.endswith(".lo"))


def main():
    problems = []
    for glue, (macro, srcdir) in LISTS.items():
        with open(os.path.join(ROOT, glue)) as f:
            listed = listed_objects(f.read(), macro)
        if listed is None:
            problems.append("%s: no %s(...) object list found" % (glue, macro))
            continue
        sources = sorted(os.path.basename(p)[:-2]
                         for p in glob.glob(os.path.join(ROOT, srcdir, "*.c")))
        for name in sorted(set(sources) - set(listed)):
            problems.append("%s: %s/%s.c is not listed (add %s.lo)"
                            % (glue, srcdir, name, name))
        for name in sorted(set(listed) - set(sources)):
            problems.append("%s: %s.lo has no %s/%s.c" % (glue, name, srcdir, name))
    for p in problems:
        print("build-files: " + p)
    print("build-files: %d lists checked, %d problems" % (len(LISTS), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
