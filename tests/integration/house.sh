#!/usr/bin/env bash
# The collector's house: user/ is one folder per stage of the data path and includes point down it.
# Reads every `#include "..."` of user/ (a module is a .c file with its .h, and the X_internal.h
# its files share if it has one) and checks:
#   - each include of a user/ header names its folder ("python/pystack.h", top-level: "cli.h");
#   - every folder under user/ is a stage listed below;
#   - no include cycle between modules;
#   - no include from an earlier stage to a later one, nor from a stage to a top-level file
#     (main.c, cli.c, target.c, progress.c may include everything), except the known exceptions;
#   - every known exception still happens (a fixed one must leave the list).
source "$(dirname "$0")/../lib.sh"
need_cmd tsort
cd "$ROOT/user" || exit 1

# The stages, in data-path order: a file may include its own stage and earlier ones.
STAGES=(util profile capture unwind symbols python collect output)

# Known back-arrows: "FILE HEADER  why it is still there". Each needs a redesign, not a move.
EXCEPTIONS=()

declare -A rank
for i in "${!STAGES[@]}"; do rank[${STAGES[$i]}]=$i; done
stage_of() { case "$1" in */*) echo "${1%%/*}" ;; *) echo top ;; esac; }

# Edges "FILE HEADER" (both relative to user/), bare includes that resolve inside a stage folder,
# and the module graph for tsort ("FROM TO" by module: path without .c/.h).
edges=() bare=() modedges=()
while IFS= read -r f; do
    while IFS= read -r h; do
        if [[ $h == */* ]]; then
            [ -f "$h" ] || continue
        elif [[ $f == */* && -f "$(dirname "$f")/$h" ]]; then
            bare+=("$f: \"$h\"")
            h="$(dirname "$f")/$h"
        elif [ -f "$h" ]; then
            :
        else
            continue # jitdump/, bpf/, the skeleton, system headers
        fi
        edges+=("$f $h")
        mf=${f%.*} mh=${h%.*}
        mf=${mf%_internal} mh=${mh%_internal}
        [ "$mf" = "$mh" ] || modedges+=("$mf $mh")
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find . -name '*.[ch]' | sed 's|^\./||' | sort)

if [ ${#edges[@]} -gt 50 ]; then
    pass "include graph read (${#edges[@]} includes)"
else
    fail "include graph read" "only ${#edges[@]} includes found under user/"
fi

if [ ${#bare[@]} -eq 0 ]; then
    pass "each include of a user/ header names its folder"
else
    fail "each include of a user/ header names its folder" "${bare[*]}"
fi

unknown=()
for d in */; do
    d=${d%/}
    [ -n "${rank[$d]+x}" ] || unknown+=("$d")
done
if [ ${#unknown[@]} -eq 0 ]; then
    pass "every folder under user/ is a stage (${STAGES[*]})"
else
    fail "every folder under user/ is a stage" "not in STAGES: ${unknown[*]}"
fi

if out=$(printf '%s\n' "${modedges[@]}" | tsort 2>&1 > /dev/null); then
    pass "no include cycle between modules"
else
    fail "no include cycle between modules" "$(echo "$out" | sed 's/^tsort: //' | tr '\n' ' ')"
fi

back=() seen=()
for e in "${edges[@]}"; do
    read -r f h <<< "$e"
    sf=$(stage_of "$f") sh=$(stage_of "$h")
    [ "$sf" = top ] && continue
    if [ "$sh" = top ] || [ "${rank[$sh]:-0}" -gt "${rank[$sf]:-0}" ]; then
        known=0
        for x in "${EXCEPTIONS[@]}"; do
            read -r xf xh _ <<< "$x"
            if [ "$xf $xh" = "$f $h" ]; then
                known=1 seen+=("$f $h")
            fi
        done
        [ $known = 1 ] && echo "# known exception: $f -> $h" || back+=("$f -> $h")
    fi
done
if [ ${#back[@]} -eq 0 ]; then
    pass "no include from an earlier stage to a later one (${#EXCEPTIONS[@]} known exceptions)"
else
    printf '# back-arrow: %s\n' "${back[@]}"
    fail "no include from an earlier stage to a later one" "${#back[@]}: ${back[*]}"
fi

stale=()
for x in "${EXCEPTIONS[@]}"; do
    read -r xf xh _ <<< "$x"
    printf '%s\n' "${seen[@]}" | grep -qxF "$xf $xh" || stale+=("$xf -> $xh")
done
if [ ${#stale[@]} -eq 0 ]; then
    pass "every known exception still happens"
else
    fail "every known exception still happens" "fixed, remove from EXCEPTIONS: ${stale[*]}"
fi
