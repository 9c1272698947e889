#!/usr/bin/env bash
# pyebpf-sample dump on every interpreter of test_pythons: tests/py/dump_threads.py parks three
# named threads (time.sleep, a lock acquire, a computing loop) beside the main thread (blocked
# reading stdin). Each thread must appear with its exact Python stack (qualnames, our files'
# lines, found with grep -n on the script's markers), its name where the interpreter names OS
# threads (3.14+), the sleeping ones off CPU; --json validates against docs/dump.schema.json
# (ajv); --locals shows nap()'s known values (3.13+; null before); the computing thread holds the GIL (3.13+; null before); text output is innermost last, --reverse innermost first; --nonblocking gives the same
# Python stacks; the target runs on afterwards (no thread left stopped).
# --kernel, in-kernel snapshot (the default with BPF) and --no-bpf: the sleeper's and the lock
# waiter's leaf kernel frames are the nanosleep and futex waits, equal to what
# /proc/PID/task/TID/stack (an independent reader) lists for them, at the leaf of the same exact
# Python stacks; the in-kernel snapshot stops neither (their context-switch counts stay put,
# where the --no-bpf dump, the control, wakes them) and -v says it ran in the kernel; without BPF
# rights nor CAP_SYS_ADMIN, --kernel falls back to ptrace and says why it has no kernel frames.
source "$(dirname "$0")/../lib.sh"
need_root
S="$BUILD/pyebpf-sample"
need_file "$S"
W="$ROOT/tests/py/dump_threads.py"
CHECK_PY=$(command -v python3)
line() { grep -n "# mark: $1" "$W" | cut -d: -f1; }
L_NAP=$(line nap) L_BLOCKED=$(line blocked) L_CRUNCH=$(line crunch) L_COMPUTE=$(line compute) L_MAIN=$(line main)

states_parked() {
    # every thread but one (the cruncher) sleeping: the snapshot then finds them parked
    local s n=0
    for s in /proc/$1/task/*/stat; do
        [ "$(awk '{ sub(/.*\) /, ""); print $1 }' "$s")" = S ] && n=$((n + 1))
    done
    [ "$n" -ge 3 ]
}

mapfile -t pys < <(test_pythons)
for spec in "${pys[@]}"; do
    read -r tag py env <<< "$spec"
    if [ "$py" = - ]; then
        skip "$tag: dump" "$env"
        continue
    fi
    [ "$tag" = python3.15-jit ] && continue # same interpreter as python3.15
    d="$TMP/$tag"; mkdir -p "$d"
    mkfifo "$d/in"
    env $env "$py" "$W" < "$d/in" > "$d/out" 2>&1 &
    pid=$!
    exec 3> "$d/in"
    if ! wait_until 30 grep -q READY "$d/out" || ! wait_until 10 states_parked $pid; then
        fail "$tag: workload ready" "$(head -c 300 "$d/out")"
        exec 3>&-; kill $pid 2> /dev/null; wait $pid 2> /dev/null
        continue
    fi
    "$S" dump --json --locals $pid > "$d/dump.json" 2> "$d/dump.err"
    check "$tag: dump --json exits 0" [ $? -eq 0 ]
    "$S" dump $pid > "$d/dump.txt" 2>> "$d/dump.err"
    "$S" dump --reverse $pid > "$d/rev.txt" 2>> "$d/dump.err"
    # A ptrace stop interrupts a sleep, which the thread then restarts: let the threads park
    # again before reading their states.
    wait_until 10 states_parked $pid
    "$S" dump --json --nonblocking $pid > "$d/nb.json" 2>> "$d/dump.err"
    # --kernel. A ptrace stop wakes a waiting thread (it context-switches to stop and again to
    # resume); a thread the task iterator read as it waited never runs: per thread, voluntary +
    # involuntary switches (/proc status) before the in-kernel dump, after it, after --no-bpf.
    wait_until 10 states_parked $pid
    switches() {
        local t
        for t in /proc/$pid/task/*; do
            printf '%s %s\n' "${t##*/}" "$(awk '/ctxt_switches/ { s += $2 } END { print s }' "$t/status")"
        done
    }
    for t in /proc/$pid/task/*; do # leaf first, names only ("[<0>] name+0xoff/0xsize")
        printf '%s %s\n' "${t##*/}" "$(sed 's/^\[<[0-9a-f]*>\] //; s/+.*//' "$t/stack" | paste -sd' ')"
    done > "$d/proc-stack.txt"
    for t in /proc/$pid/task/*; do
        printf '%s %s\n' "${t##*/}" "$(awk '{ sub(/.*\) /, ""); print $1 }' "$t/stat")"
    done > "$d/proc-state.txt"
    switches > "$d/sw0"
    "$S" dump --kernel --json -v $pid > "$d/kernel.json" 2> "$d/kernel.err"
    check "$tag: dump --kernel --json exits 0" [ $? -eq 0 ]
    switches > "$d/sw1"
    "$S" dump --kernel --json --no-bpf $pid > "$d/kptrace.json" 2> "$d/kptrace.err"
    check "$tag: dump --kernel --no-bpf --json exits 0" [ $? -eq 0 ]
    switches > "$d/sw2"
    wait_until 10 states_parked $pid
    # Without BPF rights nor CAP_SYS_ADMIN (root keeps ptrace): the ptrace path, and --kernel says
    # why it has no kernel frames rather than showing none silently.
    if command -v capsh > /dev/null; then
        capsh --drop=cap_bpf,cap_perfmon,cap_sys_admin -- -c "'$S' dump --kernel --json $pid" \
            > "$d/norights.json" 2> "$d/norights.err"
        check "$tag: --kernel without BPF rights: exits 0, ptrace snapshot" \
            grep -q '"snapshot": "ptrace"' "$d/norights.json"
        check "$tag: --kernel without BPF rights: says why (BPF, /proc/PID/task/TID/stack)" \
            bash -c "grep -q 'no in-kernel snapshot (.*Operation not permitted' '$d/norights.err' &&
                     grep -q 'no kernel frames: /proc/$pid/task/TID/stack' '$d/norights.err'"
        wait_until 10 states_parked $pid
    else
        skip "$tag: --kernel without BPF rights" "needs capsh (libcap2-bin)"
    fi
    state=$(awk '{ sub(/.*\) /, ""); print $1 }' /proc/$pid/stat)
    tstates=$(cat /proc/$pid/task/*/stat | awk '{ sub(/.*\) /, ""); printf "%s", $1 }')
    check "$tag: the target runs on after the dumps (no thread left stopped: $tstates)" \
        bash -c "[ '$state' != t ] && [[ '$tstates' != *t* ]]"
    if [ -d "$JS/ajv" ]; then
        NODE_PATH="$JS" node -e '
            const Ajv = require("ajv"), fs = require("fs");
            const v = new Ajv({ allErrors: true }).compile(JSON.parse(fs.readFileSync(process.argv[1])));
            for (const f of process.argv.slice(2)) if (!v(JSON.parse(fs.readFileSync(f)))) {
              console.error(f, JSON.stringify(v.errors)); process.exit(1); }' \
            "$ROOT/docs/dump.schema.json" "$d/dump.json" "$d/nb.json" "$d/kernel.json" "$d/kptrace.json" \
            2> "$d/schema.err"
        check "$tag: --json (--nonblocking, --kernel, --kernel --no-bpf) valid against docs/dump.schema.json" [ $? -eq 0 ]
    else
        skip "$tag: --json schema" "needs npm package ajv in $JS (make js-deps)"
    fi
    "$CHECK_PY" - "$d" "$W" "$tag" $L_NAP $L_BLOCKED $L_CRUNCH $L_COMPUTE $L_MAIN > "$d/check" 2>&1 << 'EOF'
import json, os, re, sys
d, w, tag = sys.argv[1:4]
nap, blocked, crunch, compute, main = (int(x) for x in sys.argv[4:9])
named = tag.startswith("python3.1") and tag >= "python3.14"
locals_known = named or tag == "pyenv-3.13.0"  # _Py_DebugOffsets name the locals' fields from 3.13
# the GIL's fields: from _Py_DebugOffsets on 3.13+, from pyrt.c's tables on 3.11 and 3.12
ours = lambda q, l: f"{q} ({w}:{l})"
boot = ["Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap"]  # innermost first
want = {
    "napper": [[ours("nap", nap)]],
    "locked": [[ours("blocked", blocked)]],
    "cruncher": [[ours("crunch", crunch), ours("compute", compute)],
                 [ours("crunch", crunch - 1), ours("compute", compute)]],  # the loop's jump: `while` line
}
def pystack(t):
    out = []
    for f in t["frames"]:
        if f["kind"] != "python":
            continue
        out.append(f"{f['name']} ({f['file']}:{f['line']})" if f.get("file") and f.get("file") == w
                   else f["name"])
    return out
def check(path, label):
    doc = json.load(open(path))
    threads = doc["threads"]
    print(label, "threads", len(threads))
    for name, alts in want.items():
        hit = [t for t in threads if any(pystack(t) == a + boot for a in alts)]
        print(label, name, "stack", "ok" if len(hit) == 1 else "bad", [pystack(t) for t in threads])
        if hit:
            t = hit[0]
            print(label, name, "name", "ok" if not named or t["name"] == name else "bad", t["name"])
            if name != "cruncher":
                print(label, name, "off_cpu", "ok" if not t["on_cpu"] else "bad", t["state"])
    if label == "json":
        # Only the cruncher wants the GIL (the others sleep, wait or read), so it holds it.
        holders = [t for t in threads if t["gil"]]
        crunchers = [t for t in threads if pystack(t)[:1] in ([ours("crunch", crunch)], [ours("crunch", crunch - 1)])]
        ok = len(holders) == 1 and holders == crunchers[:1]
        print(label, "gil", "ok" if ok else "bad", [(t["tid"], t["gil"]) for t in threads])
        # --locals: nap()'s known values (3.13+), null before
        naps = [t for t in threads if pystack(t)[:1] == [ours("nap", nap)]]
        got = {l["name"]: l["value"] for l in (naps[0].get("locals") or [])} if naps else {}
        want_l = {"count": "42", "ratio": "2.5", "label": "'napping'", "nothing": "None", "big": "-1099511627776"}
        if locals_known:
            ok = got == want_l
        else:
            ok = bool(naps) and naps[0].get("locals", 0) is None
        print(label, "locals", "ok" if ok else "bad", got)
    mains = [t for t in threads if pystack(t) == [ours("<module>", main)]]
    print(label, "main", "stack", "ok" if len(mains) == 1 else "bad")
check(os.path.join(d, "dump.json"), "json")
check(os.path.join(d, "nb.json"), "nonblocking")
check(os.path.join(d, "kernel.json"), "kernel")
check(os.path.join(d, "kptrace.json"), "kptrace")
# --kernel: the waiting threads' kernel frames, at the leaf, as /proc/PID/task/TID/stack lists them.
proc = {}
for l in open(os.path.join(d, "proc-stack.txt")):
    tid, _, names = l.strip().partition(" ")
    proc[int(tid)] = names.split()
pstate = dict(l.split() for l in open(os.path.join(d, "proc-state.txt")))
sw = [dict((int(a), int(b)) for a, b in (l.split() for l in open(os.path.join(d, f)))) for f in ("sw0", "sw1", "sw2")]
waits = {"napper": ("nap", nap, "nanosleep"), "locked": ("blocked", blocked, "futex_wait")}
stops = ("ptrace_stop", "ptrace_notify", "get_signal", "do_signal_stop")
for label in ("kernel", "kptrace"):
    doc = json.load(open(os.path.join(d, label + ".json")))
    print(label, "snapshot", "ok" if doc["snapshot"] == ("kernel" if label == "kernel" else "ptrace") else "bad",
          doc["snapshot"])
    if label == "kernel":  # only runnable threads are stopped: the cruncher, maybe the main thread waking
        ok = all(t["state"] == "R" for t in doc["threads"] if t["stopped"])
        print(label, "stops", "ok" if ok else "bad", [(t["tid"], t["state"], t["stopped"]) for t in doc["threads"]])
    for name, (fn, ln, wait) in waits.items():
        ts = [t for t in doc["threads"] if pystack(t)[:1] == [ours(fn, ln)]]
        if len(ts) != 1:
            print(label, name, "kstack", "bad", "no single thread")
            continue
        t = ts[0]
        kinds = [f["kind"] for f in t["frames"]]
        nk = next((i for i, k in enumerate(kinds) if k != "kernel"), len(kinds))
        kern = [f["name"] for f in t["frames"][:nk]]
        ok = (nk > 0 and "kernel" not in kinds[nk:] and any(wait in k for k in kern[:4])
              and kern == proc.get(t["tid"]) and not set(kern) & set(stops))
        print(label, name, "kstack", "ok" if ok else "bad", kern, proc.get(t["tid"]))
        if label == "kernel":
            tid = t["tid"]
            ok = not t["stopped"] and not t["woke"] and sw[0].get(tid) == sw[1].get(tid)
            print(label, name, "unstopped", "ok" if ok else "bad", t["stopped"], sw[0].get(tid), sw[1].get(tid))
            # the state letter the iterator's bits decode to is the one /proc showed just before
            ok = t["state"] == pstate.get(str(tid))
            print(label, name, "state", "ok" if ok else "bad", t["state"], pstate.get(str(tid)))
            ok = sw[2].get(tid, 0) > sw[1].get(tid, 0)
            print("kptrace", name, "woken", "ok" if ok else "bad", sw[1].get(tid), sw[2].get(tid))
# Text: a thread's Python frames innermost last by default, first with --reverse.
def blocks(path):
    cur, out = None, {}
    for l in open(path):
        m = re.match(r'Thread (\d+) "([^"]*)"', l)
        if m:
            cur = out.setdefault(m[1], [])
        elif cur is not None and l.startswith("    ") and "[" not in l:
            cur.append(l.strip())
    return out
txt, rev = blocks(os.path.join(d, "dump.txt")), blocks(os.path.join(d, "rev.txt"))
napl = ours("nap", nap)
a = [v for v in txt.values() if napl in v]
b = [v for v in rev.values() if napl in v]
print("text", "order", "ok" if a and a[0][-1] == napl and b and b[0][0] == napl else "bad", a[:1], b[:1])
EOF
    for label in json nonblocking kernel kptrace; do
        for th in napper locked cruncher main; do
            check "$tag: $label: $th thread with its exact Python stack" grep -q "^$label $th stack ok" "$d/check"
        done
        for th in napper locked cruncher; do
            check "$tag: $label: $th named$([[ "$tag" < python3.14 ]] && echo " (OS names: 3.14+ only)")" \
                grep -q "^$label $th name ok" "$d/check"
        done
        for th in napper locked; do
            check "$tag: $label: $th off CPU" grep -q "^$label $th off_cpu ok" "$d/check"
        done
    done
    check "$tag: text innermost last, --reverse innermost first" grep -q '^text order ok' "$d/check"
    check "$tag: --locals: nap()'s locals with their values$([[ "$tag" == *3.11* || "$tag" == *3.12* ]] && echo " (null before 3.13)")" \
        grep -q '^json locals ok' "$d/check"
    check "$tag: the GIL holder is the computing thread" \
        grep -q '^json gil ok' "$d/check"
    if grep -q "snapshot: in the kernel" "$d/kernel.err"; then
        for label in kernel kptrace; do
            check "$tag: --kernel$([ $label = kptrace ] && echo " --no-bpf"): snapshot \"$([ $label = kernel ] && echo kernel || echo ptrace)\"" \
                grep -q "^$label snapshot ok" "$d/check"
            for th in napper locked; do
                check "$tag: --kernel$([ $label = kptrace ] && echo " --no-bpf"): $th's leaf kernel frames: its wait, as /proc/TID/stack lists it" \
                    grep -q "^$label $th kstack ok" "$d/check"
            done
        done
        check "$tag: --kernel: only runnable threads stopped (for their registers)" \
            grep -q "^kernel stops ok" "$d/check"
        for th in napper locked; do
            check "$tag: --kernel: $th's state letter from the iterator is /proc's" \
                grep -q "^kernel $th state ok" "$d/check"
            check "$tag: --kernel: $th read in the kernel, never stopped (no context switch)" \
                grep -q "^kernel $th unstopped ok" "$d/check"
            check "$tag: --kernel --no-bpf: $th stopped (the control: its switch count grows)" \
                grep -q "^kptrace $th woken ok" "$d/check"
        done
    else
        skip "$tag: --kernel in-kernel snapshot" "no BPF here: $(head -c 200 "$d/kernel.err")"
    fi
    grep -q ' bad' "$d/check" && sed 's/^/# /' "$d/check" | head -20
    exec 3>&-
    wait_until 10 bash -c "! kill -0 $pid 2> /dev/null" || kill $pid 2> /dev/null
    wait $pid 2> /dev/null
done
