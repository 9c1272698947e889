"""Known shares for tests/integration/stack_truth.sh: hot_a 60 %, hot_b 30 %, hot_c 10 %.

  truth_shares.py SEC           runs SEC seconds; prints READY at the start and, at the end,
                                "SHARE hot_a A hot_b B hot_c C" (thread CPU time measured here)
  truth_shares.py --check FILE  reads a folded profile of a run: the samples under dispatch()
                                by the frame right below it, as "key=value" counts

driver() calls dispatch() round after round; a round is hot_a, hot_b and hot_c, each spinning 6,
3 and 1 units of the same loop (spin). The unit changes from round to round (0.5x to 1.5x, one
draw per round) so that the rounds do not keep a fixed phase with the sampling period; within a
round the three stay at 6:3:1, so the shares are those by construction whatever the machine.
"""
import random
import sys
import time

UNIT = 2500  # iterations of spin: ~0.1-0.3 ms
clock = time.thread_time
spent = {"hot_a": 0.0, "hot_b": 0.0, "hot_c": 0.0}


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def hot_a(unit):
    t = clock()
    spin(6 * unit)
    spent["hot_a"] += clock() - t


def hot_b(unit):
    t = clock()
    spin(3 * unit)
    spent["hot_b"] += clock() - t


def hot_c(unit):
    t = clock()
    spin(unit)
    spent["hot_c"] += clock() - t


def dispatch(unit):
    hot_a(unit)
    hot_b(unit)
    hot_c(unit)


def driver(seconds):
    draw = random.Random(1).uniform
    end = time.process_time() + seconds  # CPU time: the same samples however loaded the machine
    while time.process_time() < end:
        dispatch(int(UNIT * draw(0.5, 1.5)))


def main(seconds):
    print("READY", flush=True)
    driver(seconds)
    total = sum(spent.values()) or 1
    print("SHARE " + " ".join("%s %.4f" % (k, v / total) for k, v in spent.items()), flush=True)


# -- The check --------------------------------------------------------------------------------


def check(path):
    import os
    import truth_folded as tf

    me = os.path.basename(__file__)
    counts = dict.fromkeys(("under_dispatch", "hot_a", "hot_b", "hot_c", "dispatch_self",
                            "string", "marked", "other"), 0)
    first = ""
    for frames, n in tf.read(path, me):
        if ("dispatch", "self") not in frames:
            continue
        i = frames.index(("dispatch", "self"))
        counts["under_dispatch"] += n
        child = frames[i + 1] if i + 1 < len(frames) else None
        if child is None:
            key = "dispatch_self"
        elif child[1] == "self" and child[0] in spent:
            key = child[0]
        elif child == ("<module>", "<string>"):
            key = "string"
        elif child[1] is None:
            key = "marked"
        else:
            key = "other"
        counts[key] += n
        if key in ("string", "other") and not first:
            first = ";".join(f[0] for f in frames[i:])
    print(" ".join("%s=%d" % kv for kv in counts.items()))
    print("first_other=%s" % (first or "-"))


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        main(float(sys.argv[1]))
