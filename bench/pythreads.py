"""N Python threads, each spinning in its own function (its own code object) a few frames down,
all runnable: what a sampler pays per thread.

    python3 bench/pythreads.py N
Prints READY when every thread is in its loop, then runs until killed.
"""
import sys
import threading

N = int(sys.argv[1])
g = {"started": threading.Barrier(N + 1)}
for i in range(N):
    exec("def t%d():\n    started.wait()\n    x = 0\n    while True:\n        x += 1\n" % i, g)
    exec("def w%d():\n    return t%d()\n" % (i, i), g)
for i in range(N):
    threading.Thread(target=g["w%d" % i], daemon=True).start()
g["started"].wait()
print("READY", flush=True)
threading.Event().wait()
