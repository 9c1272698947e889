#!/usr/bin/env bash
# CPython 3.14 and 3.15 (Debian unstable's, unpacked by `make test-pythons` under build/pythons and
# started through their own dynamic loader): the remote Python reader finds the runtime although
# /proc/PID/exe is the loader, and reads the workloads' stacks with line numbers — the
# main → outer → middle → inner chain, four threads, recursion 1000 deep, a ctypes qsort callback
# — compared frame by frame with what each interpreter says about itself (EXPECT lines).
# With pyebpf-sample built, it also samples a 3.15 process (native stacks through the loader).
source "$(dirname "$0")/../lib.sh"
need_root

PYS=()
mapfile -t lines < <(test_pythons --plain python3.14 python3.15)
for line in "${lines[@]}"; do
    read -r label py why <<< "$line"
    if [ "$py" != - ]; then PYS+=("$py"); else skip "$label" "$why"; fi
done
[ ${#PYS[@]} -gt 0 ] || exit 0
DUMP="$BUILD/tools/pystack-dump"

# Bounds of the sampled 3.15 runs, in % of their samples
MIN_INTERP_PCT=90       # --no-python: samples under the interpreter's own symbols
MIN_JIT_PCT=90          # PYTHON_JIT=1 --no-python: samples through py::jit:executor
MAX_UNKNOWN_PCT=5       # ... and [unknown]
# (sample counts follow the CPU the target gets: ~1,000 per 2 s on an idle machine, a tenth of
# that on a loaded one; the minimums only make a share worth judging)
MIN_MERGED_SAMPLES=50
MIN_HOT_MERGED_PCT=95   # PYTHON_JIT=1 merged: samples in hot_outer/hot_inner
MIN_MERGE_SAMPLES=100
MAX_MERGE_ERROR_PCT=0.3 # merge errors (docs/python-frames.md, "Merging with native frames")
need_file "$DUMP"
command -v python3 > /dev/null || skip_all "needs python3 to compare stacks"

PIDS=()
stop_all() {
    for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2> /dev/null; done
    PIDS=()
}
trap 'stop_all; cleanup_tmp' EXIT

# start PY OUT ARGS...: runs a workload, waits for READY (10 s); sets pid (no subshell, so that
# stop_all knows every workload).
start() {
    local py=$1 out=$2
    shift 2
    "$py" "$@" > "$out" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_line 10 "$out" '^READY' || true
}

# same EXPECT-FILE DUMP-FILE: every EXPECT line's thread has that stack, frame by frame (leaf-side
# library frames of a blocked thread aside).
same() {
    python3 - "$1" "$2" << 'EOF'
import sys
exp = [l.split() for l in open(sys.argv[1]) if l.startswith("EXPECT ")]
dump, cur = {}, None
for l in open(sys.argv[2]):
    if l.startswith("thread "):
        cur = dump.setdefault(int(l.split()[1]), [])
    elif l.startswith("  ") and cur is not None:
        name, loc = l.split()[:2]
        cur.append((name, int(loc.rsplit(":", 1)[1])))
ok = bool(exp)
for e in exp:
    got = dump.get(int(e[1]), [])
    want = []
    for item in e[2:]:
        name, lines = item.rsplit(":", 1)
        lo, _, hi = lines.partition("-")
        want.append((name, int(lo), int(hi or lo)))
    # A blocked thread has library frames (Event.wait, ...) above the reported ones.
    tail = got[len(got) - len(want):]
    if len(got) < len(want) or any(
            g[0].rsplit(".", 1)[-1] != w[0].rsplit(".", 1)[-1] or not w[1] <= g[1] <= w[2]
            for g, w in zip(tail, want)):
        print(("# tid %s: got %s, want %s" % (e[1], got, want))[:400])
        ok = False
sys.exit(0 if ok else 1)
EOF
}

for py in "${PYS[@]}"; do
    v=$(basename "$py")
    ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')

    # chain, spinning and blocked
    for mode in spin block; do
        start "$py" "$TMP/$v.$mode" "$ROOT/tests/py/nested.py" "$mode"
        exe=$(readlink "/proc/$pid/exe")
        "$DUMP" -n 3 "$pid" > "$TMP/$v.$mode.dump" 2>&1
        if same "$TMP/$v.$mode" "$TMP/$v.$mode.dump"; then
            pass "$v ($ver): main>outer>middle>inner ($mode) with line numbers, exe is ${exe##*/}"
        else
            fail "$v ($ver): chain ($mode)" "$(head -c 300 "$TMP/$v.$mode.dump")"
        fi
        if [ "$mode" = spin ]; then
            check "$v: runtime found in the mapped interpreter binary, not the loader (${exe##*/})" \
                grep -q "^python $ver .*/usr/bin/$v (static)" "$TMP/$v.$mode.dump"
        fi
        stop_all
    done

    # four threads with differently named functions
    start "$py" "$TMP/$v.threads" "$ROOT/tests/py/nested.py" threads
    "$DUMP" "$pid" > "$TMP/$v.threads.dump" 2>&1
    n=$(grep -c '^EXPECT' "$TMP/$v.threads")
    if [ "$n" = 4 ] && same "$TMP/$v.threads" "$TMP/$v.threads.dump" &&
        [ "$(grep -cE '^  work_(alpha|beta|gamma|delta) ' "$TMP/$v.threads.dump")" = 4 ]; then
        pass "$v: 4 threads, each its own chain (work_alpha..work_delta)"
    else
        fail "$v: 4 threads" "$(head -c 300 "$TMP/$v.threads.dump")"
    fi
    stop_all

    # recursion 1000: no truncation with depth 1100, truncated at 512 with -d 512
    start "$py" "$TMP/$v.deep" "$ROOT/tests/py/nested.py" deep 1000
    "$DUMP" -d 1100 "$pid" > "$TMP/$v.deep.dump" 2>&1
    "$DUMP" -d 512 "$pid" > "$TMP/$v.deep512.dump" 2>&1
    if same "$TMP/$v.deep" "$TMP/$v.deep.dump" && ! grep -q truncated "$TMP/$v.deep.dump" &&
        grep -q "frames 512 truncated" "$TMP/$v.deep512.dump"; then
        pass "$v: recursion 1000 read whole ($(grep -m1 -o 'frames [0-9]*' "$TMP/$v.deep.dump")), 512 cap flagged"
    else
        fail "$v: recursion 1000" "$(head -c 200 "$TMP/$v.deep.dump")"
    fi
    stop_all

    # ctypes: Python → qsort (libc) → Python callback; the callback starts its own eval loop
    start "$py" "$TMP/$v.qsort" "$ROOT/tests/py/ctypes_qsort.py"
    "$DUMP" "$pid" > "$TMP/$v.qsort.dump" 2>&1
    if same "$TMP/$v.qsort" "$TMP/$v.qsort.dump" && grep -qE '^  compare .* entry$' "$TMP/$v.qsort.dump"; then
        pass "$v: ctypes qsort callback: compare (entry) ; sort_items ; main ; <module>"
    else
        fail "$v: ctypes qsort callback" "$(head -c 300 "$TMP/$v.qsort.dump")"
    fi
    stop_all
done

# The trampoline module: its 3.13 build refuses a newer interpreter clearly at import (3.14 and
# 3.15 have their own builds, tested by py_gdb.sh, py_perf.sh and py_behaviour.sh).
if [ -d "$BUILD/python3.13/pyebpf_jit" ]; then
    for py in "${PYS[@]}"; do
        v=$(basename "$py")
        if out=$(PYTHONPATH="$BUILD/python3.13" "$py" -c "import pyebpf_jit" 2>&1); then
            fail "$v: pyebpf_jit of 3.13 refuses" "import succeeded"
        else
            check "$v: pyebpf_jit of 3.13 refuses at import: ${out##*$'\n'}" grep -q "ImportError: pyebpf_jit: no extension for CPython ${v#python}" <<< "$out"
        fi
    done
else
    skip "pyebpf_jit on 3.14/3.15" "$BUILD/python3.13/pyebpf_jit not built"
fi

# pyebpf-sample on a 3.15 process started through the loader: native frames of the interpreter.
SAMPLE="$BUILD/pyebpf-sample"
py=${PYS[${#PYS[@]} - 1]}
if [ -x "$SAMPLE" ]; then
    start "$py" "$TMP/s.out" "$ROOT/tests/py/nested.py" spin
    if "$SAMPLE" -q --no-python -d 1 -F 499 "$pid" > "$TMP/s.folded" 2> "$TMP/s.err" && [ -s "$TMP/s.folded" ]; then
        total=$(sum "$TMP/s.folded")
        inpy=$(sum "$TMP/s.folded" 'Py_RunMain|PyEval_EvalCode|_PyEval_EvalFrameDefault|Py_BytesMain')
        if share_ge "$inpy" "$total" $MIN_INTERP_PCT; then
            pass "pyebpf-sample $(basename "$py"): $inpy of $total samples under interpreter symbols"
        else
            fail "pyebpf-sample $(basename "$py")" "$inpy of $total samples under interpreter symbols"
        fi
    else
        fail "pyebpf-sample $(basename "$py")" "$(head -c 300 "$TMP/s.err")"
    fi
    stop_all

    # CPython 3.15's JIT: executors named from the GDB JIT list CPython keeps (gdbjit_read.c).
    if [ "$(basename "$py")" = python3.15 ]; then
        PYTHON_JIT=1 start "$py" "$TMP/j.out" "$ROOT/tests/py/jit_hot.py"
        if grep -q "READY jit=True" "$TMP/j.out" &&
            "$SAMPLE" -q --no-python -d 2 -F 499 --stats "$pid" > "$TMP/j.folded" 2> "$TMP/j.err"; then
            read -r total jit unk < <(awk '{t += $NF} /py::jit:executor/ {j += $NF} /\[unknown\]/ {u += $NF}
                END {print t + 0, j + 0, u + 0}' "$TMP/j.folded")
            if share_ge "$jit" "$total" $MIN_JIT_PCT && share_le "$unk" "$total" $MAX_UNKNOWN_PCT; then
                pass "pyebpf-sample PYTHON_JIT=1 python3.15: $jit of $total samples through py::jit:executor, $unk [unknown] ($(grep jit_regions "$TMP/j.err"))"
            else
                fail "pyebpf-sample PYTHON_JIT=1 python3.15" "$jit of $total through py::jit:executor, $unk [unknown]"
            fi
        else
            fail "pyebpf-sample PYTHON_JIT=1 python3.15" "$(head -c 300 "$TMP/j.out" "$TMP/j.err" 2> /dev/null)"
        fi
        # Python frames merged: each py::jit:executor frame replaced by the Python frames it runs.
        if "$SAMPLE" -q -d 2 -F 499 --stats "$pid" > "$TMP/jm.folded" 2> "$TMP/jm.err"; then
            read -r total hot < <(awk '{t += $NF} /hot_inner \(|hot_outer \(/ {h += $NF} END {print t + 0, h + 0}' "$TMP/jm.folded")
            if ge "$total" $MIN_MERGED_SAMPLES && share_ge "$hot" "$total" $MIN_HOT_MERGED_PCT; then
                pass "pyebpf-sample PYTHON_JIT=1 python3.15 merged: $hot of $total samples in hot_outer/hot_inner ($(grep merge_errors "$TMP/jm.err"))"
            else
                fail "pyebpf-sample PYTHON_JIT=1 python3.15 merged" "$hot of $total in hot_outer/hot_inner; $(grep merge_errors "$TMP/jm.err")"
            fi
        else
            fail "pyebpf-sample PYTHON_JIT=1 python3.15 merged" "$(head -c 300 "$TMP/jm.err")"
        fi
        stop_all

        # Merge errors on 3.15 (docs/python-frames.md, "Merging with native frames"): a hot
        # `x += i` loop (sampled at an epilogue's ret in ~2 % of samples, which cut the native stack
        # above the eval loop) and the main>outer>middle>inner chain, with and without the JIT.
        # A sample that cannot be paired stays a merge error; at most 0.3 % of them may be
        # (1-2 % before; 0 measured since on an idle and a loaded machine).
        for spec in steady chain "chain PYTHON_JIT=1"; do
            read -r mode jit <<< "$spec"
            env ${jit:+"$jit"} "$py" "$ROOT/tests/py/sample_work.py" "$mode" 30 > "$TMP/me.out" 2>&1 &
            pid=$!
            PIDS+=("$pid")
            wait_line 10 "$TMP/me.out" '^READY'
            if "$SAMPLE" -q -d 3 -F 999 --stats -o "$TMP/me.folded" "$pid" 2> "$TMP/me.err"; then
                n=$(stat_of python_stack_samples "$TMP/me.err")
                e=$(stat_of merge_errors "$TMP/me.err")
                m=$(grep -c 'merge error' "$TMP/me.folded")
                if ge "$n" $MIN_MERGE_SAMPLES && share_le "$e" "$n" $MAX_MERGE_ERROR_PCT; then
                    pass "pyebpf-sample python3.15 $spec: $e merge errors in $n samples (<= $MAX_MERGE_ERROR_PCT %)"
                else
                    fail "pyebpf-sample python3.15 $spec: merge errors" "$e of $n samples ($m stacks with [merge error]): $(grep -m2 'merge error' "$TMP/me.folded" | cut -c1-200)"
                fi
            else
                fail "pyebpf-sample python3.15 $spec: merge errors" "$(head -c 300 "$TMP/me.err")"
            fi
            stop_all
        done
    fi
else
    skip "pyebpf-sample on $(basename "$py")" "$SAMPLE not built (branch sampler)"
fi
