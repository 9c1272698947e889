#!/usr/bin/env bash
# --mode wall, offcpu, gil and cpu on tests/py/waits.py (one CPU-bound thread, a sleeper, a reader
# blocked in recv on a socketpair fed rarely, two threads fighting for the GIL), 4 s:
#   wall    every worker's total is its lifetime as the workload measured it (± WALL_TOLERANCE),
#           the CPU-bound one's on-CPU part its thread CPU time (± CPU_TOLERANCE);
#           the sleeper is idle under its sleep line, the reader blocked under its recv line
#           (≥ STATE_MIN of their time); each GIL fighter waits for the GIL for roughly half its
#           time (GIL_SHARE_MIN .. GIL_SHARE_MAX: a loaded machine preempts the holder, and its
#           waiter then waits longer)
#   cpu     the sleeper and the reader have < QUIET_MAX of the samples
#   offcpu  every stack carries a state; the sleeper's off-CPU time is its lifetime less its CPU
#           time (± WALL_TOLERANCE); --no-idle drops the idle stacks; --thread-name and --tid keep
#           only the threads they name
#   names   every worker as "thread TID (NAME)" with its threading.Thread name, on every
#           interpreter (3.11-3.13 read from the target, 3.14+ the OS name CPython sets);
#           late names: threads with no record once their name is readable (late_name.py)
#   gil     only GIL holders: the hashing thread's GIL-free sha256 samples vanish, the whole
#           profile is at most one thread's worth of samples
# and the units: folded microseconds, speedscope nanoseconds, pprof ("wall", "nanoseconds").
source "$(dirname "$0")/../lib.sh"
need_root
S="$BUILD/pyebpf-sample"
W="$ROOT/tests/py/waits.py"
need_file "$S"

WALL_TOLERANCE=0.10
STATE_MIN=0.90
GIL_SHARE_MIN=0.20
GIL_SHARE_MAX=0.80
QUIET_MAX=0.05
CPU_TOLERANCE=0.25 # sampled on-CPU time against the thread's CPU time: a few hundred samples
CPU_FLOOR=0.1      # seconds: the least error allowed (a loaded machine leaves it little CPU)
HASH_MIN=10        # cpu mode: samples of the hashing thread inside sha256, at least
HASH_GIL_SHARE=0.1 # gil mode: at most this share of them (the hash call holds the GIL to set
                   # up, and releases it for the hashing)
SECS=4

py=""
mapfile -t pys < <(test_pythons)
for line in "${pys[@]}"; do
    read -r label path _ <<< "$line"
    # one interpreter with symbols (take_gil named) is enough for the modes
    if [ "$path" != - ] && [ "$label" != debian-3.11 ]; then py=$path; break; fi
done
[ -n "$py" ] || skip_all "no Python with symbols present"

SLEEP_LINE=$(grep -n '^        time.sleep(1.0)$' "$W" | cut -d: -f1)
RECV_LINE=$(grep -n '^        sock.recv(1)$' "$W" | cut -d: -f1)

# tid NAME OUT: the thread's TID as the workload printed it
tid() { awk -v n="$1" '$2 == n && $1 ~ /^[0-9]+$/ { print $1 }' "$2"; }
# life NAME OUT: its lifetime in seconds
life() { awk -v n="$1" '$1 == "LIFE" && $2 == n { print $3 }' "$2"; }
cputime() { awk -v n="$1" '$1 == "CPU" && $2 == n { print $3 }' "$2"; }
# total FOLDED TID [PATTERN]: microseconds (or samples) of the thread's stacks [that hold PATTERN]
total() { awk -v t="thread $2 (" -v p="${3:-}" 'index($0, t) == 1 && (p == "" || index($0, p)) { s += $NF }
          END { print s + 0 }' "$1"; }
within() { awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { exit !(b > 0 && a >= b * (1 - tol) && a <= b * (1 + tol)) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }

# -- wall -----------------------------------------------------------------------------------------
d="$TMP/wall"; mkdir -p "$d"
"$S" -q --mode wall --threads -F 199 --stats -o "$d/p.folded" -- "$py" "$W" $SECS > "$d/out" 2> "$d/err"
check "wall: run succeeded" grep -q '^CPU gil-2 ' "$d/out"
for name in cpu sleeper reader gil-1 gil-2; do
    t=$(tid "$name" "$d/out")
    us=$(total "$d/p.folded" "$t")
    secs=$(awk -v u="$us" 'BEGIN { printf "%.3f", u / 1e6 }')
    if within "$secs" "$(life "$name" "$d/out")" "$WALL_TOLERANCE"; then
        pass "wall: $name's total $secs s is its lifetime $(life "$name" "$d/out") s"
    else
        fail "wall: $name's total $secs s is its lifetime $(life "$name" "$d/out") s"
    fi
    eval "T_${name//-/_}=$t US_${name//-/_}=$us"
done
r=$(ratio "$(total "$d/p.folded" "$T_sleeper" "waits.py:$SLEEP_LINE);[idle]")" "$US_sleeper")
check "wall: sleeper idle under its sleep line $r >= $STATE_MIN" ge "$r" "$STATE_MIN"
r=$(ratio "$(total "$d/p.folded" "$T_reader" "waits.py:$RECV_LINE);[blocked]")" "$US_reader")
check "wall: reader blocked under its recv line $r >= $STATE_MIN" ge "$r" "$STATE_MIN"
for name in gil_1 gil_2; do
    t=$(eval echo "\$T_$name") us=$(eval echo "\$US_$name")
    r=$(ratio "$(total "$d/p.folded" "$t" "[waiting for GIL]")" "$us")
    if ge "$r" "$GIL_SHARE_MIN" && le "$r" "$GIL_SHARE_MAX"; then
        pass "wall: ${name/_/-} waits for the GIL $r of its time"
    else
        fail "wall: ${name/_/-} waits for the GIL $r of its time" "$(grep "^thread $t " "$d/p.folded" | sort -t' ' -k2 -n | tail -3 | cut -c1-300)"
    fi
done
# on-CPU time: the samples without a state frame, against the thread's own CPU time
on=$(awk -v t="thread $T_cpu (" 'index($0, t) == 1 && !/;\[(waiting for GIL|idle|blocked|runnable)\]/ { s += $NF }
         END { printf "%.3f", s / 1e6 }' "$d/p.folded")
want=$(cputime cpu "$d/out")
if awk -v a="$on" -v b="$want" -v tol="$CPU_TOLERANCE" -v fl="$CPU_FLOOR" \
    'BEGIN { e = b * tol; if (e < fl) e = fl; exit !(a >= b - e && a <= b + e) }'; then
    pass "wall: the CPU-bound thread's on-CPU time $on s is its CPU time $want s"
else
    fail "wall: the CPU-bound thread's on-CPU time $on s is its CPU time $want s"
fi
check "wall: --stats counts switches and time per state" \
    grep -qE '^offcpu_ns_idle: [1-9]' "$d/err"
# Every off-CPU stack is weighed by its time, even when the program missed its thread's way back
# in (closed at its next way out: offcpu_unseen_switch_ins); none is left without weight while
# the ring lost nothing.
lost=$(stat_of offcpu_lost "$d/err" 0) unw=$(stat_of offcpu_unweighed_stacks "$d/err" -1)
check "wall: every off-CPU stack weighed ($unw unweighed, $lost lost, $(stat_of offcpu_unseen_switch_ins "$d/err" 0) switches in closed late)" \
    bash -c "[ $lost -gt 0 ] || [ $unw -eq 0 ]"

# -- cpu ------------------------------------------------------------------------------------------
d="$TMP/cpu"; mkdir -p "$d"
"$S" -q --threads -F 199 -o "$d/p.folded" -- "$py" "$W" 2 > "$d/out" 2> "$d/err"
all=$(awk '{ s += $NF } END { print s + 0 }' "$d/p.folded")
for name in sleeper reader; do
    r=$(ratio "$(total "$d/p.folded" "$(tid "$name" "$d/out")")" "$all")
    check "cpu: $name has $r < $QUIET_MAX of the samples" le "$r" "$QUIET_MAX"
done

# -- offcpu ---------------------------------------------------------------------------------------
d="$TMP/off"; mkdir -p "$d"
"$S" -q --mode offcpu --threads -o "$d/p.folded" -f folded -- "$py" "$W" 2 > "$d/out" 2> "$d/err"
check "offcpu: every stack has a state frame" \
    awk '!/;\[(waiting for GIL|idle|blocked|runnable)\](;|  *[0-9]+$)/ { bad = 1 } END { exit bad || NR == 0 }' "$d/p.folded"
t=$(tid sleeper "$d/out")
off=$(awk -v u="$(total "$d/p.folded" "$t")" 'BEGIN { printf "%.3f", u / 1e6 }')
want=$(awk -v l="$(life sleeper "$d/out")" -v c="$(cputime sleeper "$d/out")" 'BEGIN { printf "%.3f", l - c }')
check "offcpu: the sleeper's off-CPU time $off s is its lifetime less its CPU time $want s" within "$off" "$want" "$WALL_TOLERANCE"

"$S" -q --mode offcpu --threads --no-idle -o "$d/noidle.folded" -- "$py" "$W" 1 > "$d/noidle.out" 2> "$d/noidle.err"
check "offcpu --no-idle: no idle stack" bash -c "! grep -q '\[idle\]' '$d/noidle.folded' && grep -q '\[blocked\]' '$d/noidle.folded'"

"$S" -q --mode offcpu --threads --thread-name '^gil-' -o "$d/gil.folded" -- "$py" "$W" 1 > "$d/gil.out" 2> "$d/gil.err"
check "offcpu --thread-name '^gil-': only the GIL fighters" \
    awk -F';' '$1 !~ /^thread [0-9]+ \(gil-[12]\)$/ { bad = 1 } END { exit bad || NR == 0 }' "$d/gil.folded"

# --tid on a running target (stopped once sampled): the sleeper and the reader only; 3 s, so
# each of them wakes (once a second) and leaves the CPU again while recorded
"$py" "$W" 600 > "$d/pid.out" 2>&1 &
pid=$!
if wait_until 10 grep -qs READY "$d/pid.out"; then
    want="$(tid sleeper "$d/pid.out") $(tid reader "$d/pid.out")"
    "$S" -q --mode offcpu --threads -d 3 --tid "${want// /,}" -o "$d/tid.folded" "$pid" 2> "$d/tid.err"
    got=$(sed 's/^thread \([0-9]*\) .*/\1/' "$d/tid.folded" | sort -un | tr '\n' ' ')
    want=$(printf '%s\n' $want | sort -n | tr '\n' ' ')
    check "offcpu --tid: only threads $want(got $got)" test "$got" = "$want"
else
    fail "offcpu --tid: the workload never got ready"
fi
kill "$pid"
wait "$pid" 2> /dev/null

# -- gil ------------------------------------------------------------------------------------------
# The hashing thread runs sha256 without the GIL: in cpu mode those samples are there, in gil
# mode they are not; at most one thread holds the GIL at a time, so the whole profile is at most
# one thread's worth of samples (rate x duration).
d="$TMP/gil"; mkdir -p "$d"
"$S" -q --threads -F 199 -o "$d/cpu.folded" -- "$py" "$W" 2 > "$d/cpu.out" 2> "$d/cpu.err"
"$S" -q --mode gil --threads -F 199 --stats -o "$d/p.folded" -- "$py" "$W" 2 > "$d/out" 2> "$d/err"
hash_cpu=$(awk -v t="thread $(tid cpu "$d/cpu.out") (" 'index($0, t) == 1 && /SHA256|sha256/ { s += $NF } END { print s + 0 }' "$d/cpu.folded")
hash_gil=$(awk -v t="thread $(tid cpu "$d/out") (" 'index($0, t) == 1 && /SHA256|sha256/ { s += $NF } END { print s + 0 }' "$d/p.folded")
check "gil: cpu mode samples the hashing thread in sha256 ($hash_cpu samples)" [ "$hash_cpu" -ge "$HASH_MIN" ]
check "gil: gil mode leaves its GIL-free hashing out ($hash_gil samples)" \
    awk -v a="$hash_gil" -v b="$hash_cpu" -v s="$HASH_GIL_SHARE" 'BEGIN { exit !(a <= b * s) }'
all=$(awk '{ s += $NF } END { print s + 0 }' "$d/p.folded")
worth=$(awk -v d="$(sed -n 's/^duration_s: //p' "$d/err")" 'BEGIN { printf "%d", 199 * d * 1.1 }')
check "gil: the profile is at most one thread's worth ($all <= $worth samples)" [ "$all" -le "$worth" ]
for name in gil-1 gil-2; do
    n=$(total "$d/p.folded" "$(tid "$name" "$d/out")")
    check "gil: $name holds the GIL in some samples ($n)" [ "$n" -gt 0 ]
done
check "gil: --stats counts the samples the kernel left out" grep -qE '^gil_not_held_drops: [1-9]' "$d/err"

# -- thread names, every interpreter ------------------------------------------------------------
# named CHECK DIR NAMES -- COMMAND...: COMMAND launched under --mode offcpu --threads; CHECK passes
# when the thread of each of NAMES (its "TID NAME" line in the output) is "thread TID (NAME)"
named() {
    local check=$1 d=$2 names=$3 missing="" name
    shift 4
    mkdir -p "$d"
    "$S" -q --mode offcpu --threads -o "$d/p.folded" -- "$@" > "$d/out" 2> "$d/err"
    for name in $names; do
        grep -q "^thread $(tid "$name" "$d/out") ($name);" "$d/p.folded" || missing="$missing $name"
    done
    if [ -z "$missing" ] && [ -s "$d/p.folded" ]; then
        pass "$check"
    else
        fail "$check" "missing:$missing; $(cut -d';' -f1 "$d/p.folded" | sort -u | tr '\n' ' ')"
    fi
}

# "thread TID (NAME)": the threading.Thread name, read from the target on 3.11-3.13, the OS name
# CPython 3.14+ gives the thread.
# Late names: tests/py/late_name.py, a launched command gone before the profile is written: its
# main thread blocks from the start (its records come before its name can be read) and a thread
# registers with threading after its last record. Both named all the same: the looks for a
# missing name go on after each drain, not only at the thread's records. 3.14+ name the OS
# thread themselves ("late"; the main thread keeps the kernel's name there).
for line in "${pys[@]}"; do
    read -r label path _ <<< "$line"
    if [ "$path" = - ]; then
        skip "names: $label" "$(echo "$line" | cut -d' ' -f3-)"
        skip "late names: $label" "$(echo "$line" | cut -d' ' -f3-)"
        continue
    fi
    named "names: $label: every thread as \"thread TID (NAME)\"" "$TMP/names-$label" \
        "cpu sleeper reader feeder gil-1 gil-2" -- "$path" "$W" 1
    late=late
    "$path" -c 'import sys; sys.exit(sys.version_info >= (3, 14))' && late="MainThread late"
    named "late names: $label: $late" "$TMP/late-$label" "$late" -- "$path" "$ROOT/tests/py/late_name.py" 1
done

# -- units ----------------------------------------------------------------------------------------
d="$TMP/units"; mkdir -p "$d"
"$S" -q --mode wall -o "$d/p.json" -- "$py" "$W" 1 > /dev/null 2> "$d/err.json"
check "speedscope: nanoseconds" grep -q '"unit":"nanoseconds"' "$d/p.json"
"$S" -q --mode wall --threads -o "$d/p.pb.gz" -- "$py" "$W" 1 > "$d/pb.out" 2> "$d/err.pb"
if command -v protoc > /dev/null; then
    # protoc's raw decoder, independent of our encoder: field 6 is the string table
    gzip -dc "$d/p.pb.gz" | protoc --decode_raw > "$d/pb.txt" 2> "$d/protoc.err"
    check "pprof: sample type wall, unit nanoseconds" bash -c "grep -q '^6: \"wall\"' '$d/pb.txt' && grep -q '^6: \"nanoseconds\"' '$d/pb.txt'"
    check "pprof: thread_name label" grep -q '^6: "thread_name"' "$d/pb.txt"
else
    skip "pprof: sample type and thread_name label" "needs protoc (Debian protobuf-compiler; make setup)"
fi
"$S" -q --mode offcpu -o "$d/p.svg" -- "$py" "$W" 1 > /dev/null 2> "$d/err.svg"
check "svg: the subtitle says microseconds" grep -q 'id="subtitle"[^<]*µs' "$d/p.svg"
exit 0
