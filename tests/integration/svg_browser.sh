#!/usr/bin/env bash
# The SVG flame graph as a user sees it: headless Chromium (the system browser, driven by
# playwright-core from build/js; no browser is downloaded) loads a generated SVG, hovers a frame,
# clicks it, types in the search box, resets; tests/js/svg_browser.js asserts the DOM state after
# each step and saves screenshots as flamegraph-zoom.png and flamegraph-search.png in the test's
# temporary directory (KEEP_TMP=1 keeps it to look at them).
# Then the speedscope JSON of the same stacks is opened in the speedscope application the npm
# package ships (tests/js/speedscope_app.js; screenshot speedscope.png beside them).
source "$(dirname "$0")/../lib.sh"

RENDER="$BUILD/progs/render_test"
need_file "$RENDER"
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || skip_all "needs chromium (Debian package chromium; make setup installs it)"
need_cmd node
if [ ! -d "$JS/playwright-core" ] && command -v npm > /dev/null; then
    make -s -C "$ROOT" BUILD="$BUILD" js-deps > "$TMP/npm.log" 2>&1 || true
fi
[ -d "$JS/playwright-core" ] || skip_all "needs npm package playwright-core in $JS (make js-deps)"

# Two threads, Python / native / JIT / kernel frames. "compute" matches the JIT trampoline and
# two Python frames; nested matches count once: (1300 + 610) of 3000 samples = 63.67%.
cat > "$TMP/in.folded" << 'EOF'
thread 4101 (python3);_start;main;Py_RunMain;<module> (/srv/app/main.py:120);serve (/srv/app/main.py:88);handle (/srv/app/http.py:41);parse (/srv/app/proto.py:12);json.loads (/usr/lib/python3.12/json/__init__.py:346) 500
thread 4101 (python3);_start;main;Py_RunMain;<module> (/srv/app/main.py:120);serve (/srv/app/main.py:88);handle (/srv/app/http.py:41);py::compute:/srv/app/work.py;compute (/srv/app/work.py:7);_PyEval_EvalFrameDefault 1300
thread 4101 (python3);_start;main;Py_RunMain;<module> (/srv/app/main.py:120);serve (/srv/app/main.py:88);handle (/srv/app/http.py:41);py::compute:/srv/app/work.py;compute (/srv/app/work.py:9);PyNumber_Multiply;long_mul 610
thread 4101 (python3);_start;main;Py_RunMain;<module> (/srv/app/main.py:120);serve (/srv/app/main.py:88);recv (/srv/app/net.py:20);__libc_recv;entry_SYSCALL_64_[k];do_syscall_64_[k];tcp_recvmsg_[k] 290
thread 4102 (worker);start_thread;worker (/srv/app/pool.py:30);crunch (/srv/app/pool.py:12);sqrt 300
EOF
"$RENDER" "$TMP/in.folded" -o "$TMP/flame.svg" -q --title "pyebpf: python3 /srv/app/main.py"
check "SVG rendered" test -s "$TMP/flame.svg"

NODE_PATH="$JS" CHROMIUM="$CHROMIUM" timeout 90 node "$ROOT/tests/js/svg_browser.js" "$TMP/flame.svg" \
    "$TMP/flamegraph" "handle (/srv/app/http.py:41)" compute 63.67 > "$TMP/browser.out" 2>&1
rc=$?
# Re-emit a driver's checks as our TAP lines.
report() {
    local out=$1 rc=$2 line r
    while IFS= read -r line; do
        case "$line" in
            "ok - "*) pass "browser: ${line#ok - }" ;;
            "not ok - "*) r=${line#not ok - }; fail "browser: ${r%% # *}" "${r#* # }" ;;
        esac
    done < "$out"
    [ "$rc" -eq 0 ] || grep -q '^not ok' "$out" || fail "browser driver" "exit $rc: $(tail -c 300 "$out")"
}
report "$TMP/browser.out" $rc
check "screenshot after zoom saved (flamegraph-zoom.png)" test -s "$TMP/flamegraph-zoom.png"
check "screenshot after search saved (flamegraph-search.png)" test -s "$TMP/flamegraph-search.png"

# ---- the same stacks as speedscope JSON, opened in the speedscope app ----
if [ -d "$JS/speedscope" ]; then
    "$RENDER" "$TMP/in.folded" -o "$TMP/flame.json" -q -F 99 --title "pyebpf: python3 /srv/app/main.py"
    NODE_PATH="$JS" CHROMIUM="$CHROMIUM" timeout 90 node "$ROOT/tests/js/speedscope_app.js" "$TMP/flame.json" \
        "$TMP/speedscope.png" "pyebpf: python3 /srv/app/main.py" "thread 4101 (python3)" "thread 4102 (worker)" \
        > "$TMP/speedscope.out" 2>&1
    report "$TMP/speedscope.out" $?
    check "screenshot of speedscope saved (speedscope.png)" test -s "$TMP/speedscope.png"
else
    skip "speedscope app" "needs npm package speedscope in $JS (make js-deps)"
fi

# ---- the first screen: the graph opens on the flames ----
# A wide main body (depth 6) beside a 120-frame import tower holding 0.5 % of the samples: at
# 1400×900 the root and the hottest functions are inside the window without scrolling; the tower
# waits for a zoom, which shows it and grows the graph to hold it.
{
    echo "_start;main;run (/srv/app/main.py:5);loop (/srv/app/main.py:9);step (/srv/app/main.py:12);hot (/srv/app/main.py:20) 600"
    echo "_start;main;run (/srv/app/main.py:5);loop (/srv/app/main.py:9);step (/srv/app/main.py:12);warm (/srv/app/main.py:30) 300"
    echo "_start;main;run (/srv/app/main.py:5);loop (/srv/app/main.py:9);cool (/srv/app/main.py:40) 95"
    tower="_start;import_all (/srv/app/boot.py:1)"
    for i in $(seq 1 120); do tower="$tower;_find_and_load_$i (<frozen importlib._bootstrap>:$i)"; done
    echo "$tower 5"
} > "$TMP/tower.folded"
"$RENDER" "$TMP/tower.folded" -o "$TMP/tower.svg" -q
NODE_PATH="$JS" CHROMIUM="$CHROMIUM" timeout 90 node "$ROOT/tests/js/svg_opens.js" "$TMP/tower.svg" \
    "$TMP/tower-first.png" "import_all (/srv/app/boot.py:1)" > "$TMP/tower.out" 2>&1
rc=$?
sed -i 's/^\(\(not \)\?ok - \)/\1tower graph: /' "$TMP/tower.out"
report "$TMP/tower.out" $rc

# The demo's own graph (make demo: sampling with BPF, so root only).
if [ "$(id -u)" = 0 ]; then
    make -s -C "$ROOT" demo SANITIZE="${SANITIZE:-0}" DEMO_OUT="$TMP/demo.svg" > "$TMP/demo.out" 2>&1
    check "make demo wrote demo.svg" test -s "$TMP/demo.svg"
    NODE_PATH="$JS" CHROMIUM="$CHROMIUM" timeout 90 node "$ROOT/tests/js/svg_opens.js" "$TMP/demo.svg" \
        "$TMP/demo-first.png" > "$TMP/demo-browser.out" 2>&1
    rc=$?
    sed -i 's/^\(\(not \)\?ok - \)/\1demo graph: /' "$TMP/demo-browser.out"
    report "$TMP/demo-browser.out" $rc
else
    skip "demo graph opens on the flames" "make demo needs root"
fi
