"""A CPU-bound workload whose time splits 60/30/10 between three functions, each doing its own
work (so each one's own time is its share), for pyebpf-sample top. Runs for SECONDS (argv[1],
default 60).

    python3 top_work.py [SECONDS]
"""
import sys
import time


def sixty():
    x = 0
    for i in range(6000):
        x += i * i
    return x


def thirty():
    x = 0
    for i in range(3000):
        x += i * i
    return x


def ten():
    x = 0
    for i in range(1000):
        x += i * i
    return x


def main():
    end = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60)
    while time.monotonic() < end:
        sixty()
        thirty()
        ten()


main()
