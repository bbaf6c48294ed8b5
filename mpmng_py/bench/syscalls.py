"""System calls made by a server's process tree, counted in the kernel by
bpftrace on raw_syscalls:sys_enter (no sampling, no ptrace slowdown), keyed
by process and syscall number.  A window without load is counted the same
way and subtracted, scaled to the same length."""
import os
import re
import signal
import subprocess
import time

UNISTD = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
_names = None


def syscall_names():
    global _names
    if _names is None:
        _names = {}
        try:
            with open(UNISTD) as f:
                for line in f:
                    m = re.match(r"#define __NR_(\w+)\s+(\d+)", line)
                    if m:
                        _names[int(m.group(2))] = m.group(1)
        except OSError:
            pass
    return _names


def name_of(nr):
    return syscall_names().get(nr, "sys_%d" % nr)


TRACEFS = "/sys/kernel/tracing"


def available():
    """bpftrace is installed and can see tracepoints (tracefs mounted: some
    machines boot without it; as root, mount it)."""
    if subprocess.run(["which", "bpftrace"], capture_output=True).returncode != 0:
        return False
    if not os.path.exists(os.path.join(TRACEFS, "events")) and os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True)
    return os.path.exists(os.path.join(TRACEFS, "events"))


class Counter:
    """Counts syscalls of root_pid and its children while running."""

    def __init__(self, root_pid):
        prog = ("tracepoint:raw_syscalls:sys_enter "
                "/pid == %d || curtask->real_parent->tgid == %d/ "
                "{ @c[pid, args->id] = count(); }" % (root_pid, root_pid))
        env = dict(os.environ, BPFTRACE_MAP_KEYS_MAX="65536")
        self.p = subprocess.Popen(["bpftrace", "-e", prog], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, env=env,
                                  start_new_session=True)
        # Wait until the probe is attached.
        first = self.p.stdout.readline()
        deadline = time.monotonic() + 30
        while "Attaching" not in first and time.monotonic() < deadline:
            if self.p.poll() is not None:
                raise RuntimeError("bpftrace failed: " + first + self.p.stdout.read())
            first = self.p.stdout.readline()
        time.sleep(0.3)
        self.t0 = time.monotonic()

    def stop(self):
        """Returns (seconds counted, {syscall name: count}, total)."""
        secs = time.monotonic() - self.t0
        self.p.send_signal(signal.SIGINT)
        out, _ = self.p.communicate(timeout=60)
        counts = {}
        for m in re.finditer(r"^@c\[(\d+), (\d+)\]: (\d+)$", out, re.M):
            nm = name_of(int(m.group(2)))
            counts[nm] = counts.get(nm, 0) + int(m.group(3))
        return secs, counts, sum(counts.values())
