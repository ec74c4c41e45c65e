# syscall_fuzz: at least 100,000 random system calls with garbage
# arguments (numbers in and past the table, negative ones, the x32 bit;
# pointers to good, read-only, unmapped and kernel memory; huge values),
# made by children of the sandbox's init (syscall_fuzz_prog.c). The
# sandbox must end by itself within its bound with the program's own
# status, and the sentry's debug log must show no panic and no platform
# failure. The seed is random per run and printed on failure: rerun with
# FUZZ_SEED=N to reproduce.
. "$ATTACK_SRC/lib.sh"
seed=${FUZZ_SEED:-$(( (RANDOM << 15) | RANDOM ))}
bin="$ATTACK_TMP/fuzz"
cc -static -O1 -Wall -Werror -o "$bin" "$ATTACK_SRC/syscall_fuzz_prog.c" || fail "compiling the fuzzer"
log="$ATTACK_TMP/debug.log"
out=$(timeout -s KILL 50 "$HUSK" --debug-log "$log" do --memory-mb 512 -- "$bin" "$seed" 100000 2>&1 </dev/null); rc=$?
[ "$rc" = 0 ] || fail "seed $seed: the sandbox ended with $rc: $out; log: $(tail -5 "$log")"
calls=$(echo "$out" | sed -n 's/^calls: \([0-9]*\).*/\1/p')
[ -n "$calls" ] && [ "$calls" -ge 100000 ] || fail "seed $seed: only '$calls' calls: $out"
if grep -E "panicked|platform failure|stub process died|PTRACE_|sandbox failed" "$log" >&2; then
    fail "seed $seed: the sentry reported the lines above"
fi
echo "seed $seed: $out"
