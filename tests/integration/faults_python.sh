#!/usr/bin/env bash
# Faults around Python targets, with in-kernel capture (BPF) and with --no-bpf: a Python target
# that exits mid-run, 5,000-deep recursion, a RecursionError storm, and a process that forges
# garbage into its own frame chain (tests/py/forge.py: loops, unmapped and kernel addresses,
# code objects with 2**40-byte names and line tables).
source "$(dirname "$0")/../lib.sh"
S=$BUILD/pyebpf-sample
need_file "$S"
need_root
# The forgeries run on pyenv's 3.11 and 3.12 (tests/pythons); the other cases on 3.12 when present.
mapfile -t PYS < <(test_pythons pyenv-3.11.7 pyenv-3.12.1)
PY=$(first_python pyenv-3.12.1 pyenv-3.11.7)
[ -n "$PY" ] || skip_all "needs pyenv's 3.11.7 or 3.12.1 ($(printf '%s; ' "${PYS[@]}"))"
FORGE=$ROOT/tests/py/forge.py
DEEP=$ROOT/tests/py/deep.py

max_frames() { awk '{ sub(/ [0-9]+$/, ""); n = split($0, a, ";"); if (n > m) m = n } END { print m + 0 }' "$1"; }
longest_frame() { awk '{ sub(/ [0-9]+$/, ""); n = split($0, a, ";"); for (i = 1; i <= n; i++) if (length(a[i]) > m) m = length(a[i]) } END { print m + 0 }' "$1"; }
# Deep stacks (folded lines) that are neither rooted at [truncated] nor whole: the first one, as
# "N frames, M down, root R, leaf L"; nothing when there is none. Whole: <module>;main;down...
# The kernel's chains hold <module> and main only on the way back up, in the last milliseconds of
# the target; their code objects are freed as it exits, often before the sampler names them, and
# such a frame is <freed code> (never another function's name): that root is whole too.
not_rooted_deep() {
    grep -v '^\(thread [^;]*;\)\?\[truncated\];' |
        awk '{ sub(/ [0-9]+$/, ""); sub(/^thread [^;]*;/, ""); n = gsub(/;down \(/, "&"); nf = split($0, a, ";")
               if ($0 !~ /^(<module>|<freed code>) \([^;]*\);(main|<freed code>) \([^;]*\);down \(/ || n + 2 > 2048) {
                   printf "%d frames, %d down, root %s, leaf %s\n", nf, n, a[1], a[nf]; exit } }'
}
elapsed_lt() { awk -v a="$1" -v b="$(date +%s.%N)" -v l="$2" 'BEGIN { exit !(b - a < l) }'; }

# -- a Python target exits in the middle of a run (PID mode) -----------------------------------
# The target runs on until the sampler says it samples, then for 0.5 s of its own CPU time: a
# loaded machine can take longer to set the sampler up than a fixed run of the target lasts.
"$PY" "$DEEP" storm 0.5 "$TMP/go" > "$TMP/exit.out" & tgt=$!
check "python target exits mid-run: target started" wait_line 30 "$TMP/exit.out" '^storm: running$'
timeout 30 "$S" -F 499 -d 20 --stats -o "$TMP/exit.folded" "$tgt" 2> "$TMP/exit.err" & smp=$!
check "python target exits mid-run: sampling started" wait_line 30 "$TMP/exit.err" '^pyebpf-sample: sampling PID'
touch "$TMP/go"
start=$(date +%s.%N) # the target's 0.5 s of CPU start now
wait "$smp"; rc=$?
wait "$tgt" 2> /dev/null
# (0.5 s of CPU takes several seconds of a loaded machine: the bound only tells it from the -d 20)
check "python target exits mid-run: exit 0, run ends with it (< 15 s of 20)" \
    bash -c "[ $rc -eq 0 ] && $(declare -f elapsed_lt); elapsed_lt $start 15"
check "python target exits mid-run: stopped_by: target_exited" grep -q '^stopped_by: target_exited$' "$TMP/exit.err"
check "python target exits mid-run: Python frames written ($(stat_of samples "$TMP/exit.err" 0) samples)" grep -q 'fall (.*deep.py:[0-9]*)' "$TMP/exit.folded"

for mode in bpf no-bpf; do
    opt=; [ $mode = no-bpf ] && opt=--no-bpf

    # -- 5,000 Python frames: the cap (1024 in the kernel, 2048 in user space) cuts the stack,
    # the cut is counted and the stack rooted at [truncated]
    start=$(date +%s.%N)
    timeout 60 "$S" -q -F 499 $opt --stats -o "$TMP/deep.folded" -- "$PY" "$DEEP" deep 5000 3 \
        > "$TMP/deep.out" 2> "$TMP/deep.err"; rc=$?
    check "python deep 5000 ($mode): exit 0 within 30 s, target ran to its end" \
        bash -c "[ $rc -eq 0 ] && grep -q 'deep: ok' '$TMP/deep.out' && $(declare -f elapsed_lt); elapsed_lt $start 30"
    tr=$(( $(stat_of python_truncated "$TMP/deep.err" 0) + $(stat_of python_kernel_truncated "$TMP/deep.err" 0) ))
    deep=$(grep -c 'down (.*);down (.*);down (.*);down (.*)' "$TMP/deep.folded")
    check "python deep 5000 ($mode): truncation counted ($tr truncated, $deep deep stacks)" \
        bash -c "[ $tr -gt 0 ] && [ $deep -gt 0 ]"
    # A stack caught on its way down or back up can be whole: the kernel's cap is 1024 frames,
    # but a stack user space reads (--no-bpf, or a thread the kernel does not know yet) is cut
    # at 2048 only. Whole means rooted at <module>;main and within 2048 Python frames; any
    # other deep stack must be rooted at [truncated].
    bad=$(grep 'down (.*);down (.*);down (.*);down (.*)' "$TMP/deep.folded" | not_rooted_deep)
    name="python deep 5000 ($mode): deep stacks rooted at [truncated] or whole within the cap"
    if [ -z "$bad" ]; then pass "$name"; else fail "$name" "first bad: $bad"; fi
    mf=$(max_frames "$TMP/deep.folded")
    check "python deep 5000 ($mode): bounded ($mf frames <= 2048 + 256 + 130)" [ "$mf" -le 2434 ]
    check "python deep 5000 ($mode): well-formed" well_formed "$TMP/deep.folded"

    # -- RecursionError storm: stacks grow to the recursion limit and unwind, thousands of times
    start=$(date +%s.%N)
    timeout 60 "$S" -q -F 499 $opt --stats -o "$TMP/storm.folded" -- "$PY" "$DEEP" storm 3 \
        > "$TMP/storm.out" 2> "$TMP/storm.err"; rc=$?
    errs=$(sed -n 's/^storm: ok //p' "$TMP/storm.out")
    check "python RecursionError storm ($mode): exit 0 within 30 s (${errs:-?} RecursionErrors)" \
        bash -c "[ $rc -eq 0 ] && [ ${errs:-0} -gt 0 ] && $(declare -f elapsed_lt); elapsed_lt $start 30"
    check "python RecursionError storm ($mode): fall frames sampled, well-formed" \
        bash -c "grep -q 'fall (' '$TMP/storm.folded' && $(declare -f well_formed); well_formed '$TMP/storm.folded'"
    mf=$(max_frames "$TMP/storm.folded")
    check "python RecursionError storm ($mode): bounded ($mf frames)" [ "$mf" -le 2434 ]

    # -- forged garbage ------------------------------------------------------------------
    for line in "${PYS[@]}"; do
        read -r label py why <<< "$line"
        if [ "$py" = - ]; then skip "forge $label ($mode)" "$why"; continue; fi
        v=$(basename "$py")
        start=$(date +%s.%N)
        timeout 90 "$S" -q -F 999 $opt --stats -o "$TMP/forge.folded" -- "$py" "$FORGE" 4 \
            > "$TMP/forge.out" 2> "$TMP/forge.err"; rc=$?
        check "forge $v ($mode): exit 0, every sample ended (run < 30 s for a 4 s target)" \
            bash -c "[ $rc -eq 0 ] && $(declare -f elapsed_lt); elapsed_lt $start 30"
        check "forge $v ($mode): the forger survived every forgery" \
            grep -qE '^forge: ok loop=[1-9][0-9]* loop2=[1-9][0-9]* unmapped=[1-9][0-9]* kernel=[1-9][0-9]* absurd=[1-9][0-9]* intact=[1-9]' "$TMP/forge.out"
        loops=$(stat_of python_loops "$TMP/forge.err" 0); bad=$(stat_of python_bad_code "$TMP/forge.err" 0)
        errs=$(stat_of python_errors "$TMP/forge.err" 0); rerr=$(stat_of remote_read_errors "$TMP/forge.err" 0)
        kb=$(stat_of python_kernel_broken "$TMP/forge.err" 0)
        # With BPF the kernel's walk meets every forgery first and drops the chain (its cycle
        # check finds the loops); user space reads such a chain at the drain, and a read more than
        # 20 ms after its record is left out, one read serving a drain's burst: how many of those
        # reads meet a loop or an unmapped pointer depends on when drains fall (a sanitized
        # collector drains later: one run counted no loop). Without BPF every read is user space's.
        if [ $mode = bpf ]; then
            check "forge $v ($mode): errors counted (kernel broken $kb, errors $errs; loops $loops, bad code $bad, read errors $rerr)" \
                bash -c "[ ${kb:-0} -gt 0 ] && [ ${errs:-0} -gt 0 ]"
        else
            check "forge $v ($mode): errors counted (loops $loops, bad code $bad, errors $errs, read errors $rerr)" \
                bash -c "[ ${loops:-0} -gt 0 ] && [ ${errs:-0} -gt 0 ] && [ ${rerr:-0} -gt 0 ]"
        fi
        # the absurd code object's 2**40-character names are refused, not printed
        check "forge $v ($mode): forged names refused (<unreadable> frames)" grep -q '<unreadable>' "$TMP/forge.folded"
        if [ $mode = bpf ]; then
            n=$(stat_of samples "$TMP/forge.err" 0); m=$(stat_of kernel_matched "$TMP/forge.err" 0)
            lost=$(stat_of lost "$TMP/forge.err" 0)
            check "forge $v ($mode): every record became a sample ($n + $lost lost = $m)" [ $((n + lost)) -eq "$m" ]
        fi
        rps=$(stat_of reads_per_sample "$TMP/forge.err" 0)
        check "forge $v ($mode): read budget holds ($rps reads per sample, budget exhausted $(stat_of python_budget_exhausted "$TMP/forge.err" 0))" \
            awk -v r="$rps" 'BEGIN { exit !(r < 20) }'
        mf=$(max_frames "$TMP/forge.folded"); lf=$(longest_frame "$TMP/forge.folded")
        check "forge $v ($mode): no loop unrolled into the profile ($mf frames at most)" [ "$mf" -le 200 ]
        check "forge $v ($mode): no absurd name ($lf bytes at most), no control character" \
            bash -c "[ $lf -le 600 ] && ! LC_ALL=C grep -q '[[:cntrl:]]' '$TMP/forge.folded'"
        check "forge $v ($mode): well-formed, victim sampled" \
            bash -c "grep -q 'victim (' '$TMP/forge.folded' && $(declare -f well_formed); well_formed '$TMP/forge.folded'"
    done
done
