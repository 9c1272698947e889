"""Writes the location tables of many real code objects and CPython's own answers for them.

  C <firstlineno> <co_linetable hex> <number of code units> <qualname>
  L <start unit> <end unit> <line or -1>      one per co_lines() range
  P <line or -1> ...                           co_positions() start line of every code unit
Usage: dump_linetables.py OUT [FILE.py...]   (default: a few large standard library modules)
"""
import sys


def walk(code, out):
    units = len(code.co_code) // 2
    out.write("C %d %s %d %s\n" % (code.co_firstlineno, code.co_linetable.hex() or "-", units,
                                   code.co_qualname))
    for start, end, line in code.co_lines():
        out.write("L %d %d %d\n" % (start // 2, end // 2, -1 if line is None else line))
    pos = [p[0] for p in code.co_positions()]
    if len(pos) == units:
        out.write("P %s\n" % " ".join("-1" if p is None else str(p) for p in pos))
    for const in code.co_consts:
        if hasattr(const, "co_linetable"):
            walk(const, out)


paths = sys.argv[2:]
if not paths:
    import argparse, ast, dataclasses, inspect, threading, typing  # noqa: E401
    paths = [m.__file__ for m in (argparse, ast, dataclasses, inspect, threading, typing)]
with open(sys.argv[1], "w") as out:
    for path in paths:
        with open(path, encoding="utf-8") as f:
            walk(compile(f.read(), path, "exec"), out)
