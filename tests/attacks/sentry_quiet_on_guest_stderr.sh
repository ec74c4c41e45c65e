# sentry_quiet_on_guest_stderr: the sentry's own diagnostics went to its
# stderr, which is the guest's: a guest's output carried husk's warnings
# (an OOM kill's "WARN husk_sentry::…", platform warnings), which a
# program parsing its own stderr cannot tell from its own. Without
# --debug-log the guest's stderr holds only what the guest wrote; with it,
# the warning is in the log.
. "$ATTACK_SRC/lib.sh"
prog='import sys; sys.stderr.write("guest-says\n"); sys.stderr.flush(); x = bytearray(300 << 20)'
err=$(timeout -s KILL 40 "$HUSK" do --memory-mb 64 -- /usr/bin/python3 -c "$prog" 2>&1 >/dev/null </dev/null); rc=$?
[ "$rc" = 137 ] || fail "the guest should be OOM-killed (137), got $rc: $err"
[ "$err" = "guest-says" ] || fail "the guest's stderr holds more than the guest wrote: $err"
log="$ATTACK_TMP/debug.log"
timeout -s KILL 40 "$HUSK" --debug-log "$log" do --memory-mb 64 -- /usr/bin/python3 -c "$prog" >/dev/null 2>&1 </dev/null
grep -q "out of memory" "$log" || fail "the debug log lacks the OOM warning: $(tail -5 "$log")"
exit 0
