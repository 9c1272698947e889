#!/usr/bin/env bash
# gdb names Python frames: with pyebpf_jit on (gdb sink), a program stopped in
# level1 -> level2 -> level3 -> time.sleep shows py::level3, py::level2, py::level1 in that
# order in `gdb -p PID -batch -ex bt`, and the backtrace reaches main. One line per interpreter,
# including Debian's stripped /usr/bin/python3.11 and, when `make test-pythons` fetched them,
# Debian unstable's 3.14 and 3.15 (build/pythons/bin/python3.X).
#
# Those two run under their own dynamic loader (scripts/test-pythons): /proc/PID/exe is the
# loader and the interpreter binary is mapped like a library. `gdb -p PID` alone takes the loader
# for the program and skips the link map's first entry (the program, which it believes it
# already has), so it never reads the interpreter binary: no symbols or unwind tables for
# _PyEval_EvalFrameDefault and friends, and the backtrace falls apart right above libc's
# clock_nanosleep. gdb is therefore given the binary that really runs (sys.executable), with
# exec-file-mismatch off so it keeps it, and the unpacked libc's libthread_db.
source "$(dirname "$0")/../lib.sh"
need_cmd gdb
[ "${SANITIZE:-0}" = 1 ] && skip_all "the extension is not built with sanitizers"

cat > "$TMP/nested.py" <<'PY'
import os, sys, time
import pyebpf_jit

def level3():
    sys.stdout.write("ready %d %s\n" % (os.getpid(), os.path.realpath(sys.executable))); sys.stdout.flush()
    time.sleep(120)

def level2():
    level3()

def level1():
    level2()

pyebpf_jit.enable(gdb=True, jitdump=False)
level1()
PY

mapfile -t PYS < <(test_pythons --plain)
for line in "${PYS[@]}"; do
    read -r label py why <<< "$line"
    name="gdb bt names py::level3 > level2 > level1 and reaches main (${py#"$ROOT"/})"
    if [ "$py" = - ]; then skip "gdb bt names py::level3 > level2 > level1 ($label)" "$why"; continue; fi
    ver=$(py_minor "$py")
    pkg="$BUILD/python$ver"
    if ! ls "$pkg"/pyebpf_jit/_native*.so > /dev/null 2>&1; then
        # build/pythons fetched before it carried the headers: nothing to build the module with
        case "$py" in */pythons/bin/*) [ -f "$BUILD/pythons/root/usr/include/python$ver/Python.h" ] ||
            { skip "$name" "no Python.h under build/pythons (make test-pythons, then make)"; continue; } ;;
        esac
        fail "$name" "extension not built in $pkg (make)"; continue
    fi
    # a fresh file per run: the background shell truncates it only after we may have looked
    out="$TMP/out.$TAP_N" bt="$TMP/bt.$TAP_N"
    PYTHONPATH="$pkg" "$py" "$TMP/nested.py" > "$out" 2>&1 &
    pid=$!
    # gdb attaches once level3 sleeps
    if ! wait_line 30 "$out" '^ready' || ! wait_until 10 in_nanosleep $pid; then
        fail "$name" "program did not start: $(head -c 300 "$out")"; kill $pid 2>/dev/null; continue
    fi
    # the binary that really runs, when the process image is a loader started by hand (see top)
    exe=$(awk '/^ready/ { print $3; exit }' "$out")
    gdb_target_args $pid "$exe"
    timeout 60 gdb -batch "${gdb_args[@]}" -p $pid -ex bt > "$bt" 2>&1
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
    # frame numbers of each name, in backtrace order (innermost first)
    f3=$(grep -n 'py::level3:' "$bt" | head -1 | cut -d: -f1)
    f2=$(grep -n 'py::level2:' "$bt" | head -1 | cut -d: -f1)
    f1=$(grep -n 'py::level1:' "$bt" | head -1 | cut -d: -f1)
    if [ -z "$f3" ] || [ -z "$f2" ] || [ -z "$f1" ]; then
        fail "$name" "missing py:: frames: $(grep -E '^#' "$bt" | head -20 | tr '\n' '|')"
    elif ! [ "$f3" -lt "$f2" ] || ! [ "$f2" -lt "$f1" ]; then
        fail "$name" "wrong order: level3@$f3 level2@$f2 level1@$f1"
    # python's main() ends in a tail call to Py_BytesMain, so its own frame is gone by now; the
    # walk has reached main when it reaches the libc frame that called it (and then _start). The
    # unpacked unstable libc has no debug info: there, Py_BytesMain then __libc_start_main.
    elif ! grep -qE '^#[0-9]+ .* in (main \(|__libc_start_call_main \(main=|__libc_start_main \()' "$bt" ||
         ! grep -qE '^#[0-9]+ .* in _start \(' "$bt"; then
        fail "$name" "backtrace does not reach main: $(grep -E '^#' "$bt" | tail -5 | tr '\n' '|')"
    elif grep -q 'Backtrace stopped' "$bt"; then
        fail "$name" "$(grep 'Backtrace stopped' "$bt")"
    else
        pass "$name"
    fi
    if [ -n "${VERBOSE:-}" ]; then grep -E "^#" "$bt"; fi
done
