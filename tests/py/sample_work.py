"""Workloads for tests/integration/sample_python.sh and three_tools.sh.

  chain SEC     run → main → outer → middle → inner, and outer → hot_b: two hot pure-Python loops;
                prints "SHARE inner <fraction>" (thread CPU time measured here) at the end
  threads SEC   4 threads running work_alpha … work_delta, the main thread waits
  qsort SEC     caller → libc qsort (ctypes) → compare (Python callback), over and over
  deep SEC      recursion 1000 deep (rec), spinning at the bottom
  steady SEC    one function spinning
  tail SEC      first_phase spins SEC, then last_phase runs 30 ms of CPU and is dropped (its code
                object freed), then the process sleeps 0.3 s and ends
Every mode prints READY once running and ends by itself after SEC seconds.
"""
import ctypes
import ctypes.util
import random
import sys
import threading
import time


def say(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


clock = time.thread_time
spent = {"inner": 0.0, "hot_b": 0.0}
# Loop lengths vary by up to ±1/3 from call to call: a fixed cycle (outer() takes ~2.2 ms on
# 3.12) close to the sampling period (2.004 ms at 499 Hz) keeps the samples at one phase of it
# for long stretches, and the share then drifts 5-10 points either way from run to run.
jitter = random.Random(1).uniform


def inner():
    t = clock()
    x = 0
    for i in range(int(60000 * jitter(2 / 3, 4 / 3))):
        x += i
    spent["inner"] += clock() - t
    return x


def hot_b():
    t = clock()
    x = 0
    for i in range(int(20000 * jitter(2 / 3, 4 / 3))):
        x += i
    spent["hot_b"] += clock() - t
    return x


def middle():
    return inner()


def outer():
    middle()
    hot_b()


def main(end):
    say("READY")
    while time.time() < end:
        outer()
    total = spent["inner"] + spent["hot_b"]
    say("SHARE inner %.4f" % (spent["inner"] / total))


def spin_for(end):
    x = 0
    while time.time() < end:
        for i in range(10000):
            x += i
    return x


def work_alpha(end):
    return spin_for(end)


def work_beta(end):
    return spin_for(end)


def work_gamma(end):
    return spin_for(end)


def work_delta(end):
    return spin_for(end)


def threads(end):
    ts = [threading.Thread(target=f, args=(end,)) for f in (work_alpha, work_beta, work_gamma, work_delta)]
    for t in ts:
        t.start()
    say("READY")
    for t in ts:
        t.join()


def compare(a, b):
    x = a[0] - b[0]
    return (x > 0) - (x < 0)


def caller(end):
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    cmp_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
    cb = cmp_t(compare)
    n = 3000
    src = (ctypes.c_int * n)(*random.sample(range(n * 10), n))
    arr = (ctypes.c_int * n)()
    libc.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, cmp_t]
    say("READY")
    while time.time() < end:
        ctypes.memmove(arr, src, ctypes.sizeof(arr))
        libc.qsort(arr, n, ctypes.sizeof(ctypes.c_int), cb)


def rec(n, end):
    if n > 1:
        return rec(n - 1, end)
    say("READY")
    return spin_for(end)


def steady(end):
    say("READY")
    return spin_for(end)


def spin_cpu(sec):
    t = time.thread_time() + sec
    x = 0
    while time.thread_time() < t:
        for i in range(1000):
            x += i
    return x


# compiled at run time, so that no other code object keeps last_phase's code alive once dropped
TAIL_SRC = "def last_phase(cpu):\n    return spin_cpu(cpu)\n"


def first_phase(end):
    return spin_for(end)


def tail(end):
    say("READY")
    first_phase(end)
    ns = {"spin_cpu": spin_cpu}
    exec(compile(TAIL_SRC, "tail_code", "exec"), ns)
    ns["last_phase"](0.03)
    ns.clear()
    time.sleep(0.3)


def run():
    mode, sec = sys.argv[1], float(sys.argv[2])
    end = time.time() + sec
    if mode == "chain":
        main(end)
    elif mode == "threads":
        threads(end)
    elif mode == "qsort":
        caller(end)
    elif mode == "deep":
        sys.setrecursionlimit(5000)
        rec(1000, end)
    elif mode == "steady":
        steady(end)
    elif mode == "tail":
        tail(end)


run()
