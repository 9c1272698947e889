#!/usr/bin/env bash
# valgrind memcheck on a 5 s pyebpf-sample run, once on a native target and once on a Python
# target: no memory error and 0 bytes definitely lost. tests/valgrind.supp holds the one
# justified suppression (libbpf's own bpf() attribute union).
source "$(dirname "$0")/../lib.sh"
S=$BUILD/pyebpf-sample
P=$BUILD/progs
need_file "$S"
need_root
need_cmd valgrind
case "${SANITIZE:-0}" in 1) skip_all "valgrind and ASan do not mix (SANITIZE=1 build)" ;; esac
PY=${PY:-$(first_python pyenv-3.12.1)}
[ -n "$PY" ] || PY=python3

cat > "$TMP/busy.py" << 'PYEOF'
import sys, time
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def mid():
    return leaf(20000)
end = time.time() + float(sys.argv[1])
print("READY", flush=True)
while time.time() < end:
    mid()
PYEOF

# memcheck NAME PID: 5 s of sampling under valgrind
memcheck() {
    local name=$1 pid=$2 log="$TMP/$1.vg"
    timeout 180 valgrind --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
        --error-exitcode=99 --suppressions="$ROOT/tests/valgrind.supp" --log-file="$log" \
        "$S" -q --stats -F 499 -d 5 -o "$TMP/$name.folded" "$pid" 2> "$TMP/$name.err"
    local rc=$?
    local n lost
    n=$(stat_of samples "$TMP/$name.err")
    lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log")
    grep -q 'All heap blocks were freed' "$log" && lost=0
    check "valgrind $name: exit 0 under memcheck, profile written ($n samples)" \
        bash -c "[ $rc -eq 0 ] && [ -s '$TMP/$name.folded' ] && [ ${n:-0} -gt 0 ]"
    check "valgrind $name: no memory errors" grep -q 'ERROR SUMMARY: 0 errors' "$log"
    check "valgrind $name: 0 bytes definitely lost (${lost:-?})" [ "${lost:-x}" = 0 ]
    [ $rc -eq 0 ] || sed -n '/ERROR SUMMARY/,$p;/Invalid\|uninitialised\|definitely/,+8p' "$log" | head -40 >&2
}

# each target outlives its sampler (killed after it; under valgrind the set-up alone can take a
# minute of a loaded machine)
"$P/callgraph" 300 & tgt=$!
memcheck native "$tgt"
kill "$tgt"; wait "$tgt" 2> /dev/null || true

"$PY" "$TMP/busy.py" 300 > "$TMP/busy.out" & tgt=$!
wait_line 30 "$TMP/busy.out" READY # start-up done: the loop runs
memcheck python "$tgt"
kill "$tgt"; wait "$tgt" 2> /dev/null || true
