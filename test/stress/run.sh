#!/usr/bin/env bash
# `make check-stress`: the timing-sensitive integration tests
# (mpmng_py/integration/stress.py) REPEAT times, then the soak SOAK_RUNS
# times for SOAK_SECONDS each, all beside HOGS busy-looping processes (a
# loaded machine: the CI run builds Windows libraries beside the suite).
# Prints each test's failure rate and ends with "stress: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
REPEAT=${STRESS_REPEAT:-50}
HOGS=${STRESS_HOGS:-2}
SOAK_RUNS=${STRESS_SOAK_RUNS:-$REPEAT}
SOAK_SECONDS=${STRESS_SOAK_SECONDS:-60}
LOG=out/stress
mkdir -p "$LOG"
passed=0 failed=0

python3 -m mpmng_py.integration --stress --repeat "$REPEAT" --hogs "$HOGS" \
    2>&1 | tee "$LOG/integration.log"
line=$(grep -E '^integration: [0-9]+ passed, [0-9]+ failed' "$LOG/integration.log" | tail -1)
if [ -n "$line" ]; then
    passed=$((passed + $(sed 's/^integration: \([0-9]*\) passed.*/\1/' <<<"$line")))
    failed=$((failed + $(sed 's/.* \([0-9]*\) failed.*/\1/' <<<"$line")))
else
    failed=$((failed + 1))
fi

soak_failed=0
for i in $(seq 1 "$SOAK_RUNS"); do
    echo "=== soak $i of $SOAK_RUNS (${SOAK_SECONDS} s, $HOGS cpu hog(s))"
    if python3 -m mpmng_py.cpuhogs "$HOGS" -- python3 -m mpmng_py.soak \
            --seconds "$SOAK_SECONDS" --sample-every 1 --cgi cgi > "$LOG/soak.$i.log" 2>&1; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)) soak_failed=$((soak_failed + 1))
        tail -20 "$LOG/soak.$i.log"
    fi
done
echo "stress: soak $soak_failed of $SOAK_RUNS runs failed"
echo "stress: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
