# supervisor_sigint: a supervisor's SIGINT to the `husk do` process
# (Popen.send_signal, kill -INT PID) was dropped; one to its process group
# (as a terminal's Ctrl-C, or kill -INT -PGID) must not arrive twice
# (husk do and the sentry both receive it). The guest counts its SIGINTs:
# exactly one each time. The same for SIGTERM and SIGUSR1.
. "$ATTACK_SRC/lib.sh"
cat > "$ATTACK_TMP/sig.py" <<'PY'
import os, signal, subprocess, sys, time
husk = os.environ["HUSK"]
guest = r'''
import signal, sys, time
name = sys.argv[1]
n = [0]
signal.signal(getattr(signal, name), lambda *a: n.__setitem__(0, n[0] + 1))
print("ready", flush=True)
end = time.time() + 2.0
while time.time() < end:
    time.sleep(0.05)
print(n[0], flush=True)
'''
bad = []
for name in ("SIGINT", "SIGTERM", "SIGUSR1"):
    for target in ("pid", "group"):
        p = subprocess.Popen([husk, "do", "--", "/usr/bin/python3", "-c", guest, name],
                             stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, process_group=0)
        try:
            assert p.stdout.readline() == "ready\n"
            time.sleep(0.3)
            sig = getattr(signal, name)
            if target == "pid":
                p.send_signal(sig)
            else:
                os.killpg(p.pid, sig)
            out, _ = p.communicate(timeout=20)
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if out.strip() != "1" or p.returncode != 0:
            bad.append(f"{name} to the {target}: guest counted {out.strip()!r}, exit {p.returncode}")
if bad:
    print("FAIL: " + "; ".join(bad), file=sys.stderr)
    sys.exit(1)
PY
HUSK="$HUSK" timeout -s KILL 50 python3 "$ATTACK_TMP/sig.py"
