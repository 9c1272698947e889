#!/usr/bin/env bash
# Three tools on one process: a Python program running with pyebpf_jit on is sampled by
# `pyebpf-sample PID` while `gdb -p PID -batch -ex bt` attaches, backtraces (py:: frames) and
# detaches. The sampler keeps going, the profile shows each Python function once per stack (the
# trampoline frames folded into their Python frames), and the target finishes normally.
# CPython 3.11.7-3.13.0 (pyenv) and, when `make test-pythons` fetched them, Debian unstable's 3.14
# and 3.15 (build/pythons/bin/python3.X), with the same checks (labels of tests/pythons).
#
# Those two run under their own dynamic loader (scripts/test-pythons): /proc/PID/exe is the loader
# and the interpreter binary is mapped like a library, so `gdb -p PID` alone never reads the
# binary's symbols or unwind tables: its backtrace of this loop is `??` frames, no py:: frame
# among them. As in py_gdb.sh, gdb is
# given the binary that really runs (sys.executable) with exec-file-mismatch off, and the unpacked
# libc's libthread_db. The sampler needs nothing special (it resolves through the mappings).
# gdb still warns "Unable to find libthread_db matching inferior's thread library" there: it
# dlopens libthread_db into itself, and unstable's copy needs the symbol version
# GLIBC_ABI_DT_X86_64_PLT, which the system's libc that gdb runs on (2.36) lacks. Thread debugging
# is off, but ptrace still stops the process and the main thread's backtrace is complete; the
# workload has one thread, so the checks are the same.
source "$(dirname "$0")/../lib.sh"
need_root
[ "${SANITIZE:-0}" = 1 ] && skip_all "the extension is not built with sanitizers"
need_cmd gdb
S="$BUILD/pyebpf-sample"
need_file "$S"

cat > "$TMP/work.py" <<'PY'
import os, sys, time
def hot_a():
    x = 0
    for i in range(50000):
        x += i
    return x
def driver(end, stop):
    while time.time() < end and not os.path.exists(stop):
        hot_a()
print("READY", os.path.realpath(sys.executable), flush=True)
driver(time.time() + float(sys.argv[1]), sys.argv[2])
print("DONE", flush=True)
PY

mapfile -t PYS < <(test_pythons pyenv-3.11.7 pyenv-3.12.1 pyenv-3.13.0 python3.14 python3.15)
for line in "${PYS[@]}"; do
    read -r label py why <<< "$line"
    if [ "$py" = - ]; then skip "$label: three tools" "$why"; continue; fi
    mm=$(py_minor "$py") v=$label
    if ! ls "$BUILD/python$mm"/pyebpf_jit/_native*.so > /dev/null 2>&1; then
        skip "$v: three tools" "no pyebpf_jit extension in ${BUILD#"$ROOT"/}/python$mm (make; 3.14/3.15 need the headers make test-pythons unpacks)"
        continue
    fi
    d="$TMP/$v"; mkdir -p "$d"
    PYTHONPATH="$BUILD/python$mm" "$py" -m pyebpf_jit --gdb --jitdump --jitdump-dir "$d" "$TMP/work.py" 120 "$d/stop" > "$d/out" 2> "$d/err" &
    tpid=$!
    wait_line 10 "$d/out" '^READY'
    "$S" -v -F 199 --stats -o "$d/prof.folded" $tpid 2> "$d/stats" &
    spid=$!
    # gdb attaches while the sampler samples (its "sampling" line is printed once it is attached)
    wait_line 30 "$d/stats" '^pyebpf-sample: sampling'
    # the binary that really runs, when the process image is a loader started by hand (see top)
    exe=$(awk '/^READY/ { print $2; exit }' "$d/out")
    gdb_target_args $tpid "$exe"
    timeout 60 gdb -batch "${gdb_args[@]}" -p $tpid -ex bt > "$d/gdb" 2>&1
    grc=$?
    # alive after gdb detached, and (stopped_by below) on until the target's own end, which the
    # stop file asks for now (a fixed run could end before a loaded machine got this far)
    spid_alive=0; kill -0 $spid 2> /dev/null && spid_alive=1
    touch "$d/stop"
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
