#!/usr/bin/env bash
# What a user sees around a profile: the live progress line on a terminal (updated at most
# 4 times a second, erased at the end, absent with -q or when stderr is not a terminal), the
# summary table when the profile goes to a file, the render subcommand, output to a character
# device and to /dev/fd/N, the man page against --help, make demo, and pyebpf-perf's flame graph.
source "$(dirname "$0")/../lib.sh"
S=$BUILD/pyebpf-sample
need_file "$S"
PY=${PYTHON:-python3}
WORK=$ROOT/scripts/demo/workload.py

# ---- man page <-> --help (no root needed) -----------------------------------------------------
MAN=$BUILD/pyebpf-sample.1
if [ ! -f "$MAN" ]; then
    fail "man page built" "$MAN missing (make builds it)"
elif ! command -v man > /dev/null; then
    skip "man page renders" "needs man"
else
    MANWIDTH=200 man "$MAN" 2> "$TMP/man.err" | col -b > "$TMP/man.txt"
    check "man build/pyebpf-sample.1 renders without warnings" \
        bash -c "grep -q '^NAME' '$TMP/man.txt' && grep -q 'pyebpf-sample' '$TMP/man.txt' && ! [ -s '$TMP/man.err' ]"
    # every option --help lists, long and short, and render's, diff's and dump's own
    { "$S" --help; "$S" render --help; "$S" diff --help; "$S" dump --help; } |
        grep -oE '(^|[ ,])-(-[a-z][a-z-]*|[A-Za-z])\b' | sed 's/^[ ,]*//' | sort -u > "$TMP/opts"
    missing=$(while read -r opt; do grep -qF -- "$opt" "$TMP/man.txt" || echo "$opt"; done < "$TMP/opts")
    n=$(wc -l < "$TMP/opts")
    if [ "$n" -ge 15 ] && [ -z "$missing" ]; then
        pass "man page describes all $n options of --help"
    else
        fail "man page describes all options of --help" "n=$n missing: $(echo $missing)"
    fi
fi

need_root
need_cmd script
need_cmd "$PY"

# ---- progress line on a terminal (script(1) gives the run a pty) ------------------------------
cat > "$TMP/spin.py" << 'PYEOF'
import sys, time
def spin(t):
    end = time.monotonic() + t
    while time.monotonic() < end:
        sum(i * i for i in range(1000))
spin(float(sys.argv[1]))
PYEOF
TERM=xterm script -qfec "'$S' -o '$TMP/tty.svg' -- '$PY' '$TMP/spin.py' 2.5" "$TMP/tty.log" > /dev/null 2>&1
tr -d '\n' < "$TMP/tty.log" | grep -aoE $'\rpyebpf-sample: [0-9]+\\.[0-9]s  [0-9]+ samples  [0-9]+/s  lost [0-9]+  errors [0-9]+\e\\[K' \
    > "$TMP/lines" || true
n=$(wc -l < "$TMP/lines")
check "tty: the status line is drawn and redrawn ($n times in 2.5 s)" [ "$n" -ge 4 ]
# at most 4 redraws a second: n <= 4 * elapsed shown in the last line + 1
last_s=$(tail -1 "$TMP/lines" | grep -oE '[0-9]+\.[0-9]s' | tr -d s)
check "tty: at most 4 redraws a second ($n lines, last at ${last_s:-?} s)" \
    awk -v n="$n" -v s="${last_s:-0}" 'BEGIN { exit !(s > 0 && n <= 4 * s + 1) }'
# samples never go down between redraws, elapsed always goes up
check "tty: elapsed and samples grow" awk '{
    match($0, /[0-9]+\.[0-9]s/); t = substr($0, RSTART, RLENGTH - 1) + 0
    match($0, /[0-9]+ samples/); s = substr($0, RSTART, RLENGTH - 8) + 0
    if (NR > 1 && (t <= pt || s < ps)) bad = 1; pt = t; ps = s } END { exit bad || NR < 2 }' "$TMP/lines"
# the line is erased ("\r\e[K") before the next message, and the summary follows
tail_txt=$(tr -d '\n' < "$TMP/tty.log" | sed 's/.*errors [0-9]*\x1b\[K//')
check "tty: the line is erased before the final messages" \
    bash -c '[[ "$1" == $'"'"'\r\e[K'"'"'* ]]' _ "$tail_txt"
check "tty: summary table after it" grep -aq 'top 10 by self time' "$TMP/tty.log"
check "tty: profile written" grep -q '<svg' "$TMP/tty.svg"

# -q: nothing at all on the terminal
TERM=xterm script -qfec "'$S' -q -o '$TMP/q.svg' -- '$PY' '$TMP/spin.py' 1" "$TMP/q.log" > /dev/null 2>&1
# (script(1) frames the log with "Script started/done" lines naming the command)
grep -av '^Script \(started\|done\)' "$TMP/q.log" | tr -d '\r\n' > "$TMP/q.txt"
check "-q on a tty: nothing on the terminal" bash -c "! [ -s '$TMP/q.txt' ] && grep -q '<svg' '$TMP/q.svg'"

# TERM=dumb: a terminal that cannot erase a line gets no status line (messages still come)
TERM=dumb script -qfec "'$S' -o '$TMP/dumb.folded' -- '$PY' '$TMP/spin.py' 1" "$TMP/dumb.log" > /dev/null 2>&1
check "TERM=dumb: no status line, summary still printed" \
    bash -c "! grep -aq ' samples  [0-9]*/s' '$TMP/dumb.log' && ! grep -aq \$'\\e' '$TMP/dumb.log' && grep -aq 'top 10 by self time' '$TMP/dumb.log'"

# stderr not a terminal: no control characters, summary still there (profile to a file)
"$S" -o "$TMP/plain.folded" -- "$PY" "$TMP/spin.py" 1 2> "$TMP/plain.err" > /dev/null
check "stderr not a tty: no status line" bash -c "! grep -aq \$'\\r' '$TMP/plain.err' && ! grep -aq \$'\\e' '$TMP/plain.err'"
check "stderr not a tty: summary table (self%, total%, function)" \
    bash -c "grep -q 'top 10 by self time' '$TMP/plain.err' && grep -qE '^ +self% +total% +function' '$TMP/plain.err'"
# the table's rows are real: the top function's self% matches its share in the folded output
# (one row per function: the leaves "f (file:LINE)" of all its lines add up to "f (file)")
top=$(awk '/function$/ { getline; print; exit }' "$TMP/plain.err")
top_fn=$(echo "$top" | awk '{ $1 = $2 = ""; sub(/^ +/, ""); print }')
top_self=$(echo "$top" | awk '{ print $1 }')
want=$(awk -v f="$top_fn" '{ n = $NF; s += n; st = $0; sub(/ [0-9]+$/, "", st); k = split(st, a, ";")
    sub(/:[0-9]+\)$/, ")", a[k]); if (a[k] == f) m += n } END { if (s) printf "%.2f", 100 * m / s }' "$TMP/plain.folded")
check "summary: top self% ($top_fn $top_self) equals its leaf share in the folded file ($want)" \
    [ -n "$want" -a "$top_self" = "$want" ]
# --summary-by-line: a row per line, each the exact leaf share of that frame in the folded file
"$S" --summary-by-line -o "$TMP/line.folded" -- "$PY" "$TMP/spin.py" 0.5 2> "$TMP/line.err" > /dev/null
check "--summary-by-line: every row's self% is the leaf share of that exact frame" awk '
    FNR == NR { n = $NF; s += n; st = $0; sub(/ [0-9]+$/, "", st); k = split(st, a, ";"); m[a[k]] += n; next }
    /function$/ { on = 1; next }
    on && NF >= 3 { f = $0; sub(/^ +[0-9.]+ +[0-9.]+  /, "", f); rows++
        if (sprintf("%.2f", 100 * m[f] / s) != $1) bad = 1; if (f ~ /:[0-9]+\)$/) lines++ }
    END { exit bad || !rows || !lines }' "$TMP/line.folded" "$TMP/line.err"
"$S" -- "$PY" "$TMP/spin.py" 0.5 2> "$TMP/stdout.err" > "$TMP/stdout.folded"
check "profile to stdout: no summary table" bash -c "! grep -q 'self%' '$TMP/stdout.err' && [ -s '$TMP/stdout.folded' ]"

# ---- render ----------------------------------------------------------------------------------
"$S" render "$TMP/plain.folded" -o "$TMP/r.svg" 2> "$TMP/r.err"
check "render: folded -> svg exits 0" [ $? -eq 0 ]
check "render: svg is well-formed XML with the top function" \
    "$PY" -c "import sys, xml.etree.ElementTree as E; t = ' '.join(E.parse(sys.argv[1]).getroot().itertext())
sys.exit(0 if sys.argv[2] in t else 1)" "$TMP/r.svg" "${top_fn%)}"
check "render: summary on stderr" grep -q 'top 10 by self time' "$TMP/r.err"
"$S" render - -f speedscope < "$TMP/plain.folded" > "$TMP/r.json" 2> /dev/null
check "render: stdin -> speedscope JSON on stdout" \
    "$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if d['profiles'] else 1)" "$TMP/r.json"

# ---- output paths: a character device is written in place, /dev/fd/N through the descriptor ---
if mknod "$TMP/null" c 1 3 2> /dev/null; then
    "$S" -q -o "$TMP/null" -- "$PY" "$TMP/spin.py" 0.3 2> "$TMP/dev.err"
    rc=$?
    check "-o char device: exit 0, still a char device (not replaced)" bash -c "[ $rc -eq 0 ] && [ -c '$TMP/null' ]"
    "$S" render -q "$TMP/plain.folded" -o "$TMP/null"
    check "render -o char device: still a char device" [ -c "$TMP/null" ]
    check "no temporary files left next to it" bash -c "! ls -A '$TMP' | grep -q '\\.tmp\$'"
else
    skip "-o char device" "mknod not permitted here"
fi
"$S" -q -o /dev/fd/3 -- "$PY" "$TMP/spin.py" 0.5 3> "$TMP/fd3.folded"
check "-o /dev/fd/3: the profile arrives through the descriptor" \
    bash -c "[ -s '$TMP/fd3.folded' ] && grep -qE ' [0-9]+\$' '$TMP/fd3.folded'"
"$S" -q -f svg -o >(cat > "$TMP/procsub.svg") -- "$PY" "$TMP/spin.py" 0.5
wait_line 10 "$TMP/procsub.svg" '</svg>' # cat, in the background, has passed it all on
check "-o >(cmd) (process substitution): written through the pipe" grep -q '</svg>' "$TMP/procsub.svg"

# ---- make demo ---------------------------------------------------------------------------------
had_demo=0
[ -e "$ROOT/demo.svg" ] && had_demo=1
make -s -C "$ROOT" demo SANITIZE="${SANITIZE:-0}" DEMO_OUT="$TMP/demo.svg" DEMO_SECONDS=2 > "$TMP/demo.out" 2>&1
rc=$?
check "make demo: exit 0" [ $rc -eq 0 ]
check "make demo: says where the SVG is" grep -q "demo: flame graph written to $TMP/demo.svg" "$TMP/demo.out"
check "make demo: demo.svg is well-formed XML" \
    "$PY" -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" "$TMP/demo.svg"
# the four hot functions of the workload, as Python frames with file and line
for fn in fib primes word_counts render_rows; do
    grep -q "$fn (${WORK}:[0-9]*)" "$TMP/demo.svg" || echo "$fn" >> "$TMP/demo.missing"
done
check "make demo: the workload's Python functions are in the graph (fib, primes, word_counts, render_rows)" \
    test ! -e "$TMP/demo.missing"
check "make demo with DEMO_OUT: nothing written in the tree" \
    bash -c "[ $had_demo -eq 1 ] || [ ! -e '$ROOT/demo.svg' ]"

# ---- pyebpf-perf draws perf.svg ------------------------------------------------------------------
if command -v perf > /dev/null && "$PY" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))'; then
    (cd "$TMP" && "$ROOT/scripts/pyebpf-perf" record -o "$TMP/perf" -F 499 -- "$PY" "$TMP/spin.py" 1.5) \
        > "$TMP/perf.out" 2>&1
    check "pyebpf-perf: perf.svg rendered from perf.folded" \
        bash -c "[ -s '$TMP/perf/perf.folded' ] && grep -q '</svg>' '$TMP/perf/perf.svg'"
    check "pyebpf-perf: perf.svg names the Python function (py:: frame)" grep -q 'py::spin' "$TMP/perf/perf.svg"
    check "pyebpf-perf: says where perf.svg is" grep -q "$TMP/perf/perf.svg" "$TMP/perf.out"
else
    skip "pyebpf-perf: perf.svg" "needs perf and Python 3.11+"
fi
