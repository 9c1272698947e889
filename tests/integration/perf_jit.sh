#!/usr/bin/env bash
# perf reads what libpyjit's perf sinks write (tests/progs/jitprog: main -> run_chain -> jit_a ->
# jit_b -> jit_c -> innermost, three published trampolines):
#   jitdump: perf record -k 1 --call-graph dwarf, perf inject --jit; perf report names the JIT
#            regions and DWARF unwinding goes through them (our UNWINDING_INFO) up to main;
#   perf map: perf script names the JIT regions (frame-pointer call chains);
#   pyebpf-jitclean removes the jitted-PID-N.so files and their build-id cache entries.
source "$(dirname "$0")/../lib.sh"
need_root
need_cmd perf
need_cmd readelf
PROG="$BUILD/progs/jitprog"
need_file "$PROG"
CLEAN="$ROOT/scripts/pyebpf-jitclean"

BID="$TMP/buildid"        # keeps ~/.debug clean
mkdir -p "$BID"
cd "$TMP" || exit 1
PERF=(perf --buildid-dir "$BID")

# Call chains through the JIT in `perf script -F comm,tid,ip,sym` output, printed "FULL TOTAL":
# TOTAL counts samples with innermost on the stack, FULL those where jit_c, jit_b, jit_a and
# main follow it in that order (caller-ward).
chains() {
    awk '
        function flush(   i, k) {
            for (i = 1; i <= n && s[i] != "innermost"; i++) ;
            if (i <= n) {
                total++
                k = 1
                for (; i <= n && k <= 4; i++) if (s[i] == want[k]) k++
                if (k > 4) full++
            }
            n = 0
        }
        BEGIN { want[1] = "jit_c"; want[2] = "jit_b"; want[3] = "jit_a"; want[4] = "main" }
        /^[^ \t]/ { flush(); next }          # sample header line
        NF >= 2    { s[++n] = $2 }            # "   ADDR SYMBOL"
        /^$/       { flush() }
        END { flush(); printf "%d %d\n", full, total }' "$1"
}

# ---- jitdump sink --------------------------------------------------------------------------
"${PERF[@]}" record -q -k 1 --call-graph dwarf,16384 -e cpu-clock -F 499 -o perf.data -- \
    "$PROG" --sinks jitdump --jitdump-dir "$TMP" --spin 1.5 > prog.out 2> record.err
rc=$?
PID=$(awk '/^ready/ {print $2}' prog.out)
if [ $rc -eq 0 ] && [ -n "$PID" ]; then pass "jitprog ran under perf record (pid $PID)"
else fail "jitprog ran under perf record" "rc=$rc $(head -c 300 record.err)"; exit 1; fi
check "jit-$PID.dump written, mode 0600" \
    test "$(stat -c %a "$TMP/jit-$PID.dump" 2>/dev/null)" = 600

"${PERF[@]}" inject --jit -i perf.data -o perf.jit.data 2> inject.err
check "perf inject --jit succeeds" test -s perf.jit.data
n_so=$(ls "$TMP"/jitted-"$PID"-*.so 2> /dev/null | wc -l)
check "perf inject wrote one jitted-$PID-N.so per region (got $n_so)" test "$n_so" -eq 3

# Independent decode of what perf synthesised from our records: one FDE covering exactly the
# code (18 bytes) at the address of .text.
so=$(ls "$TMP"/jitted-"$PID"-*.so | head -n 1)
text=$(readelf -SW "$so" 2> /dev/null | awk '{for (i = 1; i < NF; i++) if ($i == ".text") print $(i + 2)}')
fde=$(readelf --debug-dump=frames "$so" 2> /dev/null | sed -n 's/.*FDE cie=.* pc=\([0-9a-f]*\)\.\.\([0-9a-f]*\).*/\1 \2/p')
read -r lo hi <<< "$fde"
if [ -n "$text" ] && [ -n "$lo" ] && [ $((16#$lo)) -eq $((16#$text)) ] && [ $((16#$hi - 16#$lo)) -eq 18 ]; then
    pass "readelf decodes the synthesised .eh_frame: FDE $lo..$hi covers .text at $text"
else
    fail "readelf decodes the synthesised .eh_frame" "text=$text fde=$fde"
fi

"${PERF[@]}" report -i perf.jit.data --stdio --no-children --sort sym 2> /dev/null > report.txt
for s in jit_a jit_b jit_c; do
    check "perf report shows $s" grep -q "$s" report.txt
done

"${PERF[@]}" script -i perf.jit.data -F comm,tid,ip,sym 2> /dev/null > script.txt
read -r full total < <(chains script.txt)
echo "# jitdump: $full of $total samples in innermost unwind through jit_c, jit_b, jit_a to main"
if [ "$total" -ge 20 ] && [ $((full * 100)) -ge $((total * 90)) ]; then
    pass "DWARF call chains pass through the JIT frames to main ($full/$total)"
else
    fail "DWARF call chains pass through the JIT frames to main" "$full/$total"
fi
# Control: without inject perf has no unwinding data for the JIT code and stops there.
"${PERF[@]}" script -i perf.data -F comm,tid,ip,sym 2> /dev/null > script.raw.txt
read -r full_raw total_raw < <(chains script.raw.txt)
check "without perf inject the chains stop at the JIT code ($full_raw/$total_raw)" test "$full_raw" -eq 0

# The same with the program built without frame pointers: only CFI can walk its C frames.
if [ -x "$PROG-nofp" ]; then
    "${PERF[@]}" record -q -k 1 --call-graph dwarf,16384 -e cpu-clock -F 499 -o perf.nofp.data -- \
        "$PROG-nofp" --sinks jitdump --jitdump-dir "$TMP" --spin 1 > prog3.out 2> record3.err
    PID3=$(awk '/^ready/ {print $2}' prog3.out)
    "${PERF[@]}" inject --jit -i perf.nofp.data -o perf.nofp.jit.data 2> /dev/null
    "${PERF[@]}" script -i perf.nofp.jit.data -F comm,tid,ip,sym 2> /dev/null > script.nofp.txt
    read -r full3 total3 < <(chains script.nofp.txt)
    if [ "$total3" -ge 20 ] && [ $((full3 * 100)) -ge $((total3 * 90)) ]; then
        pass "without frame pointers too, DWARF chains reach main through the JIT ($full3/$total3)"
    else
        fail "without frame pointers too, DWARF chains reach main through the JIT" "$full3/$total3"
    fi
    [ -n "$PID3" ] && "$CLEAN" --dir "$TMP" --buildid-dir "$BID" "$PID3" > /dev/null 2>&1
else
    skip "jitprog-nofp under perf" "no $PROG-nofp"
fi

# ---- perf map sink -------------------------------------------------------------------------
"${PERF[@]}" record -q -g -e cpu-clock -F 499 -o perf.map.data -- \
    "$PROG" --sinks perfmap --spin 1 > prog2.out 2> record2.err
PID2=$(awk '/^ready/ {print $2}' prog2.out)
MAP="/tmp/perf-$PID2.map"
if [ -n "$PID2" ] && [ -f "$MAP" ]; then
    check "perf-$PID2.map has one line per region" test "$(grep -cE '^[0-9a-f]+ [0-9a-f]+ jit_[abc]$' "$MAP")" -eq 3
    "${PERF[@]}" script -i perf.map.data -F comm,tid,ip,sym 2> /dev/null > script.map.txt
    read -r full_map total_map < <(chains script.map.txt)
    echo "# perf map: $full_map of $total_map samples in innermost name jit_c, jit_b, jit_a up to main"
    if [ "$total_map" -ge 20 ] && [ $((full_map * 100)) -ge $((total_map * 90)) ]; then
        pass "perf script names the perf-map JIT symbols in call chains ($full_map/$total_map)"
    else
        fail "perf script names the perf-map JIT symbols in call chains" "$full_map/$total_map"
    fi
    rm -f "$MAP"
else
    fail "perf map sink wrote $MAP" "$(head -c 300 record2.err)"
fi

# ---- clean-up of what perf inject left ------------------------------------------------------
cached=$(find "$BID" -path "*jitted-$PID-*" | wc -l)
check "build-id cache holds the jitted objects before clean-up ($cached entries)" test "$cached" -gt 0
"$CLEAN" --dir "$TMP" --buildid-dir "$BID" "$PID" > clean.out 2>&1
check "pyebpf-jitclean removes jitted-$PID-*.so" test -z "$(ls "$TMP"/jitted-"$PID"-*.so 2> /dev/null)"
check "pyebpf-jitclean removes their build-id cache entries" \
    test -z "$(find "$BID" -path "*jitted-$PID-*" 2> /dev/null; find "$BID/.build-id" -xtype l 2> /dev/null)"
check "pyebpf-jitclean leaves other cache entries" test -n "$(ls "$BID/.build-id" 2> /dev/null)"
