#!/usr/bin/env bash
# gdb sees JIT code published through libpyjit: names and unwinding through every JIT frame,
# when gdb starts the program, when it attaches later, and with 10,000 regions registered.
source "$(dirname "$0")/../lib.sh"
need_cmd gdb
need_file "$BUILD/progs/jitprog"
[ "$(uname -m)" = x86_64 ] || skip_all "jitprog emits x86-64 code"
[ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" = 0 ] ||
    skip_all "gdb -p needs root or kernel.yama.ptrace_scope=0"

GDB=(timeout 120 gdb -q -nx -batch -iex 'set debuginfod enabled off' -iex 'set pagination off')

# frames_in_order FILE PATTERN...: each pattern matches a later "#N" line of a backtrace
frames_in_order() {
    local file=$1 line=0 n p
    shift
    for p in "$@"; do
        n=$(grep -n '^#[0-9]' "$file" | awk -F: -v after="$line" -v pat="$p" '$1 > after && $0 ~ pat { print $1; exit }')
        [ -n "$n" ] || { echo "    # no frame matching '$p' after line $line" >&2; return 1; }
        line=$n
    done
}

# (a) gdb runs the program to a breakpoint in the innermost C function
for prog in jitprog jitprog-nofp; do
    "${GDB[@]}" -ex 'break innermost' -ex run -ex bt --args "$BUILD/progs/$prog" > "$TMP/a.$prog" 2>&1
    if frames_in_order "$TMP/a.$prog" ' innermost ' ' in jit_c ' ' in jit_b ' ' in jit_a ' ' run_chain ' ' main '; then
        pass "gdb run $prog: bt innermost <- jit_c <- jit_b <- jit_a <- run_chain <- main"
    else
        fail "gdb run $prog: bt through JIT frames" "$(grep '^#' "$TMP/a.$prog" | tr '\n' '|')"
    fi
done
if grep -q 'unwinder="dwarf2",pc=0x7' <("${GDB[@]}" -ex 'break innermost' -ex run -ex 'set debug frame 1' \
    -ex 'frame 1' --args "$BUILD/progs/jitprog" 2>&1); then
    pass "gdb unwinds JIT frames with the registered .eh_frame (dwarf2 unwinder)"
else
    fail "gdb unwinds JIT frames with the registered .eh_frame (dwarf2 unwinder)"
fi

# Each instruction boundary of a trampoline: entry, after push, after mov, at the ret.
"${GDB[@]}" -ex 'break run_chain' -ex run -ex 'tbreak *jit_a' -ex continue -ex bt \
    -ex stepi -ex bt -ex stepi -ex bt -ex 'tbreak *(jit_a+17)' -ex continue -ex bt \
    --args "$BUILD/progs/jitprog" > "$TMP/steps" 2>&1
ok=1
nbt=$(grep -c '^#0 .*jit_a' "$TMP/steps")
nmain=$(grep -c '^#2 .* main ' "$TMP/steps")
[ "$nbt" = 4 ] && [ "$nmain" = 4 ] || ok=0
if [ $ok = 1 ] && frames_in_order "$TMP/steps" 'jit_a' 'run_chain' ' main '; then
    pass "gdb bt at jit_a+0, +1 (after push), +4 (after mov), +17 (after pop) reaches main"
else
    fail "gdb bt at each trampoline instruction" "frames: $nbt jit_a tops, $nmain mains"
fi

# Retired regions leave gdb: jitprog retires jit_a..c before pyjit_close.
"${GDB[@]}" -ex 'break run_chain' -ex run -ex 'set $a = entry' -ex 'info symbol $a' \
    -ex 'tbreak pyjit_close' -ex continue -ex 'info symbol $a' --args "$BUILD/progs/jitprog" > "$TMP/retire" 2>&1
if grep -q '^jit_a in section .text of <in-memory@' "$TMP/retire" && grep -q '^No symbol matches \$a' "$TMP/retire"; then
    pass "gdb names jit_a from the in-memory image, and forgets it after pyjit_retire"
else
    fail "gdb names jit_a, then forgets it after pyjit_retire" "$(grep -E 'symbol|section' "$TMP/retire" | tr '\n' '|')"
fi

# (b) gdb attaches to a running process after registration
parked() { proc_state "$1" T || proc_state "$1" S; }
attach_bt() { # attach_bt OUTFILE JITPROG-ARGS...: starts jitprog, attaches, prints seconds taken
    local out=$1 pid t0 t1
    shift
    "$BUILD/progs/jitprog" "$@" > "$TMP/ready" 2> "$TMP/jitprog.err" &
    pid=$!
    wait_line 60 "$TMP/ready" '^ready'
    # nothing blocks between "ready" and innermost(): stopped (--stop) or in pause() (--wait)
    wait_until 30 parked "$pid"
    t0=$(date +%s.%N)
    "${GDB[@]}" -p "$pid" -ex bt > "$out" 2>&1
    t1=$(date +%s.%N)
    kill -9 "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    echo "$t1 - $t0" | bc
}
attach_bt "$TMP/b" --stop > /dev/null
if frames_in_order "$TMP/b" ' innermost ' ' in jit_c ' ' in jit_b ' ' in jit_a ' ' main '; then
    pass "gdb -p: bt shows jit_c, jit_b, jit_a and reaches main"
else
    fail "gdb -p: bt through JIT frames" "$(grep '^#' "$TMP/b" | tr '\n' '|')"
fi

# (c) 10,000 extra regions in shared images: attaching stays fast (the bound is generous;
# docs/libpyjit.md has the measured numbers, including one image per region).
base=$(attach_bt "$TMP/c0" --wait)
t=$(attach_bt "$TMP/c" --wait --regions 10000)
echo "# gdb -p + bt: $base s with 3 regions, $t s with 10,003 regions (batch 256)"
echo "# $(cat "$TMP/jitprog.err")"
if frames_in_order "$TMP/c" ' in jit_c ' ' in jit_a ' ' main ' && [ "$(echo "$t < 10" | bc)" = 1 ]; then
    pass "gdb -p with 10,000 regions: bt correct in ${t}s (< 10 s)"
else
    fail "gdb -p with 10,000 regions" "took ${t}s; $(grep '^#' "$TMP/c" | tr '\n' '|')"
fi
t1=$(attach_bt "$TMP/c1" --wait --regions 1000 --batch 1)
echo "# for comparison, one image per region: gdb -p + bt with 1,003 regions: $t1 s"
