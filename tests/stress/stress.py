#!/usr/bin/env python3
"""Multiprocess stress of husk: runs driver.py inside `husk do` (or natively
with --native) and reports its counts.

  tests/stress/stress.py --iterations 18            # a CI-sized run
  tests/stress/stress.py --soak 30                  # a 30-minute soak
  tests/stress/stress.py --soak 5 --only sigwait,manager --debug-log /tmp/h.log

Exits 0 when every run of every workload succeeded in its time bound. A
sandbox that does not finish 120 s after the driver's own bound is
killed by process group and reported as a sandbox-wide hang.
"""

import argparse
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--husk", default=os.path.join(REPO, "target", "release", "husk"))
    ap.add_argument("--native", action="store_true", help="run the driver on the host, not in a sandbox")
    ap.add_argument("--iterations", type=int, default=0)
    ap.add_argument("--soak", type=float, default=0, metavar="MINUTES")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per workload run before it counts as a hang")
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--lanes", type=int, default=1, help="workload runs at once")
    ap.add_argument("--debug-log", help="husk's diagnostics (pass --strace too for every guest system call)")
    ap.add_argument("--strace", action="store_true")
    a = ap.parse_args()
    if not a.iterations and not a.soak:
        ap.error("give --iterations N or --soak MINUTES")
    driver = [sys.executable if a.native else "/usr/bin/python3", os.path.join(HERE, "driver.py"),
              "--timeout", str(a.timeout), "--hogs", str(a.hogs), "--only", a.only,
              "--iterations", str(a.iterations), "--minutes", str(a.soak), "--lanes", str(a.lanes)]
    cmd = driver
    # The driver's own bound: every run bounded, plus a dump and a kill each.
    bound = a.soak * 60 + (a.iterations or 1) * (a.timeout + 15) if a.soak else a.iterations * (a.timeout + 15)
    if not a.native:
        cmd = [a.husk, "do"]
        if a.debug_log:
            cmd += ["--debug-log", a.debug_log]
        if a.strace:
            cmd += ["--strace"]
        cmd += ["--cwd", HERE, "--"] + driver
    p = subprocess.Popen(cmd, start_new_session=True)
    try:
        return p.wait(timeout=bound + 120)
    except subprocess.TimeoutExpired:
        print("SANDBOX HANG: the driver did not finish; killing the sandbox", flush=True)
        return 2
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


if __name__ == "__main__":
    sys.exit(main())
