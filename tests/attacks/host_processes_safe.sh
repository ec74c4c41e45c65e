# host_processes_safe: signals from the guest must never reach host
# processes: kill(-1, SIGKILL) by a root guest, kills of pid numbers that
# host processes have, and of the process groups and sessions of the
# runtime. A host process running beside the sandbox, and husk itself,
# survive.
. "$ATTACK_SRC/lib.sh"
sleep 30 &
bystander=$!
trap 'kill $bystander 2>/dev/null' EXIT
out=$(timeout -s KILL 30 "$HUSK" do -- /bin/sh -c "
    kill -9 $bystander $$ $PPID 1 2>/dev/null
    kill -9 -$bystander -$$ 2>/dev/null
    python3 -c 'import os, signal
for p in range(2, 400):
    try: os.kill(p, signal.SIGKILL)
    except OSError: pass
'
    kill -9 -1
    echo guest-done
" 2>&1 </dev/null)
kill -0 "$bystander" 2>/dev/null || fail "a host process was killed from the sandbox"
echo "$out" | grep -q guest-done || fail "the guest did not finish: $out"
exit 0
