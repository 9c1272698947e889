#!/usr/bin/env bash
# A JIT code slot retired and handed to other code keeps no stale name: jitprog --reuse publishes
# a trampoline as "first_fn", spins under it ~1.5 s, retires it, writes and publishes the same
# address as "second_fn" and spins ~1.5 s more. pyebpf-sample names the slot from the target's
# publications (perf map, or jitdump): the address is named in both phases, so only the timed
# re-check of those files (proc_recheck_jit) can see the second name. Both names must appear,
# under main;run_chain and above innermost, with roughly the share of samples each phase ran.
source "$(dirname "$0")/../lib.sh"
need_root
S=$BUILD/pyebpf-sample
PROG=$BUILD/progs/jitprog
need_file "$S"
need_file "$PROG"
cd "$TMP" || exit 1

MIN_SAMPLES=100     # samples a run must hold to judge its shares (~1,500 on an idle machine;
                    # the count follows the CPU the target gets, a fraction of it on a loaded one)
MIN_NAMED_PCT=80    # spinning samples under a named slot
MIN_PHASE_PCT=25    # each name's share of them (each phase spins as long as the other)

for sinks in perfmap jitdump; do
    out=$TMP/$sinks.folded
    if ! "$S" -q -F 499 --unwind fp --stats -o "$out" -- "$PROG" --sinks $sinks --jitdump-dir "$TMP" \
        --reuse 1.5 > "$TMP/$sinks.out" 2> "$TMP/$sinks.err"; then
        fail "$sinks: sampled jitprog --reuse" "$(head -c 300 "$TMP/$sinks.err")"
        continue
    fi
    jpid=$(awk '$1 == "ready" { print $2 }' "$TMP/$sinks.out")
    [ -n "$jpid" ] && rm -f "/tmp/perf-$jpid.map" "/tmp/jit-$jpid.dump"
    total=$(sum "$out")
    first=$(sum "$out" '(^|;)main;(run_reuse;)?run_chain;first_fn;innermost(;|$| )')
    second=$(sum "$out" '(^|;)main;(run_reuse;)?run_chain;second_fn;innermost(;|$| )')
    both=$((first + second))
    reloads=$(stat_of jit_reloads "$TMP/$sinks.err")
    echo "# $sinks: total=$total first_fn=$first second_fn=$second jit_reloads=${reloads:-?}"
    check "$sinks: the spinning samples are under a named slot ($both/$total)" \
        share_ge "$both" "$total" $MIN_NAMED_PCT $MIN_SAMPLES
    check "$sinks: first_fn named in the first phase ($first/$both)" \
        share_ge "$first" "$both" $MIN_PHASE_PCT
    check "$sinks: second_fn named in the second phase, the old name not kept ($second/$both)" \
        share_ge "$second" "$both" $MIN_PHASE_PCT
done
