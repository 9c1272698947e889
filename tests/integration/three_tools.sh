#!/usr/bin/env bash
# Three tools on one process: a Python program running with pyebpf_jit on is sampled by
# `pyebpf-sample PID` while `gdb -p PID -batch -ex bt` attaches, backtraces (py:: frames) and
# detaches. The sampler keeps going, the profile shows each Python function once per stack (the
# trampoline frames folded into their Python frames), and the target finishes normally.
source "$(dirname "$0")/../lib.sh"
need_root
need_cmd gdb
S="$BUILD/pyebpf-sample"
need_file "$S"

cat > "$TMP/work.py" <<'PY'
import sys, time
def hot_a():
    x = 0
    for i in range(50000):
        x += i
    return x
def driver(end):
    while time.time() < end:
        hot_a()
print("READY", flush=True)
driver(time.time() + float(sys.argv[1]))
print("DONE", flush=True)
PY

for spec in 3.11=/root/.pyenv/versions/3.11.7/bin/python3.11 3.12=/root/.pyenv/versions/3.12.1/bin/python3.12 \
            3.13=/root/.pyenv/versions/3.13.0/bin/python3.13; do
    v=${spec%%=*} py=${spec#*=}
    if [ ! -x "$py" ] || [ ! -d "$BUILD/python$v/pyebpf_jit" ]; then
        skip "$v: three tools" "needs $py and $BUILD/python$v/pyebpf_jit"
        continue
    fi
    d="$TMP/$v"; mkdir -p "$d"
    PYTHONPATH="$BUILD/python$v" "$py" -m pyebpf_jit --gdb --jitdump --jitdump-dir "$d" "$TMP/work.py" 6 > "$d/out" 2> "$d/err" &
    tpid=$!
    for _ in $(seq 200); do grep -q READY "$d/out" && break; sleep 0.05; done
    "$S" -q -v -F 199 --stats -o "$d/prof.folded" $tpid 2> "$d/stats" &
    spid=$!
    sleep 1.5
    timeout 60 gdb -p $tpid -batch -ex bt > "$d/gdb" 2>&1
    grc=$?
    sleep 1
    spid_alive=0; kill -0 $spid 2> /dev/null && spid_alive=1
    wait $tpid; trc=$?
    wait $spid; src=$?
    check "$v: gdb backtrace shows py::hot_a or py::driver (rc $grc)" grep -qE 'in py::(hot_a|driver):' "$d/gdb"
    if [ $spid_alive = 1 ] && [ $src = 0 ] && grep -q '^stopped_by: target_exited' "$d/stats"; then
        pass "$v: sampler kept going through gdb's attach and ended with the target"
    else
        fail "$v: sampler kept going" "alive $spid_alive rc $src $(grep stopped_by "$d/stats")"
    fi
    if [ $trc = 0 ] && [ "$(tail -1 "$d/out")" = DONE ]; then
        pass "$v: target finished normally"
    else
        fail "$v: target finished normally" "rc $trc, last line $(tail -1 "$d/out")"
    fi
    twice=$(awk '{ $NF = ""; a = gsub(/hot_a \(/, "&"); d = gsub(/driver \(/, "&"); if (a > 1 || d > 1) n++ } END { print n + 0 }' "$d/prof.folded")
    if grep -qE 'driver \([^;]*\);hot_a \(' "$d/prof.folded" && ! grep -q 'py::' "$d/prof.folded" && [ "$twice" = 0 ]; then
        pass "$v: driver;hot_a once each per stack, no py:: frames left"
    else
        fail "$v: Python functions once each" "$twice stacks with a repeat; $(grep -c 'py::' "$d/prof.folded") stacks with py::, e.g. $(grep -m1 'py::' "$d/prof.folded" | head -c 300); $(grep 'pyebpf-sample: PID' "$d/stats")"
    fi
done
