# Shared helpers for integration tests (sourced). Each check prints one TAP line.
#   pass NAME | fail NAME WHY | skip NAME WHY
#   need_root / need_cmd CMD / need_file F  -> print a skip for the whole script and exit 0
#   wait_until SECONDS CMD...                -> wait for a condition, never a fixed time
#   test_pythons                             -> the interpreters to run on, one per line
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

# test_pythons: the interpreters the integration tests run on, one line each:
#   LABEL PATH [VAR=VALUE...]   present: run PATH with the VAR=VALUE environment
#   LABEL - WHY                 missing: report a skip with WHY
# Debian's stripped /usr/bin/python3.11, pyenv's 3.11.7, 3.12.1 and 3.13.0, Debian unstable's 3.14
# and 3.15 (build/pythons, `make test-pythons`), and 3.15 again with its JIT on. TEST_PYTHONS="LABEL
# ..." keeps only those labels. Read it into an array (mapfile -t pys < <(test_pythons)) rather
# than in a `while read` loop, whose stdin the commands in the loop would inherit.
test_pythons() {
    local label path env want=" ${TEST_PYTHONS:-} " pyenv=${PYENV_ROOT:-/root/.pyenv}
    while read -r label path env; do
        [ "$want" = "  " ] || [[ "$want" == *" $label "* ]] || continue
        if [ -x "$path" ]; then
            echo "$label $path${env:+ $env}"
        elif [[ "$path" == "$BUILD/pythons/"* ]]; then
            echo "$label - $path not present (make test-pythons fetches it)"
        else
            echo "$label - $path not present"
        fi
    done << EOF
debian-3.11 /usr/bin/python3.11
pyenv-3.11.7 $pyenv/versions/3.11.7/bin/python3.11
pyenv-3.12.1 $pyenv/versions/3.12.1/bin/python3.12
pyenv-3.13.0 $pyenv/versions/3.13.0/bin/python3.13
python3.14 $BUILD/pythons/bin/python3.14
python3.15 $BUILD/pythons/bin/python3.15
python3.15-jit $BUILD/pythons/bin/python3.15 PYTHON_JIT=1
EOF
}
