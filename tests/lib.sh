# Shared helpers for integration tests (sourced). Each check prints one TAP line.
#   pass NAME | fail NAME WHY | skip NAME WHY
#   need_root / need_cmd CMD / need_file F  -> print a skip for the whole script and exit 0
#   wait_until SECONDS CMD...                -> wait for a condition, never a fixed time
#   wait_line SECONDS FILE REGEX             -> ... for a line a workload or the sampler writes
#   test_pythons [--plain] [LABEL...]        -> the interpreters to run on (tests/pythons)
#   stat_of, sum, well_formed, pct           -> read --stats output and folded profiles
#   le ge within share_ge share_le ratio_in -> bounds, with the bound a named value at the call
set -u
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-build}
# The JavaScript test tools (make js-deps): one copy for every build, the sanitized one included.
JS="$ROOT/build/js/node_modules"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
SCRIPT_NAME=$(basename "$0" .sh)
TAP_N=0
TMP=$(mktemp -d "/tmp/pyebpf-test.$SCRIPT_NAME.XXXXXX")
cleanup_tmp() { [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"; }
trap cleanup_tmp EXIT

pass() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1"; }
fail() { TAP_N=$((TAP_N + 1)); echo "not ok $TAP_N - $1${2:+ # $2}"; }
skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1 # SKIP $2"; }
# check NAME CMD...: pass if the command succeeds
check() { local n=$1; shift; if "$@"; then pass "$n"; else fail "$n"; fi; }
skip_all() { skip "$SCRIPT_NAME" "$1"; exit 0; }
need_root() { [ "$(id -u)" = 0 ] || skip_all "needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE)"; }
need_cmd() { command -v "$1" > /dev/null 2>&1 || skip_all "needs $1 (make setup installs it)"; }
need_file() { [ -e "$1" ] || skip_all "needs $1"; }
# wait_until SECONDS CMD...: succeeds as soon as CMD does (tried every 50 ms), fails after SECONDS
wait_until() {
    local end=$((SECONDS + $1)); shift
    until "$@"; do
        [ $SECONDS -lt $end ] || return 1
        sleep 0.05
    done
}
# wait_line SECONDS FILE REGEX: until FILE has a line matching the extended REGEX (a workload's
# READY, the sampler's "sampling" line)
wait_line() { wait_until "$1" grep -qsE "$3" "$2"; }
# cpu_ticks PID: the CPU time process PID has used, in clock ticks (utime + stime)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2> /dev/null; }
# ran_since PID TICKS N: process PID has used N more ticks of CPU than TICKS (cpu_ticks before);
# ran PID: it has used any
ran_since() { local t; t=$(cpu_ticks "$1"); [ -n "$t" ] && [ "$t" -ge $(($2 + $3)) ]; }
ran() { ran_since "$1" 0 1; }
# catches PID SIG: process PID has a handler for signal number SIG (SigCgt in /proc/PID/status)
catches() {
    local m
    m=$(sed -n 's/^SigCgt:\t*//p' "/proc/$1/status" 2> /dev/null)
    [ -n "$m" ] && (((0x$m >> ($2 - 1)) & 1))
}
# proc_state PID STATE: process PID is in STATE (the letter of /proc/PID/stat: R, S, T, Z, ...)
proc_state() { [ "$(awk '{ print $3 }' "/proc/$1/stat" 2> /dev/null)" = "$2" ]; }
# in_nanosleep PID: process PID's main thread sleeps in (clock_)nanosleep (time.sleep, sleep(1))
in_nanosleep() { grep -qs nanosleep "/proc/$1/wchan"; }

# gdb_target_args PID EXE: sets the array gdb_args so that `gdb "${gdb_args[@]}" -p PID` debugs
# EXE when the process image is a dynamic loader started by hand (build/pythons' wrappers): gdb
# otherwise skips the program's own entry in the loader's list and never reads EXE.
gdb_target_args() {
    local img libdir
    gdb_args=()
    img=$(readlink -f "/proc/$1/exe")
    if [ -n "$2" ] && [ "$img" != "$2" ]; then
        libdir=$(dirname "$img")
        gdb_args=(-iex "set exec-file-mismatch off" -iex "add-auto-load-safe-path $libdir"
                  -iex "set libthread-db-search-path $libdir" "$2")
    fi
}

# test_pythons [--plain] [--flavour FLAVOUR] [LABEL...]: the interpreters of tests/pythons (the
# one list), one line each, in the list's order:
#   LABEL PATH [VAR=VALUE...]   present: run PATH with the VAR=VALUE environment
#   LABEL - WHY                 missing: report a skip with WHY
# LABELs keep only those; --plain leaves out the variants (lines with VAR=VALUE, e.g. 3.15 with
# its JIT on) for checks of the binary itself. --flavour gives another list instead, for the tests
# that are about a build flavour (the rest run on the default list only): `debug`, Debian
# unstable's python3.14d and python3.15d; or `free-threaded`, python3.14t and python3.15t
# (scripts/build-python-ft); their lines in tests/pythons are labelled FLAVOUR:LABEL.
# TEST_PYTHONS="LABEL ..." in the environment keeps only those labels everywhere. Read it into an
# array (mapfile -t pys < <(test_pythons)) rather than in a `while read` loop, whose stdin the
# commands in the loop would inherit; then
#   read -r label py env <<< "$line"; [ "$py" = - ] && skip "NAME ($label)" "$env"
test_pythons() {
    local label path env plain=0 flavour= only=" " want=" ${TEST_PYTHONS:-} "
    [ "${1:-}" = --plain ] && { plain=1; shift; }
    [ "${1:-}" = --flavour ] && { flavour=$2; shift 2; }
    [ $# -eq 0 ] || only=" $* "
    while read -r label path env; do
        case "$label" in '' | '#'*) continue ;; esac
        case "$label" in
        *:*) [ "${label%%:*}" = "$flavour" ] || continue; label=${label#*:} ;;
        *) [ -z "$flavour" ] || continue ;;
        esac
        [ "$only" = " " ] || [[ "$only" == *" $label "* ]] || continue
        [ "$want" = "  " ] || [[ "$want" == *" $label "* ]] || continue
        [ $plain = 0 ] || [ -z "$env" ] || continue
        case "$path" in /*) ;; *) path=$ROOT/$path ;; esac
        if [ -x "$path" ]; then
            echo "$label $path${env:+ $env}"
        elif [ -f "$path.absent" ]; then # why make setup could not provide it
            echo "$label - ${path#"$ROOT"/} not present: $(head -1 "$path.absent")"
        elif [[ "$path" == "$ROOT/build/pythons/"* ]]; then
            echo "$label - ${path#"$ROOT"/} not present (make test-pythons fetches it)"
        else
            echo "$label - $path not present"
        fi
    done < "$ROOT/tests/pythons"
}

# first_python LABEL...: the path of the first of these interpreters that is present (in the
# order given); nothing when none is
first_python() {
    local l label path rest
    for l in "$@"; do
        path=
        read -r label path rest < <(test_pythons "$l")
        [ -n "$path" ] && [ "$path" != - ] && { echo "$path"; return; }
    done
    return 0
}

# py_minor PY [VAR=VALUE...]: the interpreter's MAJOR.MINOR (the name of its build/python3.X)
py_minor() { env "${@:2}" "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }

# ---- reading results --------------------------------------------------------------------------
# stat_of KEY FILE [DEFAULT]: the first value of a "KEY: VALUE" line (pyebpf-sample --stats),
# DEFAULT (empty unless given) when there is none
stat_of() {
    local v
    v=$(sed -n "s/^$1: //p" "$2" 2> /dev/null | head -1)
    echo "${v:-${3:-}}"
}
# sum FOLDED [REGEX]: the samples of the folded stacks that match REGEX (all of them without one)
sum() { awk -v re="${2:-}" '{ n = $NF; $NF = ""; if ($0 ~ re) s += n } END { print s + 0 }' "$1"; }
# well_formed FOLDED: non-empty, and every line is "frame;frame;... COUNT"
well_formed() { [ -s "$1" ] && ! grep -vqE '^[^;]+(;[^;]+)* [0-9]+$' "$1"; }
# pct PART WHOLE: 100 * PART / WHOLE with two decimals (0 when WHOLE is 0)
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? 100 * a / b : 0) }'; }

# ---- bounds: each names what it bounds; a missing value never meets one ------------------------
# le A B / ge A B: A <= B / A >= B as numbers
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 <= b + 0) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 >= b + 0) }'; }
# within GOT WANT TOL: |GOT - WANT| <= TOL
within() { awk -v g="$1" -v w="$2" -v t="$3" 'BEGIN { d = g - w; exit !(g != "" && w != "" && d <= t && -d <= t) }'; }
# share_ge PART WHOLE PCT [MIN_WHOLE] / share_le ...: PART is at least / at most PCT % of WHOLE,
# and WHOLE (the samples judged) is > 0 and >= MIN_WHOLE
share_ge() { awk -v a="$1" -v b="$2" -v p="$3" -v m="${4:-0}" 'BEGIN { exit !(a != "" && b + 0 > 0 && b + 0 >= m && 100 * a >= p * b) }'; }
share_le() { awk -v a="$1" -v b="$2" -v p="$3" -v m="${4:-0}" 'BEGIN { exit !(a != "" && b + 0 > 0 && b + 0 >= m && 100 * a <= p * b) }'; }
# ratio_in A B LO HI: LO <= A / B <= HI (B > 0)
ratio_in() { awk -v a="$1" -v b="$2" -v l="$3" -v h="$4" 'BEGIN { exit !(a != "" && b + 0 > 0 && a >= l * b && a <= h * b) }'; }
