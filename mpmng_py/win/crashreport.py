"""mpm_winnt_ng's crash report (wn_crash.c) read back from an error log:
each stack frame (module+offset) named by the nearest
code symbol at or below ImageBase + offset in the module's symbol table.
Used by the test of the report and by winregress, which adds the named
stack to a crashed run's result."""
import os
import re
import subprocess

OBJDUMP = "x86_64-w64-mingw32-objdump"
NM = "x86_64-w64-mingw32-nm"
# Wine's own DLLs (ntdll.dll, msvcrt.dll...), where a frame can be too
WINE_DLLS = "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows"
FRAME = re.compile(r"crash:   #(\d+) (\S+)\+(0x[0-9a-f]+)")

_symbols = {}


def _table(image):
    """(ImageBase, sorted [(address, name)] of its code symbols)."""
    if image not in _symbols:
        head = subprocess.run([OBJDUMP, "-p", image], capture_output=True, text=True,
                              check=True).stdout
        base = int(re.search(r"^ImageBase\s+([0-9a-fA-F]+)", head, re.M).group(1), 16)
        syms = []
        for line in subprocess.run([NM, image], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "Tt":
                syms.append((int(f[0], 16), f[2]))
        _symbols[image] = (base, sorted(syms))
    return _symbols[image]


def function_at(image, offset):
    """(name, distance into it) of the code at offset (int) in a PE image;
    ("??", offset) where no symbol lies below."""
    base, syms = _table(image)
    addr = base + offset
    best = None
    for a, name in syms:
        if a > addr:
            break
        best = (a, name)
    return (best[1], addr - best[0]) if best else ("??", offset)


def frames(text):
    """[(number, module, offset)] of the report's stack."""
    return [(int(n), mod, int(off, 16)) for n, mod, off in FRAME.findall(text)]


def find_module(name, dirs):
    for d in list(dirs) + [WINE_DLLS]:
        path = os.path.join(d, name)
        if os.path.isfile(path):
            return path
    return None


def named_stack(text, dirs):
    """The report's stack, one "#N module function+0xD" string per frame,
    modules looked up in dirs (then Wine's DLLs); a module not found, or
    that cannot be read, keeps its offset."""
    out = []
    for n, mod, off in frames(text):
        path = find_module(mod, dirs)
        where = "+0x%x" % off
        if path:
            try:
                name, dist = function_at(path, off)
                where = " %s+0x%x" % (name, dist)
            except (OSError, subprocess.CalledProcessError, AttributeError):
                pass
        out.append("#%d %s%s" % (n, mod, where))
    return out
