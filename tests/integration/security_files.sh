#!/usr/bin/env bash
# The perf sink files are created in shared directories (/tmp for perf maps, often /tmp or a
# shared dir for jitdumps) under a name anyone can predict (jit-PID.dump, perf-PID.map). An
# attacker who plants something at that name before the JIT process starts must not make it
# write elsewhere. For each kind of plant, jitprog (gdb + jitdump + perf map sinks) is started
# stopped, its PID known, the plants made, then it is continued. Checks per case:
#   - the process runs normally (exit 0, its "ready" line);
#   - the plant is untouched (still a symlink to the same target, or the same file) and its
#     target unchanged (contents, size, mtime) or, for a dangling link, still absent;
#   - exactly one warning per refused sink on stderr, and nothing else from pyjit.
source "$(dirname "$0")/../lib.sh"
need_root
JITPROG=$BUILD/progs/jitprog
need_file "$JITPROG"
id nobody > /dev/null 2>&1 || skip_all "needs a user 'nobody' to own the planted files"

PIDS_TO_CLEAN=()
cleanup() {
    for p in "${PIDS_TO_CLEAN[@]}"; do rm -f "/tmp/perf-$p.map"; done
    cleanup_tmp
}
trap cleanup EXIT

# start_stopped DIR: runs jitprog with its jitdump in DIR, stopped before exec; sets $PID.
start_stopped() {
    local dir=$1 out=$2
    bash -c 'kill -STOP $$; exec "$@"' _ env PYEBPF_JITDUMP_DIR="$dir" "$JITPROG" \
        --sinks gdb,jitdump,perfmap > "$out.out" 2> "$out.err" &
    PID=$!
    PIDS_TO_CLEAN+=("$PID")
    wait_until 5 proc_state "$PID" T
}

# The state of a path that must not change: link target or file type, owner, size, mtime, hash.
state() {
    local p=$1
    if [ -L "$p" ]; then
        echo "link $(readlink "$p") $(stat -c '%U' "$p")"
    elif [ -e "$p" ]; then
        echo "file $(stat -c '%U %s %Y %h' "$p") $(sha256sum < "$p")"
    else
        echo absent
    fi
}

# --- baseline: nothing planted → both files made, ours, 0600, no warning ----------------------
d=$TMP/base
mkdir -p "$d"
if start_stopped "$d" "$d/run"; then
    kill -CONT "$PID"; wait "$PID"; rc=$?
    jd=$d/jit-$PID.dump pm=/tmp/perf-$PID.map
    if [ $rc = 0 ] && [ "$(stat -c '%a %U' "$jd" 2> /dev/null)" = "600 root" ] &&
        [ "$(stat -c '%a %U' "$pm" 2> /dev/null)" = "600 root" ] && grep -q jit_a "$pm" &&
        ! grep -q '^pyjit:' "$d/run.err"; then
        pass "baseline: jit-PID.dump and perf-PID.map created 0600, no warning"
    else
        fail "baseline: jit-PID.dump and perf-PID.map created 0600, no warning" \
            "rc=$rc $(stat -c '%a %U' "$jd" "$pm" 2>&1 | tr '\n' ' ') $(head -2 "$d/run.err" | tr '\n' ' ')"
    fi
    rm -f "$pm"
else
    fail "baseline: jitprog could be started stopped"
fi

# plant_case NAME OWNER KIND: KIND is
#   symlink   symlinks to existing files (owned by nobody) at both names
#   dangling  symlinks to paths that do not exist
#   file      regular files owned by nobody at both names (perf map: a hard link to a victim)
# The jitdump directory is world-writable and sticky like /tmp when OWNER is not root.
plant_case() {
    local name=$1 owner=$2 kind=$3
    local d=$TMP/$name
    mkdir -p "$d/jd" "$d/victims"
    [ "$owner" = root ] || chmod 1777 "$d/jd"
    local vj=$d/victims/jit-target vm=$d/victims/map-target
    if [ "$kind" != dangling ]; then
        printf 'precious jit\n' > "$vj"
        printf 'precious map\n' > "$vm"
        chown nobody "$vj" "$vm"
        touch -d '2020-01-01 00:00' "$vj" "$vm"
    fi
    if ! start_stopped "$d/jd" "$d/run"; then
        fail "$name: jitprog could be started stopped"
        return
    fi
    local jd=$d/jd/jit-$PID.dump pm=/tmp/perf-$PID.map
    case $kind in
        symlink | dangling)
            ln -s "$vj" "$jd"
            ln -s "$vm" "$pm"
            chown -h "$owner" "$jd" "$pm"
            ;;
        file)
            cp -p "$vj" "$jd"
            chown nobody "$jd"
            ln "$vm" "$pm" # a hard link: writing it would change the victim
            ;;
    esac
    local before_j before_m before_vj before_vm
    before_j=$(state "$jd") before_m=$(state "$pm") before_vj=$(state "$vj") before_vm=$(state "$vm")
    kill -CONT "$PID"
    wait "$PID"
    local rc=$?
    if [ $rc = 0 ] && grep -q "^ready $PID " "$d/run.out"; then
        pass "$name: the JIT process runs normally (exit 0)"
    else
        fail "$name: the JIT process runs normally (exit 0)" "rc=$rc $(head -3 "$d/run.err" | tr '\n' ' ')"
    fi
    if [ "$(state "$jd")" = "$before_j" ] && [ "$(state "$vj")" = "$before_vj" ]; then
        pass "$name: jit-PID.dump plant not followed, target untouched (${before_vj%% *})"
    else
        fail "$name: jit-PID.dump plant not followed, target untouched" \
            "before: $before_j / $before_vj; after: $(state "$jd") / $(state "$vj")"
    fi
    if [ "$(state "$pm")" = "$before_m" ] && [ "$(state "$vm")" = "$before_vm" ]; then
        pass "$name: perf-PID.map plant not followed, target untouched"
    else
        fail "$name: perf-PID.map plant not followed, target untouched" \
            "before: $before_m / $before_vm; after: $(state "$pm") / $(state "$vm")"
    fi
    local nj nm nall
    nj=$(grep -c '^pyjit: jitdump' "$d/run.err")
    nm=$(grep -c '^pyjit: perf map' "$d/run.err")
    nall=$(grep -c '^pyjit' "$d/run.err")
    if [ "$nj" = 1 ] && [ "$nm" = 1 ] && [ "$nall" = 2 ]; then
        pass "$name: exactly one warning per refused file"
    else
        fail "$name: exactly one warning per refused file" "$(tr '\n' '|' < "$d/run.err")"
    fi
    sed 's/^/# /' "$d/run.err"
    rm -f "$pm"
}

plant_case own-symlinks root symlink
plant_case nobody-symlinks-sticky nobody symlink
plant_case nobody-dangling-sticky nobody dangling
plant_case nobody-files-sticky nobody file
