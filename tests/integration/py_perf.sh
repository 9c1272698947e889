#!/usr/bin/env bash
# perf names Python functions: scripts/pyebpf-perf record on a CPU-bound script (driver calls
# hot_a twice and hot_b once per round), then perf report --stdio attributes sensible shares to
# py::hot_a / py::hot_b / py::driver, and perf script call chains run hot -> driver -> <module>.
# pyenv 3.11.7, 3.12.1, 3.13.0, Debian's stripped /usr/bin/python3.11 and, when `make test-pythons`
# fetched them, Debian unstable's 3.14 and 3.15 (build/pythons/bin/python3.X, started through
# their own loader: perf follows the exec and finds the interpreter binary in the process's
# mappings like any library, so nothing special is needed here).
source "$(dirname "$0")/../lib.sh"
need_root
need_cmd perf
[ "${SANITIZE:-0}" = 1 ] && skip_all "the extension is not built with sanitizers"

cat > "$TMP/cpu.py" <<'PY'
import sys
def hot_a(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def hot_b(n):
    s = 0
    for i in range(n):
        s ^= i
    return s
def driver(rounds):
    t = 0
    for _ in range(rounds):
        t += hot_a(150000) + hot_a(150000) + hot_b(150000)
    return t
print(driver(int(sys.argv[1])))
PY
# for pyebpf-sample: runs for argv[1] seconds after READY
cat > "$TMP/timed.py" <<'PY'
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
PY
SAMPLE="$BUILD/pyebpf-sample"

debug_before=$(find "$HOME/.debug" -name 'jitted-*' 2> /dev/null | wc -l)
for py in /root/.pyenv/versions/3.11.7/bin/python3.11 /root/.pyenv/versions/3.12.1/bin/python3.12 \
    /root/.pyenv/versions/3.13.0/bin/python3.13 /usr/bin/python3.11 \
    "$BUILD/pythons/bin/python3.14" "$BUILD/pythons/bin/python3.15"; do
    if [ ! -x "$py" ]; then
        case "$py" in
        */pythons/bin/*) skip "pyebpf-perf record ($(basename "$py"))" "${py#"$ROOT"/} absent (make test-pythons)" ;;
        *) skip "pyebpf-perf record ($py)" "$py not installed" ;;
        esac
        continue
    fi
    case "$py" in /usr/*) v="Debian $($py -c 'import platform; print(platform.python_version())' 2> /dev/null)" ;;
                  */pythons/bin/*) v="Debian unstable $($py -c 'import platform; print(platform.python_version())' 2> /dev/null)" ;;
                  *) v=$(basename "$(dirname "$(dirname "$py")")") ;; esac
    out="$TMP/out-${v// /-}"
    mm=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if [ ! -d "$BUILD/python$mm/pyebpf_jit" ] && [[ $py == */pythons/bin/* ]] &&
        [ ! -f "$BUILD/pythons/root/usr/include/python$mm/Python.h" ]; then
        # build/pythons fetched before it carried the headers: nothing to build the module with
        skip "pyebpf-perf record ($v)" "no Python.h under build/pythons (make test-pythons, then make)"; continue
    fi
    if ! "$ROOT/scripts/pyebpf-perf" record -o "$out" -- "$py" "$TMP/cpu.py" 20 > "$TMP/rec.log" 2>&1 ||
        [ ! -s "$out/perf.jit.data" ]; then
        fail "pyebpf-perf record ($v)" "$(tail -3 "$TMP/rec.log" | tr '\n' '|')"; continue
    fi
    left=$(find "$out" -maxdepth 1 -name 'jitted-*.so' | wc -l)
    cached=$(find "$out/.debug" -path '*jitted-*.so/*' -name elf | wc -l)
    if [ "$left" -eq 0 ] && [ "$cached" -gt 10 ]; then
        pass "pyebpf-perf record ($v): perf.jit.data, $cached objects in DIR/.debug, no jitted-*.so left"
    else
        fail "pyebpf-perf record ($v)" "left=$left cached=$cached"
    fi

    # Inclusive shares (children): the trampolines are on the stack of every sample taken
    # while their function runs.
    perf --buildid-dir "$out/.debug" report -i "$out/perf.jit.data" --stdio --children \
        --sort sym -g none 2> /dev/null > "$TMP/report.txt"
    pct() { awk -v s="$1" '$4 ~ "^py::" s ":" { sub("%", "", $1); print int($1); exit }' "$TMP/report.txt"; }
    a=$(pct hot_a) b=$(pct hot_b) d=$(pct driver)
    if [ -n "$a" ] && [ -n "$b" ] && [ -n "$d" ] && [ "$a" -ge 40 ] && [ "$a" -le 90 ] &&
        [ "$b" -ge 8 ] && [ "$b" -le 45 ] && [ "$a" -gt "$b" ] && [ "$d" -ge $((a + b - 5)) ]; then
        pass "perf report ($v): py::driver $d%, py::hot_a $a%, py::hot_b $b%"
    else
        fail "perf report ($v)" "driver=${d:-none} hot_a=${a:-none} hot_b=${b:-none}: $(grep 'py::' "$TMP/report.txt" | head -5 | tr '\n' '|')"
    fi

    if grep -qE ';py::driver:[^;]*;(.*;)?py::hot_a:' "$out/perf.folded" 2> /dev/null; then
        pass "perf.folded ($v): stacks run py::driver -> py::hot_a"
    else
        fail "perf.folded ($v)" "$(head -c 300 "$out/perf.folded" 2> /dev/null)"
    fi

    # DEBUG_INFO: perf's object for py::hot_a carries cpu.py line 2 (its def), read by readelf.
    obj=""
    for f in $(find "$out/.debug" -path '*jitted-*.so/*' -name elf); do
        if readelf -sW "$f" 2> /dev/null | grep -q ' py::hot_a:'; then obj=$f; break; fi
    done
    if [ -n "$obj" ] && readelf --debug-dump=decodedline "$obj" 2> /dev/null |
        grep -qE 'cpu\.py +2 +0x'; then
        pass "line info ($v): py::hot_a object maps to cpu.py:2 (readelf)"
    else
        fail "line info ($v)" "object '${obj:-none}': $(readelf --debug-dump=decodedline "$obj" 2>&1 | tail -4 | tr '\n' '|')"
    fi

    # Every sample in hot_a should show its callers: hot_a, then driver, then <module>.
    perf --buildid-dir "$out/.debug" script -i "$out/perf.jit.data" -F ip,sym 2> /dev/null |
        awk 'BEGIN { RS = ""; n = 0; good = 0 }
             /py::hot_a:/ { n++; s = $0
                 i = index(s, "py::hot_a:"); j = index(s, "py::driver:"); k = index(s, "py::<module>:")
                 if (i && j > i && k > j && s ~ /_start/) good++ }
             END { print n, good }' > "$TMP/chains.txt"
    read -r n good < "$TMP/chains.txt"
    if [ "${n:-0}" -gt 20 ] && [ $((good * 100)) -ge $((n * 90)) ]; then
        pass "perf script ($v): $good/$n hot_a samples chain to py::driver, py::<module>, _start"
    else
        fail "perf script ($v)" "$good of $n hot_a samples have the full chain"
    fi

    # pyebpf-sample reads the same jitdump: with --no-python (native frames only) the
    # trampolines are named frames, hot_a's under driver's.
    name="pyebpf-sample --no-python ($v): py::hot_a samples under py::driver"
    if [ ! -x "$SAMPLE" ]; then skip "$name" "$SAMPLE not built"; continue; fi
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    mkdir -p "$out/sample"
    PYTHONPATH="$BUILD/python$ver" "$py" -m pyebpf_jit --jitdump --jitdump-dir "$out/sample" \
        "$TMP/timed.py" 3 > "$out/sample/out" 2>&1 &
    tpid=$!
    for _ in $(seq 100); do grep -q READY "$out/sample/out" && break; sleep 0.05; done
    "$SAMPLE" -q --no-python -d 1.5 -F 199 $tpid > "$out/sample/folded" 2> "$out/sample/err"
    wait $tpid
    read -r all hot chained < <(awk '{ s += $NF } /py::hot_a:/ { h += $NF }
        /;py::driver:[^;]*;([^;]*;)*py::hot_a:/ { c += $NF } END { print s + 0, h + 0, c + 0 }' "$out/sample/folded")
    if [ "$hot" -gt 50 ] && [ $((chained * 100)) -ge $((hot * 90)) ]; then
        pass "$name: $chained of $hot ($all samples)"
    else
        fail "$name" "$chained of $hot ($all samples): $(head -3 "$out/sample/err" | tr '\n' '|')"
    fi
done
debug_after=$(find "$HOME/.debug" -name 'jitted-*' 2> /dev/null | wc -l)
check "nothing added to ~/.debug" [ "$debug_after" -le "$debug_before" ]
