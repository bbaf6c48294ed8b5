"""Parsing t/TEST's output into per-test-file results.
"""
import os
import re


HEADER = re.compile(r"^((?:t|Apache-Test)/\S+\.t) \.+ ?(.*)$")
SUMMARY_FILE = re.compile(r"^((?:t|Apache-Test)/\S+\.t)\s+\(Wstat: (\d+)(?: \(.*?\))? "
                          r"Tests: (\d+) Failed: (\d+)\)")


def parse_log(path):
    """Per-file results from t/TEST's (verbose) harness output.

    Returns (results, info): results maps file -> dict(status, failed,
    reason, notok); info has the harness totals line and Result."""
    with open(path, errors="replace") as f:
        lines = f.read().split("\n")
    results, blocks, cur = {}, {}, None
    i = 0
    summary_at = None
    info = {"files_line": "", "result": ""}
    for i, line in enumerate(lines):
        if line.startswith("Test Summary Report"):
            summary_at = i
            break
        m = HEADER.match(line)
        if m:
            cur = m.group(1)
            results[cur] = {"status": "ok", "failed": "", "reason": "", "notok": []}
            blocks[cur] = []
            rest = m.group(2).strip()
            if rest.startswith("skipped:"):
                results[cur]["status"] = "skipped"
                results[cur]["reason"] = rest[len("skipped:"):].strip()
            elif rest:
                blocks[cur].append(rest)
            continue
        if line.startswith("Files=") or line.startswith("All tests successful"):
            cur = None
        if cur:
            blocks[cur].append(line)
    for name, block in blocks.items():
        r = results[name]
        for l in block:
            m = re.match(r"^not ok (\d+)", l)
            if m:
                r["notok"].append(int(m.group(1)))
            if l.startswith("skipped:"):
                r["status"] = "skipped"
                r["reason"] = l[len("skipped:"):].strip()
            if re.match(r"^(Failed \d+/\d+ subtests|Dubious, test returned|"
                        r"No subtests run|Bad plan\.)", l):
                r["status"] = "failed"
        last = [l for l in block if l.strip()]
        # a block cut short (suite aborted) has no verdict line
        if r["status"] == "ok" and last and not re.match(
                r"^(ok|All \d+ subtests passed|skipped:)", last[-1].strip()) \
                and not any(l.strip() == "ok" for l in block[-3:]):
            r["status"] = "failed"
            r["reason"] = "no verdict in harness output"
    # the summary report is authoritative for failures
    if summary_at is not None:
        cur = None
        for line in lines[summary_at + 1:]:
            m = SUMMARY_FILE.match(line)
            if m:
                cur = m.group(1)
                r = results.setdefault(cur, {"status": "ok", "failed": "", "reason": "",
                                             "notok": []})
                if int(m.group(2)) != 0 or int(m.group(4)) > 0:
                    r["status"] = "failed"
                continue
            if cur is None:
                continue
            s = line.strip()
            mf = re.match(r"Failed tests?:(.*)", s)
            if mf:
                results[cur]["status"] = "failed"
                results[cur]["failed"] = re.sub(r"\s+", "", mf.group(1))
            elif s.startswith("Non-zero exit status:") or s.startswith("Parse errors:"):
                results[cur]["status"] = "failed"
                results[cur]["reason"] = (results[cur]["reason"] + " " + s).strip()
            elif s.startswith("Non-zero wait status:"):
                results[cur]["status"] = "failed"
                results[cur]["reason"] = (results[cur]["reason"] + " " + s).strip()
    for line in lines:
        if line.startswith("Files="):
            info["files_line"] = line.strip()
        if line.startswith("Result: "):
            info["result"] = line[len("Result: "):].strip()
    for name, r in results.items():
        if r["status"] == "failed" and not r["failed"] and r["notok"]:
            r["failed"] = ",".join(str(n) for n in r["notok"])
    return results, info


def info_t_mpm_only_difference(logpath, mpm_so):
    """t/modules/info.t compares mod_info's module list with the modules
    Apache::Test found.  The suite derives an MPM's expected name from its
    .so file name and only maps the stock MPMs (mod_mpm_event.so ->
    event.c, ...).  Return (expected, actual) when the lists differ only
    in that one MPM entry, else None."""
    with open(logpath, errors="replace") as f:
        text = f.read()
    start = text.find("t/modules/info.t ..")
    if start < 0:
        return None
    block = text[start:]
    m = re.search(r"\n(?:t|Apache-Test)/\S+\.t \.+", block[1:])
    if m:
        block = block[:m.start() + 1]
    ma = re.search(r"^actual(?:\(\d+ modules\))?:\n(.*)\n", block, re.M)
    me = re.search(r"^expect(?:\(\d+ modules\))?:\n(.*)\n", block, re.M)
    if not (ma and me):
        return None
    actual, expect = set(ma.group(1).split()), set(me.group(1).split())
    exp_name = re.sub(r"\.so$", ".c", os.path.basename(mpm_so))
    only_exp, only_act = expect - actual, actual - expect
    if only_exp == {exp_name} and len(only_act) <= 1:
        return exp_name, (next(iter(only_act)) if only_act else None)
    return None
