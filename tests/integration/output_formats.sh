#!/usr/bin/env bash
# Output formats end to end through `render` (tests/progs/render_test runs render_main): folded
# round trip, speedscope against speedscope's published schema, pprof through protoc with
# profile.proto written here from the public spec, SVG well-formed and offline, the summary, atomic
# replacement of a planted symlink, and scripts/pyebpf-fold-perf on real `perf script` output.
source "$(dirname "$0")/../lib.sh"

RENDER="$BUILD/progs/render_test"
[ -x "$BUILD/pyebpf-sample" ] && "$BUILD/pyebpf-sample" render --help > /dev/null 2>&1 &&
    RENDER_CMD=("$BUILD/pyebpf-sample" render) || RENDER_CMD=("$RENDER")
need_file "$RENDER"
need_cmd python3
render() { "${RENDER_CMD[@]}" "$@"; }

# ---- a realistic input: 3 threads; Python, native, JIT, kernel frames; deep recursion; UTF-8 ----
python3 - > "$TMP/in.folded" << 'EOF'
base = "_start;__libc_start_main;main;Py_BytesMain;Py_RunMain;<module> (/srv/app/main.py:120)"
def t(tid, comm): return "thread %d (%s)" % (tid, comm)
lines = []
srv = t(4101, "python3") + ";" + base + ";serve (/srv/app/main.py:88);handle (/srv/app/http.py:41)"
lines.append(srv + ";parse (/srv/app/proto.py:12);json.loads (/usr/lib/python3.12/json/__init__.py:346);"
             "json.decoder.JSONDecoder.decode (/usr/lib/python3.12/json/decoder.py:337);scanstring 420")
lines.append(srv + ";py::compute:/srv/app/work.py;compute (/srv/app/work.py:7);_PyEval_EvalFrameDefault 1300")
lines.append(srv + ";py::compute:/srv/app/work.py;compute (/srv/app/work.py:9);PyNumber_Multiply;long_mul 610")
lines.append(t(4101, "python3") + ";" + base + ";serve (/srv/app/main.py:88);recv (/srv/app/net.py:20);"
             "__libc_recv;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];__x64_sys_recvfrom_[k];"
             "tcp_recvmsg_[k];schedule_[k] 275")
deep = ";".join("walk (/srv/app/tree.py:%d)" % (30 + i % 3) for i in range(300))
lines.append(t(4102, "worker-1") + ";start_thread;thread_run;worker (/srv/app/pool.py:30);" + deep + ";sqrt 333")
lines.append(t(4102, "worker-1") + ";start_thread;thread_run;worker (/srv/app/pool.py:30);[unknown] 7")
lines.append(t(4103, "wörker-λ") + ";start_thread;_find_and_load (<frozen importlib._bootstrap>:1360);"
             "naïve_λ (/srv/app/ünï.py:3);__memcpy_avx_unaligned_erms 55")
lines.append(srv + ";parse (/srv/app/proto.py:12);json.loads (/usr/lib/python3.12/json/__init__.py:346);"
             "json.decoder.JSONDecoder.decode (/usr/lib/python3.12/json/decoder.py:337);scanstring 80")  # dup: merges
print("\n".join(lines))
print("this line has no count")
print("a;b;c notanumber")
print("a;b;c 99999999999999999999999999")
EOF
TOTAL=$(python3 -c 'import sys
t=0
for l in open(sys.argv[1]):
    p=l.rsplit(" ",1)
    if len(p)==2 and p[1].strip().isdigit() and len(p[1].strip())<19: t+=int(p[1])
print(t)' "$TMP/in.folded")

# ---- folded: round trip keeps every stack and count; malformed lines are reported ----
render "$TMP/in.folded" -o "$TMP/out.folded" 2> "$TMP/render.err"
check "render folded -> folded succeeds" test -s "$TMP/out.folded"
check "malformed lines counted, not fatal" grep -q "skipped 3 malformed" "$TMP/render.err"
python3 - "$TMP/in.folded" "$TMP/out.folded" > "$TMP/roundtrip.txt" << 'EOF'
import sys, collections
def load(p):
    c = collections.Counter()
    for l in open(p, encoding="utf-8"):
        s, _, n = l.rstrip("\n").rpartition(" ")
        if s and n.isdigit() and len(n) < 19: c[s] += int(n)
    return c
a, b = load(sys.argv[1]), load(sys.argv[2])
print("same" if a == b else "differ: %s" % (set(a.items()) ^ set(b.items())))
EOF
check "folded round trip: same stacks and counts" grep -qx same "$TMP/roundtrip.txt"
check "summary on stderr: top function by self" grep -q "_PyEval_EvalFrameDefault" "$TMP/render.err"

# ---- format from the extension, -f overrides ----
render "$TMP/in.folded" -o "$TMP/a.svg" -q 2> /dev/null
render "$TMP/in.folded" -o "$TMP/a.txt" -f svg -q 2> /dev/null
check "extension .svg -> SVG" grep -q '<svg ' "$TMP/a.svg"
check "-f svg overrides the extension" grep -q '<svg ' "$TMP/a.txt"
render "$TMP/in.folded" -q > "$TMP/stdout.folded" 2> /dev/null
check "no -o: folded on stdout" cmp -s "$TMP/stdout.folded" "$TMP/out.folded"

# ---- SVG: well-formed XML, self-contained, every sample drawn ----
render "$TMP/in.folded" -o "$TMP/out.svg" -q --title "pyebpf: python3 /srv/app/main.py"
python3 - "$TMP/out.svg" "$TOTAL" > "$TMP/svg.txt" << 'EOF'
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
frames = root.findall(".//s:g[@class='f']", ns)
kinds = {g.get("data-k") for g in frames}
rootw = [int(g.get("data-w")) for g in frames if g.get("data-d") == "0"]
ok = (root.get("data-total") == sys.argv[2] and rootw == [int(sys.argv[2])]
      and {"py", "n", "jit", "k"} <= kinds and root.find(".//s:script", ns) is not None)
print("ok" if ok else "bad total=%s root=%s kinds=%s" % (root.get("data-total"), rootw, kinds))
EOF
check "SVG parses as XML; total, root width and all frame kinds right" grep -qx ok "$TMP/svg.txt"
check "SVG loads nothing external" bash -c "! grep -Eo '(href|src)=\"[a-z]+:' '$TMP/out.svg' | grep -q ."
check "SVG title and subtitle" grep -q "pyebpf: python3 /srv/app/main.py.*$TOTAL samples" <(tr -d '\n' < "$TMP/out.svg")
render "$TMP/in.folded" -o "$TMP/icicle.svg" -q --reverse
check "--reverse draws an icicle" grep -q 'data-icicle="1"' "$TMP/icicle.svg"

# ---- atomic replacement: a symlink planted at the path is replaced, never followed ----
echo "precious" > "$TMP/victim"
ln -s "$TMP/victim" "$TMP/planted.svg"
render "$TMP/in.folded" -o "$TMP/planted.svg" -q
check "planted symlink: target untouched" grep -qx precious "$TMP/victim"
check "planted symlink: path is now a regular file" test -f "$TMP/planted.svg" -a ! -L "$TMP/planted.svg"
check "no temporary files left behind" bash -c "! ls -A '$TMP' | grep -q '\.tmp$'"
render "$TMP/in.folded" -o "$TMP/no/such/dir/x.svg" -q 2> "$TMP/nodir.err"
rc=$?
check "missing directory: exit status 1 and the reason" test $rc -eq 1 -a -n "$(grep 'No such file' "$TMP/nodir.err")"

# ---- speedscope: validates against the published schema; stacks and weights = folded ----
if [ ! -d "$JS/ajv" ] && command -v npm > /dev/null; then
    make -s -C "$ROOT" BUILD="$BUILD" js-deps > "$TMP/npm.log" 2>&1 || true
fi
render "$TMP/in.folded" -o "$TMP/out.json" -q
if ! command -v node > /dev/null || [ ! -d "$JS/speedscope" ] || [ ! -d "$JS/ajv" ]; then
    skip "speedscope schema" "needs node + npm packages speedscope, ajv (make js-deps)"
else
    if NODE_PATH="$JS" node "$ROOT/tests/js/validate_speedscope.js" "$TMP/out.json" > "$TMP/ss.json" 2> "$TMP/ss.err"; then
        pass "speedscope JSON validates against speedscope's file-format-schema.json"
    else
        fail "speedscope JSON validates against speedscope's file-format-schema.json" "$(head -c 300 "$TMP/ss.err")"
    fi
    python3 - "$TMP/ss.json" "$TMP/out.folded" > "$TMP/ss.txt" << 'EOF'
import sys, json, collections
d = json.load(open(sys.argv[1]))
want = collections.Counter()
for l in open(sys.argv[2], encoding="utf-8"):
    s, _, n = l.rstrip("\n").rpartition(" ")
    want[s.split(";", 1)[1]] += int(n)       # speedscope names threads instead of a root frame
got = collections.Counter()
for s in d["stacks"]:
    k, _, n = s.rpartition(" ")
    got[k] += int(n)
ok = (got == want and d["profiles"] == 3 and d["types"] == ["sampled"] and d["unit"] == "none"
      and "thread 4102 (worker-1)" in d["names"] and d["framesWithFile"] > 10)
print("ok" if ok else "bad %s" % {k: v for k, v in d.items() if k != "stacks"})
EOF
    check "speedscope: one sampled profile per thread, stacks and weights = folded" grep -qx ok "$TMP/ss.txt"
    render "$TMP/in.folded" -o "$TMP/hz.json" -q -F 99
    check "speedscope -F 99: weights in nanoseconds" python3 -c "import json,sys
d=json.load(open('$TMP/hz.json'))
s=sum(sum(p['weights']) for p in d['profiles'])
sys.exit(not (d['profiles'][0]['unit']=='nanoseconds' and s==$TOTAL*(10**9//99)))"
fi

# ---- pprof: decoded by protoc with profile.proto from the public spec ----
render "$TMP/in.folded" -o "$TMP/out.pb.gz" -q -F 250
check "pprof file is gzip" bash -c "gzip -t '$TMP/out.pb.gz'"
if ! command -v protoc > /dev/null; then
    skip "pprof decodes with protoc" "needs protoc (Debian protobuf-compiler; make setup)"
else
    cat > "$TMP/profile.proto" << 'EOF'
// github.com/google/pprof proto/profile.proto (field numbers and types of the public spec)
syntax = "proto3";
package perftools.profiles;
message Profile {
  repeated ValueType sample_type = 1;
  repeated Sample sample = 2;
  repeated Mapping mapping = 3;
  repeated Location location = 4;
  repeated Function function = 5;
  repeated string string_table = 6;
  int64 drop_frames = 7;
  int64 keep_frames = 8;
  int64 time_nanos = 9;
  int64 duration_nanos = 10;
  ValueType period_type = 11;
  int64 period = 12;
  repeated int64 comment = 13;
  int64 default_sample_type = 14;
}
message ValueType { int64 type = 1; int64 unit = 2; }
message Sample { repeated uint64 location_id = 1; repeated int64 value = 2; repeated Label label = 3; }
message Label { int64 key = 1; int64 str = 2; int64 num = 3; int64 num_unit = 4; }
message Mapping {
  uint64 id = 1; uint64 memory_start = 2; uint64 memory_limit = 3; uint64 file_offset = 4;
  int64 filename = 5; int64 build_id = 6; bool has_functions = 7; bool has_filenames = 8;
  bool has_line_numbers = 9; bool has_inline_frames = 10;
}
message Location { uint64 id = 1; uint64 mapping_id = 2; uint64 address = 3; repeated Line line = 4; bool is_folded = 5; }
message Line { uint64 function_id = 1; int64 line = 2; int64 column = 3; }
message Function { uint64 id = 1; int64 name = 2; int64 system_name = 3; int64 filename = 4; int64 start_line = 5; }
EOF
    if gzip -dc "$TMP/out.pb.gz" | protoc --proto_path="$TMP" --decode perftools.profiles.Profile \
        "$TMP/profile.proto" > "$TMP/pprof.txt" 2> "$TMP/protoc.err"; then
        pass "pprof decodes with protoc --decode perftools.profiles.Profile"
    else
        fail "pprof decodes with protoc --decode perftools.profiles.Profile" "$(head -c 200 "$TMP/protoc.err")"
    fi
    python3 - "$TMP/pprof.txt" "$TMP/out.folded" > "$TMP/pp.txt" << 'EOF'
import sys, re, collections
# A small reader for protoc's text format: nested blocks become dicts of lists.
def parse(text):
    toks = re.findall(r'"(?:[^"\\]|\\.)*"|[{}]|[A-Za-z_]+:?|-?\d+', text)
    def block(i):
        d = collections.defaultdict(list)
        while i < len(toks) and toks[i] != "}":
            key = toks[i].rstrip(":"); i += 1
            if toks[i] == "{":
                v, i = block(i + 1); i += 1
            else:
                v = toks[i]; i += 1
                v = int(v) if re.fullmatch(r"-?\d+", v) else bytes(v[1:-1], "latin1").decode("unicode_escape").encode("latin1").decode("utf-8")
            d[key].append(v)
        return d, i
    return block(0)[0]
p = parse(open(sys.argv[1], encoding="utf-8").read())
S = p["string_table"]
fn = {f["id"][0]: (S[f["name"][0]], S[f["filename"][0]] if f.get("filename") else "") for f in p["function"]}
loc = {}
for l in p["location"]:
    line = l["line"][0]
    name, file = fn[line["function_id"][0]]
    ln = line["line"][0] if line.get("line") else 0
    loc[l["id"][0]] = "%s (%s:%d)" % (name, file, ln) if ln else name
got = collections.Counter(); ns_ok = True
period = p["period"][0]
for s in p["sample"]:
    thread = [S[lb["str"][0]] for lb in s.get("label", []) if S[lb["key"][0]] == "thread"]
    stack = ";".join(thread + [loc[i] for i in reversed(s["location_id"])])
    got[stack] += s["value"][0]
    ns_ok &= s["value"][1] == s["value"][0] * period
want = collections.Counter()
for l in open(sys.argv[2], encoding="utf-8"):
    k, _, n = l.rstrip("\n").rpartition(" ")
    want[k] += int(n)
types = [(S[t["type"][0]], S[t["unit"][0]]) for t in p["sample_type"]]
ok = (got == want and ns_ok and period == 4000000 and types == [("samples", "count"), ("cpu", "nanoseconds")]
      and sum(got.values()) == sum(want.values()))
print("ok %d" % sum(got.values()) if ok else "bad types=%s period=%s ns=%s diff=%s" % (types, period, ns_ok, list(set(got.items()) ^ set(want.items()))[:3]))
EOF
    check "pprof: sample types samples/count + cpu/nanoseconds; stacks, lines, files, totals = folded" \
        grep -qx "ok $TOTAL" "$TMP/pp.txt"
fi

# ---- names that are not valid UTF-8 still give files strict parsers accept ----
printf 'thread 1 (a);main;bad\xff\xfename (/x\xc3.py:3);ctl\x01x 5\nthread 1 (a);main 2\n' > "$TMP/bad.folded"
render "$TMP/bad.folded" -o "$TMP/bad.svg" -q && render "$TMP/bad.folded" -o "$TMP/bad.json" -q &&
    render "$TMP/bad.folded" -o "$TMP/bad.pb.gz" -q
check "invalid UTF-8 names: SVG is well-formed XML" python3 -c "import xml.etree.ElementTree as E; E.parse('$TMP/bad.svg')"
check "invalid UTF-8 names: speedscope is valid JSON" python3 -c "import json; json.load(open('$TMP/bad.json', encoding='utf-8'))"
if command -v protoc > /dev/null; then
    check "invalid UTF-8 names: protoc decodes the pprof" bash -c "gzip -dc '$TMP/bad.pb.gz' |
        protoc --proto_path='$TMP' --decode perftools.profiles.Profile '$TMP/profile.proto' 2>&1 | grep -q 'bad??name'"
fi

# ---- perf script -> pyebpf-fold-perf -> render ----
FOLD="$ROOT/scripts/pyebpf-fold-perf"
cat > "$TMP/perf.txt" << 'EOF'
python3.12 4242/4243 [001] 1000.000001:    1001001 cpu-clock:ppp:
	ffffffff821ed511 do_syscall_64+0x71 ([kernel.kallsyms])
	ffffffff81000130 entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])
	          1a4c28 x_add+0x8 (/usr/lib/libpython3.12.so.1.0)
	    7fd8b38d27cc py::_find_and_load:<frozen importlib._bootstrap>+0x5 (/tmp/perf-4242.map)
	    7fd8b38d27cc py::leaf:/srv/work.py+0x5 (/tmp/perf-4242.map)
	    7fd8b38d2000 [unknown] (/usr/lib/libfoo.so)

python3.12 4242/4243 [001] 1000.001001:    1001001 cpu-clock:ppp:
	          1a4c28 x_add+0x8 (/usr/lib/libpython3.12.so.1.0)
	    7fd8b38d27cc py::leaf:/srv/work.py+0x5 (/tmp/perf-4242.map)
	    7fd8b38d2000 [unknown] (/usr/lib/libfoo.so)

EOF
"$FOLD" --threads "$TMP/perf.txt" > "$TMP/perf.folded"
printf '%s\n' "thread 4243 (python3.12);[libfoo.so];py::leaf:/srv/work.py;py::_find_and_load:<frozen importlib._bootstrap>;x_add;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k] 1" \
    "thread 4243 (python3.12);[libfoo.so];py::leaf:/srv/work.py;x_add 1" > "$TMP/perf.want"
check "fold-perf: offsets dropped, py:: kept, kernel _[k], [module] for unknown" cmp -s "$TMP/perf.folded" "$TMP/perf.want"
if [ "$(id -u)" != 0 ] || ! command -v perf > /dev/null; then
    skip "fold-perf on a real perf recording" "needs root and perf"
else
    PY=$(first_python pyenv-3.12.1)
    [ -n "$PY" ] || PY=$(command -v python3.12 || true)
    if [ -z "$PY" ]; then
        skip "fold-perf on a real perf recording" "needs python3.12 (for -X perf)"
    else
        cat > "$TMP/work.py" << 'EOF'
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def middle():
    return leaf(200000)
for _ in range(40):
    middle()
EOF
        perf record -q -F 499 --call-graph dwarf,16384 -o "$TMP/perf.data" -- "$PY" -X perf "$TMP/work.py" > /dev/null 2>&1
        perf script -i "$TMP/perf.data" 2> /dev/null > "$TMP/real.txt"
        NS=$(grep -c 'cpu-clock' "$TMP/real.txt")
        "$FOLD" "$TMP/real.txt" > "$TMP/real.folded" 2> /dev/null
        SUM=$(awk '{s += $NF} END {print s + 0}' "$TMP/real.folded")
        check "fold-perf on real perf script: every sample folded ($SUM of $NS)" test "$SUM" -eq "$NS" -a "$NS" -gt 20
        check "fold-perf on real perf script: py::leaf JIT frames" grep -q 'py::leaf:' "$TMP/real.folded"
        render "$TMP/real.folded" -o "$TMP/real.svg" -q
        check "render of real perf stacks colours py:: frames as JIT" grep -q 'data-k="jit"><title>py::leaf' "$TMP/real.svg"
    fi
fi
