#!/usr/bin/env bash
# Runs a command at the machine's lowest CPU and I/O priority, so that it
# uses the CPU time other work leaves and slows that work as little as it
# can: `make check` cross-builds Windows and the older httpd releases
# (build/compat/) this way while the Linux stages run.
#
#   build/background.sh LOG COMMAND...
#
# Returns at once and prints the PID of the command, which leads a session
# and process group of its own (kill -- -PID ends it with its children).
# As root, the command runs in a cpu cgroup with cpu.idle=1 (Linux 5.15+):
# the scheduler runs it only when nothing else wants the CPU.  Elsewhere
# its session's autogroup is niced to 19 (a plain nice has no effect
# across autogroups), or, without autogroups, the command is.  I/O class idle.
# Where cgroup v1's cpuacct is mounted, the command's CPU time is counted in
# $BACKGROUND_CPUACCT/cpuacct.usage (with every other background command's;
# test/check.sh reads it).
set -u
log=$1; shift
cg=/sys/fs/cgroup/cpu/mpmng-background
BACKGROUND_CPUACCT=/sys/fs/cgroup/cpuacct/mpmng-background
(
  if mkdir -p "$cg" 2>/dev/null && echo 1 > "$cg/cpu.idle" 2>/dev/null \
      && echo $BASHPID > "$cg/cgroup.procs" 2>/dev/null; then
    how="cpu cgroup $cg (cpu.idle 1)"
  else
    how=
  fi
  acct=$BACKGROUND_CPUACCT counted=
  if mkdir -p "$acct" 2>/dev/null && echo $BASHPID > "$acct/cgroup.procs" 2>/dev/null; then
    counted=", CPU time counted in $acct"
  fi
  exec setsid bash -c '
    how=$1 counted=$2; shift 2
    if [ -z "$how" ]; then
      if echo 19 > /proc/self/autogroup 2>/dev/null; then how="autogroup nice 19"
      else how="nice 19"; fi
    fi
    echo "background: $how$counted"
    exec ionice -c3 nice -n 19 "$@"' background "$how" "$counted" "$@"
) >"$log" 2>&1 </dev/null &
echo $!
