#!/usr/bin/env bash
# Cost of remote Python stack reads per interpreter and workload (numbers for docs/python-frames.md).
#   [EXACT=1] tests/tools/pystack_bench.sh [READS] [INTERVAL_US]   (root; pystack-dump built)
# EXACT=1: one iovec per predicted frame, no read window above the leaf (pystack-dump -x).
set -u
cd "$(dirname "$0")/../.."
READS=${1:-2000}
INTERVAL=${2:-1000}
DUMP=${BUILD:-build}/tools/pystack-dump
source tests/lib.sh # test_pythons: the interpreters of tests/pythons
mapfile -t PYS < <(test_pythons debian-3.11 pyenv-3.11.7 pyenv-3.12.1 pyenv-3.13.0)
printf '| %-8s | %-11s | %5s | %10s | %10s | %9s | %9s | %8s | %8s | %11s |\n' python workload frames \
    cold_calls cold_us warm_calls warm_bytes warm_us changed changed_calls
echo '|---|---|---|---|---|---|---|---|---|---|'
for line in "${PYS[@]}"; do
    read -r _ py _ <<< "$line"
    [ "$py" != - ] || continue
    ver=$("$py" -c 'import platform; print(platform.python_version())')
    case "$py" in /usr/bin/*) ver="$ver deb" ;; esac
    for mode in block spin change varied "deep 1000"; do
        out=$(mktemp)
        # shellcheck disable=SC2086
        "$py" tests/py/nested.py $mode > "$out" &
        pid=$!
        wait_line 5 "$out" READY
        sleep 0.2
        r=$("$DUMP" ${EXACT:+-x} -s -n "$READS" -i "$INTERVAL" -t "$pid" "$pid")
        kill $pid; wait $pid 2> /dev/null; rm -f "$out"
        g() { echo "$r" | awk -F': ' -v k="$1" '$1 == k { print $2 }'; }
        frames=$(echo "$r" | awk '/^thread/ { print $4 }')
        printf '| %-8s | %-11s | %5s | %10s | %10s | %9s | %9s | %8s | %8s | %11s |\n' "$ver" "$mode" \
            "$frames" "$(g cold_calls_per_read)" "$(g cold_us_per_read)" "$(g warm_calls_per_read)" \
            "$(g warm_bytes_per_read)" "$(g warm_us_per_read)" "$(g warm_changed_reads)" \
            "$(g changed_calls_per_read)"
    done
done
