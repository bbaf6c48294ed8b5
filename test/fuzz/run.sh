#!/usr/bin/env bash
# Fuzz our own parsers with libFuzzer (clang), under ASan and UBSan.
#
#   test/fuzz/run.sh [--runs N | --seconds S]      (default: --runs 1000000)
#
# Each target in test/fuzz/fuzz_*.c is built against the sources it names
# below and run from the corpus kept in test/fuzz/corpus/<target> (copied:
# the repository's corpus is not changed; `--merge` adds what was found to
# it).  A crash stops that target; its input is kept in out/fuzz/ and
# printed in base64.  Ends with "fuzz: N passed, N failed" (one per target).
set -u
cd "$(dirname "$0")/../.."
OUT=out/fuzz
LIMIT=(-runs=1000000)
MERGE=
while [ $# -gt 0 ]; do
    case $1 in
        --runs) LIMIT=(-runs="$2"); shift 2 ;;
        --seconds) LIMIT=(-max_total_time="$2"); shift 2 ;;
        --merge) MERGE=1; shift ;;
        *) echo "usage: $0 [--runs N | --seconds S] [--merge]" >&2; exit 2 ;;
    esac
done

# target  sources it fuzzes
TARGETS=(
    "reqscan   mpm_reuseport/rp_reqscan.c"
    "rtimeout  mpm_reuseport/rp_rtimeout.c"
)
CC=${FUZZ_CC:-clang}
FLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Impm_reuseport -Imod_fhcache -Wall -Wextra)

if ! command -v "$CC" >/dev/null; then
    echo "fuzz: $CC not found (build/deps.sh fuzz installs it)"; echo "fuzz: 0 passed, 1 failed"
    exit 1
fi
mkdir -p "$OUT"
passed=0 failed=0
for t in "${TARGETS[@]}"; do
    read -r name srcs <<<"$t"
    bin=$OUT/fuzz_$name
    # shellcheck disable=SC2086
    if ! "$CC" "${FLAGS[@]}" -o "$bin" "test/fuzz/fuzz_$name.c" $srcs 2>"$OUT/$name.build.log"; then
        echo "fuzz: $name: build failed:"; cat "$OUT/$name.build.log"
        failed=$((failed + 1)); continue
    fi
    work=$OUT/corpus-$name
    rm -rf "$work"; mkdir -p "$work"
    cp test/fuzz/corpus/"$name"/* "$work"/
    log=$OUT/$name.log
    ASAN_OPTIONS=detect_leaks=1 "$bin" "${LIMIT[@]}" -print_final_stats=1 \
        -artifact_prefix="$OUT/$name-" "$work" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    if [ $rc -ne 0 ] || [ -z "$runs" ]; then
        echo "fuzz: $name: FAILED after ${runs:-?} inputs (exit $rc); log $log:"
        grep -E "ERROR|runtime error|SUMMARY|Base64|artifact" "$log" | head -20
        failed=$((failed + 1)); continue
    fi
    echo "fuzz: $name: $runs inputs, no crash, no sanitizer report" \
         "($(sed -n 's/^stat::new_units_added: *//p' "$log") new corpus units)"
    passed=$((passed + 1))
    if [ -n "$MERGE" ]; then
        "$bin" -merge=1 test/fuzz/corpus/"$name" "$work" >/dev/null 2>&1
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
