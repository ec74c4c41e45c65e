# stdout_unread_interruptible: a guest writes to a stdout pipe nobody reads,
# so the pipe fills; then a supervisor sends SIGTERM or SIGINT to `husk do`.
# A guest thread parked in a blocking write inside the host took neither, so
# the sandbox only ended when the kill grace ran out. The write must wait in
# the sentry, where the signal reaches it: the sandbox ends at once, killed
# by the signal, long before the grace (30 s here).
. "$ATTACK_SRC/lib.sh"
cat > "$ATTACK_TMP/full.py" <<'PY'
import os, signal, subprocess, sys, time
husk = os.environ["HUSK"]
guest = "import os\nwhile True:\n    os.write(1, b'x' * 65536)\n"
bad = []
for name in ("SIGTERM", "SIGINT"):
    p = subprocess.Popen([husk, "--kill-grace", "30", "do", "--", "/usr/bin/python3", "-c", guest],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         process_group=0)
    try:
        # Let the pipe fill (64 KiB) and the guest block on it.
        time.sleep(1.5)
        start = time.time()
        p.send_signal(getattr(signal, name))
        try:
            p.wait(timeout=8)
            took = time.time() - start
            err = p.stderr.read().decode(errors="replace")
            if "did not exit" in err or p.returncode != 128 + getattr(signal, name):
                bad.append(f"{name}: exit {p.returncode} after {took:.1f} s: {err.strip()!r}")
        except subprocess.TimeoutExpired:
            bad.append(f"{name}: the sandbox was still there 8 s after the signal")
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
if bad:
    print("FAIL: " + "; ".join(bad), file=sys.stderr)
    sys.exit(1)
PY
HUSK="$HUSK" timeout -s KILL 40 python3 "$ATTACK_TMP/full.py"
