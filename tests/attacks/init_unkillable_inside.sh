# init_unkillable_inside: the sandbox's first process died of `kill -9 0`
# or of a child's `kill -9 1`; Linux's pid-namespace init never gets, from
# inside its namespace, a signal it has no handler for (SIGKILL and
# SIGSTOP included), while one it handles still arrives and the sentry's
# own kills (an OOM kill: sentry_quiet_on_guest_stderr) still work. Each
# case is checked natively, in a pid namespace of its own, and under husk.
. "$ATTACK_SRC/lib.sh"
check() {
    local want="$1" script="$2" got
    got=$(timeout -s KILL 20 unshare -pf --mount-proc /bin/sh -c "$script" 2>&1 </dev/null)
    [ "$got" = "$want" ] || fail "natively, $script: got '$got', want '$want' (the test is wrong)"
    got=$(timeout -s KILL 20 "$HUSK" do -- /bin/sh -c "$script" 2>&1 </dev/null)
    [ "$got" = "$want" ] || fail "under husk, $script: got '$got', want '$want'"
}
check "survived" 'kill -9 0; echo survived'
check "survived" 'sh -c "kill -9 1"; echo survived'
check "survived" 'sh -c "kill -STOP 1"; sh -c "kill -TERM 1"; echo survived'
check "handled" 'trap "echo handled; exit 0" USR1; sh -c "kill -USR1 1"; sleep 5; echo not'
exit 0
