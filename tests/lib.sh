# Shared helpers for integration tests (sourced). Each check prints one TAP line.
#   pass NAME | fail NAME WHY | skip NAME WHY
#   need_root / need_cmd CMD / need_file F  -> print a skip for the whole script and exit 0
#   wait_until SECONDS CMD...                -> wait for a condition, never a fixed time
set -u
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-build}
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
