#!/usr/bin/env bash
# `make check`: build, then every Linux test stage in turn.  Each stage prints
# its own summary; the last line adds them up as "check: N passed, N failed".
# Exits non-zero if anything failed.  Stages start only their own processes
# (private httpd instances, by PID) and stop them.
set -u
cd "$(dirname "$0")/.."
SAN=${SANITIZE:-}
LOG=out/check
mkdir -p "$LOG"
rm -f out/asan.* out/ubsan.*

passed=0 failed=0 broken=()

add() { passed=$((passed + $1)); failed=$((failed + $2)); }

# Check prints "100%: Checks: N, Failures: F, Errors: E" per suite.
count_check() {
    local n f e
    while read -r n f e; do add $((n - f - e)) $((f + e)); done < <(
        sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' "$1")
}

# Our runners end with "<name>: N passed, N failed".
count_plain() {
    local line
    line=$(grep -E '^[a-z]+: [0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
    [ -n "$line" ] || return 1
    add "$(sed 's/^[a-z]*: \([0-9]*\) passed.*/\1/' <<<"$line")" \
        "$(sed 's/.* \([0-9]*\) failed.*/\1/' <<<"$line")"
}

# Each stage's wall time, printed at the end (the CI budget is watched by
# these numbers), and the CPU time the machine spent meanwhile: all of it
# and the background job's part (build/background.sh counts it).  On a
# machine without the caches the run is CPU-bound: these say where it went.
durations=()
cpu_times=()
CHECK_T0=$(date +%s)
# CPU seconds (in hundredths) the machine has been busy: /proc/stat's user,
# nice, system, irq, softirq and steal.
busy_cs() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
# The background job's, or nothing where it is not counted.
background_cs() {
    local f=/sys/fs/cgroup/cpuacct/mpmng-background/cpuacct.usage
    if [ -n "${BACKGROUND_STARTED:-}" ] && [ -r "$f" ]; then
        echo $(( $(cat "$f") / 10000000 ))
    fi
}
CHECK_BUSY0=$(busy_cs)

stage() {
    local name=$1 t0 busy0 bg0 bg1 cpu; shift
    echo "=== $name: $*"
    t0=$(date +%s) busy0=$(busy_cs) bg0=$(background_cs)
    "$@" 2>&1 | tee "$LOG/$name.log"
    local rc=${PIPESTATUS[0]}
    durations+=("$name $(( $(date +%s) - t0 ))s")
    cpu="$name $(( ($(busy_cs) - busy0) / 100 ))"
    bg1=$(background_cs)
    [ -z "$bg0" ] || [ -z "$bg1" ] || cpu+="/$(( (bg1 - bg0) / 100 ))"
    cpu_times+=("${cpu}s")
    [ "$rc" -eq 0 ] || broken+=("$name")
    return "$rc"
}

if ! stage build make -s all SANITIZE="$SAN"; then
    echo "check: build failed"; echo "check: 0 passed, 1 failed"; exit 1
fi
if [ -n "$SAN" ]; then
    # apache2 itself is not instrumented: preload the sanitizer runtimes.
    MPMNG_LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
    export MPMNG_LD_PRELOAD
fi

# What later stages need built: the Windows cross-build (about 25 minutes
# of CPU without ~/.cache/mpm-ng/win-libs), the compat stage's httpd
# releases (build/compat/, a few minutes of CPU each, kept in
# /var/cache/mpm-ng/httpd) and the intree stage's two httpd builds (about
# eight minutes of CPU, every run: they hold this checkout's sources).  One
# job in the background, in the order the stages come, at the lowest
# priority: it uses the CPU the Linux stages leave (build/background.sh),
# and each stage waits for its part (their build scripts lock).
# The Windows stages come first of the three: alone they leave a core and
# a half idle (Wine waits: 0.6 cores for the 7 minutes of the win stage),
# which the Linux builds after them now use (1.74 cores).  A run without
# the caches: 3690 s so (6524 CPU-s); with the Windows build last 3842 s,
# and as a second job beside the Linux builds 3859 s (6747 CPU-s, ~970 of
# them a core left idle by the last stages).  One job at a time keeps what
# comes first ready first.
builds=()
if [ -z "$SAN" ] && [ "${MPMNG_SKIP_WIN:-}" != 1 ]; then
    builds+=("build/win/build.sh >'$LOG/win-build.log' 2>&1")
fi
if [ -z "$SAN" ] && [ "${MPMNG_SKIP_COMPAT:-}" != 1 ]; then
    builds+=("build/compat/build-all.sh --short >'$LOG/compat-build.log' 2>&1")
fi
if [ -z "$SAN" ] && [ "${MPMNG_SKIP_INTREE:-}" != 1 ]; then
    builds+=("test/intree/run.sh --build-only >'$LOG/intree-build.log' 2>&1")
fi
BACKGROUND_PID= BACKGROUND_STARTED=
if [ ${#builds[@]} -gt 0 ]; then
    BACKGROUND_PID=$(build/background.sh "$LOG/background.log" \
                         bash -c "$(IFS=';'; echo "${builds[*]}")")
    BACKGROUND_STARTED=1    # its CPU time is counted from here on
fi
LANE_PID=    # the Windows stages' lane (below): a process group of its own
trap '[ -z "$BACKGROUND_PID" ] || kill -- -"$BACKGROUND_PID" 2>/dev/null
      [ -z "$LANE_PID" ] || kill -- -"$LANE_PID" 2>/dev/null' EXIT

stage unit make -s unit SANITIZE="$SAN"
count_check "$LOG/unit.log"

# Our parsers under libFuzzer with ASan/UBSan, briefly (`make fuzz`: 1M each).
stage fuzz test/fuzz/run.sh --runs 200000
count_plain "$LOG/fuzz.log" || add 0 1

# One check whose exit status is its result.
count_rc() { if [ "$1" -eq 0 ]; then add 1 0; else add 0 1; fi; }

stage docs python3 test/docs/check_docs.py
count_rc $?
stage build-files python3 test/build/check_build_files.py
count_rc $?
# Python (mpmng_py/, test/, bench/) at most 100 columns a line.
stage line-length python3 test/build/check_line_length.py
count_rc $?

# `make demo` / `make demo-stop` as a newcomer runs them: a fresh build
# directory, a free port, a page and the modules' numbers in server-status.
stage demo test/demo/run.sh
count_plain "$LOG/demo.log" || add 0 1

stage integration python3 -m mpmng_py.integration
count_plain "$LOG/integration.log" || add 0 1

# A few rounds of what a loaded machine breaks first (`make check-stress`:
# every timing-sensitive test 50 times): a graceful stop under load, and
# signals the moment the PidFile appears, beside two busy loops.
stage stress python3 -m mpmng_py.integration --repeat 3 --hogs 2 \
    -k test_graceful_stop -k test_signals.EarlySignals
count_plain "$LOG/stress.log" || add 0 1

# Three minutes of the soak (`make soak`: 30): mixed load with graceful
# restarts, deploys and a killed child; its targets are its checks.  Two
# generations to compare in 3 minutes: samples every second (not 2 s) keep
# the descriptor count's noise well inside the 5% growth bound.
# CGI by mod_cgi here, by mod_cgid in `make soak` (the soak found mod_cgid's
# scripts without request bodies under 2+ Listen x 2+ buckets, now fixed
# and tested in test_security.py ForkHygiene).
stage soak python3 -m mpmng_py.soak --seconds 180 --sample-every 1 --cgi cgi
count_plain "$LOG/soak.log" || add 0 1

if [ "${MPMNG_SKIP_REGRESS:-}" = 1 ]; then
    echo "=== regress: skipped (MPMNG_SKIP_REGRESS=1)"
else
    stage regress test/regress/run.sh event reuseport --with-fhcache
    count_plain "$LOG/regress.log" || add 0 1
fi

# Windows: cross-build (cached by input hash) and run under wine64.  Not
# part of the sanitizer run (mingw builds are not instrumented).
windows_stages() {
    # The background build holds build.sh's lock until it ends: this run
    # waits for it, then finds everything built (or builds what it left,
    # and fails with the build's own error).
    stage win-build build/win/build.sh; rc=$?
    echo "--- the background build's log:"; cat "$LOG/background.log" "$LOG/win-build.log"
    # Built from the newest httpd source Debian offers (deb-src is on now).
    stage win-pin python3 test/build/check_win_pin.py
    count_rc $?
    if [ "$rc" -ne 0 ]; then
        add 0 1; return
    fi
    touch "$LOG/win-built"
    # The background build's wineserver (gen_test_char ran under wine)
    # lives in the idle cgroup: the tests must start their own.
    WINEPREFIX=$PWD/build/win/cache/wineprefix timeout 60 /usr/lib/wine/wineserver -w || true
    if stage win-dist build/win/dist.sh; then
        stage win python3 -m mpmng_py.win --short
        count_plain "$LOG/win.log" || add 0 1
    else
        add 0 1
    fi
}

# A lane: stages run in a subshell beside the ones that follow, their
# output kept in $LOG/lane-NAME.log and printed when the lane is joined,
# their counts, failures and times added then (each stage's CPU time is
# the machine's, so it counts the stages beside it too).
lane_start() {
    local name=$1; shift
    echo "=== lane $name: $* (beside the stages that follow; its output when it ends)"
    rm -f "$LOG/lane-$name.state"
    # Job control on for the fork only: the lane gets a process group of its
    # own, which the EXIT trap can stop (mpmng_py.win cleans up on SIGTERM);
    # not the terminal's, so nothing in it reads the terminal.
    set -m
    (   passed=0 failed=0 broken=() durations=() cpu_times=()
        "$@" </dev/null >"$LOG/lane-$name.log" 2>&1
        declare -p passed failed broken durations cpu_times \
            | sed 's/^declare -[-a-zA-Z]* /&lane_/' >"$LOG/lane-$name.state" ) &
    LANE_PID=$!
    set +m
}
lane_join() {
    local name=$1 t0=$(date +%s)
    [ -n "$LANE_PID" ] || return 0
    wait "$LANE_PID"; LANE_PID=
    echo "=== lane $name ended ($(( $(date +%s) - t0 ))s after the stages beside it):"
    cat "$LOG/lane-$name.log"
    # shellcheck disable=SC1090
    if ! source "$LOG/lane-$name.state" 2>/dev/null; then
        echo "check: lane $name left no state"; broken+=("lane-$name"); add 0 1; return
    fi
    add "$lane_passed" "$lane_failed"
    broken+=(${lane_broken[@]+"${lane_broken[@]}"})
    durations+=(${lane_durations[@]+"${lane_durations[@]}"})
    cpu_times+=(${lane_cpu_times[@]+"${lane_cpu_times[@]}"})
}

# The Windows tests leave most of the machine idle (Wine waits: 0.66 cores
# through the win stage's 7 minutes), and so do deb, compat and intree (0.6
# to 0.9 cores): they run beside each other.  A run with the caches (ci7):
# the stages after httpd's regression suite took 655 s, against 1100 s one
# after the other (ci6, the same machine).  httpd's regression suite under
# Wine runs two servers at once (1.4 cores): after both lanes, alone.
win=1
if [ -n "$SAN" ] || [ "${MPMNG_SKIP_WIN:-}" = 1 ]; then
    echo "=== win: skipped${SAN:+ (SANITIZE)}"; win=
else
    rm -f "$LOG/win-built"
    lane_start windows windows_stages
fi

# The Debian packages installed on this machine's apache2 (first: on a
# machine without the caches it runs while compat waits for its builds).
if [ -n "$SAN" ] || [ "${MPMNG_SKIP_DEB:-}" = 1 ]; then
    echo "=== deb: skipped${SAN:+ (SANITIZE)}"
else
    stage deb test/deb/run.sh
    count_plain "$LOG/deb.log" || add 0 1
fi

# The older httpd releases (RHEL 8's 2.4.37 to RHEL 9's 2.4.62), one per
# path through the httpd seam (mpmng_py/compat/seampaths.py): each built
# (in the background, after the Windows build), our modules built with its
# apxs, and the integration tests of what differs between releases run against
# it (`make compat`: every release, every test, httpd's regression suite).
if [ -n "$SAN" ] || [ "${MPMNG_SKIP_COMPAT:-}" = 1 ]; then
    echo "=== compat: skipped${SAN:+ (SANITIZE)}"
else
    stage compat python3 -m mpmng_py.compat --short
    count_plain "$LOG/compat.log" || add 0 1
fi

# httpd built from Debian's source with mpm-ng in its tree.  Not a
# sanitizer run: it builds its own binaries.
if [ -n "$SAN" ] || [ "${MPMNG_SKIP_INTREE:-}" = 1 ]; then
    echo "=== intree: skipped${SAN:+ (SANITIZE)}"
else
    stage intree test/intree/run.sh --short
    count_plain "$LOG/intree.log" || add 0 1
fi

if [ -n "$win" ]; then
    lane_join windows
    # httpd's regression suite under Wine, the files that exercise the
    # MPM and the cache: stock mpm_winnt against mpm_winnt_ng with
    # mod_fhcache, at once (`make win-regress`: all of it, four runs).
    if [ -e "$LOG/win-built" ]; then
        stage win-regress python3 -m mpmng_py.winregress stock ng+fhcache --subset mpm
        count_plain "$LOG/win-regress.log" || add 0 1
    fi
fi

# Every stage that waits for a background build has run: once the job has
# ended, its process group is not to be killed at exit (the ID may be
# reused).  Still running (a stage failed before it waited), it is.
for _ in $(seq 50); do
    [ -n "$BACKGROUND_PID" ] && kill -0 -- -"$BACKGROUND_PID" 2>/dev/null || break
    sleep 0.2
done
if [ -n "$BACKGROUND_PID" ] && ! kill -0 -- -"$BACKGROUND_PID" 2>/dev/null; then
    BACKGROUND_PID=
fi

for f in out/asan.* out/ubsan.*; do
    [ -e "$f" ] || continue
    echo "=== sanitizer report $f"; cat "$f"; broken+=("sanitizer"); add 0 1
done

echo
echo "check: stage times: ${durations[*]}; in all $(( $(date +%s) - CHECK_T0 ))s"
echo "check: CPU time by stage (machine/background job): ${cpu_times[*]};" \
     "in all $(( ($(busy_cs) - CHECK_BUSY0) / 100 ))s"
# What failed, again at the end (CI keeps only the output's tail).
for name in ${broken[@]+"${broken[@]}"}; do
    [ -f "$LOG/$name.log" ] || continue
    echo "check: from $LOG/$name.log:"
    # The first failures (often the cause) and the last ones.
    grep -E '^(FAIL|ERROR)|\*\*FAIL\*\*|FAILED:|Error:|regressions\): [1-9]|  - t/' \
        "$LOG/$name.log" | cut -c1-300 \
        | awk '{ l[NR] = $0 } END { for (i = 1; i <= NR; i++)
                 if (NR <= 8 || i <= 5 || i > NR - 3) print l[i];
                 else if (i == 6) print "... (" NR - 8 " more)" }' \
        | sed 's/^/    /'
    # The soak's own failed requests (summary.md's "Failures"), unexcused.
    grep -E '^- [0-9.]+-[0-9.]+ s ' "$LOG/$name.log" | grep -v '(excused: kill' \
        | head -n 10 | cut -c1-300 | sed 's/^/    /'
done
[ ${#broken[@]} -eq 0 ] || echo "check: stages with failures: ${broken[*]}"
echo "check: $passed passed, $failed failed"
[ ${#broken[@]} -eq 0 ] && [ "$failed" -eq 0 ]
