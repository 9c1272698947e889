#!/usr/bin/env bash
# pyebpf-sample diff: two real profiles of a workload whose hot function moves from a() to b()
# (tests/py/diff_work.py, sampled with BPF). The folded diff holds every stack of both inputs with
# both counts (checked line by line against the inputs, read independently); the SVG, opened in
# headless Chromium (tests/js/svg_diff.js), draws a blue (shrank) and b red (grew), and hovering
# shows both shares, equal to the inputs' own, and the delta. --no-normalize compares counts.
source "$(dirname "$0")/../lib.sh"
need_root
S="$BUILD/pyebpf-sample"
need_file "$S"
PY=${PY:-$(first_python pyenv-3.12.1 pyenv-3.13.0 pyenv-3.11.7)}
[ -n "$PY" ] || PY=$(command -v python3)
W="$ROOT/tests/py/diff_work.py"

for mode in before after; do
    "$S" -q -F 499 -o "$TMP/$mode.folded" -- "$PY" "$W" $mode 2 2> "$TMP/$mode.err"
    check "profile $mode sampled" test -s "$TMP/$mode.folded"
done

# ---- folded: "stack before after", every stack of both inputs, totals equal ----
"$S" diff "$TMP/before.folded" "$TMP/after.folded" -f folded > "$TMP/diff.folded" 2> "$TMP/diff.err"
check "diff -f folded: exit 0" [ $? -eq 0 ]
"$PY" - "$TMP/before.folded" "$TMP/after.folded" "$TMP/diff.folded" > "$TMP/folded.check" 2>&1 << 'EOF'
import collections, sys
def read(path):
    d = collections.Counter()
    for line in open(path):
        stack, n = line.rstrip("\n").rsplit(" ", 1)
        d[stack] += int(n)
    return d
before, after = read(sys.argv[1]), read(sys.argv[2])
b, a = collections.Counter(), collections.Counter()
for line in open(sys.argv[3]):
    stack, nb, na = line.rstrip("\n").rsplit(" ", 2)
    b[stack] += int(nb); a[stack] += int(na)
print("totals", sum(b.values()), sum(before.values()), sum(a.values()), sum(after.values()))
print("stacks", +b == +before and +a == +after)
EOF
read -r _ tb ib ta ia < <(grep '^totals' "$TMP/folded.check")
check "diff folded: before column sums to BEFORE's total (${tb:-?} = ${ib:-?})" [ "${tb:-x}" = "${ib:-y}" ]
check "diff folded: after column sums to AFTER's total (${ta:-?} = ${ia:-?})" [ "${ta:-x}" = "${ia:-y}" ]
check "diff folded: every stack with both inputs' own counts" grep -q '^stacks True' "$TMP/folded.check"

# ---- SVG in Chromium ----
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ] || [ ! -d "$JS/playwright-core" ]; then
    skip "diff SVG in Chromium" "needs chromium and playwright-core (make setup)"
    exit 0
fi
"$S" diff "$TMP/before.folded" "$TMP/after.folded" -o "$TMP/diff.svg" 2> "$TMP/svg.err"
check "diff -o diff.svg: exit 0" [ $? -eq 0 ]
# The labels of a() and b() as the profiles name them, and each one's share of the samples in
# each input (every stack holding the frame counts), read from the inputs themselves.
# (the label holding most samples: a sample at a function's first instruction names its def line)
label() {
    awk -v f="$1" '{ n = $NF; split($0, fr, ";"); for (i in fr) if (index(fr[i], f " (") == 1 && fr[i] ~ /diff_work\.py:[0-9]+\)/) {
        l = fr[i]; sub(/\)[^)]*$/, ")", l); c[l] += n } } END { for (l in c) if (c[l] > m) { m = c[l]; best = l } print best }' \
        "$TMP/before.folded" "$TMP/after.folded"
}
LA=$(label a) LB=$(label b)
share() { awk -v l="$2" '{ n = $NF; t += n } index($0, ";" l) { x += n } END { printf "%.2f", t ? 100 * x / t : 0 }' "$1"; }
NODE_PATH="$JS" CHROMIUM="$CHROMIUM" timeout 90 node "$ROOT/tests/js/svg_diff.js" "$TMP/diff.svg" "$LA" "$LB" \
    > "$TMP/dom.json" 2> "$TMP/dom.err"
"$PY" - "$TMP/dom.json" "$LA" "$LB" "$(share "$TMP/before.folded" "$LA")" "$(share "$TMP/after.folded" "$LA")" \
    "$(share "$TMP/before.folded" "$LB")" "$(share "$TMP/after.folded" "$LB")" > "$TMP/dom.check" 2>&1 << 'EOF'
import json, re, sys
dom = json.load(open(sys.argv[1]))
la, lb = sys.argv[2], sys.argv[3]
ab, aa, bb, ba = (float(x) for x in sys.argv[4:8])
print("errors", len(dom.get("errors", [])))
def rgb(s): return [int(v) for v in re.findall(r"\d+", s or "")]
for name, f, pb, pa in (("a", dom.get(la), ab, aa), ("b", dom.get(lb), bb, ba)):
    if not f:
        print(name, "missing"); continue
    r, g, b = rgb(f["fill"])
    print(name, "colour", "blue" if b > r + 60 else "red" if r > b + 60 else "neutral", f["fill"])
    m = re.search(r"before \d+ samples \(([\d.]+)%\), after \d+ samples \(([\d.]+)%\), delta ([+-][\d.]+) pp", f["details"])
    ok = bool(m) and abs(float(m[1]) - pb) < 0.02 and abs(float(m[2]) - pa) < 0.02 and abs(float(m[3]) - (pa - pb)) < 0.02
    print(name, "shares", "ok" if ok else "bad", pb, pa, f["details"])
    print(name, "moved", round(pb), round(pa))
EOF
check "diff SVG opens without script errors" grep -q '^errors 0' "$TMP/dom.check"
read -r _ _ b0 b1 < <(grep '^a moved' "$TMP/dom.check")
check "the workload moved: a's share fell (${b0:-?}% -> ${b1:-?}%)" [ "${b0:-0}" -gt "${b1:-100}" ]
check "a (shrank) is drawn blue" grep -q '^a colour blue' "$TMP/dom.check"
check "b (grew) is drawn red" grep -q '^b colour red' "$TMP/dom.check"
check "hover on a: both shares, as in the inputs, and the delta" grep -q '^a shares ok' "$TMP/dom.check"
check "hover on b: both shares, as in the inputs, and the delta" grep -q '^b shares ok' "$TMP/dom.check"
grep -q 'shares ok' "$TMP/dom.check" || sed 's/^/# /' "$TMP/dom.check" "$TMP/dom.err"

# ---- counts instead of shares ----
"$S" diff --no-normalize "$TMP/before.folded" "$TMP/after.folded" -o "$TMP/counts.svg" -q
check "--no-normalize: the delta is in samples" grep -q 'delta [+-][0-9]* samples</title>' "$TMP/counts.svg"
check "--no-normalize: the subtitle says counts are compared" grep -q 'counts compared' "$TMP/counts.svg"
"$S" diff "$TMP/before.folded" "$TMP/after.folded" -f pprof > /dev/null 2> "$TMP/pprof.err"
check "a diff refuses formats other than svg and folded (exit 2)" [ $? -eq 2 ]
