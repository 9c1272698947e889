"""A hot loop for CPython's JIT (run with PYTHON_JIT=1): READY once executors exist, then spins.

Two functions carry the work (hot_outer calls hot_inner); a profiler should attribute the
samples to them rather than to anonymous JIT code.
"""
import sys


def hot_inner(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def hot_outer():
    t = 0
    for _ in range(200):
        t += hot_inner(1000)
    return t


def main():
    hot_outer()
    print("READY jit=%s" % (sys._jit.is_enabled() if hasattr(sys, "_jit") else "n/a"), flush=True)
    while True:
        hot_outer()


main()
