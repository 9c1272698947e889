"""A fixed CPU-bound Python workload for the target-slowdown benchmark.

    python3 bench/pywork.py FILE    appends the process CPU time (user + sys, seconds) to FILE

The same work every run (calls, loops, dict and string operations); about 1 s of CPU here.
"""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def words(n):
    d = {}
    for i in range(n):
        k = "w%d" % (i % 997)
        d[k] = d.get(k, 0) + len(k)
    return sum(d.values())


def main():
    t0 = time.process_time()
    s = 0
    for _ in range(50):
        s += fib(22) + words(100000)
    t = time.process_time() - t0
    with open(sys.argv[1], "a") as f:
        f.write("%.6f\n" % t)
    return 0 if s else 1


if __name__ == "__main__":
    sys.exit(main())
