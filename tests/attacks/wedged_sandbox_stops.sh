# wedged_sandbox_stops: a sandbox must end when asked, whatever state it
# is in. A guest that ignores SIGTERM is killed after the grace period
# (--kill-grace) and husk says so; a second SIGTERM kills at once; a
# sentry that cannot act at all (stopped with SIGSTOP) is killed the same
# way. Nothing of the sandbox is left afterwards.
. "$ATTACK_SRC/lib.sh"
mark="wedged-$$-$RANDOM"
trap 'kill_marked "$mark"' EXIT
guest='trap "" TERM; echo ready; sleep 30'

# Starts husk do with extra global flags $1; sets $p and $out. (Not under
# timeout(1), which would take the signals meant for husk: the harness's
# bound and the clean-up trap stand in for it.)
start() {
    out="$ATTACK_TMP/out.$RANDOM"
    HUSK_ATTACK_MARK=$mark "$HUSK" $1 do -- /bin/sh -c "$guest" >"$out" 2>&1 </dev/null &
    p=$!
    for i in $(seq 1 100); do grep -q ready "$out" && return 0; sleep 0.1; done
    fail "the guest never started: $(cat "$out")"
}

# 1. The grace period.
start "--kill-grace 1"
t0=$(date +%s%N)
kill -TERM "$p"
wait "$p"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$rc" = 137 ] || fail "grace: exit $rc, want 137: $(cat "$out")"
[ "$ms" -ge 900 ] && [ "$ms" -lt 8000 ] || fail "grace: ended after $ms ms, want about 1000"
grep -q "did not exit within 1 s of SIGTERM" "$out" || fail "grace: no word on stderr: $(cat "$out")"
none_left "$mark" 5 || fail "grace: processes left"

# 2. A second SIGTERM (default grace of 10 s: it must not wait for it).
start ""
t0=$(date +%s%N)
kill -TERM "$p"; sleep 0.3; kill -TERM "$p"
wait "$p"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$rc" = 137 ] || fail "second SIGTERM: exit $rc: $(cat "$out")"
[ "$ms" -lt 5000 ] || fail "second SIGTERM: ended after $ms ms"
grep -q "a second SIGTERM" "$out" || fail "second SIGTERM: no word on stderr: $(cat "$out")"
none_left "$mark" 5 || fail "second SIGTERM: processes left"

# 3. A sentry that cannot do anything: stopped.
start "--kill-grace 1"
sentry=$(for q in $(marked "$mark"); do tr '\0' ' ' < /proc/$q/cmdline | grep -q ' boot ' && echo $q; done | head -1)
[ -n "$sentry" ] || fail "no sentry found"
kill -STOP "$sentry"
kill -TERM "$p"
wait "$p"; rc=$?
[ "$rc" = 137 ] || fail "stopped sentry: exit $rc: $(cat "$out")"
none_left "$mark" 5 || fail "stopped sentry: processes left"
exit 0
