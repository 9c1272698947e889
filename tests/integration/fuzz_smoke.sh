#!/usr/bin/env bash
# Fuzz smoke: builds every libFuzzer target (make fuzz-build), replays the committed seeds and past
# crash inputs (tests/fuzz/seeds/) through each target under ASan+UBSan without libFuzzer, then
# fuzzes each target FUZZ_SMOKE_SECONDS (default 20) from seeds made from real files, two at a time.
# Seeds, new inputs, logs and crashes go to the test's temporary directory (build/fuzz/corpus, what
# `make fuzz` found, is read, never written).
# Checks: each target builds, replays its regression seeds cleanly and fuzzes without a crash,
# leak, timeout or sanitizer report.
source "$(dirname "$0")/../lib.sh"
need_cmd clang

cd "$ROOT"
# libFuzzer's runtime ships in libclang-rt-NN-dev, not with clang itself.
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n ? 0 : 0; }\n' \
    > "$TMP/probe.c"
clang -fsanitize=fuzzer,address,undefined -o "$TMP/probe" "$TMP/probe.c" > "$TMP/probe.log" 2>&1 ||
    skip_all "clang's libFuzzer runtime is missing (install libclang-rt-14-dev): $(head -c 200 "$TMP/probe.log")"

# The fuzz binaries are the same sanitized builds whatever SANITIZE says: the second CI pass
# (SANITIZE=1) only replays and fuzzes briefly.
if [ "${SANITIZE:-0}" = 1 ]; then secs=${FUZZ_SMOKE_SECONDS:-5}; else secs=${FUZZ_SMOKE_SECONDS:-20}; fi
targets=$(make -s --no-print-directory fuzz-list 2> /dev/null)
missing=$(make -s --no-print-directory fuzz-missing 2> /dev/null)
for t in $missing; do skip "fuzz_$t" "its parser is not in the tree"; done
[ -n "$targets" ] || skip_all "no fuzz target has its parser in the tree yet"

for t in $targets; do
    if make -s --no-print-directory "build/fuzz/fuzz_$t" "build/fuzz/replay_$t" > "$TMP/build-$t.log" 2>&1; then
        pass "fuzz_$t builds (clang -fsanitize=fuzzer,address,undefined)"
    else
        fail "fuzz_$t builds" "$(tail -3 "$TMP/build-$t.log" | tr '\n' ' ')"
    fi
done

for t in $targets; do
    [ -x "build/fuzz/replay_$t" ] || continue
    if [ ! -d "tests/fuzz/seeds/$t" ]; then
        skip "fuzz_$t regression seeds replay" "no committed seeds"
    elif out=$("build/fuzz/replay_$t" "tests/fuzz/seeds/$t" 2>&1); then
        pass "fuzz_$t regression seeds replay clean ($(tail -1 <<< "$out"))"
    else
        fail "fuzz_$t regression seeds replay clean" "$(grep -m1 -E 'ERROR|runtime error' <<< "$out")"
    fi
done

built=()
for t in $targets; do [ -x "build/fuzz/fuzz_$t" ] && built+=("$t"); done
tests/fuzz/gen_seeds.sh "$TMP/seeds" "${built[@]}" > "$TMP/seeds.log" 2>&1
FUZZ_OUT=$TMP/out FUZZ_SEEDS=$TMP/seeds FUZZ_CORPUS=$TMP/corpus tests/fuzz/run.sh "$secs" 2 "${built[@]}" > "$TMP/run.log" 2>&1
sed 's/^/# /' "$TMP/run.log"
for t in "${built[@]}"; do
    line=$(awk -v t="$t" '$1 == t' "$TMP/run.log")
    case "$line" in
        *" ok "*) pass "fuzz_$t ${secs}s without a crash ($(awk '{ print $3 " exec/s, cov " $4 ", ft " $5 }' <<< "$line"))" ;;
        *) fail "fuzz_$t ${secs}s without a crash" "${line:-no result}; input in $TMP/out/crash (KEEP_TMP=1 keeps it)" ;;
    esac
done
