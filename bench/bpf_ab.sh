#!/usr/bin/env bash
# In-target cost of several builds of pyebpf-sample on one target, compared in one run
# (results and commands: docs/benchmarks.md).
#
#   bench/bpf_ab.sh BIN[,BIN...] ROUNDS COMMAND...        (root)
#
# COMMAND is started on CPU 1 and must print READY once its stack is in place (bench/pychain.py
# does). Each round runs every BIN in turn on CPU 0 for 2 s at 1 kHz with --stats (and
# --bpf-stats where the build has it) and keeps its bpf_ns_per_sample; a BIN is a path, so older
# commits built in a `git worktree` compare with the current one. Prints one line per BIN: the
# median, then every value sorted. The medians of one build move by up to 2 µs between runs on a
# shared machine: compare within one run, never across runs.
set -u
if [ $# -lt 3 ]; then
    sed -n '2,12p' "$0" >&2
    exit 2
fi
IFS=, read -r -a BINS <<< "$1"
ROUNDS=$2
shift 2
TMP=$(mktemp -d /tmp/pyebpf-bpf-ab.XXXXXX)
trap 'kill "$PID" 2> /dev/null; wait "$PID" 2> /dev/null; rm -rf "$TMP"' EXIT
PID=""
taskset -c 1 "$@" > "$TMP/target.out" 2>&1 &
PID=$!
for _ in $(seq 300); do
    grep -q READY "$TMP/target.out" && break
    kill -0 "$PID" 2> /dev/null || { echo "bpf_ab: the target exited: $(head -c 300 "$TMP/target.out")" >&2; exit 1; }
    sleep 0.1
done
grep -q READY "$TMP/target.out" || { echo "bpf_ab: the target printed no READY in 30 s" >&2; exit 1; }
for _ in $(seq "$ROUNDS"); do
    for bin in "${BINS[@]}"; do
        extra=()
        "$bin" --help 2>&1 | grep -q -- --bpf-stats && extra=(--bpf-stats)
        v=$(taskset -c 0 "$bin" -q --stats "${extra[@]}" -F 1000 -d 2 -o "$TMP/out.folded" "$PID" 2>&1 |
            awk -F': ' '$1 == "bpf_ns_per_sample" { print $2 }')
        echo "$bin ${v:-none}"
    done
done | sort -k1,1 -k2n | awk '
    { n[$1]++; v[$1, n[$1]] = $2; all[$1] = all[$1] " " $2 }
    END { for (b in n) printf "bpf_ab bin=%s median_ns=%s runs=%d values=%s\n", b, v[b, int((n[b] + 1) / 2)], n[b], substr(all[b], 2) }'
