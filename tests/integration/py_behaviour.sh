#!/usr/bin/env bash
# Python behaves the same with pyebpf_jit on: a few of CPython's own test modules (generators,
# coroutines, exceptions, ...) pass with the module enabled in every process they start, for
# 3.11, 3.12, 3.13 and (when `make test-pythons` fetched them) Debian unstable's 3.14 and 3.15;
# many threads making code objects at once, fork, and enable/disable work; a build that looks
# for the code object in the wrong place of a frame refuses to enable.
source "$(dirname "$0")/../lib.sh"
[ "${SANITIZE:-0}" = 1 ] && skip_all "the extension is not built with sanitizers"

mkdir -p "$TMP/site" "$TMP/stats"
# Enables the module in every interpreter the test runner starts (its workers too) and leaves
# a line "enabled trampolines" per process so we know the hook really ran. The interpreters of
# build/pythons run through a loader wrapper while sys.executable names the bare binary, which
# cannot start on the system's libc: the test runner's workers are started through the wrapper.
cat > "$TMP/site/sitecustomize.py" <<'PY'
import atexit, os, sys, pyebpf_jit
if os.environ.get("PYEBPF_TEST_EXECUTABLE"):
    sys.executable = os.environ["PYEBPF_TEST_EXECUTABLE"]
pyebpf_jit.enable_from_env()
def _dump(d=os.environ.get("PYEBPF_STATS_DIR")):
    if d:
        with open(os.path.join(d, str(os.getpid())), "w") as f:
            f.write("%d %d\n" % (pyebpf_jit.is_enabled(), pyebpf_jit.stats()["trampolines"]))
atexit.register(_dump)
PY

cat > "$TMP/threads_fork.py" <<'PY'
import os, sys, threading
import pyebpf_jit

def make_and_call(tag, n, out):
    total = 0
    for i in range(n):
        ns = {}
        exec("def f_%s_%d(x):\n    return x + %d\n" % (tag, i, i), ns)
        total += ns["f_%s_%d" % (tag, i)](1)
    out.append(total)

D = sys.argv[1]
pyebpf_jit.enable(gdb=True, jitdump=True, jitdump_dir=D)
out = []
ts = [threading.Thread(target=make_and_call, args=(t, 500, out)) for t in range(8)]
for t in ts: t.start()
for t in ts: t.join()
want = sum(1 + i for i in range(500))
assert out == [want] * 8, out
s = pyebpf_jit.stats()
assert s["trampolines"] >= 8 * 500, s
assert s["frame_checked"] == 1 and s["fast_extra"] == 1, s

pid = os.fork()
if pid == 0:
    r = []
    make_and_call("child", 200, r)
    pyebpf_jit.flush()
    # the child writes its own jit-PID.dump (libpyjit starts it at the first write after fork)
    own = os.path.getsize(os.path.join(D, "jit-%d.dump" % os.getpid())) > 200 * 40
    os._exit(0 if r == [sum(1 + i for i in range(200))] and pyebpf_jit.is_enabled() and own else 3)
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
assert os.path.exists(os.path.join(D, "jit-%d.dump" % os.getpid()))

def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
pyebpf_jit.disable()
assert not pyebpf_jit.is_enabled()
assert fib(15) == 610
pyebpf_jit.enable(gdb=True, jitdump=True)
assert pyebpf_jit.is_enabled() and fib(15) == 610
try:
    pyebpf_jit.enable(gdb=False, jitdump=True)
    raise SystemExit("changing sinks was accepted")
except ValueError:
    pass
print("ok", s["trampolines"])
PY

cat > "$TMP/small.py" <<'PY'
import os, sys
import pyebpf_jit
def work():
    return os.getpid()
print(work(), __name__, sys.argv[1:], pyebpf_jit.is_enabled())
PY
echo '{"a": 1}' > "$TMP/x.json"

# python -m pyebpf_jit: a script (perf map sink), -m module and -c command (jitdump sink)
cli_ok() { # PY PKG
    local py=$1 pkg=$2 out pid
    out=$(cd "$TMP" && PYTHONPATH="$pkg" "$py" -m pyebpf_jit --perf-map small.py a1 --x) || return 1
    pid=${out%% *}
    [ "$out" = "$pid __main__ ['a1', '--x'] True" ] || { echo "script: $out"; return 1; }
    grep -q " py::work:.*small.py$" "/tmp/perf-$pid.map" || { echo "no py::work in perf map"; return 1; }
    rm -f "/tmp/perf-$pid.map"
    mkdir -p "$TMP/jd"
    out=$(cd "$TMP" && PYTHONPATH="$pkg" "$py" -m pyebpf_jit --jitdump --jitdump-dir "$TMP/jd" \
        -m json.tool x.json) || return 1
    [ "$(echo $out)" = '{ "a": 1 }' ] || { echo "-m: $out"; return 1; }
    out=$(cd "$TMP" && PYTHONPATH="$pkg" "$py" -m pyebpf_jit -c \
        'import sys, pyebpf_jit; print(sys.argv, pyebpf_jit.is_enabled())' b1) || return 1
    [ "$out" = "['-c', 'b1'] True" ] || { echo "-c: $out"; return 1; }
    ls "$TMP/jd"/jit-*.dump > /dev/null 2>&1 || { echo "no jit-PID.dump"; return 1; }
}

# A build whose frame layout is wrong (the code object looked for one word too far) must refuse
# to install the hook, and say why, instead of running frames through garbage.
wrong_build_refuses() { # PY VER
    local py=$1 ver=$2 inc d=$TMP/wrong-$2
    inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') || return 1
    mkdir -p "$d/pyebpf_jit"
    cp "$ROOT"/jitdump/pyebpf_jit/*.py "$d/pyebpf_jit/"
    ${CC:-cc} -std=gnu11 -O1 -fPIC -shared -D_GNU_SOURCE -I"$ROOT/jitdump" -I"$inc" -I"$inc/.." \
        -DPYEBPF_JIT_FRAME_CODE_OFFSET=8 -DPYEBPF_JIT_FRAME_CODE_TAG_BITS=3 \
        -o "$d/pyebpf_jit/_native$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" \
        "$ROOT/jitdump/pyebpf_jit.c" "$ROOT/jitdump/pyebpf_jit_arena.c" "$BUILD/libpyjit.a" -lpthread || return 1
    out=$(PYTHONPATH="$d" "$py" -c 'import pyebpf_jit
try:
    pyebpf_jit.enable(gdb=False, jitdump=False)
except RuntimeError as e:
    print("refused:", e, pyebpf_jit.is_enabled())
def f(): return 1
print(f())' 2>&1)
    [ "$(echo "$out" | tail -1)" = 1 ] && grep -q "^refused: pyebpf_jit: this interpreter's frames do not hold their code object.* False$" <<< "$out" ||
        { echo "$out"; return 1; }
}

# Debian's /usr/bin/python3.11 is left out: it loads the 3.11 build tested here with pyenv's 3.11.7
mapfile -t PYS < <(test_pythons pyenv-3.11.7 pyenv-3.12.1 pyenv-3.13.0 python3.14 python3.15)
for line in "${PYS[@]}"; do
    read -r label py why <<< "$line"
    v=${label#pyenv-}
    if [ "$py" = - ]; then
        skip "CPython test modules pass with pyebpf_jit ($v)" "$why"
        skip "threads, fork (child writes its own jit-PID.dump), enable/disable ($v)" "$why"
        skip "python -m pyebpf_jit script / -m / -c ($v)" "$why"
        skip "a build with a wrong frame layout refuses to enable ($v)" "$why"
        continue
    fi
    case "$py" in */pythons/bin/*) v=$("$py" -c 'import platform; print(platform.python_version())') ;; esac
    mm=$(py_minor "$py")
    pkg="$BUILD/python$mm"
    if ! ls "$pkg"/pyebpf_jit/_native*.so > /dev/null 2>&1; then
        # build/pythons fetched before it carried the headers: nothing to build the module with
        case "$py" in */pythons/bin/*) [ -f "$BUILD/pythons/root/usr/include/python$mm/Python.h" ] ||
            { skip "pyebpf_jit on $v" "no Python.h under build/pythons (make test-pythons, then make)"; continue; } ;;
        esac
        fail "CPython test modules pass with pyebpf_jit ($v)" "extension not built in $pkg"
        continue
    fi
    if ! "$py" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("test.test_generators") is None)' 2> /dev/null; then
        # build/pythons without libpython3.X-testsuite (scripts/test-pythons warned)
        skip "CPython test modules pass with pyebpf_jit ($v)" "CPython's test modules are not installed for $py"
    else
        rm -f "$TMP/stats"/*
        log="$TMP/regrtest-$v.log"
        PYEBPF_TEST_EXECUTABLE="$py" PYEBPF_JIT=gdb PYEBPF_STATS_DIR="$TMP/stats" PYTHONPATH="$TMP/site:$pkg" \
            timeout 300 "$py" -m test -j0 test_generators test_coroutines test_exceptions \
            test_yield_from test_contextlib test_with > "$log" 2>&1
        rc=$?
        hooked=$(cat "$TMP/stats"/* 2>/dev/null | awk '$1 == 1 && $2 > 100' | wc -l)
        if [ $rc -ne 0 ]; then
            fail "CPython test modules pass with pyebpf_jit ($v)" "rc=$rc: $(grep -E 'failed|FAIL|Error' "$log" | head -5 | tr '\n' '|')"
        elif [ "$hooked" -lt 2 ]; then
            fail "CPython test modules pass with pyebpf_jit ($v)" "the hook was not on in the test processes ($hooked)"
        else
            pass "CPython test modules pass with pyebpf_jit ($v: $(grep -o 'run=[0-9,]*' "$log" | head -1) tests, $hooked processes hooked)"
        fi
    fi
    mkdir -p "$TMP/dumps-$v"
    out=$(PYTHONPATH="$pkg" timeout 120 "$py" -W ignore::DeprecationWarning "$TMP/threads_fork.py" "$TMP/dumps-$v" 2>&1)
    if [ $? -eq 0 ] && [ "${out%% *}" = ok ]; then
        pass "threads, fork (child writes its own jit-PID.dump), enable/disable ($v)"
    else
        fail "threads, fork (child writes its own jit-PID.dump), enable/disable ($v)" "$(echo "$out" | tail -3 | tr '\n' '|')"
    fi
    if why=$(cli_ok "$py" "$pkg" 2>&1); then
        pass "python -m pyebpf_jit script / -m / -c ($v)"
    else
        fail "python -m pyebpf_jit script / -m / -c ($v)" "$(echo "$why" | tail -3 | tr '\n' '|')"
    fi
    if why=$(wrong_build_refuses "$py" "$v" 2>&1); then
        pass "a build with a wrong frame layout refuses to enable ($v)"
    else
        fail "a build with a wrong frame layout refuses to enable ($v)" "$(echo "$why" | tail -3 | tr '\n' '|')"
    fi
done
