"""A CPU-bound workload whose time splits 60/30/10 between three functions, each doing its own
work (so each one's own time is its share), for pyebpf-sample top. Runs for SECONDS (argv[1],
default 60).

The split is by the clock, not by counts of work: each round spins 6u, 3u and u in sixty(),
thirty() and ten(), u drawn from 0.5-1.5 ms so that no sampling period locks to the rounds.
(Loops of 6000/3000/1000 additions are not 60/30/10: the longer loop's sums outgrow one
machine word and each step costs more.)

    python3 top_work.py [SECONDS]
"""
import random
import sys
import time


def sixty(u):
    end = time.monotonic() + 6 * u
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


def thirty(u):
    end = time.monotonic() + 3 * u
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


def ten(u):
    end = time.monotonic() + u
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


def main():
    end = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60)
    while time.monotonic() < end:
        u = random.uniform(0.0005, 0.0015)
        sixty(u)
        thirty(u)
        ten(u)


main()
