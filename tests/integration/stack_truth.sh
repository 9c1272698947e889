#!/usr/bin/env bash
# Ground truth for the folded stacks: workloads whose call graph or shares are known by
# construction (tests/py/truth_*.py; each one's --check judges a folded profile against its own
# graph), sampled on every interpreter of test_pythons (tests/lib.sh).
# - Code churn (truth_churn.py): functions made, run for ~2 ms and freed over and over (their code
#   objects' addresses reused at once), and module code exec'd from strings: no frame named after
#   another code object (churn_<n> over leaf_<k> with k != n % 7, a leaf under a frame that never
#   calls it, ...) with BPF, over at least MIN_CHURN_LEAF checked samples; with --no-bpf, where
#   the frames and the code objects are copied while the target runs, at most
#   MAX_MISNAMED_NOBPF_PCT %.
# - Impossible stacks (truth_calls.py): f0..f15, where f<i> calls only f<j> with j > i, stacks
#   changing every few microseconds: none with BPF; with --no-bpf a torn read must be marked
#   ([truncated] root, <unreadable>), at most MAX_TORN_PCT % of the unmarked stacks are
#   impossible, and a read of the thread, always in Python but at start-up, is a sample.
# - The start-up case (truth_shares.py, pyenv 3.11.7, started from $TMP/elsewhere): hot_a, hot_b
#   and hot_c hold 60, 30 and 10 % of dispatch's samples, and no <module> (<string>) frame is under
#   dispatch. TRUTH_RUNS runs (default 3; the manual check asks TRUTH_RUNS=10).
# The debug and free-threaded builds (test_pythons --flavour debug, --flavour free-threaded) run
# all of it, the start-up case (60/30/10) included: their object headers and runtime layouts differ.
# TEST_PYTHONS="LABEL ..." limits the interpreters (labels of test_pythons).
source "$(dirname "$0")/../lib.sh"
need_root
S=$BUILD/pyebpf-sample
need_file "$S"
need_cmd python3 # runs the checks (-B: nothing written beside them)
W=$ROOT/tests/py

RUN_SECONDS=3       # each churn and calls run, in seconds of the workload's CPU time (so its
                    # sample counts do not depend on the machine's load; its wall time does)
HZ=997
CAP_SECONDS=120     # -d: a run normally ends when its workload does (a loaded machine gives
                    # it a fraction of a CPU: 3 s of CPU can take 30 s)
MIN_CHURN_LEAF=100  # churn_<n> -> leaf samples the churn runs must hold (else they prove nothing)
CHURN_RUNS=8        # ... runs at most, to reach it: a run holds ~150-900 of them, but under
                    # CPython's JIT (python3.15-jit) a run whose loops are compiled early holds
                    # ~20 (its churn_<n> frames are mostly leaves: nothing seen under them)
MIN_CALLS=500       # samples of the call graph a calls run must hold
MAX_TORN_PCT=0.1    # --no-bpf: impossible stacks among the unmarked ones, in %
MAX_IDLE_PCT=10     # --no-bpf: reads of the calls workload's one thread that gave no sample, in %
                    # (it is in Python but during start-up and exit: 2-3 % of the reads; when a
                    # leaf popped meanwhile ended the chain, 3.14 and 3.15 lost 15-18 % more)
# --no-bpf: misnamed churn samples, in %. A remote read races the target: a code object freed
# between the call that read its header and the one that reads its strings can lend another
# object's text; its witnesses and its reference count (a freed block's is a free-list link)
# refuse it. Without the count check 1-4 in ~4,500 samples on 3.11 with the machine loaded.
MAX_MISNAMED_NOBPF_PCT=0
TRUTH_RUNS=${TRUTH_RUNS:-3}
STARTUP_SECONDS=4
STARTUP_HZ=499
MIN_DISPATCH=300    # samples under dispatch a start-up run must hold
SHARE_TOL=5         # hot_a, hot_b, hot_c: their share (60, 30, 10 % by construction) +- this
STARTUP_PYTHON=pyenv-3.11.7

T0=$(date +%s.%N)

# kv KEY FILE: the value of KEY=VALUE in a check's output
kv() { tr ' ' '\n' < "$2" | sed -n "s/^$1=//p" | head -1; }
kvn() { local v; v=$(kv "$@"); echo "${v:-0}"; } # ... 0 when absent

# sample OUT DIR HZ SECONDS [SAMPLER-OPTION...] -- WORKLOAD ARGS...: runs the workload under the
# sampler with env "${envs[@]}" (the interpreter's), from DIR: OUT.folded, OUT.err (the
# sampler's stderr with --stats), OUT.out (the workload's stdout). Fails the run's checks (returns
# 1) with a reason in $why when the sampler fails or writes no profile.
sample() {
    local out=$1 dir=$2 hz=$3 secs=$4 opts=() rc
    shift 4
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    (cd "$dir" && env "${envs[@]}" "$S" -q --stats -F "$hz" -d "$CAP_SECONDS" "${opts[@]}" \
        -o "$out.folded" -- "$py" "$@" "$secs" > "$out.out" 2> "$out.err")
    rc=$?
    why=""
    if [ $rc != 0 ] || [ ! -s "$out.folded" ]; then
        why="sampler status $rc: $(grep -v '^[a-z_]*: ' "$out.err" | head -c 300)"
        return 1
    fi
}

# churn LABEL MODE MAX_PCT OPTION...: churn runs and their verdict. A run's checked samples are
# those not marked; on a loaded machine the collector names code objects late and more of them
# are marked freed (<freed code>), and under a JIT fewer churn frames have a leaf under them, so
# runs are added, up to CHURN_RUNS, until MIN_CHURN_LEAF samples are checked; every run's
# misnamed samples count.
churn() {
    local label=$1 mode=$2 max=$3 c run f
    local all=0 bad=0 leaf=0 str=0 mk=0 made=0 first=""
    shift 3
    for run in $(seq $CHURN_RUNS); do
        f=$d/churn-${mode#--}-$run
        if ! sample "$f" "$d" "$HZ" "$RUN_SECONDS" "$@" -- "$W/truth_churn.py"; then
            fail "$label: churn ($mode)" "$why"
            return
        fi
        python3 -B "$W/truth_churn.py" --check "$f.folded" > "$f.check"
        all=$((all + $(kvn workload "$f.check"))) bad=$((bad + $(kvn misnamed "$f.check")))
        leaf=$((leaf + $(kvn churn_leaf "$f.check"))) str=$((str + $(kvn strings "$f.check")))
        mk=$((mk + $(kvn marked "$f.check"))) made=$((made + $(sed -n 's/^CHURNED //p' "$f.out" | grep . || echo 0)))
        [ -n "$first" ] || [ "$(kvn misnamed "$f.check")" = 0 ] || first=$(sed -n 's/^first_misnamed=//p' "$f.check" | head -c 1500)
        echo "# $label churn ($mode) run $run:$(for k in samples merge_errors python_kernel_fallbacks code_freed code_stale code_rereads code_fill_raced code_fill_late code_unverified datastack_torn; do
            v=$(stat_of $k "$f.err"); [ -z "$v" ] || printf ' %s %s' $k "$v"; done)"
        [ "$leaf" -lt "$MIN_CHURN_LEAF" ] || break
    done
    c="$bad misnamed of $all workload samples ($(pct "$bad" "$all") %, at most $max %); $leaf checked"
    c="$c churn_<n> -> leaf_<n % 7>, $str in exec'd strings, $mk marked; $made functions made in $run run(s)"
    if [ "$all" -gt 0 ] && le "$(pct "$bad" "$all")" "$max" && { [ "$max" != 0 ] || [ "$bad" = 0 ]; } &&
        [ "$leaf" -ge "$MIN_CHURN_LEAF" ]; then
        pass "$label: churn ($mode): $c"
    else
        fail "$label: churn ($mode): $c" "need at most $max % misnamed and >= $MIN_CHURN_LEAF checked; first misnamed: ${first:--}"
    fi
}

# calls LABEL MODE MAX_PCT OPTION...: one run of the known call graph and its verdict
calls() {
    local label=$1 mode=$2 max=$3 f=$d/calls-${2#--} c
    shift 3
    if ! sample "$f" "$d" "$HZ" "$RUN_SECONDS" "$@" -- "$W/truth_calls.py"; then
        fail "$label: impossible stacks ($mode)" "$why"
        return
    fi
    python3 -B "$W/truth_calls.py" --check "$f.folded" > "$f.check"
    if [ "$mode" = --no-bpf ]; then
        local reads idle
        reads=$(stat_of nobpf_thread_reads "$f.err") idle=$(stat_of nobpf_idle_reads "$f.err")
        c="$idle of $reads reads gave no sample ($(pct "$idle" "$reads") %, at most $MAX_IDLE_PCT %)"
        c="$c, $(stat_of datastack_popped_leaves "$f.err") popped leaves passed over"
        if share_le "$idle" "$reads" "$MAX_IDLE_PCT" 1; then
            pass "$label: a read of a thread in Python is a sample ($mode): $c"
        else
            fail "$label: a read of a thread in Python is a sample ($mode): $c"
        fi
    fi
    local all un bad mk bmk rate
    all=$(kv workload "$f.check") un=$(kv unmarked "$f.check") bad=$(kv impossible "$f.check")
    mk=$(kv marked "$f.check") bmk=$(kv impossible_marked "$f.check")
    rate=$(pct "$bad" "$un")
    c="$bad impossible of $un unmarked samples ($rate %, at most $max %); $mk marked"
    c="$c ($(pct "$mk" "$all") %, $bmk of them impossible), mean depth $(kv mean_depth "$f.check")"
    if [ "${all:-0}" -ge "$MIN_CALLS" ] && le "$rate" "$max" && { [ "$max" != 0 ] || [ "$bmk" = 0 ]; }; then
        pass "$label: impossible stacks ($mode): $c"
    else
        fail "$label: impossible stacks ($mode): $c" "need >= $MIN_CALLS samples ($all); first impossible: $(sed -n 's/^first_impossible=//p' "$f.check" | head -c 300)"
        return
    fi
    [ "$bad" = 0 ] || echo "# $label impossible ($mode): first $(sed -n 's/^first_impossible=//p' "$f.check" | head -c 300)"
}

# expect_share RUN NAME PCT TOL: NAME holds PCT +- TOL % of the samples under dispatch in $f.check
expect_share() {
    local run=$1 name=$2 want=$3 tol=$4 n all got
    n=$(kv "$name" "$f.check") all=$(kv under_dispatch "$f.check")
    got=$(pct "$n" "$all")
    if within "$got" "$want" "$tol"; then
        pass "$run: $name $got % of $all samples under dispatch ($want +- $tol)"
    else
        fail "$run: $name $got % of $all samples under dispatch ($want +- $tol)" "under dispatch: $(head -1 "$f.check"); first other: $(sed -n 's/^first_other=//p' "$f.check" | head -c 300)"
    fi
}

# startup LABEL: the start-up case, TRUTH_RUNS times
startup() {
    local label=$1 run all str
    mkdir -p "$TMP/elsewhere"
    for run in $(seq "$TRUTH_RUNS"); do
        local f=$d/startup-$run r="$label start-up $run/$TRUTH_RUNS"
        if ! sample "$f" "$TMP/elsewhere" "$STARTUP_HZ" "$STARTUP_SECONDS" -- "$W/truth_shares.py"; then
            fail "$r" "$why"
            continue
        fi
        python3 -B "$W/truth_shares.py" --check "$f.folded" > "$f.check"
        all=$(kv under_dispatch "$f.check") str=$(kv string "$f.check")
        echo "# $r: $(head -1 "$f.check"); the workload measured $(sed -n 's/^SHARE //p' "$f.out")"
        if [ "${all:-0}" -lt "$MIN_DISPATCH" ]; then
            fail "$r: samples under dispatch" "$all, need >= $MIN_DISPATCH"
            continue
        fi
        expect_share "$r" hot_a 60 $SHARE_TOL
        expect_share "$r" hot_b 30 $SHARE_TOL
        expect_share "$r" hot_c 10 $SHARE_TOL
        if [ "$str" = 0 ]; then
            pass "$r: no <module> (<string>) under dispatch"
        else
            fail "$r: no <module> (<string>) under dispatch" "$str samples ($(pct "$str" "$all") %): $(sed -n 's/^first_other=//p' "$f.check" | head -c 300)"
        fi
    done
}

mapfile -t PYS < <(test_pythons)
mapfile -t FLAVOURED < <(test_pythons --flavour debug; test_pythons --flavour free-threaded)
PYS+=("${FLAVOURED[@]}")
for line in "${PYS[@]}"; do
    read -r label py rest <<< "$line"
    if [ "$py" = - ]; then
        skip "$label: stack truth" "$rest"
        continue
    fi
    read -r -a envs <<< "$rest"
    d=$TMP/$label
    mkdir -p "$d"
    [ ${#envs[@]} = 0 ] || echo "# $label: ${envs[*]}, sys._jit.is_enabled() $(env "${envs[@]}" "$py" -c 'import sys; print(sys._jit.is_enabled())' 2>&1 | tail -1)"
    churn "$label" BPF 0
    churn "$label" --no-bpf "$MAX_MISNAMED_NOBPF_PCT" --no-bpf
    calls "$label" BPF 0
    calls "$label" --no-bpf "$MAX_TORN_PCT" --no-bpf
    [ "$label" = "$STARTUP_PYTHON" ] && startup "$label"
    printf '%s\n' "${FLAVOURED[@]}" | grep -q "^$label /" && startup "$label"
done
if ! printf '%s\n' "${PYS[@]}" | grep -q "^$STARTUP_PYTHON /"; then
    why=$(printf '%s\n' "${PYS[@]}" | sed -n "s/^$STARTUP_PYTHON - //p")
    skip "start-up case" "needs $STARTUP_PYTHON (${why:-not in TEST_PYTHONS})"
fi
echo "# stack_truth: $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
