"""Rewrites a peer's collapsed stacks in pyebpf's folded form, for tests/py/truth_calls.py --check.

  peer_folded.py IN OUT

Austin 3 writes "P<pid>;T<iid>:<tid>;<file>:<function>:<line>;... COUNT" (and "#" header
lines), CPython's profiling.sampling --collapsed "tid:<tid>;<file>:<function>:<line>;... COUNT".
A frame "<file>:<function>:<line>" becomes "<function> (<file>:<line>)"; the process and thread
frames are dropped; anything else is kept as is (the check reads it as a native frame). Austin
writes one line per sample whose number is the time it stands for (µs in wall mode): each of
its lines counts as one sample.
"""
import re
import sys

FRAME = re.compile(r"^(.*):([^:]+):(\d+)$")
HEAD = re.compile(r"^(P\d+|T[\d:]+|tid:\d+)$")


def frame(text):
    m = FRAME.match(text)
    return "%s (%s:%s)" % (m.group(2), m.group(1), m.group(3)) if m else text


def main(src, dst):
    austin = False
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            line = line.rstrip("\n")
            austin = austin or line.startswith("# austin:")
            if not line or line.startswith("#"):
                continue
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            frames = [frame(t) for t in stack.split(";") if t and not HEAD.match(t)]
            if frames:
                out.write("%s %s\n" % (";".join(frames), 1 if austin else count))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
