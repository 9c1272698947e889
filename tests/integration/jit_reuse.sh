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

# sum FILE ERE: total count of the folded lines whose stack matches ERE
sum() { awk -v re="$2" '{ n = $NF; $NF = ""; if ($0 ~ re) s += n } END { print s + 0 }' "$1"; }

for sinks in perfmap jitdump; do
    out=$TMP/$sinks.folded
    if ! "$S" -q -F 499 --unwind fp --stats -o "$out" -- "$PROG" --sinks $sinks --jitdump-dir "$TMP" \
        --reuse 1.5 > "$TMP/$sinks.out" 2> "$TMP/$sinks.err"; then
        fail "$sinks: sampled jitprog --reuse" "$(head -c 300 "$TMP/$sinks.err")"
        continue
    fi
    jpid=$(awk '$1 == "ready" { print $2 }' "$TMP/$sinks.out")
    [ -n "$jpid" ] && rm -f "/tmp/perf-$jpid.map" "/tmp/jit-$jpid.dump"
    total=$(sum "$out" '.')
    first=$(sum "$out" '(^|;)main;(run_reuse;)?run_chain;first_fn;innermost(;|$| )')
    second=$(sum "$out" '(^|;)main;(run_reuse;)?run_chain;second_fn;innermost(;|$| )')
    both=$((first + second))
    reloads=$(awk '$1 == "jit_reloads:" { print $2 }' "$TMP/$sinks.err")
    echo "# $sinks: total=$total first_fn=$first second_fn=$second jit_reloads=${reloads:-?}"
    check "$sinks: the spinning samples are under a named slot ($both/$total)" \
        awk -v b="$both" -v t="$total" 'BEGIN { exit !(t > 300 && b >= 0.8 * t) }'
    check "$sinks: first_fn named in the first phase ($first/$both)" \
        awk -v f="$first" -v b="$both" 'BEGIN { exit !(b > 0 && f >= 0.25 * b) }'
    check "$sinks: second_fn named in the second phase, the old name not kept ($second/$both)" \
        awk -v s="$second" -v b="$both" 'BEGIN { exit !(b > 0 && s >= 0.25 * b) }'
done
