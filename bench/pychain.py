"""A main thread N Python frames deep, each frame its own code object (f0 -> ... -> f(N-1)),
the leaf spinning: what a sampler pays per distinct code object of a stack. Prints READY, then
runs until killed.

    python3 bench/pychain.py N
"""
import sys

N = int(sys.argv[1])
g = {}
for i in range(N - 1):
    exec("def f%d():\n    return f%d()\n" % (i, i + 1), g)
exec("def f%d():\n    x = 0\n    while True:\n        x += 1\n" % (N - 1), g)
print("READY", flush=True)
g["f0"]()
