"""CPU-bound Python threads for the GIL line of pyebpf-sample top. Runs for SECONDS.

    python3 top_gil.py one SECONDS     the main thread spins alone: it holds the GIL whenever it runs
    python3 top_gil.py fight SECONDS   the main thread and a thread named "fighter" spin together:
                                       one GIL, handed over every switch interval, each holds it
                                       about half the time
    python3 top_gil.py hash SECONDS    a thread named "hasher" hashes a large buffer in a loop
                                       (hashlib releases the GIL for it: on a CPU without the GIL
                                       but for a moment between two hashes) while one named
                                       "spinner" spins (holding it whenever it runs)
"""
import hashlib
import sys
import threading
import time


def spin(end):
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x += i * i
    return x


def hash_loop(end):
    data = b"x" * (4 << 20)
    while time.monotonic() < end:
        hashlib.sha256(data).digest()


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    end = time.monotonic() + seconds
    if mode == "fight":
        t = threading.Thread(target=spin, args=(end,), name="fighter")
        t.start()
        spin(end)
        t.join()
    elif mode == "hash":
        threads = [threading.Thread(target=hash_loop, args=(end,), name="hasher"),
                   threading.Thread(target=spin, args=(end,), name="spinner")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        spin(end)


main()
