"""Reads folded profiles for the ground-truth checks of tests/py/truth_*.py (--check FILE).

A folded line is "frame;frame;... COUNT", root first; a Python frame reads "qualname (file:line)"
or "qualname (file)", a marker is one of MARKERS (as is, or with a "(file)" of its own), any other
frame is native. See docs/formats.md.
"""
import os

# Frames that say "not known here" instead of naming a function: a chain cut at the root, a
# merge that could not pair, no code object read, a code object freed since the sample.
MARKERS = ("[truncated]", "[merge error]", "<unreadable>", "<freed code>")


def frame(text, me):
    """(name, where) of a Python frame or marker, None for a native frame: where is "self" for
    a frame of the file whose basename is `me`, the file (without line) for another Python
    frame, None for a marker."""
    name, sep, loc = text.rpartition(" (")
    if text in MARKERS or name in MARKERS:
        return (name if sep else text, None)
    if not sep or not text.endswith(")"):
        return None
    file = loc[:-1]
    head, colon, line = file.rpartition(":")
    if colon and line.isdigit():
        file = head
    return (name, "self" if os.path.basename(file) == me else file)


def read(path, me):
    """Yields (frames, count) for each line of the folded file: frames are the Python frames
    and markers, root first (native frames left out)."""
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = [fr for fr in (frame(t, me) for t in stack.split(";")) if fr]
            yield frames, int(count)


def marked(frames):
    return any(where is None for _, where in frames)


def workload_part(frames, known):
    """The part of a stack that the workload's call graph speaks for: from its main() on, or,
    in a chain cut at the root (first frame a marker), from its first frame known(frame) says
    is the workload's. None for a stack of something else (start-up imports, exit)."""
    for i, f in enumerate(frames):
        if f == ("main", "self"):
            return frames[i:]
    if not frames or frames[0][1] is not None:
        return None
    for i, f in enumerate(frames):
        if known(f):
            return frames[i:]
    return None


def bad_edge(part, edge_ok):
    """The first parent;child pair of named frames (a marker stands for frames not known, so
    no pair across one is judged) for which edge_ok(parent, child) is false, or None."""
    for p, c in zip(part, part[1:]):
        if p[1] is not None and c[1] is not None and not edge_ok(p, c):
            return "%s;%s" % (p[0], c[0])
    return None
