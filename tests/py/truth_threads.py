"""Threads that each run a hot function of their own, for tests/integration/sample_threads.sh.

  truth_threads.py SEC [N]   starts N threads (default 8, at most 8); thread k runs hot_k for SEC
                             seconds, all of them at once (on a free-threaded build in parallel,
                             on as many CPUs as there are). Prints READY when they start, then,
                             while every thread is still alive, one line per thread:
                             "THREAD hot_k TID MS", MS = the thread's CPU time in
                             milliseconds, and exits. The time on the CPU the scheduler
                             keeps (/proc/self/task/TID/schedstat, nanoseconds): utime +
                             stime of .../stat are counted in whole ticks (4 ms at HZ=250)
                             and miss by a tick on every 5 ms GIL turn, 10 % in all.
"""
import os
import sys
import threading
import time


def spin(end):
    x = 0
    while time.perf_counter() < end:
        for i in range(2000):
            x += i
    return x


def hot_0(end):
    return spin(end)


def hot_1(end):
    return spin(end)


def hot_2(end):
    return spin(end)


def hot_3(end):
    return spin(end)


def hot_4(end):
    return spin(end)


def hot_5(end):
    return spin(end)


def hot_6(end):
    return spin(end)


def hot_7(end):
    return spin(end)


HOT = [hot_0, hot_1, hot_2, hot_3, hot_4, hot_5, hot_6, hot_7]


def cpu_ms(tid):
    try:
        with open("/proc/self/task/%d/schedstat" % tid) as f:
            return int(f.read().split()[0]) // 1000000
    except OSError:  # a kernel without schedstat: the tick counts
        with open("/proc/self/task/%d/stat" % tid) as f:
            rest = f.read().rpartition(")")[2].split()
        return (int(rest[11]) + int(rest[12])) * 1000 // os.sysconf("SC_CLK_TCK")


def main(seconds, n):
    start = threading.Barrier(n + 1)
    done = threading.Barrier(n + 1)
    release = threading.Event()
    tids = [0] * n

    def body(k):
        tids[k] = threading.get_native_id()
        start.wait()
        HOT[k](time.perf_counter() + seconds)
        done.wait()
        release.wait()  # alive until its stat is read

    threads = [threading.Thread(target=body, args=(k,), name="hot_%d" % k) for k in range(n)]
    for t in threads:
        t.start()
    start.wait()
    print("READY", flush=True)
    done.wait()
    for k in range(n):
        print("THREAD hot_%d %d %d" % (k, tids[k], cpu_ms(tids[k])), flush=True)
    release.set()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main(float(sys.argv[1]), min(int(sys.argv[2]) if len(sys.argv) > 2 else 8, len(HOT)))
