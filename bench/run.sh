#!/usr/bin/env bash
# pyebpf benchmarks: one summary line per case (results and commands: docs/benchmarks.md).
#
#   [BUILD=build] [BENCH_QUICK=1] [BENCH_RUNS=N] bench/run.sh [CASE...]    (root; `make` first)
#   CASE: replay pyreads rate slowdown bpfcost memory collector peers   (default: all, in that order)
#
# The machine is shared and noisy: every case reports counts (instructions, syscalls, bytes,
# lost samples) or ratios against a baseline measured in the same run, next to raw times.
# Each line starts with the case name; `key=value` fields follow.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
QUICK=${BENCH_QUICK:-0}
COLLECTOR_RUNS=${BENCH_RUNS:-3} # runs of each collector and peers measurement (the median kept; 1 when quick)
SAMPLE=$BUILD/pyebpf-sample
PY=${PYTHON:-python3}
OUT=$BUILD/bench
mkdir -p "$OUT"
CASES=${*:-replay pyreads rate slowdown bpfcost memory collector peers}
WORKLOAD_PID=""
# A workload left spinning by an interrupted run would skew the next one.
trap '[ -n "$WORKLOAD_PID" ] && kill "$WORKLOAD_PID" 2> /dev/null' EXIT

q() { [ "$QUICK" = 1 ] && echo "$1" || echo "$2"; } # q QUICK_VALUE FULL_VALUE
num() { LC_ALL=C printf "%.${2:-3}f" "$(echo "scale=6; $1" | bc)"; } # num EXPR [DECIMALS]
stat_of() { awk -F': ' -v k="$1" '$1 == k { print $2; exit }' "$2"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "bench commit=$(git rev-parse --short HEAD 2> /dev/null) date=$(date -u +%FT%TZ) cpus=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ,) quick=$QUICK"

# 1. Collector cost per sample: captured records replayed through user/collect (no kernel).
case_replay() {
    local n cgn
    n=$(q 50000 200000)
    cgn=$(q 500 1000)
    "$BUILD/bench/replay" -n "$n" -d 10,20,50,200 -u auto,fp
    command -v valgrind > /dev/null || { echo "collect_ir skipped=no-valgrind"; return; }
    local base=""
    for d in 10 20 50 200; do
        for m in auto fp; do
            local f=$OUT/callgrind.d$d.$m
            valgrind --tool=callgrind --callgrind-out-file="$f" --collect-atstart=no \
                --toggle-collect=replay_loop "$BUILD/bench/replay" -n "$cgn" -d "$d" -u "$m" > /dev/null 2>&1
            local ir top
            ir=$(awk '/^totals:/ { print $2 }' "$f")
            [ -n "$ir" ] || { echo "collect_ir depth=$d unwind=$m error=no-callgrind-output"; continue; }
            [ "$d$m" = 10auto ] && base=$ir
            # the three functions with most instructions of their own, as name:percent
            top=$(callgrind_annotate --inclusive=no "$f" 2> /dev/null | awk '
                /file:function/ { on = 1; next }
                on { sub(/\( +/, "(") }
                on && $2 ~ /^\(/ && n < 3 { fn = $3; sub(/.*:/, "", fn); sub(/\[.*/, "", fn); p = $2; gsub(/[()%]/, "", p)
                                       out = out (n ? "," : "") fn ":" p "%"; n++ }
                END { print out }')
            echo "collect_ir depth=$d unwind=$m ir_per_sample=$((ir / cgn)) ratio_vs_d10=$(num "$ir / $base" 2) top=$top"
        done
    done
}

# 2. Remote reads per sample on three Python workloads:
#    inkernel  pyebpf-sample with BPF: Python chains captured in the kernel, code objects read
#    nobpf     pyebpf-sample --no-bpf: every sample read with process_vm_readv (timer, all threads)
#    cached    bench/pyreads: the reader alone, its caches on (threads in turn, every 200 us)
#    cold      bench/pyreads -m cold: a fresh reader per sample, every cache empty (the baseline)
#    For pyebpf-sample, `marginal_*` = (run of D s - run of 1 s) / (difference in samples): the
#    cost of one more sample, without attaching (ELF, runtime discovery) and the first reads.
py_sample_run() { # py_sample_run PID DURATION STATS [OPTIONS...]
    local pid=$1 dur=$2 st=$3
    shift 3
    "$SAMPLE" -q --stats -F 1000 -d "$dur" -o "$st.folded" "$@" "$pid" > /dev/null 2> "$st"
}
case_pyreads() {
    local n ncold dur
    n=$(q 2000 10000)
    ncold=$(q 30 100)
    dur=$(q 3 8)
    for w in steady change threads50; do
        local log=$OUT/pyload.$w.out
        $PY bench/pyload.py "$w" > "$log" 2>&1 &
        local pid=$!
        WORKLOAD_PID=$pid
        for _ in $(seq 100); do grep -q READY "$log" && break; sleep 0.1; done
        for mode in inkernel nobpf; do
            local opt="" s1=$OUT/pyreads.$w.$mode.1 s2=$OUT/pyreads.$w.$mode.$dur
            [ $mode = nobpf ] && opt=--no-bpf
            # shellcheck disable=SC2086
            py_sample_run "$pid" 1 "$s1" $opt
            # shellcheck disable=SC2086
            py_sample_run "$pid" "$dur" "$s2" $opt
            local n1 n2 r1 r2 b1 b2
            n1=$(stat_of samples "$s1"); n2=$(stat_of samples "$s2")
            r1=$(stat_of remote_reads "$s1"); r2=$(stat_of remote_reads "$s2")
            b1=$(stat_of remote_read_bytes "$s1"); b2=$(stat_of remote_read_bytes "$s2")
            if [ -z "$n2" ] || [ -z "$n1" ] || [ "$n2" -le "$n1" ]; then
                echo "pyreads workload=$w mode=$mode error=$(grep -v ': ' "$s2" | head -c 200 | tr '\n' ' ')"
                continue
            fi
            echo "pyreads workload=$w mode=$mode samples=$n2 reads_per_sample=$(stat_of reads_per_sample "$s2")" \
                "bytes_per_sample=$((b2 / n2)) marginal_reads_per_sample=$(num "($r2 - $r1) / ($n2 - $n1)")" \
                "marginal_bytes_per_sample=$(((b2 - b1) / (n2 - n1)))" \
                "python_reads=$(stat_of python_samples "$s2") in_kernel_samples=$(stat_of python_samples_in_kernel "$s2") frames_per_sample=$(stat_of python_frames_per_sample "$s2")"
        done
        for mode in cached cold; do
            local r
            r=$("$BUILD/bench/pyreads" -m "$mode" -n "$([ $mode = cold ] && echo "$ncold" || echo "$n")" \
                -i 200 "$pid" 2>&1)
            echo "pyreads workload=$w mode=$mode $r"
        done
        kill "$pid"
        wait "$pid" 2> /dev/null
        WORKLOAD_PID=""
    done
}

# 3. Highest rate without loss: a 2-thread CPU-bound target, 10 s per rate. Sampler and target
#    run at nice -10 so that the target gets its CPUs on a shared machine (else the samples
#    delivered are a fraction of 2 x rate).
case_rate() {
    local dur
    dur=$(q 3 10)
    for hz in 1000 5000 10000 20000; do
        local st=$OUT/rate.$hz.stats
        nice -n -10 "$SAMPLE" -q --bpf-stats -F "$hz" -d "$dur" -o "$OUT/rate.$hz.folded" -- "$BUILD/progs/callgraph" "$((dur + 5))" 2 \
            > /dev/null 2> "$st"
        local s lost matched cpu loop dus
        s=$(stat_of samples "$st")
        lost=$(stat_of lost "$st")
        matched=$(stat_of kernel_matched "$st")
        cpu=$(stat_of collector_cpu_us "$st")
        loop=$(stat_of collector_loop_cpu_us_per_sample "$st")
        dus=$(stat_of duration_s "$st")
        if [ -z "$s" ] || [ -z "$dus" ]; then
            echo "rate hz=$hz error=$(head -c 200 "$st" | tr '\n' ' ')"
            continue
        fi
        echo "rate hz=$hz duration_s=$dus samples=$s kernel_matched=$matched lost=$lost" \
            "lost_pct=$(stat_of lost_pct "$st") matched_per_s=$(num "$matched / $dus" 0) collector_cpu_pct=$(num "$cpu / ($dus * 10000)" 2)" \
            "loop_cpu_us_per_sample=$loop bpf_ns_per_sample=$(stat_of bpf_ns_per_sample "$st")"
    done
}

# 4. Target slowdown: CPU time of a fixed CPU-bound Python workload alone and while sampled, in
#    interleaved rounds; the ratio is taken per round (sampled / alone of that round), then the
#    median over the rounds.
case_slowdown() {
    local rounds cfgs="1000 10000 10000fp"
    command -v perf > /dev/null && cfgs="$cfgs perf10000"
    rounds=$(q 3 7)
    : > "$OUT/slow.alone"
    for c in $cfgs; do : > "$OUT/slow.$c"; done
    for _ in $(seq "$rounds"); do
        $PY bench/pywork.py "$OUT/slow.alone"
        for c in $cfgs; do
            local extra=""
            case $c in
            perf*) # reference: perf itself, frame-pointer call chains, same rate
                perf record -q -F "${c#perf}" -g -o "$OUT/slow.perf.data" -- "$PY" bench/pywork.py "$OUT/slow.$c" \
                    > /dev/null 2>&1
                continue ;;
            *fp) extra="--unwind fp" ;;
            esac
            # shellcheck disable=SC2086
            "$SAMPLE" -q -F "${c%fp}" $extra -o "$OUT/slow.$c.folded" -- $PY bench/pywork.py "$OUT/slow.$c" \
                > /dev/null 2>&1
        done
    done
    for c in $cfgs; do
        local f=$OUT/slow.$c
        local hz=${c%fp} how=pyebpf-sample:auto
        case $c in perf*) hz=${c#perf} how=perf:fp ;; *fp) how=pyebpf-sample:fp ;; esac
        echo "slowdown hz=$hz sampler=$how rounds=$rounds" \
            "alone_cpu_s=$(median < "$OUT/slow.alone") sampled_cpu_s=$(median < "$f")" \
            "median_ratio=$(paste "$f" "$OUT/slow.alone" | awk '{ printf "%.4f\n", $1 / $2 }' | median)" \
            "ratios=$(paste "$f" "$OUT/slow.alone" | awk '{ printf "%s%.3f", (NR > 1 ? "," : ""), $1 / $2 }')"
    done
}

# 4b. In-target cost per sample, counted. The perf_event program runs in the sampled thread's
#     context; its run time and runs come from the kernel's BPF statistics (--bpf-stats turns them on
#     with BPF_ENABLE_STATS for its own run only, the same counters `sysctl kernel.bpf_stats_enabled=1`
#     + `bpftool prog show` give, without touching the sysctl). The event is CPU-wide, so runs on
#     other processes (the target filter alone) are in the total: their cost per run is measured in
#     each round on a sleeping target and taken out:
#       bpf_ns_per_sample = (run_time - (runs - matched) x miss_ns_per_run) / matched
#     Then bench/gaps, which times the interrupts it suffers, alone and sampled at 10 kHz: the
#     whole time one sample takes from the target (interrupt, perf event, BPF program) =
#     (gap time - gap time alone) / (gaps - gaps alone); predicted slowdown = that x rate.
#     Rounds interleave every configuration; each line gives the median and the per-round values.
bpfcost_run() { # bpfcost_run KEY MISS_NS [top] SAMPLER-ARGS... : one --bpf-stats run at 1 kHz, one value
    local key=$1 miss=$2 st=$OUT/bpfcost.$1.stats sub=()
    shift 2
    # `top` (its screen to /dev/null): the program also marks each sample's GIL holder
    [ "${1:-}" = top ] && { sub=(top); shift; }
    "$SAMPLE" "${sub[@]}" -q --bpf-stats -F 1000 -o "$st.folded" "$@" > /dev/null 2> "$st"
    local runs ns matched
    runs=$(stat_of bpf_runs "$st")
    ns=$(stat_of bpf_ns_per_run "$st")
    matched=$(stat_of kernel_matched "$st")
    if [ -z "$runs" ] || [ -z "$matched" ] || [ "$matched" = 0 ]; then
        echo "bpfcost key=$key error=$(grep -v ': ' "$st" | head -c 200 | tr '\n' ' ')"
        return
    fi
    { num "($runs * $ns - ($runs - $matched) * $miss) / $matched" 0; echo; } >> "$OUT/bpfcost.$key.vals"
    echo "$(stat_of stack_copy_avg_bytes "$st") $(stat_of python_frames_per_sample "$st") $matched" > "$OUT/bpfcost.$key.info"
}
bpfcost_pyload() { # bpfcost_pyload DEPTH LOG : a Python main thread spinning DEPTH frames down
    $PY -c '
import sys
def down(n):
    if n > 1:
        return down(n - 1)
    print("READY", flush=True)
    x = 0
    while True:
        x += 1
down(int(sys.argv[1]) - 1)' "$1" > "$2" 2>&1 &
}
bpfcost_gaps() { # bpfcost_gaps HOW DUR : bench/gaps alone or under a sampler at 10 kHz; its line
    local g=$BUILD/bench/gaps out=$OUT/bpfcost.gaps.$1
    case $1 in
    alone) "$g" "$2" > "$out" ;;
    perf) perf record -q -F 10000 -o "$OUT/bpfcost.perf.data" -- "$g" "$2" > "$out" 2> /dev/null ;;
    pyebpf-fp) "$SAMPLE" -q -F 10000 --unwind fp -o "$out.folded" -- "$g" "$2" > "$out" 2> /dev/null ;;
    pyebpf-auto) "$SAMPLE" -q -F 10000 -o "$out.folded" -- "$g" "$2" > "$out" 2> /dev/null ;;
    esac
    tail -n1 "$out"
}
field() { echo "$2" | sed -n "s/.*[ ^]$1=\([0-9.]*\).*/\1/p"; } # field KEY LINE
case_bpfcost() {
    local rounds dur miss st gaps="perf pyebpf-fp pyebpf-auto"
    local native="fp dwarf auto auto:4096 auto:65536 dwarf:65536" py="10 100" pymodes="inkernel nopython fp top"
    command -v perf > /dev/null || gaps="pyebpf-fp pyebpf-auto"
    rounds=$(q 1 3)
    dur=$(q 2 4)
    rm -f "$OUT"/bpfcost.*.vals "$OUT"/bpfcost.*.info
    for _ in $(seq "$rounds"); do
        st=$OUT/bpfcost.miss.stats
        sleep $((dur + 10)) &
        local spid=$!
        "$SAMPLE" -q --bpf-stats -F 1000 -d "$dur" -o "$st.folded" "$spid" > /dev/null 2> "$st"
        kill "$spid"
        wait "$spid" 2> /dev/null
        miss=$(stat_of bpf_ns_per_run "$st")
        [ -n "$miss" ] || { echo "bpfcost error=no-bpf-stats $(head -c 200 "$st" | tr '\n' ' ')"; return; }
        echo "$miss" >> "$OUT/bpfcost.miss.vals"
        # native: build/progs/callgraph (frame pointers; the main thread: its stack end is known)
        for cfg in $native; do
            local u=${cfg%%:*} size=16384
            [ "$cfg" != "$u" ] && size=${cfg#*:}
            [ "$u" = fp ] && size=0
            # shellcheck disable=SC2046
            bpfcost_run "native.$u.$size" "$miss" -d "$dur" --unwind "$u" $([ "$u" != fp ] && echo --stack-size "$size") \
                -- "$BUILD/progs/callgraph" "$((dur + 5))" 1
        done
        for depth in $py; do
            local log=$OUT/bpfcost.py$depth.out
            bpfcost_pyload "$depth" "$log"
            local pid=$!
            WORKLOAD_PID=$pid
            for _ in $(seq 100); do grep -q READY "$log" && break; sleep 0.1; done
            for mode in $pymodes; do
                local opt=""
                case $mode in nopython) opt=--no-python ;; fp) opt="--unwind fp" ;; esac
                # shellcheck disable=SC2086
                if [ "$mode" = top ]; then
                    bpfcost_run "py$depth.$mode" "$miss" top -d "$dur" "$pid"
                else
                    bpfcost_run "py$depth.$mode" "$miss" -d "$dur" $opt "$pid"
                fi
            done
            kill "$pid"
            wait "$pid" 2> /dev/null
            WORKLOAD_PID=""
        done
        local line base base_n
        line=$(bpfcost_gaps alone "$dur")
        base=$(field gap_ns_per_cpu_s "$line")
        base_n=$(field gaps_per_cpu_s "$line")
        echo "$base_n/$(field gap_median_ns "$line")" >> "$OUT/bpfcost.gaps.alone.vals"
        for how in $gaps; do
            line=$(bpfcost_gaps "$how" "$dur")
            local gns gn
            gns=$(field gap_ns_per_cpu_s "$line")
            gn=$(field gaps_per_cpu_s "$line")
            if [ -z "$gns" ] || [ -z "$gn" ] || [ -z "$base" ]; then
                echo "bpfcost gaps=$how error=$(echo "$line" | head -c 200)"
                continue
            fi
            { num "($gns - $base) / ($gn - $base_n)" 0; echo; } >> "$OUT/bpfcost.gaps.$how.vals"
        done
    done
    vals() { tr '\n' ',' < "$1" | sed 's/,$//'; }
    echo "bpfcost target=none rounds=$rounds miss_ns_per_run=$(median < "$OUT/bpfcost.miss.vals") per_round=$(vals "$OUT/bpfcost.miss.vals")"
    local keys="" k
    for cfg in $native; do
        local u=${cfg%%:*} size=16384
        [ "$cfg" != "$u" ] && size=${cfg#*:}
        [ "$u" = fp ] && size=0
        keys="$keys native.$u.$size"
    done
    for depth in $py; do for mode in $pymodes; do keys="$keys py$depth.$mode"; done; done
    for k in $keys; do
        [ -s "$OUT/bpfcost.$k.vals" ] || continue
        local m info
        m=$(median < "$OUT/bpfcost.$k.vals")
        read -r -a info < "$OUT/bpfcost.$k.info"
        echo "bpfcost config=$k rate=1000 bpf_ns_per_sample=$m per_round=$(vals "$OUT/bpfcost.$k.vals")" \
            "copy_bytes=${info[0]} py_frames=${info[1]} samples=${info[2]}" \
            "bpf_pct_1k=$(num "$m / 10000" 3) bpf_pct_10k=$(num "$m / 1000" 2)"
    done
    echo "bpfcost gaps=alone per_round_gaps_per_cpu_s/median_ns=$(vals "$OUT/bpfcost.gaps.alone.vals")"
    for how in $gaps; do
        [ -s "$OUT/bpfcost.gaps.$how.vals" ] || continue
        local m
        m=$(median < "$OUT/bpfcost.gaps.$how.vals")
        echo "bpfcost gaps=$how rate=10000 ns_per_sample=$m per_round=$(vals "$OUT/bpfcost.gaps.$how.vals")" \
            "predicted_pct_1k=$(num "$m / 10000" 2) predicted_pct_10k=$(num "$m / 1000" 1)"
    done
}

# 6. Memory: collector peak RSS on a target with many distinct stacks, short run vs long run.
case_memory() {
    local long
    long=$(q 10 60)
    # short run, long run, long run with a 16 MiB ring (the default ring at 10 kHz is 128 MiB, and
    # its pages count in the collector's RSS once written)
    for run in "2 default" "$long default" "$long 16777216"; do
        # shellcheck disable=SC2086
        set -- $run
        local dur=$1 ring_opt="" tag=$1.$2
        [ "$2" = default ] || ring_opt="--ring-size $2"
        local st=$OUT/memory.$tag.stats tv=$OUT/memory.$tag.time
        # shellcheck disable=SC2086
        /usr/bin/time -v -o "$tv" "$SAMPLE" -q --stats -F 10000 -d "$dur" $ring_opt -o "$OUT/memory.$tag.folded" \
            -- "$BUILD/bench/manystacks" "$((dur + 5))" 2 > /dev/null 2> "$st"
        local rss ring
        rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tv")
        ring=$(stat_of ring_bytes "$st")
        echo "memory hz=10000 duration_s=$(stat_of duration_s "$st") ring_kib=$((ring / 1024))" \
            "samples=$(stat_of samples "$st") lost=$(stat_of lost "$st") distinct_stacks=$(stat_of distinct_stacks "$st")" \
            "distinct_frames=$(stat_of distinct_frames "$st") peak_rss_kib=$rss"
    done
}

# 7. What a profile costs: whole-process CPU (user + sys, /usr/bin/time) of pyebpf-sample attached
#    by PID to a CPU-bound target, a short and a long run per target and rate:
#      us_per_sample   CPU of the run / samples (what a user pays, setup included)
#      setup_ms        CPU before the first sample could arrive (--stats: BPF load + attach,
#                      the target's ELF files and Python runtime)
#      marginal_us     (CPU long - CPU short) / (samples long - samples short): one more sample
#      delivered_pct   samples / (rate x the target's CPU time in the long run's sampling window,
#                      --stats target_cpu_s): a cpu-clock event asks for one sample per 1/rate of
#                      CPU the target gets
#      kept_pct        samples / kernel_matched: of the samples the BPF program saw, those that
#                      reached the profile (the rest: ring full)
#    The workloads run at nice -10 so that they get a CPU on a shared machine. Each run is made
#    BENCH_RUNS times (3; once when quick) and the one of median CPU kept: one run's fixed part
#    moved by 10-15 ms between runs of the same code.
#    Targets: bench/pychain.py 20 (20 distinct Python frames, the leaf spinning) on 3.11, 3.12, 3.13
#    and 3.15, build/progs/callgraph (native), and bench/pythreads.py 200 at 1 kHz (200 threads,
#    each spinning in its own function; threads_seen counts those in the --threads profile).
collector_pythons() { # "py3.X path": pyenv's 3.11-3.13 and 3.15 from tests/pythons, the tests' one list
    awk '$1 ~ /^(pyenv-3\.1[123]\.[0-9]+|python3\.15)$/ && NF == 2 {
             v = $1; sub(/^(pyenv-|python)/, "", v); split(v, p, ".")
             print "py" p[1] "." p[2], $2 }' tests/pythons
}
collector_start() { # collector_start LOG CMD... : starts a workload that prints READY; sets WORKLOAD_PID
    local log=$1
    shift
    "$@" > "$log" 2>&1 &
    WORKLOAD_PID=$!
    for _ in $(seq 200); do grep -q READY "$log" && return 0; kill -0 "$WORKLOAD_PID" 2> /dev/null || break; sleep 0.1; done
    return 1
}
target_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2> /dev/null || echo 0; } # utime + stime, all threads
collector_run() { # collector_run TAG PID HZ DUR [OPTIONS...] : prints "cpu_us samples setup_us dur threads target_cpu_s matched"
    local tag=$1 pid=$2 hz=$3 dur=$4 st=$OUT/collector.$1.stats tv=$OUT/collector.$1.time
    shift 4
    # bash's `times` in a subshell: the CPU of its one child, the collector, to the millisecond
    ( "$SAMPLE" -q --stats -F "$hz" -d "$dur" "$@" -o "$OUT/collector.$tag.folded" "$pid" > /dev/null 2> "$st"
      times > "$tv" )
    local s setup dus threads tcpu
    s=$(stat_of samples "$st")
    setup=$(stat_of collector_setup_cpu_us "$st")
    dus=$(stat_of duration_s "$st")
    tcpu=$(stat_of target_cpu_s "$st")
    [ -n "$s" ] && [ -n "$setup" ] && [ -n "$dus" ] && [ -n "$tcpu" ] || { echo "error"; return; }
    threads=$(grep -o '^thread [0-9]*' "$OUT/collector.$tag.folded" | sort -u | wc -l)
    echo "$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, y, /[ms]/); printf "%.0f", (u[1] * 60 + u[2] + y[1] * 60 + y[2]) * 1e6 }' "$tv")" \
        "$s $setup $dus $threads $tcpu $(stat_of kernel_matched "$st")"
}
collector_median() { # collector_median TAG PID HZ DUR [OPTIONS...] : collector_run's line of median CPU
    local i runs
    runs=$(q 1 "$COLLECTOR_RUNS")
    for i in $(seq "$runs"); do collector_run "$@"; done | sort -n -k1,1 | awk -v m="$(((runs + 1) / 2))" '
        $1 == "error" { print; exit } NR == m { print; exit }'
}
collector_case() { # collector_case LABEL PID HZ SHORT LONG [OPTIONS...] : one summary line
    local label=$1 pid=$2 hz=$3 d1=$4 d2=$5
    shift 5
    local a b
    read -r -a a <<< "$(collector_median "$label.$hz.$d1" "$pid" "$hz" "$d1" "$@")"
    read -r -a b <<< "$(collector_median "$label.$hz.$d2" "$pid" "$hz" "$d2" "$@")"
    if [ "${a[0]}" = error ] || [ "${b[0]}" = error ] || [ "${b[1]}" -le "${a[1]}" ]; then
        echo "collector target=$label hz=$hz error=$(grep -v ': ' "$OUT/collector.$label.$hz.$d2.stats" | head -c 200 | tr '\n' ' ')"
        return
    fi
    local extra=""
    [ "$#" -gt 0 ] && extra=" threads_seen=${b[4]}"
    echo "collector target=$label hz=$hz setup_ms=$(num "${b[2]} / 1000" 1)" \
        "short_s=${a[3]} short_samples=${a[1]} short_cpu_ms=$(num "${a[0]} / 1000" 1) short_us_per_sample=$(num "${a[0]} / ${a[1]}" 1)" \
        "long_s=${b[3]} long_samples=${b[1]} long_cpu_ms=$(num "${b[0]} / 1000" 1) long_us_per_sample=$(num "${b[0]} / ${b[1]}" 2)" \
        "marginal_us=$(num "(${b[0]} - ${a[0]}) / (${b[1]} - ${a[1]})" 2)" \
        "fixed_ms=$(num "(${a[0]} - (${b[0]} - ${a[0]}) / (${b[1]} - ${a[1]}) * ${a[1]}) / 1000" 1)" \
        "target_cpu_s=${b[5]} delivered_pct=$(num "100 * ${b[1]} / ($hz * ${b[5]})" 1)" \
        "kernel_matched=${b[6]} kept_pct=$(num "100 * ${b[1]} / ${b[6]}" 2)$extra"
}
case_collector() {
    local d1=1 d2 label py
    d2=$(q 3 10)
    while read -r label py; do
        [ -x "$py" ] || { echo "collector target=$label skipped=no-$py"; continue; }
        collector_start "$OUT/collector.$label.out" nice -n -10 "$py" bench/pychain.py 20 ||
            { echo "collector target=$label error=workload-not-ready"; continue; }
        for hz in 1000 10000; do collector_case "$label" "$WORKLOAD_PID" "$hz" "$d1" "$d2"; done
        kill "$WORKLOAD_PID"
        wait "$WORKLOAD_PID" 2> /dev/null
        WORKLOAD_PID=""
    done < <(collector_pythons)
    # callgraph prints nothing until it exits: running once exec'd
    nice -n -10 "$BUILD/progs/callgraph" 3600 1 2> /dev/null &
    WORKLOAD_PID=$!
    for _ in $(seq 100); do [ "$(readlink "/proc/$WORKLOAD_PID/exe")" -ef "$BUILD/progs/callgraph" ] && break; sleep 0.05; done
    for hz in 1000 10000; do collector_case native "$WORKLOAD_PID" "$hz" "$d1" "$d2"; done
    kill "$WORKLOAD_PID"
    wait "$WORKLOAD_PID" 2> /dev/null
    WORKLOAD_PID=""
    py=$(collector_pythons | awk '$1 == "py3.12" { print $2 }')
    if collector_start "$OUT/collector.threads200.out" nice -n -10 "$py" bench/pythreads.py 200; then
        collector_case threads200 "$WORKLOAD_PID" 1000 "$d1" "$d2" --threads
    else
        echo "collector target=threads200 error=workload-not-ready"
    fi
    kill "$WORKLOAD_PID"
    wait "$WORKLOAD_PID" 2> /dev/null
    WORKLOAD_PID=""
}

# 8. Peers, same workload, same rate, same run: pyebpf-sample, pyebpf-sample --no-bpf, Austin 3.7
#    (on 3.12) and CPython 3.15's own sampler (python3.15 -m profiling.sampling attach, on 3.15),
#    each attached for the same time to bench/pychain.py 20. CPU of each sampler's process (bash
#    `times`, children included: Austin and Tachyon are one process each), samples it delivered,
#    and the samples it was asked for: rate x the target's CPU time for pyebpf-sample (a cpu-clock
#    event; its --stats target_cpu_s, over its sampling window), rate x duration for the
#    wall-clock samplers (--no-bpf, Austin, Tachyon: one thread). The samplers take turns
#    BENCH_RUNS times; each one's line is that of its median CPU (runs=N).
#    Then each, once, on a ground truth (tests/py/truth_calls.py, a call graph known by
#    construction whose stack changes every few µs): the share of its workload samples that
#    are impossible stacks (a frame read at another instant than its caller, or misnamed;
#    peers_truth lines, impossible_pct), and the samples it wrote of the rate × duration asked
#    for (a sampler may drop the stacks it could not read whole). A peer's collapsed output is
#    rewritten in pyebpf's folded form first (bench/peer_folded.py); `marked` counts samples
#    pyebpf-sample itself marks as not exact (not counted among the unmarked impossible ones).
#    Austin is Debian unstable's package, fetched and unpacked under build/bench/austin with the
#    private apt configuration of scripts/test-pythons (`make setup` first) and run through the
#    same unpacked loader; never installed, never used by the tests.
peers_austin() { # prints the command that runs Austin, or nothing (the reason on stderr)
    local a=$OUT/austin R=$BUILD/pythons/root conf=$BUILD/pythons/apt/apt.conf triplet=x86_64-linux-gnu
    local lib=$R/usr/lib/$triplet
    local ld=$lib/ld-linux-x86-64.so.2 # the loader scripts/test-pythons unpacked (x86-64 only here)
    if [ ! -x "$a/root/usr/bin/austin" ]; then
        [ -r "$conf" ] && [ -x "$ld" ] || { echo "no private apt root ($conf): make setup" >&2; return; }
        mkdir -p "$a/debs"
        conf=$(realpath "$conf")
        (cd "$a/debs" && APT_CONFIG=$conf apt-get -q -o Debug::NoLocking=1 download austin libsframe3 libunwind8 > /dev/null 2>&1) ||
            { echo "austin not downloadable from the private apt sources" >&2; return; }
        for d in "$a"/debs/*.deb; do dpkg -x "$d" "$a/root" || return; done
    fi
    echo "$ld --library-path $(realpath "$a/root")/usr/lib/$triplet:$lib:$R/lib/$triplet $(realpath "$a/root")/usr/bin/austin"
}
peers_run() { # peers_run NAME PID HZ DUR CLOCK CMD... : one line; CMD writes $OUT/peers.NAME.out
    local name=$1 pid=$2 hz=$3 dur=$4 clock=$5 tv=$OUT/peers.$1.time t0 t1
    shift 5
    t0=$(target_cpu_ticks "$pid")
    ( "$@" > "$OUT/peers.$name.log" 2>&1; times > "$tv" )
    t1=$(target_cpu_ticks "$pid")
    local cpu_us n tcpu req
    cpu_us=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, y, /[ms]/); printf "%.0f", (u[1] * 60 + u[2] + y[1] * 60 + y[2]) * 1e6 }' "$tv")
    case $name in
    pyebpf*) n=$(stat_of samples "$OUT/peers.$name.log") ;;
    austin*) n=$(grep -cv '^#' "$OUT/peers.$name.out" 2> /dev/null) ;;
    tachyon*) n=$(awk '{ s += $NF } END { print s + 0 }' "$OUT/peers.$name.out" 2> /dev/null) ;;
    esac
    # pyebpf-sample's own count of the target's CPU covers its sampling window only
    tcpu=$(stat_of target_cpu_s "$OUT/peers.$name.log")
    [ -n "$tcpu" ] || tcpu=$(num "($t1 - $t0) / $(getconf CLK_TCK)" 2)
    [ "$clock" = cpu ] && req=$(num "$hz * $tcpu" 0) || req=$((hz * dur))
    if [ -z "$n" ] || [ "$n" = 0 ]; then
        echo "peers sampler=$name error=$(head -c 200 "$OUT/peers.$name.log" | tr '\n' ' ')"
        return
    fi
    echo "peers sampler=$name hz=$hz duration_s=$dur cpu_ms=$(num "$cpu_us / 1000" 1) samples=$n" \
        "us_per_sample=$(num "$cpu_us / $n" 1) requested=$req clock=$clock delivered_pct=$(num "100 * $n / $req" 1) target_cpu_s=$tcpu"
}
peers_median() { # peers_median NAME FILE : the line of NAME's median cpu_ms among its runs in FILE
    local lines
    lines=$(grep "^peers sampler=$1 " "$2")
    if grep -q ' error=' <<< "$lines"; then
        grep -m1 ' error=' <<< "$lines"
        return
    fi
    sed 's/.* cpu_ms=\([0-9.]*\) .*/\1 &/' <<< "$lines" | sort -g -k1,1 |
        awk -v n="$(wc -l <<< "$lines")" 'NR == int((n + 1) / 2) { sub(/^[^ ]* /, ""); print $0 " runs=" n }'
}
peers_truth() { # peers_truth LABEL PY AUSTIN : impossible stacks of each sampler on truth_calls.py
    local label=$1 py=$2 austin=$3 dur hz=1000
    local log=$OUT/peers.$label.truth
    dur=$(q 3 5)
    # runs until killed (at most its own wall cap of 100 s: the samplers below take ~4 × dur)
    collector_start "$log" nice -n -10 "$py" tests/py/truth_calls.py 1000 ||
        { echo "peers_truth target=$label error=workload-not-ready"; return; }
    local pid=$WORKLOAD_PID name out
    for name in pyebpf pyebpf-nobpf austin tachyon; do
        out=$OUT/peers_truth.$name.$label
        rm -f "$out.out" "$out.folded"
        case $name.$label in
        pyebpf.*) "$SAMPLE" -q -F $hz -d "$dur" -o "$out.folded" "$pid" > "$out.log" 2>&1 ;;
        pyebpf-nobpf.*) "$SAMPLE" -q --no-bpf -F $hz -d "$dur" -o "$out.folded" "$pid" > "$out.log" 2>&1 ;;
        austin.py3.12)
            # shellcheck disable=SC2086
            [ -n "$austin" ] && $austin -i $((1000000 / hz)) -x "$dur" -o "$out.out" -p "$pid" > "$out.log" 2>&1 ;;
        tachyon.py3.15) "$py" -m profiling.sampling attach -r $hz -d "$dur" --collapsed -o "$out.out" "$pid" > "$out.log" 2>&1 ;;
        *) continue ;;
        esac
        [ -s "$out.out" ] && $PY bench/peer_folded.py "$out.out" "$out.folded"
        if [ ! -s "$out.folded" ]; then
            [ "$name" = austin ] && [ -z "$austin" ] && continue
            echo "peers_truth sampler=$name.$label error=$(head -c 200 "$out.log" | tr '\n' ' ')"
            continue
        fi
        local c all bad mk
        c=$($PY tests/py/truth_calls.py --check "$out.folded")
        all=$(sed -n 's/.* workload=\([0-9]*\) .*/\1/p' <<< "$c")
        bad=$(sed -n 's/.* impossible=\([0-9]*\) .*/\1/p' <<< "$c")
        mk=$(sed -n 's/.* marked=\([0-9]*\) .*/\1/p' <<< "$c")
        [ -n "$all" ] && [ "$all" -gt 0 ] || { echo "peers_truth sampler=$name.$label error=no-workload-samples"; continue; }
        echo "peers_truth sampler=$name.$label hz=$hz duration_s=$dur requested=$((hz * dur))" \
            "samples=$(awk '{ s += $NF } END { print s + 0 }' "$out.folded") workload_samples=$all" \
            "impossible=$bad impossible_pct=$(num "100 * $bad / $all" 2) marked=$mk"
    done
    kill "$pid"
    wait "$pid" 2> /dev/null
    WORKLOAD_PID=""
}
case_peers() {
    local dur hz=1000 austin py runs
    dur=$(q 3 10)
    runs=$(q 1 "$COLLECTOR_RUNS")
    austin=$(peers_austin)
    for label in py3.12 py3.15; do
        py=$(collector_pythons | awk -v l=$label '$1 == l { print $2 }')
        [ -x "$py" ] || { echo "peers target=$label skipped=no-$py"; continue; }
        collector_start "$OUT/peers.$label.workload" nice -n -10 "$py" bench/pychain.py 20 ||
            { echo "peers target=$label error=workload-not-ready"; continue; }
        local pid=$WORKLOAD_PID lines=$OUT/peers.$label.lines names="pyebpf.$label pyebpf-nobpf.$label"
        : > "$lines"
        # the samplers take turns, run after run: a drift of the machine's speed reaches them all
        for _ in $(seq "$runs"); do
            peers_run "pyebpf.$label" "$pid" $hz "$dur" cpu "$SAMPLE" -q --stats -F $hz -d "$dur" -o "$OUT/peers.pyebpf.$label.out" "$pid" >> "$lines"
            peers_run "pyebpf-nobpf.$label" "$pid" $hz "$dur" wall "$SAMPLE" -q --stats --no-bpf -F $hz -d "$dur" -o "$OUT/peers.pyebpf-nobpf.$label.out" "$pid" >> "$lines"
            case $label in
            py3.12)
                # shellcheck disable=SC2086
                [ -z "$austin" ] || peers_run "austin.$label" "$pid" $hz "$dur" wall $austin -i $((1000000 / hz)) -x "$dur" -o "$OUT/peers.austin.$label.out" -p "$pid" >> "$lines" ;;
            py3.15)
                peers_run "tachyon.$label" "$pid" $hz "$dur" wall "$py" -m profiling.sampling attach -r $hz -d "$dur" --collapsed -o "$OUT/peers.tachyon.$label.out" "$pid" >> "$lines" ;;
            esac
        done
        case $label in
        py3.12) [ -n "$austin" ] && names="$names austin.$label" ;;
        py3.15) names="$names tachyon.$label" ;;
        esac
        for n in $names; do peers_median "$n" "$lines"; done
        [ "$label" = py3.12 ] && [ -z "$austin" ] && echo "peers sampler=austin.$label skipped=$(peers_austin 2>&1 > /dev/null | tr ' ' _)"
        kill "$pid"
        wait "$pid" 2> /dev/null
        WORKLOAD_PID=""
        peers_truth "$label" "$py" "$austin"
    done
}

for c in $CASES; do
    "case_$c"
done
