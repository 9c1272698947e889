#!/usr/bin/env bash
# pyebpf-sample's command line and failures: usage errors, bad PIDs, missing rights, a command
# that cannot run, a target that exits, a signal to the collector. Each failure must be one
# clear line on stderr and a non-zero exit status.
source "$(dirname "$0")/../lib.sh"
S=$BUILD/pyebpf-sample
P=$BUILD/progs
need_file "$S"

# run NAME: runs the rest, keeps status in $rc, stderr in $TMP/err, stdout in $TMP/out
run() { "$@" > "$TMP/out" 2> "$TMP/err"; rc=$?; }
one_line() { [ "$(wc -l < "$TMP/err")" -eq 1 ]; }

run "$S" --help
check "--help exits 0 and prints usage" [ $rc -eq 0 ]
check "--help names the options" grep -q -- '--unwind' "$TMP/out"
run "$S" --version
check "--version prints the version" grep -qE '^pyebpf-sample [0-9]+\.[0-9]+' "$TMP/out"
run "$S"
check "no target: exit 2, one line" bash -c "[ $rc -eq 2 ] && grep -q 'missing PID' '$TMP/err'"
run "$S" notapid
check "non-numeric PID: exit 2" bash -c "[ $rc -eq 2 ] && grep -q 'is not a PID' '$TMP/err'"
run "$S" --bogus 1
check "unknown option: exit 2" [ $rc -eq 2 ]
run "$S" -F 0 1
check "bad frequency: exit 2" bash -c "[ $rc -eq 2 ] && grep -q 'bad frequency' '$TMP/err'"
run "$S" --unwind lbr 1
check "bad --unwind: exit 2" bash -c "[ $rc -eq 2 ] && grep -q 'fp, dwarf or auto' '$TMP/err'"
run "$S" --stack-size 100 1
check "bad --stack-size: exit 2" [ $rc -eq 2 ]
run "$S" -f dot 1
check "bad format: exit 2" bash -c "[ $rc -eq 2 ] && grep -q 'bad format' '$TMP/err'"

# a PID that existed and is gone
true & gone=$!
wait $gone
run "$S" "$gone"
check "PID that does not exist: non-zero exit" [ $rc -ne 0 ]
check "PID that does not exist: one clear line" \
    bash -c "grep -q 'no process with PID $gone' '$TMP/err' && [ \$(wc -l < '$TMP/err') -eq 1 ]"

need_root
need_cmd setpriv

# a process of another user, without CAP_SYS_PTRACE (sleep: a target that just exists; killed below)
sleep 30 & victim=$!
run setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --bounding-set=-all \
    "$S" -d 1 "$victim"
check "no permission for PID: non-zero exit" [ $rc -ne 0 ]
check "no permission for PID: names CAP_SYS_PTRACE" \
    bash -c "grep -q 'no permission' '$TMP/err' && grep -q CAP_SYS_PTRACE '$TMP/err'"
one_line && pass "no permission for PID: one line" || fail "no permission for PID: one line" "$(cat "$TMP/err")"

# capabilities dropped: no BPF (the target holds no capabilities either, so the collector may
# read it without CAP_SYS_PTRACE and fails at the BPF step)
setpriv --inh-caps=-all --bounding-set=-all sleep 30 & plain=$! # sleep: the target, killed below
# until setpriv has dropped its capabilities and become sleep, the target is still privileged
became_sleep() { [ "$(cat "/proc/$plain/comm" 2> /dev/null)" = sleep ]; }
wait_until 5 became_sleep
run setpriv --inh-caps=-all --bounding-set=-all "$S" -d 1 "$plain"
check "no capabilities: non-zero exit" [ $rc -ne 0 ]
check "no capabilities: names CAP_BPF and CAP_PERFMON" \
    bash -c "grep -q CAP_BPF '$TMP/err' && grep -q CAP_PERFMON '$TMP/err'"
check "no capabilities: suggests --no-bpf" grep -q -- '--no-bpf' "$TMP/err"
one_line && pass "no capabilities: one line" || fail "no capabilities: one line" "$(cat "$TMP/err")"
run setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --bounding-set=-all \
    "$S" -d 1 -- /bin/true
check "as nobody: names the missing capability" \
    bash -c "[ $rc -ne 0 ] && grep -q 'missing capability CAP_BPF' '$TMP/err'"
kill "$victim" "$plain" 2> /dev/null; wait "$victim" "$plain" 2> /dev/null

# a command that cannot run
run "$S" -q -- /nonexistent/command
check "command that cannot run: non-zero exit, names it" \
    bash -c "[ $rc -ne 0 ] && grep -q \"cannot run '/nonexistent/command'\" '$TMP/err'"

# a non-Python target is fine; the launched command's exit ends the run with output
need_file "$P/callgraph"
start=$(date +%s.%N)
run "$S" -q -F 499 -d 20 --stats -o "$TMP/short.folded" -- "$P/callgraph" 1
end=$(date +%s.%N)
check "target exits: exit 0" [ $rc -eq 0 ]
# (the bound leaves the sampler's set-up room: it takes seconds on a loaded machine)
check "target exits: run ends with it (< 12 s, not the 20 s asked)" le "$(echo "$end - $start" | bc)" 12
check "target exits: folded lines written" grep -qE '^[^ ].* [0-9]+$' "$TMP/short.folded"
check "target exits: stats say so" grep -q '^stopped_by: target_exited$' "$TMP/err"
check "target exits: every line is 'stack count'" \
    bash -c "! grep -vqE '^[^ ].* [0-9]+$' '$TMP/short.folded'"

# attach to a running process by PID; SIGTERM to the collector writes what it has
"$P/callgraph" 120 & busy=$! # runs until killed below, however long two set-ups take
# (the signal is sent once the collector says it samples: BPF loading takes seconds on a busy
# machine; and once the target has run SAMPLED_TICKS of CPU since, so there are samples to write)
SAMPLED_TICKS=20
sampled() {
    local t0
    wait_line 30 "$1" '^pyebpf-sample: sampling' && t0=$(cpu_ticks "$busy") &&
        wait_until 30 ran_since "$busy" "$t0" $SAMPLED_TICKS
}
"$S" -F 499 --stats -o "$TMP/term.folded" "$busy" 2> "$TMP/term.err" & col=$!
sampled "$TMP/term.err"
kill -TERM "$col"
wait "$col"; rc=$?
check "SIGTERM: exit 0" [ $rc -eq 0 ]
check "SIGTERM: profile written" grep -qE 'main;a;b;c.* [0-9]+$' "$TMP/term.folded"
check "SIGTERM: stats say so" grep -q '^stopped_by: signal$' "$TMP/term.err"
check "PID mode: target keeps running after the collector stops" kill -0 "$busy"
"$S" -F 499 -o "$TMP/int.folded" "$busy" 2> "$TMP/int.err" & col=$!
sampled "$TMP/int.err"
kill -INT "$col"
wait "$col"; rc=$?
check "SIGINT: exit 0 and profile written" bash -c "[ $rc -eq 0 ] && [ -s '$TMP/int.folded' ]"
kill "$busy"; wait "$busy" 2> /dev/null

# a signal while BPF is still loading ends the run at once, writes nothing (an existing output
# stays as it was) and never lets the held command run
echo keep > "$TMP/early.folded"
"$S" -F 499 --stats -o "$TMP/early.folded" -- "$P/callgraph" 30 2> "$TMP/early.err" & col=$!
# its SIGTERM handler is in place: setup has begun. Polled without a pause: what is left of setup
# then (the BPF load) takes ~40 ms, less than wait_until's 50 ms step.
t_end=$((SECONDS + 10))
until catches "$col" 15 || [ $SECONDS -ge $t_end ]; do :; done
kill -TERM "$col"
wait "$col"; rc=$?
if grep -q '^pyebpf-sample: sampling' "$TMP/early.err"; then
    skip "SIGTERM during setup" "setup finished before the signal came"
    skip "SIGTERM during setup: the held command does not run on" "as above"
else
    check "SIGTERM during setup: status 143, says nothing was written, output untouched ($rc)" \
        bash -c "[ $rc -eq 143 ] && grep -q 'interrupted before sampling started; nothing written' '$TMP/early.err' && [ \"\$(cat '$TMP/early.folded')\" = keep ]"
    # the held command is a fork of the collector (its command line) until it would exec
    held_gone() { ! pgrep -f -- "^$S -F 499 --stats -o $TMP/early.folded" > /dev/null; }
    wait_until 10 held_gone
    check "SIGTERM during setup: the held command does not run on" \
        bash -c "! pgrep -f '^$P/callgraph 30$' > /dev/null"
fi

# duration shorter than the launched command: the command is stopped, output written
run "$S" -q -F 499 -d 1 -o "$TMP/dur.folded" -- "$P/callgraph" 30
check "duration ends the run: exit 0, output written" \
    bash -c "[ $rc -eq 0 ] && [ -s '$TMP/dur.folded' ]"
check "duration ends the run: launched command is gone" \
    bash -c "! pgrep -f '^$P/callgraph 30$' > /dev/null"

# -o to a FIFO (like /dev/stdout or a device) is written in place, never replaced by a file
mkfifo "$TMP/fifo"
cat "$TMP/fifo" > "$TMP/fifo.out" & reader=$!
run "$S" -q -F 499 -d 1 -o "$TMP/fifo" -- "$P/callgraph" 2
wait "$reader"
check "-o FIFO: exit 0, stacks read from the FIFO" \
    bash -c "[ $rc -eq 0 ] && grep -qE 'main;a;b;c [0-9]+$' '$TMP/fifo.out'"
check "-o FIFO: still a FIFO afterwards" test -p "$TMP/fifo"

# render subcommand: folded → svg through the same binary
run "$S" -q -F 499 -d 1 -o "$TMP/r.folded" -- "$P/callgraph" 2
run "$S" render "$TMP/r.folded" -o "$TMP/r.svg"
check "render: folded → SVG" bash -c "[ $rc -eq 0 ] && grep -q '<svg' '$TMP/r.svg'"

# a symlink planted at the output path is replaced, never followed, even to a FIFO
mkfifo "$TMP/fifo2"
ln -s "$TMP/fifo2" "$TMP/planted.folded"
run timeout 20 "$S" -q -F 499 -d 1 -o "$TMP/planted.folded" -- "$P/callgraph" 2
check "-o planted symlink: replaced by a regular file" \
    bash -c "[ $rc -eq 0 ] && [ -f '$TMP/planted.folded' ] && [ ! -L '$TMP/planted.folded' ]"
check "-o planted symlink: its target untouched" test -p "$TMP/fifo2"
