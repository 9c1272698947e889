"""Code churn for tests/integration/stack_truth.sh: code objects freed, their addresses reused.

  truth_churn.py SEC           runs until it has had SEC seconds of CPU (at most WALL_CAP s); prints READY at the start, CHURNED N at the end
  truth_churn.py --check FILE  reads a folded profile of a run, prints "key=value" counts

main() does two rounds over and over:
- churn_round(n): exec source (file "<churn>") that defines churn_<n>, a new function and a new
  code object, whose body calls leaf_<n % 7> and nothing else; call it for ~2 ms; drop it and
  the module code that defined it: both code objects are freed and the next compile takes their
  addresses;
- strings_round(): exec module-level code from strings (<module>, file "<string>", as site does
  with a .pth line) that calls spin().
The call graph is known by construction (EDGES, and churn_<n> -> leaf_<n % 7>). A profiler that
names a frame after a dead code object shows an edge outside it: churn_<n> over leaf_<k> with
k != n % 7, a leaf under <module> (<string>), <module> (<churn>) under strings_round, ...
"""
import re
import sys
import time

# the process's CPU time: a run holds as many samples on a loaded machine as on an idle one
clock = time.process_time
LEAVES = 7


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def leaf_0():
    return spin(150)


def leaf_1():
    return spin(150)


def leaf_2():
    return spin(150)


def leaf_3():
    return spin(150)


def leaf_4():
    return spin(150)


def leaf_5():
    return spin(150)


def leaf_6():
    return spin(150)


NS = {"clock": clock, "spin": spin}
NS.update({"leaf_%d" % k: globals()["leaf_%d" % k] for k in range(LEAVES)})

CHURN_SRC = """\
def churn_{n}(end):
    while clock() < end:
        leaf_{k}()
"""
# four sizes of module code, ~0.2 ms each
STRING_SRC = ["for _ in range(%d):\n    spin(400)\n" % (5 + k) for k in range(4)]


def churn_round(n):
    code = compile(CHURN_SRC.format(n=n, k=n % LEAVES), "<churn>", "exec")
    exec(code, NS)
    f = NS.pop("churn_%d" % n)
    del code
    f(clock() + 0.002)


def strings_round():
    for src in STRING_SRC:
        exec(src, NS)


WALL_CAP = 100  # seconds; the sampler's -d in stack_truth.sh is 120


def main(seconds):
    # SEC seconds of CPU, not of wall time: a loaded machine still yields its samples.
    print("READY", flush=True)
    cpu_end, wall_end = time.process_time() + seconds, time.perf_counter() + WALL_CAP
    n = 0
    while time.process_time() < cpu_end and time.perf_counter() < wall_end:
        churn_round(n)
        strings_round()
        n += 1
    print("CHURNED %d" % n, flush=True)


# -- The check --------------------------------------------------------------------------------

# parent -> its Python callees, frames as (qualname, file): "self" is this file
EDGES = {
    ("main", "self"): {("churn_round", "self"), ("strings_round", "self")},
    ("churn_round", "self"): {("<module>", "<churn>"), ("churn_*", "<churn>")},
    ("strings_round", "self"): {("<module>", "<string>")},
    ("<module>", "<string>"): {("spin", "self")},
    ("<module>", "<churn>"): set(),
    ("spin", "self"): set(),
}
EDGES.update({("leaf_%d" % k, "self"): {("spin", "self")} for k in range(LEAVES)})
CHURN = re.compile(r"churn_(\d+)$")


def churn_n(f):
    m = CHURN.match(f[0]) if f[1] == "<churn>" else None
    return int(m.group(1)) if m else None


def edge_ok(p, c):
    n = churn_n(p)
    if n is not None:
        return c == ("leaf_%d" % (n % LEAVES), "self")
    if churn_n(c) is not None:
        c = ("churn_*", "<churn>")
    return c in EDGES.get(p, ())


def check(path):
    import os
    import truth_folded as tf

    me = os.path.basename(__file__)
    total = inside = churn = checked = strings = marked = bad = 0
    first = ""
    for frames, n in tf.read(path, me):
        total += n
        # In a chain cut at the root, a "<string>" module is not known to be the workload's:
        # site runs .pth lines so, and a .pth line may exec another string (<module> over
        # <module>) that imports modules.
        part = tf.workload_part(frames, lambda f: (f in EDGES and f[1] != "<string>") or churn_n(f) is not None)
        if part is None:
            continue
        inside += n
        marked += n if tf.marked(frames) else 0
        edge = tf.bad_edge(part, edge_ok)
        if edge:
            bad += n
            first = first or "%s (in %s)" % (edge, ";".join(
                "%s (%s)" % (f[0], f[1]) if f[1] else f[0] for f in frames))
            continue
        if any(churn_n(f) is not None for f in part):
            churn += n
            checked += n if any(churn_n(p) is not None and c[1] == "self"
                                for p, c in zip(part, part[1:])) else 0
        elif ("strings_round", "self") in part:
            strings += n
    print("samples=%d workload=%d churn=%d churn_leaf=%d strings=%d marked=%d misnamed=%d"
          % (total, inside, churn, checked, strings, marked, bad))
    print("first_misnamed=%s" % (first or "-"))


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        main(float(sys.argv[1]))
