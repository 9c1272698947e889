"""A Python process whose frame chain turns into garbage while it is sampled.

    python3.X forge.py SECONDS [READY_FILE]

A worker thread sits in `victim`, hashing a large buffer (hashlib drops the GIL for big inputs,
so the thread is on a CPU in C code and never touches its own frames). Meanwhile the main
thread rewrites the `previous` pointer of victim's _PyInterpreterFrame in place, cycling
through forgeries a remote reader must survive:

    loop       previous -> victim itself
    loop2      previous -> a forged copy of victim whose previous -> victim (two-frame cycle)
    unmapped   previous -> 0x1000 (below mmap_min_addr: never mapped)
    kernel     previous -> 0xffff888000000000 (kernel half: never readable from user space)
    absurd     previous -> a forged frame whose code object has a qualname, filename and line
               table of 2**40 bytes and a negative first line, then the real caller chain
    intact     the real pointer again

The forgeries live in this process's own memory, so the collector really reads them. The real
pointer is restored before the worker leaves C code, so the process itself ends normally and
prints "forge: ok" with the count of each forgery. CPython 3.11 and 3.12 (default builds, x86-64);
the layout is checked against live objects first and the script exits 3 when it does not match.
"""
import ctypes
import hashlib
import sys
import threading
import time

V = sys.version_info[:2]
# _PyInterpreterFrame: f_code, previous; PyCodeObject: firstlineno, filename, name, qualname,
# linetable; compact ASCII str data offset
LAYOUT = {
    (3, 11): dict(f_code=32, previous=48, firstlineno=72, filename=112, name=120, qualname=128,
                  linetable=136, str_data=48),
    (3, 12): dict(f_code=0, previous=8, firstlineno=68, filename=112, name=120, qualname=128,
                  linetable=136, str_data=40),
}
if V not in LAYOUT:
    print("forge: unsupported Python %d.%d" % V)
    sys.exit(3)
L = LAYOUT[V]
F_FRAME = 24  # PyFrameObject.f_frame (3.11, 3.12)
FRAME_COPY = 80  # bytes of a _PyInterpreterFrame copied into a forged one

keep = []  # forged buffers stay alive for the whole run


def u64(addr):
    return ctypes.c_uint64.from_address(addr).value


def put64(addr, v):
    ctypes.c_uint64.from_address(addr).value = v


def buffer_of(raw):
    b = ctypes.create_string_buffer(raw, len(raw) + 64)
    keep.append(b)
    return ctypes.addressof(b)


def forged_str(real, length):
    """A copy of a real compact ASCII str whose length field says `length`."""
    a = buffer_of(ctypes.string_at(id(real), L["str_data"] + len(real) + 1))
    put64(a + 16, length)
    return a


def forged_bytes(real, length):
    a = buffer_of(ctypes.string_at(id(real), 32 + len(real) + 1))
    put64(a + 16, length)
    return a


def forged_code(code):
    """A copy of a real code object's header with absurd lengths and a negative first line."""
    size = type(code).__basicsize__ + 64
    a = buffer_of(ctypes.string_at(id(code), size))
    huge = 1 << 40
    put64(a + L["qualname"], forged_str(code.co_qualname, huge))
    put64(a + L["name"], forged_str(code.co_name, huge))
    put64(a + L["filename"], forged_str(code.co_filename, huge))
    put64(a + L["linetable"], forged_bytes(code.co_linetable, huge))
    ctypes.c_int32.from_address(a + L["firstlineno"]).value = -123456789
    return a


started = threading.Event()
stop = threading.Event()
victim_frame = {}


def victim():
    data = bytes(64 << 20)
    victim_frame["obj"] = sys._getframe()
    started.set()
    while not stop.is_set():
        hashlib.sha256(data).digest()


def main():
    seconds = float(sys.argv[1])
    ready = sys.argv[2] if len(sys.argv) > 2 else None
    t = threading.Thread(target=victim, name="victim")
    t.start()
    started.wait()
    fobj = victim_frame["obj"]
    iframe = u64(id(fobj) + F_FRAME)
    if u64(iframe + L["f_code"]) != id(fobj.f_code):
        print("forge: frame layout does not match this Python")
        stop.set()
        t.join()
        sys.exit(3)
    slot = iframe + L["previous"]
    real_prev = u64(slot)

    twin = buffer_of(ctypes.string_at(iframe, FRAME_COPY))
    put64(twin + L["previous"], iframe)
    absurd = buffer_of(ctypes.string_at(iframe, FRAME_COPY))
    put64(absurd + L["f_code"], forged_code(fobj.f_code))
    put64(absurd + L["previous"], real_prev)
    forgeries = [
        ("loop", iframe),
        ("loop2", twin),
        ("unmapped", 0x1000),
        ("kernel", 0xFFFF888000000000),
        ("absurd", absurd),
        ("intact", real_prev),
    ]
    counts = dict((name, 0) for name, _ in forgeries)
    if ready:
        open(ready, "w").write("%d\n" % t.native_id)
    end = time.monotonic() + seconds
    i = 0
    try:
        while time.monotonic() < end:
            name, value = forgeries[i % len(forgeries)]
            put64(slot, value)
            counts[name] += 1
            i += 1
            time.sleep(0.05)
    finally:
        put64(slot, real_prev)
    stop.set()
    t.join()
    print("forge: ok " + " ".join("%s=%d" % kv for kv in counts.items()))


main()
