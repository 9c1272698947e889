#!/usr/bin/env bash
# Every tracked C file is formatted as .clang-format says (make format fixes it).
source "$(dirname "$0")/../lib.sh"
need_cmd clang-format
cd "$ROOT" || exit 1
git rev-parse --git-dir > /dev/null 2>&1 || skip_all "not a git checkout (make format-check lists tracked files)"
if out=$(make -s format-check 2>&1); then
    pass "make format-check"
else
    fail "make format-check" "$(echo "$out" | grep -m3 error | tr '\n' '|')"
fi
