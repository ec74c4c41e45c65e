# unknown_flag_refused: an option husk does not know, before `--`, was
# taken as the command to run (`husk do --egress-allow x -- true` tried to
# execute `--egress-allow` before husk had that flag): a policy flag
# mistyped or not yet supported silently did nothing. It must be a usage
# error (exit 2) naming it, while a command's own options after it still
# reach the command.
. "$ATTACK_SRC/lib.sh"
for args in "--egress-alow x -- true" "--no-such-flag true" "-z -- true" "--memory-mb 64 --bogus -- true"; do
    out=$(timeout -s KILL 20 "$HUSK" do $args 2>&1 </dev/null); rc=$?
    [ "$rc" = 2 ] || fail "husk do $args: exit $rc, want 2: $out"
    flag=$(set -- $args; for a; do case $a in --memory-mb|64) ;; -*) echo "$a"; break;; esac; done)
    echo "$out" | grep -q -- "$flag" || fail "husk do $args: the message does not name $flag: $out"
done
out=$(timeout -s KILL 20 "$HUSK" do ls -d -- /proc/self 2>&1 </dev/null) || fail "husk do ls -d -- /proc/self: $out"
[ "$out" = /proc/self ] || fail "a command's own options: $out"
out=$(timeout -s KILL 20 "$HUSK" do -- /bin/sh -c 'echo "$0 $1"' x --y 2>&1 </dev/null) || fail "after --: $out"
[ "$out" = "x --y" ] || fail "after --: $out"
exit 0
