"""Multiprocess workloads the stress driver runs, one per process.

`python3 workloads.py NAME` runs workload NAME once and exits 0 when it
did what it does natively; any other outcome (an exception, a wrong
result) exits non-zero. A hang is the driver's to detect.
"""

import concurrent.futures
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time


def square(x):
    return x * x


def nap(x):
    time.sleep(x)
    return x


def pool_map(method):
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(4) as pool:
        got = pool.map(square, range(400), chunksize=1)
    assert got == [x * x for x in range(400)], "Pool.map result"
    q = ctx.Queue()
    procs = [ctx.Process(target=q.put, args=(i,)) for i in range(4)]
    for p in procs:
        p.start()
    got = sorted(q.get(timeout=30) for _ in procs)
    for p in procs:
        p.join()
        assert p.exitcode == 0, p.exitcode
    assert got == [0, 1, 2, 3], got


def manager():
    with multiprocessing.Manager() as m:
        d, lst, q = m.dict(), m.list(), m.Queue()
        ctx = multiprocessing.get_context("fork")
        procs = [ctx.Process(target=_manager_child, args=(i, d, lst, q)) for i in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            assert p.exitcode == 0, p.exitcode
        assert dict(d) == {i: i * i for i in range(3)}, dict(d)
        assert sorted(lst) == [0, 1, 2]
        assert sorted(q.get(timeout=30) for _ in range(3)) == [0, 1, 2]


def _manager_child(i, d, lst, q):
    d[i] = i * i
    lst.append(i)
    q.put(i)


def process_pool():
    for method in ("fork", "forkserver"):
        ctx = multiprocessing.get_context(method)
        with concurrent.futures.ProcessPoolExecutor(3, mp_context=ctx) as ex:
            assert list(ex.map(square, range(100))) == [x * x for x in range(100)]


def thread_pool_barrier():
    n = 6
    barrier = threading.Barrier(n)
    hits = []
    lock = threading.Lock()

    def work(i):
        for _ in range(20):
            barrier.wait(timeout=30)
            with lock:
                hits.append(i)
        return i

    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        assert sorted(ex.map(work, range(n))) == list(range(n))
    assert len(hits) == n * 20


def pool_terminate():
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(4)
    res = pool.map_async(nap, [10] * 8)
    time.sleep(0.2)
    pool.terminate()
    pool.join()
    assert not res.ready() or not res.successful()


def pipeline():
    for _ in range(5):
        a = subprocess.Popen(["seq", "1", "20000"], stdout=subprocess.PIPE)
        b = subprocess.Popen(["grep", "7"], stdin=a.stdout, stdout=subprocess.PIPE)
        a.stdout.close()
        c = subprocess.Popen(["wc", "-l"], stdin=b.stdout, stdout=subprocess.PIPE)
        b.stdout.close()
        out, _ = c.communicate(timeout=30)
        assert a.wait(timeout=30) == 0 and b.wait(timeout=30) == 0
        assert int(out) == 6878, out
        out = subprocess.run(["sh", "-c", "yes | head -c 100000 | tr y z | tail -c 4"], capture_output=True, check=True).stdout
        assert out == b"z\nz\n", out


def sigwait():
    for _ in range(20):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        got = []
        t = threading.Thread(target=lambda: got.append(signal.sigwait({signal.SIGUSR1})))
        t.start()
        time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGUSR1)
        t.join(timeout=30)
        assert not t.is_alive(), "sigwait thread still waiting"
        assert got == [signal.SIGUSR1], got


WORKLOADS = {
    "pool_fork": lambda: pool_map("fork"),
    "pool_spawn": lambda: pool_map("spawn"),
    "pool_forkserver": lambda: pool_map("forkserver"),
    "manager": manager,
    "process_pool": process_pool,
    "thread_pool_barrier": thread_pool_barrier,
    "pool_terminate": pool_terminate,
    "pipeline": pipeline,
    "sigwait": sigwait,
}

if __name__ == "__main__":
    WORKLOADS[sys.argv[1]]()
