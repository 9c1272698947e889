#!/usr/bin/env bash
# Runs libFuzzer targets: tests/fuzz/run.sh SECONDS JOBS TARGET...
# Each target runs SECONDS on FUZZ_CORPUS/T (default build/fuzz/corpus/T: new inputs are written
# there), FUZZ_SEEDS/T (default build/fuzz/seeds/T: generated from real files) and tests/fuzz/seeds/T
# (committed), at most JOBS at a time, under `nice -n 10`; with another FUZZ_CORPUS, the inputs of
# build/fuzz/corpus/T are read too, never written. FUZZ_OUT (default build/fuzz) takes the logs,
# exit codes and crash inputs.
# Prints one summary line per target (execs/s, cov, ft, corpus, crashes) and exits 1 when a target
# crashed, leaked, timed out or did not run. Crash inputs: build/fuzz/crash/T-*.
set -u
secs=${1:?seconds}; jobs=${2:?jobs}; shift 2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
D=build/fuzz
L=${FUZZ_OUT:-$D} # logs, exit codes and crash inputs
C=${FUZZ_CORPUS:-$D/corpus} # new inputs
S=${FUZZ_SEEDS:-$D/seeds}
mkdir -p "$L/crash"
touch "$L/.start"

run_one() {
    local t=$1 secs=$2 extra=()
    rm -f "$L/$t.rc"
    mkdir -p "$C/$t" "$S/$t"
    [ "$C" != "$D/corpus" ] && [ -d "$D/corpus/$t" ] && extra+=("$D/corpus/$t")
    [ -d "tests/fuzz/seeds/$t" ] && extra+=("tests/fuzz/seeds/$t")
    local opts=(-max_total_time="$secs" -print_final_stats=1 -timeout=10)
    [ -f "tests/fuzz/$t.dict" ] && opts+=(-dict="tests/fuzz/$t.dict")
    nice -n 10 "$D/fuzz_$t" "${opts[@]}" \
        -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-65536}" -artifact_prefix="$L/crash/$t-" \
        "$C/$t" "$S/$t" "${extra[@]}" > "$L/$t.log" 2>&1
    echo $? > "$L/$t.rc"
}
export -f run_one
export D L C S

printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'run_one {} '"$secs"

bad=0
printf '%-10s %10s %10s %7s %7s %7s %s\n' target execs exec/s cov ft corpus result
for t in "$@"; do
    log=$L/$t.log rc=$(cat "$L/$t.rc" 2> /dev/null || echo 99)
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
    last=${done_line:-$(grep -E '^#[0-9]+' "$log" | tail -1)}
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    crashes=$(find "$L/crash" -name "$t-*" -newer "$L/.start" | wc -l)
    result=ok
    if [ "$rc" != 0 ] || [ -z "$done_line" ]; then
        result="FAILED rc=$rc ($(grep -m1 -oE 'ERROR: [A-Za-z]+: [^ ]+|deadly signal|ERROR: libFuzzer: [a-z-]+' "$log" || echo 'see log'))"
        bad=1
    fi
    printf '%-10s %10s %10s %7s %7s %7s %s (crash files: %s)\n' "$t" "${execs:--}" "${eps:--}" \
        "${cov:--}" "${ft:--}" "${corp:--}" "$result" "$crashes"
done
echo "logs: $L/TARGET.log"
exit $bad
