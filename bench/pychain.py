"""A main thread N Python frames deep, each frame its own code object (f0 -> ... -> f(N-1)),
the leaf spinning: what a sampler pays per distinct code object of a stack. With `same`, the N
frames run one code object (a recursion): what it pays per frame alone. Prints READY, then
runs until killed.

    python3 bench/pychain.py N [same]
"""
import sys

N = int(sys.argv[1])
g = {}
if sys.argv[2:] == ["same"]:
    exec("def f0(n):\n    if n > 1:\n        return f0(n - 1)\n    print('READY', flush=True)\n"
         "    x = 0\n    while True:\n        x += 1\n", g)
    g["f0"](N)
for i in range(N - 1):
    exec("def f%d():\n    return f%d()\n" % (i, i + 1), g)
exec("def f%d():\n    x = 0\n    while True:\n        x += 1\n" % (N - 1), g)
print("READY", flush=True)
g["f0"]()
