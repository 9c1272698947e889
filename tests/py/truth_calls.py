"""A call graph known by construction, for tests/integration/stack_truth.sh.

  truth_calls.py SEC           runs SEC seconds; prints READY at the start and CALLS N at the end
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


def run(end):
    r, calls = 1, 0
    while time.perf_counter() < end:
        for _ in range(100):
            r = f0(r + calls) or 1
            calls += 1
    return calls


def main(seconds):
    print("READY", flush=True)
    calls = run(time.perf_counter() + seconds)
    print("CALLS %d" % calls, flush=True)


# -- The check --------------------------------------------------------------------------------


def fn_index(f):
    name, where = f
    if where == "<calls>" and name[:1] == "f" and name[1:].isdigit() and int(name[1:]) < N:
        return int(name[1:])
    return None


def edge_ok(p, c):
    if p == ("main", "self"):
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
        main(float(sys.argv[1]))
