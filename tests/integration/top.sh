#!/usr/bin/env bash
# pyebpf-sample top, driven in tmux as a user would (send-keys to press keys, capture-pane to read
# the screen): tests/py/top_work.py splits its time 60/30/10 between sixty(), thirty() and ten();
# the view lists them in that order with own shares within 5 points of 60/30/10 (of the three's
# samples), its sample count grows between refreshes, t sorts by total, i switches to the last
# interval, q (and Ctrl-C) exits 0, leaves the alternate screen and restores the terminal modes (stty -a
# before and after), and -o writes the profile. Then the same with --no-bpf.
# The GIL line, on tests/py/top_gil.py: one spinning thread holds the GIL in 90 % of its samples or
# more; two spinning threads (main and "fighter") share one GIL, handed over every switch
# interval: the GIL is held in 75 % of the samples or more (with BPF, on-CPU samples: the waiter
# sleeps; with --no-bpf, ticks) and each thread in 20-80 % of them; with the thread filter (f), a
# thread hashing a large buffer (hashlib releases the GIL) held it in 20 % of its samples or less,
# one spinning beside it in 80 % or more (--no-bpf: 50 %, its wall-clock samples also see it wait
# to get the GIL back after each hash, longer on a busy machine). The fighters' share again on every
# interpreter of tests/pythons, from --stats (gil_checked, gil_held). A native program: "GIL: unknown".
source "$(dirname "$0")/../lib.sh"
need_root
need_cmd tmux
S="$BUILD/pyebpf-sample"
need_file "$S"
PY=${PY:-$(first_python pyenv-3.12.1 pyenv-3.13.0 pyenv-3.11.7)}
[ -n "$PY" ] || PY=$(command -v python3)
W="$ROOT/tests/py/top_work.py"
SOCK=
tm() { tmux -S "$SOCK" "$@"; }
trap 'for s in "$TMP"/tmux-*.sock; do tmux -S "$s" kill-server 2> /dev/null; done; cleanup_tmp' EXIT

screen() { tm capture-pane -p -t top > "$TMP/screen" 2> /dev/null; }
samples() { screen; sed -n 's/^samples \([0-9]*\) .*/\1/p' "$TMP/screen" | head -1; }
has_samples() { local n; n=$(samples); [ -n "$n" ] && [ "$n" -ge "$1" ]; }
on_screen() { screen; grep -q -- "$1" "$TMP/screen"; }
# own% of a function's row
own() { awk -v f="$1 (" 'index($0, f) && $1 ~ /^[0-9.]+$/ { print $1; exit }' "$TMP/screen"; }

run_top() { # LABEL QUIT_KEY EXTRA_OPTIONS...
    local label=$1 quit=$2; shift 2
    local d="$TMP/$label"; mkdir -p "$d"
    SOCK="$TMP/tmux-$label.sock" # a server per run: never one that is still going away
    # The pane's shell records the terminal modes before and after, and top's exit status.
    tm new-session -d -s top -x 150 -y 40 "stty -a > '$d/stty.before';
        '$S' top -F 499 -r 0.5 $* -o '$d/top.folded' -- '$PY' '$W' 120 2> '$d/err';
        echo \$? > '$d/exit'; stty -a > '$d/stty.after'; sleep 600"
    if ! wait_until 60 has_samples 400; then
        fail "$label: top shows samples" "$(head -c 600 "$TMP/screen") $(cat "$d/err" 2> /dev/null)"
        return
    fi
    pass "$label: top draws the table (400+ samples)"
    check "$label: top is in the alternate screen" [ "$(tm display -p -t top '#{alternate_on}')" = 1 ]
    cp "$TMP/screen" "$d/first"
    # Shares from 1000 samples or more: about 1.5 points of binomial noise at 60 %.
    wait_until 60 has_samples 1000
    a=$(own sixty) b=$(own thirty) c=$(own ten)
    "${CHECK_PY:-python3}" -c '
import sys
a, b, c = (float(x or 0) for x in sys.argv[1:4])
s = a + b + c
ok = s > 0 and a > b > c and all(abs(100 * x / s - w) <= 5 for x, w in ((a, 60), (b, 30), (c, 10)))
sys.exit(0 if ok else 1)' "$a" "$b" "$c"
    check "$label: sixty > thirty > ten, own shares 60/30/10 +- 5 (${a:-?} ${b:-?} ${c:-?})" [ $? -eq 0 ]
    n1=$(samples)
    check "$label: the view refreshes (sample count grows past $n1)" wait_until 10 has_samples $((n1 + 20))
    tm send-keys -t top t
    check "$label: t sorts by total" wait_until 5 on_screen "sort: total"
    # by total: the first row is the root-most Python frame, at (or near) 100 %
    first=$(awk '$1 ~ /^[0-9.]+$/ { print $2; exit }' "$TMP/screen")
    check "$label: by total, the first row covers the whole run ($first%)" \
        awk -v x="$first" 'BEGIN { exit !(x >= 90) }'
    tm send-keys -t top o i
    check "$label: i shows the last interval" wait_until 5 on_screen "last interval · sort: own"
    tm send-keys -t top "$quit"
    check "$label: $quit exits" wait_until 10 test -s "$d/exit"
    check "$label: exit status 0" [ "$(cat "$d/exit" 2> /dev/null)" = 0 ]
    check "$label: the alternate screen is left" wait_until 5 test "$(tm display -p -t top '#{alternate_on}')" = 0
    wait_until 5 test -s "$d/stty.after"
    check "$label: terminal modes restored (stty -a equal before and after)" cmp -s "$d/stty.before" "$d/stty.after"
    check "$label: -o wrote the profile on quit" grep -q "sixty (" "$d/top.folded"
}

G="$ROOT/tests/py/top_gil.py"
gil_line() { screen; grep -m1 '^GIL: ' "$TMP/screen"; }
# the process's share over the span shown (since start)
gil_share() { gil_line | sed -n 's/^GIL: held [a-z]* \([0-9]*\) % of .*/\1/p'; }
# the threads that held it most: "NAME SHARE" lines
gil_by() { gil_line | sed -n 's/.* · by //p' | tr ',' '\n' | sed -n 's/.*(\(.*\)) \([0-9]*\) %.*/\1 \2/p'; }
gil_two() { [ "$(gil_by | wc -l)" -eq 2 ]; }
# with a thread filter: that thread's share of its own samples
gil_own() { gil_line | sed -n "s/^GIL: held in \([0-9]*\) % of this thread's samples .*/\1/p"; }
has_own() { [ -n "$(gil_own)" ]; }
filter_to() { # NAME: f until the thread filter is the thread named NAME, then until its share is drawn
    local i
    for i in $(seq 12); do
        # Once there, stay: the share comes with the next refresh (late on a loaded machine), and
        # one more f would move past the thread.
        on_screen "python only · thread [0-9]* ($1)" && { wait_until 20 has_own; return; }
        tm send-keys -t top f
        wait_until 5 on_screen "python only · thread [0-9]* ($1)"
    done
    return 1
}

start_top() { # LABEL OPTIONS... -- COMMAND...: top in its own tmux server
    local label=$1; shift
    SOCK="$TMP/tmux-$label.sock"
    tm new-session -d -s top -x 150 -y 40 "'$S' top -F 499 -r 0.5 $* 2> '$TMP/$label.err'; sleep 600"
}

run_gil() { # LABEL SPINNER_MIN EXTRA_OPTIONS...
    local label=$1 spin_min=$2; shift 2
    start_top "$label-one" "$@" -- "'$PY'" "'$G'" one 120
    if ! wait_until 60 has_samples 500; then
        fail "$label: top shows samples of one spinning thread" "$(head -c 600 "$TMP/screen")"
    else
        wait_until 10 test -n "$(gil_share)"
        local one by
        one=$(gil_share)
        by=$(gil_by | head -1)
        check "$label: one spinning thread: GIL held in >= 90 % (${one:-?} %: $(gil_line))" ge "$one" 90
        check "$label: ... by that thread (${by:-?})" ge "${by##* }" 90
    fi
    tm kill-server
    start_top "$label-fight" "$@" -- "'$PY'" "'$G'" fight 120
    if ! wait_until 60 has_samples 1000 || ! wait_until 20 gil_two; then
        fail "$label: top shows two threads holding the GIL" "$(head -c 600 "$TMP/screen")"
        tm kill-server
        return
    fi
    local all a b
    all=$(gil_share)
    a=$(gil_by | sed -n 1p) b=$(gil_by | sed -n 2p)
    check "$label: two fighters: GIL held in >= 75 % (${all:-?} %: $(gil_line))" ge "$all" 75
    check "$label: ... one of them is the thread named fighter ($a, $b)" grep -q "^fighter " <(gil_by)
    check "$label: ... each holds it in 20-80 % ($a, $b)" \
        awk -v a="${a##* }" -v b="${b##* }" 'BEGIN { exit !(a >= 20 && a <= 80 && b >= 20 && b <= 80) }'
    tm kill-server
    # The thread filter's line: a thread hashing with the GIL released beside one spinning.
    start_top "$label-hash" "$@" -- "'$PY'" "'$G'" hash 120
    if ! wait_until 60 has_samples 1000; then
        fail "$label: top shows samples of a hasher and a spinner" "$(head -c 600 "$TMP/screen")"
        tm kill-server
        return
    fi
    local h= p=
    if filter_to hasher; then
        h=$(gil_own)
        check "$label: f to the hasher: it held the GIL in <= 20 % of its samples (${h:-?} %: $(gil_line))" le "$h" 20
    else
        fail "$label: f to the hasher" "$(head -c 600 "$TMP/screen") $(tail -c 400 "$TMP/$label-hash.err")"
    fi
    if filter_to spinner; then
        p=$(gil_own)
        check "$label: f to the spinner: it held the GIL in >= $spin_min % of its samples (${p:-?} %: $(gil_line))" \
            ge "$p" "$spin_min"
    else
        fail "$label: f to the spinner" "$(head -c 600 "$TMP/screen") $(tail -c 400 "$TMP/$label-hash.err")"
    fi
    tm kill-server
}

run_top bpf q
run_top nobpf C-c --no-bpf
run_gil gil-bpf 80
run_gil gil-nobpf 50 --no-bpf # wall-clock: the spinner also waits for the GIL back after each hash
# Every interpreter (the GIL's offsets differ by version): the same counts, from --stats, for two
# fighters, with and without BPF.
while read -r label path env; do
    if [ "$path" = - ]; then
        skip "gil-versions $label: GIL held in >= 75 % of two fighters' samples" "$env"
        continue
    fi
    for how in bpf nobpf; do
        st="$TMP/gil-$label-$how.stats"
        # shellcheck disable=SC2046
        "$S" top -q --stats -F 499 -d 3 -o "$TMP/gil-$label-$how.folded" $([ $how = nobpf ] && echo --no-bpf) \
            -- "$path" "$G" fight 10 < /dev/null > /dev/null 2> "$st"
        c=$(stat_of gil_checked "$st") h=$(stat_of gil_held "$st")
        check "gil-versions $label $how: GIL held in >= 75 % of two fighters' samples (${h:-?} of ${c:-?})" \
            share_ge "$h" "$c" 75 200
    done
done < <(test_pythons --plain)
start_top gil-native -- "'$BUILD/progs/callgraph'" 60 1
check "gil-native: a native program's GIL is unknown" wait_until 30 on_screen "^GIL: unknown"
tm kill-server
