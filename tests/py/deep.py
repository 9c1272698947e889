"""Deep Python stacks for the sampler's truncation paths.

    python3 deep.py deep DEPTH SECONDS   spin at the bottom of DEPTH nested calls of `down`
    python3 deep.py storm SECONDS        recurse until RecursionError, again and again

Prints "deep: ok" / "storm: ok N" (N RecursionErrors) when it ends; storm prints
"storm: running" first, when its loop starts.
"""
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
        end = time.monotonic() + float(sys.argv[2])
        errors = 0
        print("storm: running", flush=True)
        while time.monotonic() < end:
            try:
                fall(0)
            except RecursionError:
                errors += 1
        print("storm: ok %d" % errors)


main()
