#!/usr/bin/env bash
# Many threads running Python at the same instant (tests/py/truth_threads.py): eight threads, each
# with its own hot function, for 4 s at 1 kHz under --threads. Every thread's function appears
# under that thread's root, and each thread's sample count agrees with its CPU time (the
# scheduler's, /proc/PID/task/TID/schedstat) within 10 % plus one clock tick. Run on the
# free-threaded builds (test_pythons --flavour free-threaded), where the eight run in parallel on every CPU
# and the in-kernel capture reads each thread's own frames concurrently, and on the default 3.14
# as the GIL baseline (the same check, one thread running at a time). Then the known call graph
# of tests/py/truth_calls.py (stack_truth.sh) in four threads at once: no impossible stack.
source "$(dirname "$0")/../lib.sh"
need_root
S=$BUILD/pyebpf-sample
need_file "$S"
W=$ROOT/tests/py/truth_threads.py
C=$ROOT/tests/py/truth_calls.py
need_cmd python3 # runs the call-graph check (-B: nothing written beside it)
CALLS_THREADS=4
CALLS_SECONDS=3
MIN_CALLS=500
HZ=1000
SECONDS_RUN=4
THREADS=8
TOL_PCT=10
TICK_MS=$((1000 / $(getconf CLK_TCK)))

mapfile -t PYS < <(test_pythons --flavour free-threaded; test_pythons | grep '^python3\.14 ')
[ ${#PYS[@]} -gt 0 ] || skip_all "no interpreter (TEST_PYTHONS)"
for line in "${PYS[@]}"; do
    read -r label py rest <<< "$line"
    if [ "$py" = - ]; then
        skip "$label: $THREADS threads" "$rest"
        continue
    fi
    read -r -a envs <<< "$rest"
    f=$TMP/$label
    env "${envs[@]}" "$S" -q --stats --threads -F "$HZ" -d 60 -o "$f.folded" -- \
        "$py" "$W" "$SECONDS_RUN" "$THREADS" > "$f.out" 2> "$f.err"
    rc=$?
    if [ $rc != 0 ] || [ "$(grep -c '^THREAD ' "$f.out")" != "$THREADS" ]; then
        fail "$label: $THREADS threads" "sampler status $rc, $(grep -c '^THREAD ' "$f.out") THREAD lines: $(grep -v '^[a-z_]*: ' "$f.err" | head -c 300)"
        continue
    fi
    # per thread: TID, its samples, those with its own hot_k, those with another hot_j
    bad=0 rows=""
    while read -r _ fn tid ms; do
        read -r all own other < <(awk -v root="thread $tid " -v fn="$fn (" '
            index($0, root) == 1 { n = $NF; all += n
                if (index($0, fn)) own += n; else if ($0 ~ /(^|;)hot_[0-7] \(/) other += n }
            END { print all + 0, own + 0, other + 0 }' "$f.folded")
        rows="$rows $fn=$all/${ms}ms"
        if ! awk -v s="$all" -v ms="$ms" -v t="$TOL_PCT" -v tick="$TICK_MS" -v hz="$HZ" \
            'BEGIN { want = ms * hz / 1000; d = s - want; if (d < 0) d = -d; exit !(want > 0 && d <= want * t / 100 + tick * hz / 1000) }'; then
            bad=1
            echo "# $label $fn (tid $tid): $all samples, $ms ms of CPU"
        fi
        if [ "$own" -gt 0 ] && [ "$own" -ge $((all / 2)) ] && [ "$other" = 0 ]; then
            pass "$label: $fn in its own thread: $own of its $all samples"
        else
            fail "$label: $fn in its own thread" "$own of $all samples, $other under another hot_<k>"
        fi
    done < <(grep '^THREAD ' "$f.out")
    if [ $bad = 0 ]; then
        pass "$label: per-thread samples = CPU time ($TOL_PCT % + 1 tick; samples/CPU ms):$rows"
    else
        fail "$label: per-thread samples = CPU time ($TOL_PCT % + 1 tick)" "samples/CPU ms:$rows"
    fi
    echo "# $label:$(for k in samples lost merge_errors python_kernel_fallbacks; do
        v=$(sed -n "s/^$k: //p" "$f.err" | head -1); [ -z "$v" ] || printf ' %s %s' $k "$v"; done)"

    # the call graph in four threads
    env "${envs[@]}" "$S" -q --stats -F 997 -d 60 -o "$f.calls.folded" -- \
        "$py" "$C" "$CALLS_SECONDS" "$CALLS_THREADS" > "$f.calls.out" 2> "$f.calls.err"
    python3 -B "$C" --check "$f.calls.folded" > "$f.calls.check"
    kv() { tr ' ' '\n' < "$f.calls.check" | sed -n "s/^$1=//p" | head -1; }
    all=$(kv workload) bad=$(kv impossible) mk=$(kv marked)
    if [ "${all:-0}" -ge "$MIN_CALLS" ] && [ "$bad" = 0 ]; then
        pass "$label: $CALLS_THREADS threads of truth_calls: 0 impossible of $all workload samples ($mk marked)"
    else
        fail "$label: $CALLS_THREADS threads of truth_calls: $bad impossible of $all workload samples" "need >= $MIN_CALLS; first impossible: $(sed -n 's/^first_impossible=//p' "$f.calls.check" | head -c 300)"
    fi
done
