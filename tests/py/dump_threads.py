"""Three named threads parked in known functions, for pyebpf-sample dump: one in time.sleep, one
blocked on a lock, one computing. Prints READY once all three are in place, then waits.

    python3 dump_threads.py
"""
import sys
import threading
import time

lock = threading.Lock()
lock.acquire()
parked = threading.Barrier(4)


def nap():
    count, ratio, label, nothing, big = 42, 2.5, "napping", None, -(2**40)  # --locals
    parked.wait()
    time.sleep(3600)  # mark: nap


def blocked():
    parked.wait()
    lock.acquire()  # mark: blocked


def crunch(n):
    x = 0
    while True:
        x += n * n  # mark: crunch


def compute():
    parked.wait()
    crunch(7)  # mark: compute


for target, name in ((nap, "napper"), (blocked, "locked"), (compute, "cruncher")):
    threading.Thread(target=target, name=name, daemon=True).start()
parked.wait()
print("READY", flush=True)
sys.stdin.read()  # mark: main (until the test closes stdin)
