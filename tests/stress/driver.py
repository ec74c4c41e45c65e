"""The stress loop, run inside the sandbox (or natively, to compare).

Starts CPU hogs, then runs the workloads of workloads.py round-robin, each
in a session of its own with a time bound. A run past its bound is a hang:
the state of every process of the sandbox is dumped from /proc (status,
each thread's state, wchan, syscall where /proc has them) before its
session is killed. Prints one line per iteration and a final line
`SUMMARY {json}` with the counts per workload.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from workloads import WORKLOADS  # noqa: E402

# One lane's report at a time.
OUT = threading.Lock()

HOG = "import os\nos.nice(0)\nwhile True:\n    pass\n"


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError as e:
        return f"<{e.strerror}>"


def dump_processes(out):
    """Every guest process's /proc view: what a hang is waiting on."""
    me = os.getpid()
    for pid in sorted((int(p) for p in os.listdir("/proc") if p.isdigit())):
        if pid == me:
            continue
        status = read(f"/proc/{pid}/status")
        keep = ("Name", "State", "Tgid", "PPid", "Threads", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")
        fields = [line for line in status.splitlines() if line.split(":")[0] in keep]
        print(f"  pid {pid}: {read(f'/proc/{pid}/cmdline').replace(chr(0), ' ').strip()}", file=out)
        print("    " + " | ".join(fields), file=out)
        try:
            tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
        except OSError:
            tids = []
        for tid in tids:
            stat = read(f"/proc/{pid}/task/{tid}/stat")
            state = stat.rsplit(")", 1)[-1].split()[:1]
            extra = [f"{n}={read(f'/proc/{pid}/task/{tid}/{n}').strip()}" for n in ("wchan", "syscall")
                     if os.path.exists(f"/proc/{pid}/task/{tid}/{n}")]
            blk = [line for line in read(f"/proc/{pid}/task/{tid}/status").splitlines() if line.startswith(("SigPnd", "SigBlk"))]
            print(f"    tid {tid}: state={state} {' '.join(extra)} {' '.join(blk)}", file=out)
    out.flush()


def run_one(name, timeout):
    start = time.monotonic()
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "workloads.py"), name], start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = p.communicate(timeout=timeout)
        outcome = "ok" if p.returncode == 0 else f"fail({p.returncode})"
    except subprocess.TimeoutExpired:
        outcome, out = "hang", b""
        with OUT:
            print(f"HANG {name} after {timeout}s; processes:", flush=True)
            dump_processes(sys.stdout)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except OSError as e:
            # Linux finds the group until its last member is reaped.
            outcome = f"fail(killpg: {e.strerror})"
        if outcome == "hang":
            out = b""
            try:
                p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                outcome = "hang-unkillable"
    if outcome.startswith("fail"):
        with OUT:
            print(f"FAIL {name}: {outcome}\n" + out.decode(errors="replace")[-2000:], flush=True)
    return outcome, time.monotonic() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=0, help="stop after this many workload runs")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this long")
    ap.add_argument("--timeout", type=float, default=60, help="seconds one run may take before it is a hang")
    ap.add_argument("--hogs", type=int, default=2, help="busy-loop processes started alongside")
    ap.add_argument("--only", default="", help="comma-separated workloads to run (default: all)")
    ap.add_argument("--lanes", type=int, default=1, help="workload runs at once")
    a = ap.parse_args()
    names = [n for n in a.only.split(",") if n] or list(WORKLOADS)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(a.hogs)]
    counts = {n: {"ok": 0, "fail": 0, "hang": 0} for n in names}
    end = time.monotonic() + a.minutes * 60 if a.minutes else None
    lock = threading.Lock()
    started = [0]

    def lane():
        while True:
            with lock:
                i = started[0]
                if (a.iterations and i >= a.iterations) or (end is not None and time.monotonic() >= end):
                    return
                started[0] += 1
            name = names[i % len(names)]
            outcome, secs = run_one(name, a.timeout)
            with lock, OUT:
                counts[name]["hang" if outcome.startswith("hang") else "ok" if outcome == "ok" else "fail"] += 1
                print(f"ITER {i} {name} {outcome} {secs:.1f}s", flush=True)

    try:
        lanes = [threading.Thread(target=lane) for _ in range(max(1, a.lanes))]
        for t in lanes:
            t.start()
        for t in lanes:
            t.join()
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    total = {k: sum(c[k] for c in counts.values()) for k in ("ok", "fail", "hang")}
    print("SUMMARY " + json.dumps({"iterations": started[0], **total, "per_workload": counts}), flush=True)
    return 0 if total["fail"] == 0 and total["hang"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
