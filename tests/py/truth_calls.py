"""A call graph known by construction, for tests/integration/stack_truth.sh.

  truth_calls.py SEC [T]       runs until the process has had SEC seconds of CPU (at most WALL_CAP
                               s, so a loaded machine still yields its samples), in T threads at
                               once (default 1: the main thread; more: T threads each running
                               thread_main -> run); prints READY at the start and CALLS N (all
                               threads) at the end
  truth_calls.py --check FILE  reads a folded profile of a run, prints "key=value" counts

main() -> run() -> f0, and f<i> calls at most one f<j>, j = i + 1, i + 2 or i + 3 (or none,
one time in 8), chosen by a pseudo-random number that each call passes on; f13..f15 may call
nothing beyond f15. Each body is a short loop (~0.5-2 us), so the stack changes every few
microseconds and its depth varies (1-16 frames below run, ~5 on average). f0..f15 are made from one template at start-up and live until the end; their file is
"<calls>". A stack in which f<i> is followed by f<j> with j <= i, or by any other name, cannot
happen: a profiler shows one only when it read frames of different instants as one chain (a
torn read) or named a frame wrongly.
"""
import os
import sys
import threading
import time

N = 16
TEMPLATE = """\
def f{i}(r):
    for _ in range(8 + (r & 15)):
        r = (r * 1103515245 + 12345) & 0x7FFFFFFF
    j = {i} + 1 + (r >> 16) % 3
    if j < {n} and (r >> 20) & 7:
        r = F[j](r)
    for _ in range(r & 7):
        r = (r * 1103515245 + 12345) & 0x7FFFFFFF
    return r
"""
F = []
for i in range(N):
    exec(compile(TEMPLATE.format(i=i, n=N), "<calls>", "exec"), globals())
    F.append(globals()["f%d" % i])


WALL_CAP = 100  # seconds; the sampler's -d in stack_truth.sh is 120


def run(cpu_end, wall_end):
    r, calls = 1, 0
    while time.process_time() < cpu_end and time.perf_counter() < wall_end:
        for _ in range(100):
            r = f0(r + calls) or 1
            calls += 1
    return calls


def thread_main(cpu_end, wall_end, out):
    out.append(run(cpu_end, wall_end))


def main(seconds, threads=1):
    print("READY", flush=True)
    cpu_end, wall_end = time.process_time() + seconds, time.perf_counter() + WALL_CAP
    if threads <= 1:
        calls = run(cpu_end, wall_end)
    else:
        out = []
        ts = [threading.Thread(target=thread_main, args=(cpu_end, wall_end, out)) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        calls = sum(out)
    print("CALLS %d" % calls, flush=True)


# -- The check --------------------------------------------------------------------------------


def fn_index(f):
    name, where = f
    if where == "<calls>" and name[:1] == "f" and name[1:].isdigit() and int(name[1:]) < N:
        return int(name[1:])
    return None


def edge_ok(p, c):
    threading_py = lambda f: os.path.basename(f[1] or "") == "threading.py"
    if threading_py(p):  # below main, starting or joining the threads: not the graph's
        return True
    if p == ("main", "self"):  # with threads, main starts and joins them
        return c == ("run", "self") or threading_py(c)
    if p == ("thread_main", "self"):
        return c == ("run", "self")
    if p == ("run", "self"):
        return c == ("f0", "<calls>")
    i, j = fn_index(p), fn_index(c)
    return i is not None and j is not None and j > i


def check(path):
    import truth_folded as tf

    me = os.path.basename(__file__)
    total = inside = marked = bad = bad_marked = depth = 0
    first = ""
    for frames, n in tf.read(path, me):
        total += n
        if ("thread_main", "self") in frames:  # a thread's stack: its part starts there
            part = frames[frames.index(("thread_main", "self")):]
        else:
            part = tf.workload_part(frames, lambda f: fn_index(f) is not None)
        if part is None:
            continue
        inside += n
        is_marked = tf.marked(frames)
        marked += n if is_marked else 0
        depth += n * sum(1 for f in part if fn_index(f) is not None)
        edge = tf.bad_edge(part, edge_ok)
        if edge and is_marked:
            bad_marked += n
        elif edge:
            bad += n
            first = first or "%s (in %s)" % (edge, ";".join(f[0] for f in part))
    print("samples=%d workload=%d unmarked=%d marked=%d impossible=%d impossible_marked=%d"
          " mean_depth=%.2f" % (total, inside, inside - marked, marked, bad, bad_marked,
                                depth / inside if inside else 0))
    print("first_impossible=%s" % (first or "-"))


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        main(float(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1)
