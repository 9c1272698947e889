#!/usr/bin/env bash
# gdb names Python frames in every thread: with pyebpf_jit on (gdb sink), four threads whose first
# calls of one shared function (shared_hot) race each other, then each spins in a function of
# its own (spin_<k>) that calls shared_hot, which sleeps, in a loop; `gdb -p PID -batch -ex
# 'thread apply all bt'` must show py::spin_<k> in its own thread and py::shared_hot above it in
# all four, at one return address: one trampoline for shared_hot's code object however its first
# calls raced (and none failed, says the extension's stats). On the free-threaded builds
# (test_pythons --flavour free-threaded: python3.14t, python3.15t, their own cp314t/cp315t extension), where the
# first calls really run at once, and on the default 3.14 as the GIL baseline.
source "$(dirname "$0")/../lib.sh"
need_cmd gdb
[ "${SANITIZE:-0}" = 1 ] && skip_all "the extension is not built with sanitizers"

cat > "$TMP/threads.py" << 'PY'
import os, sys, threading, time
import pyebpf_jit

N = 4
go = threading.Barrier(N)
ready = threading.Barrier(N + 1)


def shared_hot(k, nap=False):
    if nap:
        time.sleep(0.05)
    return k + 1


def body(k, spin):
    go.wait()  # the first calls of shared_hot race
    for i in range(1000):
        shared_hot(i)
    spin(ready)


def make(k):
    src = "def spin_%d(ready):\n    ready.wait()\n    while True:\n        shared_hot(0, True)\n" % k
    ns = {"shared_hot": shared_hot, "time": time}
    exec(compile(src, __file__, "exec"), ns)
    return ns["spin_%d" % k]


pyebpf_jit.enable(gdb=True, jitdump=False)
ts = [threading.Thread(target=body, args=(k, make(k)), daemon=True) for k in range(N)]
for t in ts:
    t.start()
ready.wait()
st = pyebpf_jit._native.stats()
sys.stdout.write("ready %d %s failed=%d\n" % (os.getpid(), os.path.realpath(sys.executable), st["failed"]))
sys.stdout.flush()
time.sleep(120)
PY

mapfile -t PYS < <(test_pythons --flavour free-threaded; test_pythons | grep '^python3\.14 ')
for line in "${PYS[@]}"; do
    read -r label py rest <<< "$line"
    name="$label: thread apply all bt names py::spin_<k> in each of 4 threads, py::shared_hot in all"
    if [ "$py" = - ]; then
        skip "$name" "$rest"
        continue
    fi
    ver=$("$py" -c 'import sys, sysconfig; print("%d.%d" % sys.version_info[:2] + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))')
    pkg="$BUILD/python$ver"
    if ! ls "$pkg"/pyebpf_jit/_native*.so > /dev/null 2>&1; then
        fail "$name" "extension not built in $pkg (make)"
        continue
    fi
    out="$TMP/out.$label" bt="$TMP/bt.$label"
    PYTHONPATH="$pkg" "$py" "$TMP/threads.py" > "$out" 2>&1 &
    pid=$!
    if ! wait_until 30 grep -q '^ready' "$out"; then
        fail "$name" "program did not start: $(head -c 300 "$out")"
        kill $pid 2> /dev/null; wait $pid 2> /dev/null
        continue
    fi
    exe=$(awk '/^ready/ { print $3; exit }' "$out")
    gdb_target_args $pid "$exe"
    timeout 90 gdb -batch "${gdb_args[@]}" -p $pid -ex 'thread apply all bt' > "$bt" 2>&1
    kill $pid 2> /dev/null; wait $pid 2> /dev/null
    # per gdb thread block ("Thread N (...)" then its frames): which spin_<k> and whether shared_hot
    summary=$(2> "$bt.pcs" awk '/^Thread [0-9]+ /{ t++ } t && /py::spin_[0-9]+:/ { match($0, /py::spin_[0-9]+/); s[t] = substr($0, RSTART + 4, RLENGTH - 4) }
        t && /py::shared_hot:/ { h[t] = 1; print $2 > "/dev/stderr" } END { for (i = 1; i <= t; i++) if (s[i] != "") printf "%s%s ", s[i], (h[i] ? "+shared" : "") }' "$bt")
    ok=1
    for k in 0 1 2 3; do
        [ "$(grep -o "spin_$k+shared" <<< "$summary" | wc -l)" = 1 ] || ok=0
    done
    failed=$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' "$out")
    pcs=$(sort -u "$bt.pcs" | tr '\n' ' ')
    if [ $ok = 1 ] && [ "$failed" = 0 ] && [ "$(sort -u "$bt.pcs" | wc -l)" = 1 ]; then
        pass "$name ($summary; py::shared_hot at $pcs)"
    else
        fail "$name" "threads: ${summary:-none}; py::shared_hot at: ${pcs:-none}; trampolines failed: $failed; $(grep -cE '^Thread [0-9]+ ' "$bt") threads in gdb's output"
    fi
done
