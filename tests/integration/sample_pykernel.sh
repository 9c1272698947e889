#!/usr/bin/env bash
# In-kernel Python frames: on a steady CPU-bound workload (every interpreter of tests/pythons:
# Debian 3.11, pyenv 3.11.7, 3.12.1, 3.13.0, and 3.14 / 3.15 from build/pythons when fetched) the BPF program delivers the frame
# chains, user space only names code objects (remote reads per sample near 0), and the folded
# stacks equal those of the remote path (--no-bpf); 3.12+ code objects are told apart by their
# numbered identity block alone (no qualname read). Deep recursion: 1000 frames whole, beyond the 1024-frame cap flagged as cut.
# Prints the in-kernel time per sample at several depths.
source "$(dirname "$0")/../lib.sh"
need_root
S=$BUILD/pyebpf-sample
need_file "$S"

cat > "$TMP/work.py" <<'EOF'
import sys, time
def inner(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def middle():
    return inner(20000)
def outer(deadline):
    while time.time() < deadline:
        middle()
def main():
    print("READY", flush=True); outer(time.time() + float(sys.argv[1]))
main()
EOF
cat > "$TMP/deep.py" <<'EOF'
import sys, time
def rec(d, deadline):
    if d > 0:
        return rec(d - 1, deadline)
    s = 0; print("READY", flush=True)
    while time.time() < deadline:
        for i in range(10000):
            s += i
    return s
sys.setrecursionlimit(100000)
rec(int(sys.argv[1]), time.time() + float(sys.argv[2]))
EOF

cat > "$TMP/threads.py" <<'EOF'
import sys, threading, time
N = int(sys.argv[1])
g = {"started": threading.Barrier(N + 1), "time": time, "deadline": time.time() + float(sys.argv[2])}
for i in range(N):  # each thread in a function of its own, made at run time
    exec("def t%d():\n    started.wait()\n    while time.time() < deadline:\n        sum(range(1000))\n" % i, g)
threads = [threading.Thread(target=g["t%d" % i]) for i in range(N)]
for t in threads:
    t.start()
g["started"].wait()
print("READY", flush=True)
for t in threads:
    t.join()
EOF

# Bounds (the workload's stack is fixed: 5 frames, 4 while outer calls time.time())
MIN_SAMPLES=50              # Python samples a run must hold
MIN_IN_KERNEL_PCT=95        # samples whose chain comes from the kernel
MIN_FRAMES_PER_SAMPLE=4.9   # python_frames_in_kernel per in-kernel sample
MAX_FRAMES_PER_SAMPLE=5
MAX_STEADY_READS=0.05       # steady remote reads per sample
MIN_CHAIN_PCT=95            # samples with main;outer;middle;inner and their lines
MIN_CUT_PCT=95              # depth 1500: in-kernel chains flagged as cut at the cap
MAX_BPF_NS=1000000          # depth 1000: in-kernel time per sample
MAX_WINDOW_MISSES=3         # frame windows refused (from below a mapping) in a run of one thread:
                            # the page is then remembered for the thread (one fault, not one a sample)
MIN_EARLY_CODES=4           # code objects on the stack at attach (<module>, main, outer, middle, inner:
                            # inner may have returned) named before any capture
THREADS=8                   # threads.py: threads, each in its own function
MAX_CFRAME_READS=0.05       # _PyCFrame reads per sample outside the stack copy (steady: none)

# stacks FILE SHARE: the distinct stacks holding >= SHARE of the samples, sorted
stacks() { awk -v p="$2" '{ n = $NF; $NF = ""; c[$0] += n; t += n } END { for (s in c) if (c[s] >= p * t) print s }' "$1" | sort; }

steady() {
    local name=$1 py=$2 pid f=$TMP/$1
    # runs until killed below (at most 60 s): three runs of the sampler, each setting up anew,
    # take longer than their 7 s of sampling on a loaded machine
    "$py" "$TMP/work.py" 60 > "$f.out" &
    pid=$!
    wait_line 30 "$f.out" READY # start-up (imports) done: the steady part is sampled
    # Two runs, 1 s and 4 s: the difference of their remote reads is the steady part (each run
    # attaches anew and reads the runtime, the thread list and the code objects once).
    "$S" -q -F 199 -d 1 --python-only --stats -o "$f.short.folded" "$pid" 2> "$f.short.stats"
    "$S" -q -F 199 -d 4 --python-only --bpf-stats -o "$f.folded" "$pid" 2> "$f.stats"
    "$S" -q -F 99 -d 2 --no-bpf --stats -o "$f.remote.folded" "$pid" 2> "$f.remote.stats"
    kill "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    local samples inkernel frames reads rps chain s1 r1
    samples=$(stat_of python_stack_samples "$f.stats")
    s1=$(stat_of python_stack_samples "$f.short.stats")
    r1=$(stat_of remote_reads "$f.short.stats")
    inkernel=$(stat_of python_samples_in_kernel "$f.stats")
    frames=$(stat_of python_frames_in_kernel "$f.stats")
    reads=$(stat_of remote_reads "$f.stats")
    # awk reads a '>' in a print statement's arguments as an output redirection unless it is
    # parenthesised: the ratio is computed in an assignment, where '>' can only compare.
    rps=$(awk -v r="$reads" -v r1="${r1:-0}" -v s="$samples" -v s1="${s1:-0}" \
        'BEGIN { v = s > s1 ? (r - r1) / (s - s1) : 99; printf "%.4f", v }')
    chain=$(sum "$f.folded" '^<module> \([^;]*work.py:14\);main \([^;]*:13\);outer \([^;]*:11\);middle \([^;]*:8\);inner \([^;]*:[45]\) ')
    local idents ireads cframes
    idents=$(stat_of python_kernel_idents_per_sample "$f.stats")
    ireads=$(stat_of python_kernel_ident_reads_per_sample "$f.stats")
    cframes=$(stat_of python_kernel_cframe_reads_per_sample "$f.stats")
    echo "# $name: samples=$samples in_kernel=$inkernel frames_in_kernel=$frames remote_reads=$reads" \
        "(1 s run: $r1 for $s1 samples) steady_reads_per_sample=$rps chain=$chain idents_per_sample=$idents" \
        "ident_reads_per_sample=$ireads cframe_reads_per_sample=$cframes bpf_ns_per_sample=$(stat_of bpf_ns_per_sample "$f.stats")"
    if ! ge "$samples" $MIN_SAMPLES; then
        fail "$name: enough Python samples" "${samples:-none}"
        return
    fi
    check "$name: >= $MIN_IN_KERNEL_PCT% of the Python samples come with their chain from the kernel ($inkernel/$samples)" \
        share_ge "$inkernel" "$samples" $MIN_IN_KERNEL_PCT
    # 5 frames, or 4 while outer calls time.time()
    check "$name: python_frames_in_kernel $MIN_FRAMES_PER_SAMPLE-$MAX_FRAMES_PER_SAMPLE per in-kernel sample ($frames)" \
        ratio_in "$frames" "$inkernel" $MIN_FRAMES_PER_SAMPLE $MAX_FRAMES_PER_SAMPLE
    # The only steady read: the code objects' headers, re-validated in one batched call once per
    # trust window (1 s), i.e. ~1 call per second whatever the frequency (0.005-0.03 here).
    check "$name: steady remote reads per sample <= $MAX_STEADY_READS ($rps)" le "$rps" $MAX_STEADY_READS
    # 3.11 and 3.12 keep the current frame in the evaluation loop's C frame: found in the
    # record's stack copy, not read on its own (3.13+ have no such step: 0).
    check "$name: the current frame taken from the stack copy (${cframes:-none} _PyCFrame reads per sample <= $MAX_CFRAME_READS)" \
        le "${cframes:-99}" $MAX_CFRAME_READS
    local misses
    misses=$(stat_of python_kernel_window_misses "$f.stats")
    check "$name: frame windows refused <= $MAX_WINDOW_MISSES in $samples samples (${misses:-none})" \
        le "${misses:-99}" $MAX_WINDOW_MISSES
    check "$name: main;outer;middle;inner with lines in >= $MIN_CHAIN_PCT% of samples ($chain/$samples)" \
        share_ge "$chain" "$samples" $MIN_CHAIN_PCT
    local early
    early=$(stat_of python_codes_named_at_attach "$f.short.stats")
    check "$name: the code objects on the stack at attach named then (${early:-none} >= $MIN_EARLY_CODES)" \
        ge "${early:-0}" $MIN_EARLY_CODES
    # Each stack holding >= 10 % of one profile is seen in the other (a stack near a fixed share
    # may fall either side of it in a 200-sample run).
    stacks "$f.folded" 0.10 > "$f.k"
    stacks "$f.remote.folded" 0.10 > "$f.r"
    stacks "$f.folded" 0 > "$f.k.all"
    stacks "$f.remote.folded" 0 > "$f.r.all"
    check "$name: the same stacks as the remote path (--no-bpf)" \
        sh -c "[ -s '$f.k' ] && [ -s '$f.r' ] && ! comm -23 '$f.k' '$f.r.all' | grep -q . && ! comm -23 '$f.r' '$f.k.all' | grep -q ."
}

# THREADS threads, each in a function of its own, running when the sampler attaches: every
# thread's function is named at attach (not at the thread's first capture, which would wake the
# collector once per thread) and each thread's samples show its own function.
threads() {
    local name=$1 py=$2 pid f=$TMP/$1.threads
    "$py" "$TMP/threads.py" $THREADS 60 > "$f.out" &
    pid=$!
    wait_line 30 "$f.out" READY
    "$S" -q -F 199 -d 1 --threads --stats -o "$f.folded" "$pid" 2> "$f.stats"
    kill "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    local early own=0 i
    early=$(stat_of python_codes_named_at_attach "$f.stats")
    for i in $(seq 0 $((THREADS - 1))); do
        grep -q "^thread [0-9]*[^;]*;\(.*;\)\?t$i (<string>:[34])" "$f.folded" && own=$((own + 1))
    done
    check "$name: $THREADS threads, the code objects on their stacks named at attach (${early:-none} >= $THREADS)" \
        ge "${early:-0}" $THREADS
    check "$name: each thread's samples show its own function ($own of $THREADS)" test "$own" = $THREADS
}

# versioned NAME PY: 3.12 to 3.15 number each code object (co_version) six ints after
# co_firstlineno, where the collector reads it (found here from memory alone, tests/py/co_version.py);
# the program then tells code objects apart by their identity block and reads no qualname
# (python_kernel_qualname_reads_per_sample of steady's 4 s run). 3.11 has no such number.
versioned() {
    local name=$1 py=$2 minor got first ver q
    minor=$("$py" -c 'import sys; print(sys.version_info[1])')
    got=$("$py" "$ROOT/tests/py/co_version.py")
    first=$(sed -n 's/^firstlineno=\([0-9a-z]*\) .*/\1/p' <<< "$got")
    ver=$(sed -n 's/.* version=\([0-9a-z]*\)$/\1/p' <<< "$got")
    q=$(stat_of python_kernel_qualname_reads_per_sample "$TMP/$name.stats")
    if [ "$minor" -ge 12 ]; then
        check "$name: co_version lies six ints after co_firstlineno ($got)" \
            test "$ver" != none -a "$first" != none -a "$((ver - first))" = 24 2> /dev/null
        check "$name: no qualname read in the kernel (${q:-none} per sample)" test "${q:-x}" = 0.00
    else
        check "$name: no co_version ($got)" test "$ver" = none
        check "$name: each code object's qualname read in the kernel (${q:-none} per sample)" ge "$q" 1
    fi
}

# every interpreter of tests/pythons (3.14: tagged f_executable, owners 0..4)
mapfile -t PYS < <(test_pythons --plain)
for line in "${PYS[@]}"; do
    read -r label py why <<< "$line"
    if [ "$py" = - ]; then skip "$label: in-kernel chains" "$why"; continue; fi
    steady "$label" "$py"
    versioned "$label" "$py"
    threads "$label" "$py"
done

# deep PY DEPTH: samples a recursion DEPTH deep; stats in $TMP/deep-DEPTH.*
deep() {
    local py=$1 d=$2 pid f=$TMP/deep-$2
    "$py" "$TMP/deep.py" "$d" 60 > "$f.out" & # until killed below
    pid=$!
    wait_line 30 "$f.out" READY # the recursion is DEPTH deep
    "$S" -q -F 199 -d 3 --python-only --bpf-stats -o "$f.folded" "$pid" 2> "$f.stats"
    kill "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    echo "# depth $d: in_kernel=$(stat_of python_samples_in_kernel "$f.stats")" \
        "frames_per_sample=$(stat_of python_frames_per_sample "$f.stats")" \
        "truncated=$(stat_of python_kernel_truncated "$f.stats")" \
        "bpf_ns_per_sample=$(stat_of bpf_ns_per_sample "$f.stats")"
}

PY312=$(first_python pyenv-3.12.1)
[ -n "$PY312" ] || { skip "deep recursion" "$(test_pythons pyenv-3.12.1)"; exit 0; }
for d in 10 100 1000 1500; do deep "$PY312" "$d"; done
k=$(stat_of python_samples_in_kernel "$TMP/deep-1000.stats")
check "depth 1000: chains from the kernel (${k:-0})" ge "$k" $MIN_SAMPLES
check "depth 1000: no chain cut" test "$(stat_of python_kernel_truncated "$TMP/deep-1000.stats")" = 0
# every sample of the workload holds rec 1001 times (frames shown root first)
full=$(awk '{ n = gsub(/rec \(/, "&"); if (n >= 1001) s += $NF } END { print s + 0 }' "$TMP/deep-1000.folded")
all=$(stat_of python_stack_samples "$TMP/deep-1000.stats")
check "depth 1000: >= $MIN_CHAIN_PCT% of samples hold all 1001 rec frames ($full/$all)" \
    share_ge "$full" "$all" $MIN_CHAIN_PCT
k=$(stat_of python_samples_in_kernel "$TMP/deep-1500.stats")
t=$(stat_of python_kernel_truncated "$TMP/deep-1500.stats")
check "depth 1500: the kernel's chains are flagged as cut at the cap ($t/$k)" \
    share_ge "$t" "$k" $MIN_CUT_PCT $MIN_SAMPLES
ns=$(stat_of bpf_ns_per_sample "$TMP/deep-1000.stats")
check "depth 1000: in-kernel time per sample < $MAX_BPF_NS ns (${ns} ns)" le "$ns" $MAX_BPF_NS
