# secret_stubs_sealed: a sandbox given a secret runs a threaded guest that
# holds the value; a host process of the same user (root) without
# capabilities tries to read it out of the stub that holds guest memory
# and out of the sentry: /proc/PID/mem, /proc/PID/fd/* (the memfd of
# guest memory) and PTRACE_SEIZE of every thread. The same probe on a
# capless process of its own must succeed, so a probe that cannot get in
# anywhere fails the attack. The sentry must hold CAP_SYS_PTRACE alone
# (effective and permitted; the egress thread nothing), the stubs no
# capability, and the gofer must be outside the sentry's pid namespace.
. "$ATTACK_SRC/lib.sh"
mark="secret-stubs-$RANDOM$RANDOM"
value="HUSK-STUB-SECRET-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s' "$value" >"$ATTACK_TMP/key"
PY=/usr/bin/python3
trap 'kill_marked "$mark"' EXIT

cat >"$ATTACK_TMP/probe.py" <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_SEIZE = 0x4206
caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm'))]
print('probe caps', ' '.join(caps))
pid = int(sys.argv[1])
got = []
try:
    fd = os.open(f'/proc/{pid}/mem', os.O_RDONLY)
    os.close(fd)
    got.append('mem')
except OSError:
    pass
try:
    fds = os.listdir(f'/proc/{pid}/fd')
except OSError:
    fds = [str(n) for n in range(64)]
for n in fds:
    try:
        os.readlink(f'/proc/{pid}/fd/{n}')
        got.append(f'fd-link {n}')
    except OSError:
        pass
    try:
        fd = os.open(f'/proc/{pid}/fd/{n}', os.O_RDONLY)
        os.close(fd)
        got.append(f'fd {n}')
    except OSError:
        pass
for tid in os.listdir(f'/proc/{pid}/task'):
    if libc.ptrace(PTRACE_SEIZE, int(tid), None, None) == 0:
        got.append(f'seize {tid}')
print('got', ' '.join(got) or 'nothing')
EOF
capless=(setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all --)

# The guest: a second thread reads the secret and keeps it (and keeps
# running) while the first waits on stdin.
guest='import sys, threading
held, stop = [], threading.Event()
def hold():
    held.append(open("/run/secrets/KEY").read())
    stop.wait()
t = threading.Thread(target=hold)
t.start()
while not held:
    pass
print("ready", len(held[0]), flush=True)
sys.stdin.read()
stop.set()
t.join()
print("done", held[0] == open("/run/secrets/KEY").read(), flush=True)'
mkfifo "$ATTACK_TMP/in"
HUSK_ATTACK_MARK=$mark timeout -s KILL 60 "$HUSK" do --secret "KEY=@$ATTACK_TMP/key" -- "$PY" -c "$guest" \
    <"$ATTACK_TMP/in" >"$ATTACK_TMP/out" 2>"$ATTACK_TMP/err" &
husk=$!
exec 3>"$ATTACK_TMP/in"
for _ in $(seq 1 300); do
    grep -q ready "$ATTACK_TMP/out" 2>/dev/null && break
    sleep 0.1
done
grep -qx "ready ${#value}" "$ATTACK_TMP/out" || fail "the threaded guest did not start: $(cat "$ATTACK_TMP/out" "$ATTACK_TMP/err")"

cmd_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }
field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
sentry="" gofer=""
for p in $(marked "$mark"); do
    case " $(cmd_of "$p")" in
        *" boot "*) sentry=$p ;;
        *" gofer "*) gofer=$p ;;
    esac
done
[ -n "$sentry" ] && [ -n "$gofer" ] || fail "no sentry or gofer among $(marked "$mark")"
stubs=$(cat /proc/"$sentry"/task/*/children)
[ -n "$stubs" ] || fail "the sentry has no stub"

# Whom the sentry's CAP_SYS_PTRACE could name: its pid namespace holds
# neither the gofer nor the runtime.
sentry_ns=$(readlink "/proc/$sentry/ns/pid")
[ "$sentry_ns" != "$(readlink "/proc/$gofer/ns/pid")" ] || fail "the gofer is in the sentry's pid namespace"
[ "$sentry_ns" != "$(readlink "/proc/$husk/ns/pid")" ] || fail "the runtime is in the sentry's pid namespace"

for k in CapEff CapPrm; do
    [ "$(field "$sentry" $k)" = 0000000000080000 ] || fail "sentry $k $(field "$sentry" $k), want CAP_SYS_PTRACE alone"
done
for k in CapInh CapBnd CapAmb; do
    [ "$(field "$sentry" $k)" = 0000000000000000 ] || fail "sentry $k $(field "$sentry" $k)"
done
for t in /proc/"$sentry"/task/*; do
    want=0000000000080000
    [ "$(cat "$t/comm")" = egress-outer ] && want=0000000000000000
    eff=$(awk '$1 == "CapEff:" { print $2 }' "$t/status")
    [ "$eff" = "$want" ] || fail "sentry thread $(cat "$t/comm"): CapEff $eff, want $want"
done
threaded=""
for s in $stubs; do
    for k in CapEff CapPrm CapInh CapBnd CapAmb; do
        [ "$(field "$s" $k)" = 0000000000000000 ] || fail "stub $s has $k $(field "$s" $k)"
    done
    [ "$(ls "/proc/$s/task" | wc -l)" -ge 2 ] && threaded=$s
done
[ -n "$threaded" ] || fail "no stub runs the guest's two threads"

# The probe gets into a capless process of its own...
"${capless[@]}" sleep 30 </dev/null &
control=$!
sleep 0.2
out=$("${capless[@]}" "$PY" "$ATTACK_TMP/probe.py" "$control")
kill "$control"
wait "$control" 2>/dev/null
echo "$out" | grep -qx "probe caps 0000000000000000 0000000000000000" || fail "the probe has capabilities: $out"
for want in mem "fd-link 0" "fd 0" "seize $control"; do
    case " $(echo "$out" | grep '^got ') " in
        *" $want "*) ;;
        *) fail "the probe cannot get into its own kind ($want): $out" ;;
    esac
done
# ...and into nothing of the sandbox.
for p in $stubs "$sentry"; do
    out=$("${capless[@]}" "$PY" "$ATTACK_TMP/probe.py" "$p")
    echo "$out" | grep -qx "got nothing" || fail "a capless host process got into $p ($(cmd_of "$p")): $out"
done

exec 3>&-
wait "$husk"
rc=$?
[ "$rc" = 0 ] || fail "husk exited $rc: $(cat "$ATTACK_TMP/err")"
[ "$(tail -n1 "$ATTACK_TMP/out")" = "done True" ] || fail "the guest ended: $(cat "$ATTACK_TMP/out")"
grep -q "$value" "$ATTACK_TMP/out" && fail "the value left the sandbox"
trap - EXIT
exit 0
