"""Python workloads for the remote-reads benchmark (bench/pyreads, pyebpf-sample --no-bpf).

    python3 bench/pyload.py steady|change|threads50

steady:    the main thread spins in one loop 20 frames down: the same stack at every sample.
change:    the main thread calls random chains (4-24 frames, 8 functions) that return within
           microseconds: the stack differs from one sample to the next.
threads50: 50 threads, each spinning in its own loop 6 frames down (plus the main thread waiting).
Prints READY when the stacks are in place, then runs until killed.
"""
import random
import sys
import threading
import time


def spin():
    x = 0
    while True:
        x += 1


def chain(n, leaf):
    if n <= 0:
        return leaf()
    return chain(n - 1, leaf)


def f0(n):
    return f1(n - 1) if n > 0 else 0


def f1(n):
    return f2(n - 1) if n > 0 else 1


def f2(n):
    return f3(n - 1) if n > 0 else 2


def f3(n):
    return f4(n - 1) if n > 0 else 3


def f4(n):
    return f5(n - 1) if n > 0 else 4


def f5(n):
    return f6(n - 1) if n > 0 else 5


def f6(n):
    return f7(n - 1) if n > 0 else 6


def f7(n):
    return random.choice(FNS)(n - 1) if n > 0 else sum(range(50))


FNS = [f0, f1, f2, f3, f4, f5, f6, f7]


def changing():
    r = random.Random(1)
    while True:
        r.choice(FNS)(r.randrange(4, 24))


def main():
    mode = sys.argv[1]
    if mode == "steady":
        threading.Timer(0.3, lambda: print("READY", flush=True)).start()
        chain(18, spin)
    elif mode == "change":
        threading.Timer(0.3, lambda: print("READY", flush=True)).start()
        changing()
    elif mode == "threads50":
        ready = threading.Barrier(51)

        def worker():
            ready.wait()
            chain(4, spin)

        for _ in range(50):
            threading.Thread(target=worker, daemon=True).start()
        ready.wait()
        time.sleep(0.2)
        print("READY", flush=True)
        threading.Event().wait()
    else:
        sys.exit("pyload: unknown mode " + mode)


if __name__ == "__main__":
    main()
