#!/usr/bin/env bash
# Faults around a native target: the target exits mid-run, deep recursion, hundreds of threads
# coming and going, a ring buffer that overflows, a second busy process that must stay out of
# the profile, and a PID reused by another process during the run.
# (Signals to the collector, a launched command that exits, and missing rights are checked in
# sample_errors.sh.)
source "$(dirname "$0")/../lib.sh"
S=$BUILD/pyebpf-sample
P=$BUILD/progs
need_file "$S"
need_file "$P/faultprog"
need_root

MIN_NAMED_WORKER_PCT=95 # leader exited: worker samples named from a live thread's maps
MIN_WORKER_SAMPLES=100

# -- the target exits in the middle of a run (PID mode) -------------------------------------
# The target spins for 1.5 s once the sampler says it samples (the go file): a loaded machine can
# take longer to set the sampler up than a fixed run of the target lasts.
"$P/faultprog" recurse 10 1.5 "$TMP/go" & tgt=$!
timeout 30 "$S" -F 499 -d 20 --stats -o "$TMP/exit.folded" "$tgt" 2> "$TMP/exit.err" & smp=$!
wait_line 30 "$TMP/exit.err" '^pyebpf-sample: sampling PID'
touch "$TMP/go"
start=$(date +%s.%N)
wait "$smp"; rc=$?
end=$(date +%s.%N)
wait "$tgt" 2> /dev/null
check "target exits mid-run: exit 0" [ $rc -eq 0 ]
check "target exits mid-run: run ends with it (< 6 s of the 20 asked)" \
    awk -v a="$start" -v b="$end" 'BEGIN { exit !(b - a < 6) }'
check "target exits mid-run: stats say stopped_by: target_exited" \
    grep -q '^stopped_by: target_exited$' "$TMP/exit.err"
check "target exits mid-run: profile written, well-formed" \
    bash -c "grep -q 'recurse_n;spin_until' '$TMP/exit.folded' && ! grep -vqE '^[^; ]+(;[^; ]+)* [0-9]+$' '$TMP/exit.folded'"

# -- deep recursion: 5,000 frames --------------------------------------------------------------
# fp: the kernel walks at most 127 frames; dwarf: the unwinder stops at 256. Either way the
# sample is kept, counted as truncated, and rooted at [truncated]. A sample taken while the
# recursion is still shallow is whole (main is on it) and is neither.
for mode in "fp faultprog" "dwarf faultprog-nofp --stack-size 65536"; do
    set -- $mode
    um=$1 prog=$2
    shift 2
    start=$(date +%s.%N)
    timeout 60 "$S" -q -F 499 --unwind "$um" "$@" --stats -o "$TMP/deep.folded" -- \
        "$P/$prog" recurse 5000 2 2> "$TMP/deep.err"; rc=$?
    end=$(date +%s.%N)
    n=$(stat_of samples "$TMP/deep.err"); tr=$(stat_of unwind_truncated "$TMP/deep.err")
    check "recursion 5000 ($um): exit 0 within 20 s" \
        bash -c "[ $rc -eq 0 ] && awk -v a=$start -v b=$end 'BEGIN { exit !(b - a < 20) }'"
    deep=$(awk '/^\[truncated\];/ && /recurse_n;recurse_n;recurse_n;recurse_n/ { s += $NF } END { print s + 0 }' "$TMP/deep.folded")
    if [ "${tr:-0}" -gt 0 ] && [ "$tr" -ge "$deep" ] && [ "$deep" -gt $((${n:-0} / 2)) ]; then
        pass "recursion 5000 ($um): truncation counted ($tr truncated of $n samples, $deep deep)"
    else
        fail "recursion 5000 ($um): truncation counted" "unwind_truncated=$tr deep=$deep samples=$n"
    fi
    check "recursion 5000 ($um): every recursion stack is rooted at [truncated] or whole down to main" \
        bash -c "! grep 'recurse_n' '$TMP/deep.folded' | grep -vqE '^(\[truncated\]|([^;]+;)*main);'"
    maxf=$(awk '{ n = split($1, a, ";"); if (n > m) m = n } END { print m + 0 }' "$TMP/deep.folded")
    check "recursion 5000 ($um): bounded depth ($maxf frames <= 258)" [ "$maxf" -le 258 ]
done

# -- 200 threads created and destroyed continuously -------------------------------------------
# Each thread names itself c<seq> and logs "tid c<seq>" before it runs: a sample may only be
# attributed to a (tid, name) pair that really existed.
start=$(date +%s.%N)
timeout 60 "$S" -q -F 999 --threads --stats -o "$TMP/churn.folded" -- \
    "$P/faultprog" churn 200 6 "$TMP/churn.log" > "$TMP/churn.out" 2> "$TMP/churn.err"; rc=$?
end=$(date +%s.%N)
created=$(wc -l < "$TMP/churn.log")
check "thread churn: exit 0 within 30 s ($created threads created)" \
    bash -c "[ $rc -eq 0 ] && [ $created -ge 2000 ] && awk -v a=$start -v b=$end 'BEGIN { exit !(b - a < 30) }'"
check "thread churn: profile well-formed" well_formed "$TMP/churn.folded"
# roots "thread TID (NAME)" of worker threads, as "TID NAME"
sed -n 's/^thread \([0-9]*\) (\(c[0-9]*\));.*/\1 \2/p' "$TMP/churn.folded" | sort -u > "$TMP/seen"
sort -u "$TMP/churn.log" > "$TMP/real"
bogus=$(comm -23 "$TMP/seen" "$TMP/real" | wc -l)
workers=$(wc -l < "$TMP/seen")
if [ "$workers" -ge 20 ] && [ "$bogus" -eq 0 ]; then
    pass "thread churn: every sampled worker (tid, name) was a real thread ($workers seen)"
else
    fail "thread churn: every sampled worker (tid, name) was a real thread" "$workers seen, $bogus unknown"
fi
odd=$(grep -E '^thread [0-9]+ \(c[0-9]+\);' "$TMP/churn.folded" | grep -v 'churn_thread;churn_worker' |
    grep -v 'clone\|start_thread\|\[kernel\]\|\[unknown\]\|+0x')
if [ -z "$odd" ]; then
    pass "thread churn: worker samples are in churn_worker"
else
    fail "thread churn: worker samples are in churn_worker" "$(echo "$odd" | head -3 | tr '\n' '|')"
fi
# The collector counts threads by tid; a tid the kernel hands out again under another name is one
# thread to it and two roots in the profile.
tids=$(cut -d' ' -f1 "$TMP/seen" | sort -u | wc -l)
th=$(stat_of threads "$TMP/churn.err")
check "thread churn: thread count matches the roots ($th threads, $tids tids)" \
    test "$th" -ge "$tids" -a "$th" -le $((created + 1))
check "thread churn: samples + lost == kernel_matched" \
    [ $(( $(stat_of samples "$TMP/churn.err") + $(stat_of lost "$TMP/churn.err") )) -eq "$(stat_of kernel_matched "$TMP/churn.err")" ]
# The collector's memory: the BPF thread map is an LRU of fixed size; on the user side every
# sampled thread adds a slot to the thread table and its own stacks to the profile (the thread
# is the root of the stack trie, shown or not). Peak RSS of a 2 s and an 8 s churn must differ by
# little although the second sees four times the threads.
rss_run() {
    /usr/bin/time -f '%M' -o "$TMP/rss.$1" "$S" -q -F 999 -o /dev/null -- \
        "$P/faultprog" churn 200 "$1" "$TMP/churn.$1.log" > /dev/null 2>&1
    tail -1 "$TMP/rss.$1"
}
if [ "${SANITIZE:-0}" = 1 ]; then
    # ASan keeps freed memory in quarantine (256 MiB): RSS says nothing about our own growth
    skip "thread churn: collector peak RSS growth" "ASan quarantine holds freed memory"
else
    r2=$(rss_run 2); r8=$(rss_run 8)
    t2=$(wc -l < "$TMP/churn.2.log"); t8=$(wc -l < "$TMP/churn.8.log")
    check "thread churn: collector peak RSS $r2 KiB after $t2 threads, $r8 KiB after $t8 (growth < 16 MiB)" \
        [ $((r8 - r2)) -lt 16384 ]
fi

# -- ring buffer overflow ------------------------------------------------------------------
timeout 60 "$S" -q -F 20000 --ring-size 65536 --stats -o "$TMP/ov.folded" -- \
    "$P/callgraph" 2 2 2> "$TMP/ov.err"; rc=$?
n=$(stat_of samples "$TMP/ov.err"); lost=$(stat_of lost "$TMP/ov.err"); m=$(stat_of kernel_matched "$TMP/ov.err")
ev=$(stat_of events "$TMP/ov.err")
check "ring overflow: exit 0, records lost ($lost of $m)" bash -c "[ $rc -eq 0 ] && [ ${lost:-0} -gt 0 ]"
check "ring overflow: samples + lost == kernel_matched ($n + $lost = $m)" [ $((n + lost)) -eq "$m" ]
check "ring overflow: every record read became a sample ($ev events)" [ "$ev" -eq "$n" ]
total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/ov.folded")
check "ring overflow: folded counts add up to samples ($total)" [ "$total" -eq "$n" ]
check "ring overflow: every line well-formed" well_formed "$TMP/ov.folded"
# every frame is a symbol, module+0xOFF (the module may be the kernel's [vdso]: on 6.18 the
# clock's vDSO code has addresses no symbol covers), or a bracketed marker ([plt]: a sample in
# the PLT's first stub, on its way to lazy binding); stacks under main are the workload's call
# graph
awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); for (i = 1; i <= n; i++) print f[i] }' "$TMP/ov.folded" |
    grep -vE '^([A-Za-z_][A-Za-z0-9_.@]*|([A-Za-z0-9_.+-]+|\[vdso\])\+0x[0-9a-f]+|\[(unknown|kernel|truncated|plt)\])$' > "$TMP/ov.bad"
bad=$(wc -l < "$TMP/ov.bad")
check "ring overflow: no garbage frame ($bad: $(sort -u "$TMP/ov.bad" | head -3 | tr '\n' ' '))" [ "$bad" -eq 0 ]
# c and d also read their thread's CPU clock (thread_cpu_ns, maybe inlined: clock_gettime, the vDSO);
# any first call through the PLT may be caught in the dynamic linker's lazy binding
# (_dl_runtime_resolve_xsavec;_dl_fixup;...), a true stack
rtld='_dl_runtime_resolve[^;]*(;.*)?'
clk="(publish|thread_cpu_ns|[^;]*clock_gettime[^;]*|linux-vdso[^;]*|\\[vdso\\][^;]*|$rtld)(;.*)?"
# Under main, a call into the C library (atoi;strtoimax, fprintf, ...) is the call graph too,
# unless a workload function shows up beneath it; stacks through a, b, c, d follow the regex.
grep -oE ';main;.*' "$TMP/ov.folded" | sed 's/ [0-9]*$//' |
    awk -F';' '$3 ~ /^(a|b|c|d|now.*|publish)$/ { print; next }
               { for (i = 4; i <= NF; i++) if ($i ~ /^(a|b|c|d)$/) { print; next } }' |
    grep -vE "^;main(;(a(;(b(;(c(;$clk)?|$rtld)?|$rtld)?|d(;$clk)?|now.*|publish|$rtld))?|now.*|worker.*|pthread.*|__.*|fprintf.*|$rtld))?\$" > "$TMP/ov.odd"
odd=$(wc -l < "$TMP/ov.odd")
check "ring overflow: stacks under main follow the call graph ($odd odd: $(head -c 300 "$TMP/ov.odd"))" [ "$odd" -eq 0 ]

# -- only the target is sampled -------------------------------------------------------------
# A bystander spins on a CPU the whole time; no sample, frame or thread of it may appear, and
# the kernel's matched count must fit the target's own CPU time.
# Both run until killed after the sampler's 3 s (30 s at most), whatever its start-up takes.
"$P/faultprog" spin bystander 30 & by=$!
"$P/callgraph" 30 & tgt=$!
wait_until 10 ran $by
wait_until 10 ran $tgt
cpu0=$(cpu_ticks $tgt)
timeout 30 "$S" -q -F 999 --threads --stats -d 3 -o "$TMP/iso.folded" "$tgt" 2> "$TMP/iso.err"; rc=$?
cpu1=$(cpu_ticks $tgt)
bycpu=$(cpu_ticks $by)
kill "$by" "$tgt" 2> /dev/null; wait "$by" "$tgt" 2> /dev/null
m=$(stat_of kernel_matched "$TMP/iso.err"); n=$(stat_of samples "$TMP/iso.err")
check "isolation: exit 0, target sampled ($n samples)" bash -c "[ $rc -eq 0 ] && [ ${n:-0} -gt 0 ]"
check "isolation: no thread of the bystander" \
    bash -c "! grep -qE '^thread $by |\(bystander\)|bystander_spin' '$TMP/iso.folded'"
check "isolation: every root is a thread of the target" \
    bash -c "! grep -vq '^thread $tgt (callgraph);' '$TMP/iso.folded'"
# cpu in clock ticks (1/100 s); matched samples at 999 Hz may not exceed the target's CPU time
# by more than rounding, whatever the bystander burnt meanwhile
limit=$(( (cpu1 - cpu0 + 3) * 999 / 100 + 50 ))
check "isolation: kernel_matched $m <= target CPU $((cpu1 - cpu0)) ticks at 999 Hz (bystander used ${bycpu} ticks)" \
    [ "$m" -le "$limit" ]

# -- a PID reused by another process during the run ------------------------------------------
# In a fresh PID namespace PIDs are small and predictable: after the target (PID a) exits,
# ns_last_pid = a - 1 makes the next process get PID a. The collector runs in the namespace
# too and names the target by that PID. It is stopped (SIGSTOP) from just before the target
# exits until the new process has run 0.1 s of CPU: the program in the kernel samples on, and
# the collector, which notices an exit at once through its pidfd, cannot end first.
need_cmd unshare
cat > "$TMP/reuse.sh" << 'EOF'
set -u
B=$1 OUT=$2
"$B/progs/callgraph" 30 & a=$!
"$B/pyebpf-sample" --threads --stats -F 999 -d 20 -o "$OUT/reuse.folded" "$a" 2> "$OUT/reuse.err" & col=$!
# the target ends once it has been sampled for 0.2 s of its CPU (whatever the set-up took)
wait_line 30 "$OUT/reuse.err" '^pyebpf-sample: sampling PID' && t0=$(cpu_ticks $a) && wait_until 30 ran_since $a "$t0" 20
kill -STOP $col
kill $a; wait $a
echo $((a - 1)) > /proc/sys/kernel/ns_last_pid
"$B/progs/faultprog" spin reused 3 & b=$!
echo "$a $b" > "$OUT/reuse.pids"
wait_until 10 ran_since $b 0 10
kill -CONT $col
wait $col; echo $? >> "$OUT/reuse.pids"
wait $b
EOF
export -f wait_until wait_line cpu_ticks ran_since ran # for reuse.sh, in the namespace
timeout 60 unshare --pid --fork --mount-proc bash "$TMP/reuse.sh" "$BUILD" "$TMP"
read -r a b < "$TMP/reuse.pids"
rc=$(tail -1 "$TMP/reuse.pids")
if [ "$a" = "$b" ]; then
    pass "PID reuse: the new process got the target's PID ($a)"
    check "PID reuse: exit 0, stats say target_exited" \
        bash -c "[ $rc -eq 0 ] && grep -q '^stopped_by: target_exited$' '$TMP/reuse.err'"
    check "PID reuse: the target was sampled" grep -q 'main;a;b;c' "$TMP/reuse.folded"
    check "PID reuse: no sample of the process that took the PID" \
        bash -c "! grep -qE 'bystander_spin|\((reused|faultprog)\)' '$TMP/reuse.folded'"
    drops=$(stat_of pid_reused_drops "$TMP/reuse.err")
    check "PID reuse: its samples dropped in the kernel and counted ($drops)" [ "${drops:-0}" -gt 0 ]
else
    fail "PID reuse: the new process got the target's PID" "target $a, new process $b"
fi

# -- the leader thread exits, a worker runs on ------------------------------------------------
# The leader of leaderexit calls pthread_exit: it stays a zombie whose /proc/PID/maps, mem and
# root are empty. The worker's native frames are named from a live thread's
# /proc/PID/task/TID/maps (and its CFI files through that thread's root: the -nofp build).
need_file "$P/leaderexit"
for prog in leaderexit leaderexit-nofp; do
    : > "$TMP/$prog.out"
    "$P/$prog" 20 > "$TMP/$prog.out" &
    lp=$!
    wait_line 10 "$TMP/$prog.out" '^READY'
    wait_until 10 proc_state "$lp" Z # the leader has called pthread_exit
    maps=$(wc -c < "/proc/$lp/maps")
    "$S" -q -F 499 -d 2 --stats -o "$TMP/$prog.folded" "$lp" 2> "$TMP/$prog.err"
    rc=$?
    kill "$lp" 2> /dev/null
    wait "$lp" 2> /dev/null
    read -r total named unk < <(awk '{t += $NF} /start_thread;worker_main;leader_gone_spin( |;)/ {n += $NF}
        /\[unknown\]/ {u += $NF} END {print t + 0, n + 0, u + 0}' "$TMP/$prog.folded")
    if [ "$rc" = 0 ] && [ "$maps" = 0 ] && share_ge "$named" "$total" $MIN_NAMED_WORKER_PCT $MIN_WORKER_SAMPLES &&
        [ "$unk" = 0 ]; then
        pass "leader exited ($prog, /proc/PID/maps empty): $named of $total samples named start_thread;worker_main;leader_gone_spin, no [unknown]"
    else
        fail "leader exited ($prog): worker frames named" "rc $rc, maps $maps bytes, $named of $total named, $unk [unknown]: $(sort -k2 -n "$TMP/$prog.folded" | tail -2 | cut -c1-200)"
    fi
done
