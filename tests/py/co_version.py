"""Where this interpreter keeps co_firstlineno and co_version in a code object, found from
memory alone (for tests/integration/sample_pykernel.sh, which compares them with the rule the
collector uses: co_version six ints after co_firstlineno, 3.12 to 3.15).

Prints "firstlineno=OFF version=OFF" (bytes from the object's start; version=none when no
4-byte field numbers code objects in the order they are made).

co_firstlineno: the one int that holds a value given with code.replace(). co_version: the one
4-byte field, not 0, that grows by a few from each code object made to the next while every
other field of theirs is alike (the same source compiled again).
"""
import ctypes
import sys

SPAN = 256  # bytes of each object read: more than its header


def words(obj):
    raw = ctypes.string_at(id(obj), SPAN)
    return [int.from_bytes(raw[i:i + 4], sys.byteorder) for i in range(0, SPAN, 4)]


def firstlineno():
    code = compile("def f():\n    pass\n", "<co_version>", "exec").co_consts[0]
    a, b = code.replace(co_firstlineno=0x3A5C1), code.replace(co_firstlineno=0x3A5C2)
    wa, wb = words(a), words(b)
    hits = [4 * i for i in range(len(wa)) if wa[i] == 0x3A5C1 and wb[i] == 0x3A5C2]
    return hits[0] if len(hits) == 1 else None


def version():
    made = []
    for _ in range(16):
        made.append(compile("def f():\n    pass\n", "<co_version>", "exec").co_consts[0])
    ws = [words(c) for c in made]
    hits = []
    for i in range(SPAN // 4):
        v = [w[i] for w in ws]
        if v[0] and all(0 < b - a <= 8 for a, b in zip(v, v[1:])):
            hits.append(4 * i)
    return hits[0] if len(hits) == 1 else None


if __name__ == "__main__":
    first, ver = firstlineno(), version()
    print("firstlineno=%s version=%s" % (first if first is not None else "none",
                                         ver if ver is not None else "none"))
