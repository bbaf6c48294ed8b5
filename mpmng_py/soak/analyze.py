"""Turns what the soak recorded into verdicts: which failures the killed
children excuse, how much memory and descriptors grew, what the error log
says by kind and whether anything crashed."""
import collections
import re
import statistics

from mpmng_py.soak.sampler import COLUMNS

# A failure is excused by a kill only if its connection was held by the
# killed child, it was in flight at the kill and it failed within this.
EXCUSE_WINDOW = 5.0
GROWTH_LIMIT = 0.05
# With fewer generations to compare than this (make check's 3 minutes
# give 2), each end is one window's median: 57 -> 60 descriptors (+5.3%)
# was seen from connections open at the moment, not a leak.  Such runs
# allow twice the growth; the 30-minute soak judges leaks.
GROWTH_MIN_POINTS = 4
PROCS_COL = COLUMNS.index("procs")


def excuse(failures, kills, t0):
    """Marks failures excused by a kill (f["excused_by"] = kill index);
    returns per kill (held connections, excused requests, their
    connections)."""
    for f in failures:
        f["excused_by"] = None
    per_kill = []
    for i, k in enumerate(kills):
        kt = k.t - t0
        mine = [f for f in failures if f["excused_by"] is None and f["port"] in k.ports
                and f["start"] < kt <= f["end"] <= kt + EXCUSE_WINDOW]
        for f in mine:
            f["excused_by"] = i
        per_kill.append((len(k.ports), len(mine), len({f["port"] for f in mine})))
    return per_kill


def usual_processes(samples):
    """The number of server processes most samples saw (parent and one
    child per bucket, at the soak's sizing)."""
    counts = collections.Counter(s[PROCS_COL] for s in samples)
    return counts.most_common(1)[0][0] if counts else None


def restart_points(samples, restarts, kills, seconds, window=40.0, settle=20.0):
    """Like with like: for each graceful restart but the first, and for the
    run's end, the median of the samples in the `window` seconds before it
    that were taken at least `settle` seconds after the previous restart
    and after any kill (children warm up: caches fill, replacements start
    empty), so each generation is looked at in the same state.  A window
    of 40 s (20 samples) keeps a point's descriptor count within ~2% (sd
    measured over 29 generations); from the start of the last two thirds
    of the run on.  Rows: the restart's (or end's) time, then the sample
    columns' medians."""
    # Not the first generation: the parent grows by ~1.4 MiB at its first
    # restart (measured; a second configuration pool), by ~8 KiB at later ones.
    ends = list(restarts[1:]) + ([samples[-1][0] + 0.001] if samples else [])
    usual = usual_processes(samples)
    pts = []
    for end in ends:
        began = max([r for r in restarts if r < end] or [0.0])
        near = [s for s in samples if max(end - window, began + settle) <= s[0] < end]
        calm = [s for s in near if not any(0 <= s[0] - k < settle for k in kills)]
        # And as many processes as usual: a child the MPM adds for a
        # bucket whose connections waited (a loaded machine) brings its
        # own memory and descriptors for its ~10 s (make check on a machine
        # without caches: 4 processes in 22 of the last window's 40 samples,
        # +22% descriptors).  A window with no such sample (processes
        # that stayed) is compared with all its samples.
        calm = [s for s in calm if s[PROCS_COL] == usual] or calm
        use = calm or near[-1:]
        if use:
            pts.append(tuple([round(end, 1)] + [statistics.median(s[i] for s in use)
                                                 for i in range(1, len(use[0]))]))
    return [p for p in pts if p[0] >= seconds / 3 - 5]


def growth(points, col):
    """(first, last, growth, limit) of a column: medians of the first and
    last quarter of the points (at least one each), and the growth
    allowed for that many points."""
    if not points:
        return None
    k = max(1, len(points) // 4)
    first = statistics.median(p[col] for p in points[:k])
    last = statistics.median(p[col] for p in points[-k:])
    limit = GROWTH_LIMIT if len(points) >= GROWTH_MIN_POINTS else 2 * GROWTH_LIMIT
    return first, last, (last - first) / first if first else 0.0, limit


# [time] [module:level] [pid N(:tid T)] text; text may start with
# "(errno)Message: ", "[client a:p] ", and hold an AHnnnnn code.
_LINE_RE = re.compile(r"^\[[^\]]*\] \[([^:\]]+):(\w+)\] \[pid \d+[^\]]*\] (.*)$")
_EXIT_RE = re.compile(r"child pid (\d+) exit signal ([^,(]+)")
_CRASH_WORDS = ("segfault", "Segmentation fault", "core dumped", "Aborted", "Bus error",
                "Illegal instruction", "Floating point exception", "AddressSanitizer",
                "runtime error:")


def line_kind(line):
    """"level module AHnnnnn (errno N)", or without an AH code the first
    words of the message, numbers as N and client addresses left out."""
    m = _LINE_RE.match(line)
    if not m:
        return "unparsed: " + re.sub(r"\d+", "N", line[:50])
    module, level, text = m.groups()
    code = re.search(r"\bAH\d{5}\b", text)
    err = re.match(r"\((\d+)\)", text)
    if code:
        what = code.group(0)
    else:
        text = re.sub(r"\[(client|remote) [^\]]*\]", " ", text)
        what = " ".join(re.sub(r"\b\d+(\.\d+)*\b", "N", text).split()[:6])
    return "%s %s %s%s" % (level, module, what, " (errno %s)" % err.group(1) if err else "")


def message(line):
    """The text of an error-log line after its [time] [module] [pid]."""
    m = _LINE_RE.match(line)
    return m.group(3) if m else line


def error_log(text, killed_pids):
    """Counts of lines by kind, an example line of each, our kills' exit
    lines, and crash lines (any other exit by signal, crash words)."""
    kinds, examples = collections.Counter(), {}
    ours, crashes = 0, []
    for line in text.splitlines():
        if not line.strip():
            continue
        kind = line_kind(line)
        kinds[kind] += 1
        examples.setdefault(kind, line)
        m = _EXIT_RE.search(line)
        if m and int(m.group(1)) in killed_pids and m.group(2).strip() == "Killed":
            ours += 1
        elif m or any(w in line for w in _CRASH_WORDS):
            crashes.append(line)
    return kinds, examples, ours, crashes
