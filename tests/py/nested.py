"""Workloads whose Python stacks the remote reader must see.

Each mode prints what a reader should find, then keeps the stack in place until killed:
  EXPECT <native tid> <func>:<line>[-<line>] ...   leaf first; a range for a spinning loop
  BUFFER <address> <size>                          scratch memory a test may overwrite
  READY
Modes: spin, block, threads, deep N, change, forge.
"""
import inspect
import sys
import threading
import time


print_lock = threading.Lock()


def report(frame, leaf_lines=None):
    parts = []
    first = True
    while frame is not None:
        name = frame.f_code.co_qualname
        if first and leaf_lines:
            parts.append("%s:%d-%d" % (name, leaf_lines[0], leaf_lines[1]))
        else:
            parts.append("%s:%d" % (name, frame.f_lineno))
        first = False
        frame = frame.f_back
    with print_lock:
        print("EXPECT %d %s" % (threading.get_native_id(), " ".join(parts)), flush=True)


def spin_here(report_lines):  # noqa: ARG001
    here = inspect.currentframe()
    first = here.f_back.f_lineno + 1  # the caller's `while` line follows its call of us
    report(here.f_back, (first, first + 1))


def inner(mode):
    if mode == "block":
        ev = threading.Event()
        here = inspect.currentframe()
        print("READY", flush=True)
        report(here); ev.wait()  # noqa: E702
    x = 0
    spin_here(True)
    while True:
        x += 1


def middle(mode):
    inner(mode)


def outer(mode):
    middle(mode)


def main_chain(mode):
    outer(mode)


def worker_loop(start):
    x = 0
    spin_here(True)
    while True:
        x += 1


def work_alpha(start):
    worker_loop(start)


def work_beta(start):
    worker_loop(start)


def work_gamma(start):
    worker_loop(start)


def work_delta(start):
    worker_loop(start)


def recurse(n):
    if n > 1:
        return recurse(n - 1)
    ev = threading.Event()
    here = inspect.currentframe()
    print("READY", flush=True)
    report(here); ev.wait()  # noqa: E702


def leaf_a():
    s = 0
    for i in range(50):
        s += i
    return s


def leaf_b():
    return sum(range(20))


def changing():
    while True:
        leaf_a()
        leaf_b()


def main():
    mode = sys.argv[1]
    if mode in ("spin", "block"):
        if mode == "spin":
            threading.Timer(0.2, lambda: print("READY", flush=True)).start()
        main_chain(mode)
    elif mode == "threads":
        for fn in (work_alpha, work_beta, work_gamma, work_delta):
            threading.Thread(target=fn, args=(0,), daemon=True).start()
        time.sleep(0.3)
        print("READY", flush=True)
        threading.Event().wait()
    elif mode == "deep":
        sys.setrecursionlimit(100000)
        recurse(int(sys.argv[2]))
    elif mode == "change":
        threading.Timer(0.2, lambda: print("READY", flush=True)).start()
        changing()
    elif mode == "forge":
        import ctypes
        buf = ctypes.create_string_buffer(1 << 20)
        print("BUFFER %d %d" % (ctypes.addressof(buf), len(buf)), flush=True)
        print("READY", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
