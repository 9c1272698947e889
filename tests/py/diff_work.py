"""A workload whose hot function moves: `before` spends ~80 % of its CPU in a() and ~20 % in b(),
`after` the reverse. Runs for SECONDS of wall time (argv[2]).

    python3 diff_work.py before|after SECONDS
"""
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def a():
    return spin(2000)


def b():
    return spin(2000)


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    heavy, light = (a, b) if mode == "before" else (b, a)
    calls = [heavy] * 4 + [light]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for f in calls:
            f()  # one call site: both modes give a() and b() the same stack


main()
