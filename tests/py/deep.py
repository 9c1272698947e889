"""Deep Python stacks for the sampler's truncation paths.

    python3 deep.py deep DEPTH SECONDS   spin at the bottom of DEPTH nested calls of `down`
    python3 deep.py storm SECONDS        recurse until RecursionError, again and again
    python3 deep.py storm SECONDS GO     the same until the file GO exists (60 s at most), then
                                         for SECONDS of this process's CPU time

Prints "deep: ok" / "storm: ok N" (N RecursionErrors) when it ends; storm prints
"storm: running" first, when its loop starts.
"""
import os
import sys
import time


def spin(end):
    x = 0
    while time.monotonic() < end:
        for i in range(2000):
            x += i * i
    return x


def down(n, end):
    if n <= 1:
        return spin(end)
    return down(n - 1, end) + 1


def fall(n):
    return fall(n + 1) + 1


def main():
    if sys.argv[1] == "deep":
        depth = int(sys.argv[2])
        sys.setrecursionlimit(depth + 100)
        down(depth, time.monotonic() + float(sys.argv[3]))
        print("deep: ok")
    else:
        clock, go = time.monotonic, None
        if len(sys.argv) > 3:
            clock, go = time.process_time, sys.argv[3]
        end = clock() + float(sys.argv[2])
        give_up = time.monotonic() + 60
        errors = 0
        print("storm: running", flush=True)
        while go or clock() < end:
            try:
                fall(0)
            except RecursionError:
                errors += 1
            if go and (os.path.exists(go) or time.monotonic() > give_up):
                go, end = None, clock() + float(sys.argv[2])
        print("storm: ok %d" % errors)


main()
