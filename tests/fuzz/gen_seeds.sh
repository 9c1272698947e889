#!/usr/bin/env bash
# Makes seed corpora from real files: tests/fuzz/gen_seeds.sh OUTDIR TARGET...
# OUTDIR/TARGET/ gets inputs in the layout that tests/fuzz/fuzz_TARGET.c expects. Sources: the
# Pythons on this machine (3.12 -X perf maps, 3.13 -X perf_jit dumps, code objects' location
# tables, 3.13's _Py_DebugOffsets), small ELF files and their .eh_frame sections, and the project's
# own jitprog (jitdump + perf map sinks) when it is built. A source that is missing is skipped with
# a note; the committed seeds in tests/fuzz/seeds/ still give every target a start.
set -u
out=${1:?outdir}; shift
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PY311=${PY311:-/root/.pyenv/versions/3.11.7/bin/python3.11}
PY312=${PY312:-/root/.pyenv/versions/3.12.1/bin/python3.12}
PY313=${PY313:-/root/.pyenv/versions/3.13.0/bin/python3.13}
TMPD=$(mktemp -d /tmp/pyebpf-seeds.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT
note() { echo "gen_seeds: $*" >&2; }

# A small Python workload whose functions end up in maps, dumps and location tables.
cat > "$TMPD/work.py" << 'PY'
import json, re
def leaf(x):
    return x * 2 + 1
class K:
    def method(self, n):
        return sum(leaf(i) for i in range(n))
def outer(n):
    try:
        return K().method(n) + len(json.dumps({"a": [1, 2, n]})) + len(re.findall(r"\d", str(n)))
    except ValueError:
        return -1
for i in range(200):
    outer(i)
PY

# Every small ELF file we use (ELF symbol reader, .eh_frame source).
small_elfs() {
    local f
    for f in "$PY313" /root/.pyenv/versions/3.13.0/lib/libpython3.so /usr/bin/true /usr/bin/env \
        "$BUILD/progs/jitprog" "$BUILD/progs/jitprog-nofp" \
        /usr/lib/x86_64-linux-gnu/libdl.so.2 /usr/lib/x86_64-linux-gnu/libutil.so.1; do
        [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 65536 ] && echo "$f"
    done
    # a relocatable object and a shared object made here, with and without symbols
    printf 'int g(int x){return x*3;}\nint f(int x){return g(x)+1;}\n' > "$TMPD/t.c"
    if cc -O1 -c -o "$TMPD/t.o" "$TMPD/t.c" 2> /dev/null; then echo "$TMPD/t.o"; fi
    if cc -O1 -shared -fPIC -o "$TMPD/t.so" "$TMPD/t.c" 2> /dev/null; then
        echo "$TMPD/t.so"
        strip -o "$TMPD/t-stripped.so" "$TMPD/t.so" && echo "$TMPD/t-stripped.so"
    fi
    # .debug_frame instead of .eh_frame
    if cc -O1 -g -fno-asynchronous-unwind-tables -fno-unwind-tables -shared -fPIC \
        -o "$TMPD/t-debugframe.so" "$TMPD/t.c" 2> /dev/null; then echo "$TMPD/t-debugframe.so"; fi
}

# jitprog with the jitdump and perf map sinks: jit-PID.dump in $TMPD/jit, its perf map (always
# in /tmp) moved there too.
run_jitprog() {
    local p=$BUILD/progs/jitprog pid
    [ -x "$p" ] || { note "no $p (make all builds it)"; return 1; }
    [ -n "${JITPROG_DONE:-}" ] && return 0
    JITPROG_DONE=1
    mkdir -p "$TMPD/jit"
    pid=$(timeout 20 "$p" --sinks jitdump,perfmap --jitdump-dir "$TMPD/jit" --regions 12 2> /dev/null |
        awk '/^ready/ { print $2 }')
    [ -n "$pid" ] || { note "jitprog did not run"; return 1; }
    [ -f "/tmp/perf-$pid.map" ] && mv "/tmp/perf-$pid.map" "$TMPD/jit/"
    return 0
}

gen_jitdump_read() {
    local d=$1 n=0 f pid
    if [ -x "$PY313" ]; then
        ( cd "$TMPD" && exec "$PY313" -X perf_jit work.py ) > /dev/null 2>&1 &
        pid=$!; wait $pid
        f=/tmp/jit-$pid.dump
        if [ -f "$f" ]; then
            head -c 32768 "$f" > "$d/cpython313-perf_jit-32k.dump"
            head -c 4096 "$f" > "$d/cpython313-head4k.dump"; n=$((n + 2)); rm -f "$f"
        fi
    fi
    run_jitprog && for f in "$TMPD"/jit/jit-*.dump; do
        [ -f "$f" ] && cp "$f" "$d/jitprog.dump" && n=$((n + 1))
    done
    python3 "$ROOT/tests/fuzz/synth_jitdump.py" "$d" && n=$((n + 5))
    note "jitdump_read: $n seeds"
}

gen_perfmap_read() {
    local d=$1 n=0 f pid
    if [ -x "$PY312" ]; then
        ( cd "$TMPD" && exec "$PY312" -X perf work.py ) > /dev/null 2>&1 &
        pid=$!; wait $pid
        f=/tmp/perf-$pid.map
        [ -f "$f" ] && cp "$f" "$d/cpython312-perf.map" && rm -f "$f" && n=$((n + 1))
    fi
    run_jitprog && for f in "$TMPD"/jit/perf-*.map; do
        [ -f "$f" ] && cp "$f" "$d/jitprog.map" && n=$((n + 1))
    done
    printf '7f0000001000 40 py::f:/x.py\n0x7f0000001040 0x10 with spaces in name\nbad line\n7f0000001000 8 later wins\n7f00000010a0 8 no newline' \
        > "$d/synth.map" && n=$((n + 1))
    note "perfmap_read: $n seeds"
}

gen_elfsym() {
    local d=$1 n=0 f
    for f in $(small_elfs); do cp "$f" "$d/$(basename "$f").elf"; n=$((n + 1)); done
    note "elfsym: $n seeds"
}

gen_cfi_read() {
    local d=$1 n=0 f
    for f in $(small_elfs); do
        # layout of fuzz_cfi_read.c: flag, vaddr, pc, hdr_vaddr, hdr_size, header bytes, section bytes
        python3 - "$f" "$d/$(basename "$f")" << 'PY' && n=$((n + 1))
import struct, subprocess, sys
path, out = sys.argv[1], sys.argv[2]
secs = {}
for line in subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout.splitlines():
    parts = line.replace("[ ", "[").split()
    if len(parts) > 5 and parts[1] in (".eh_frame", ".eh_frame_hdr", ".debug_frame"):
        secs[parts[1]] = (int(parts[3], 16), int(parts[4], 16), int(parts[5], 16))
blob = open(path, "rb").read()
def sec(name):
    addr, off, size = secs[name]
    return addr, blob[off:off + size]
made = 0
if ".eh_frame" in secs:
    addr, eh = sec(".eh_frame")
    haddr, hdr = sec(".eh_frame_hdr") if ".eh_frame_hdr" in secs else (0, b"")
    for flag, h in ((2, hdr), (0, b"")):
        open(f"{out}.eh{flag}", "wb").write(struct.pack("<BQQQI", flag, addr, addr, haddr, len(h)) + h + eh)
        made += 1
if ".debug_frame" in secs:
    _, df = sec(".debug_frame")
    open(f"{out}.debug_frame", "wb").write(struct.pack("<BQQQI", 1, 0, 0x1000, 0, 0) + df)
    made += 1
sys.exit(0 if made else 1)
PY
    done
    # the CFI a JIT publishes: UNWINDING_INFO of jitprog's dump, placed where perf maps it
    if run_jitprog; then
        for f in "$TMPD"/jit/jit-*.dump; do
            [ -f "$f" ] || continue
            python3 - "$f" "$d/jitprog" << 'PY' && n=$((n + 1))
import struct, sys
data = open(sys.argv[1], "rb").read()
off, unw, made = 40, None, 0
while off + 16 <= len(data) and made < 4:
    rid, size, _ = struct.unpack_from("<IIQ", data, off)
    if size < 16:
        break
    if rid == 4:
        usize, hsize, _ = struct.unpack_from("<QQQ", data, off + 16)
        blob = data[off + 40:off + 40 + usize]
        unw = (blob[:usize - hsize], blob[usize - hsize:])
    elif rid == 0 and unw:
        addr, csize = struct.unpack_from("<QQ", data, off + 32)[0], struct.unpack_from("<Q", data, off + 40)[0]
        eh, hdr = unw
        eh_addr = addr + ((csize + 7) & ~7)
        for flag, h in ((2, hdr), (0, b"")):
            open(f"{sys.argv[2]}-{made}.eh{flag}", "wb").write(
                struct.pack("<BQQQI", flag, eh_addr, addr + 5, eh_addr + len(eh), len(h)) + h + eh)
        made += 1
        unw = None
    off += size
sys.exit(0 if made else 1)
PY
        done
    fi
    note "cfi_read: $n files gave seeds"
}

gen_linetable() {
    local d=$1 py n=0
    for py in "$PY311" "$PY312" "$PY313"; do
        [ -x "$py" ] || continue
        # layout of fuzz_linetable.c: u32 co_firstlineno, u32 instruction offset, then co_linetable
        n=$((n + $("$py" - "$d" "$TMPD/work.py" << 'PY'
import struct, sys, types, json, re
out, work = sys.argv[1], sys.argv[2]
codes = [compile(open(work).read(), work, "exec")]
for m in (json.decoder, re._parser):
    codes.append(compile(open(m.__file__).read(), m.__file__, "exec"))
seen = 0
def walk(c):
    global seen
    if seen >= 40:
        return
    if len(c.co_linetable) > 8:
        off = len(c.co_code) // 4
        with open(f"{out}/py{sys.version_info[0]}{sys.version_info[1]}-{seen}-{c.co_name[:20]}", "wb") as f:
            f.write(struct.pack("<II", c.co_firstlineno, off) + c.co_linetable)
        seen += 1
    for k in c.co_consts:
        if isinstance(k, types.CodeType):
            walk(k)
for c in codes:
    walk(c)
print(seen)
PY
        )))
    done
    note "linetable: $n seeds"
}

gen_pyrt() {
    local d=$1 lib=/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0
    # layout of fuzz_pyrt.c: the start of _PyRuntime (_Py_DebugOffsets)
    if [ -f "$lib" ] && objcopy -O binary --only-section=.PyRuntime "$lib" "$TMPD/rt" 2> /dev/null; then
        head -c 1024 "$TMPD/rt" > "$d/cpython313-PyRuntime"
        note "pyrt: 1 seed from $lib"
    else
        note "pyrt: no 3.13 libpython with .PyRuntime"
    fi
}

gen_folded() {
    local d=$1
    printf 'main;outer (x.py:10);inner (x.py:3) 7\nmain;outer (x.py:10) 2\n' > "$d/simple.folded"
    printf 'thread 12 (python3);_start;main;PyEval_EvalCode;py::f:/x.py;g (y.py:1);do_syscall_64_[k] 3\r\n' \
        > "$d/kinds.folded"
    printf 'thread 7;a;<module> (<frozen runpy>:88);[unknown] 1\n# comment\n\tb;c\t 18446744073709551615\nbad\n;; 4\nx_[j];[3 frames truncated] 2' \
        > "$d/edge.folded"
    python3 -c 'print(";".join("f%d (m.py:%d)" % (i, i) for i in range(2100)), 5)' > "$d/deep.folded"
    # a real profile's shape: Python's own stack of a workload, folded by a tracer
    python3 - "$TMPD/work.py" > "$d/traced.folded" << 'PY'
import collections, sys
counts = collections.Counter()
def tracer(frame, event, arg):
    if event == "call":
        stack = []
        f = frame
        while f:
            stack.append("%s (%s:%d)" % (f.f_code.co_qualname, f.f_code.co_filename, f.f_lineno))
            f = f.f_back
        counts["thread 1 (python3);main;" + ";".join(reversed(stack))] += 1
sys.setprofile(tracer)
exec(compile(open(sys.argv[1]).read(), "/app/work.py", "exec"), {"__name__": "__main__"})
sys.setprofile(None)
for stack, n in counts.most_common(40):
    print(stack, n)
PY
    note "folded: 5 seeds"
}

for t in "$@"; do
    mkdir -p "$out/$t"
    if declare -F "gen_$t" > /dev/null; then "gen_$t" "$out/$t"; else note "no generator for $t"; fi
done
exit 0
