"""Workloads whose Python stacks the remote reader must see.

Each mode prints what a reader should find, then keeps the stack in place until killed:
  EXPECT <native tid> <func>:<line>[-<line>] ...   leaf first; a range for a spinning loop
  BUFFER <address> <size>                          scratch memory a test may overwrite
  READY
Modes: spin, block, threads, deep N, change (two leaves in turn), varied (random call trees up
to 25 frames deep), churn, forge, names (named threads; SIGUSR1 ends them and starts others).
"""
import inspect
import sys
import threading
import time


print_lock = threading.Lock()


def say(text):
    # One line at a time: print() from several threads may interleave within a line.
    with print_lock:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


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
    say("EXPECT %d %s" % (threading.get_native_id(), " ".join(parts)))


def spin_here(report_lines):  # noqa: ARG001
    here = inspect.currentframe()
    first = here.f_back.f_lineno + 1  # the caller's `while` line follows its call of us
    report(here.f_back, (first, first + 1))


def inner(mode):
    if mode == "block":
        ev = threading.Event()
        here = inspect.currentframe()
        say("READY")
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
    say("READY")
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


def vwork(depth, rng):
    s = 0
    for i in range(300):
        s += i
    if depth < 12 and rng.random() < 0.8:
        (vleft if rng.random() < 0.5 else vright)(depth + 1, rng)


def vleft(depth, rng):
    vwork(depth, rng)


def vright(depth, rng):
    vwork(depth, rng)


def varied():
    import random
    rng = random.Random(1)
    # READY once the import is done (a loaded machine may take longer than any fixed delay):
    # its frames are no call tree of this workload.
    say("READY")
    while True:
        vwork(0, rng)


def main():
    mode = sys.argv[1]
    if mode in ("spin", "block"):
        if mode == "spin":
            threading.Timer(0.2, lambda: say("READY")).start()
        main_chain(mode)
    elif mode == "threads":
        for fn in (work_alpha, work_beta, work_gamma, work_delta):
            threading.Thread(target=fn, args=(0,), daemon=True).start()
        time.sleep(0.3)
        say("READY")
        threading.Event().wait()
    elif mode == "deep":
        sys.setrecursionlimit(100000)
        recurse(int(sys.argv[2]))
    elif mode == "varied":
        varied()
    elif mode == "change":
        threading.Timer(0.2, lambda: say("READY")).start()
        changing()
    elif mode == "churn":
        # Short-lived threads, created and joined without end, each in its own function.
        def short_lived(n):
            s = 0
            for i in range(50000):
                s += i * n
            return s

        def churner():
            while True:
                ts = [threading.Thread(target=short_lived, args=(i,)) for i in range(8)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()

        for _ in range(4):
            threading.Thread(target=churner, daemon=True).start()
        say("READY")
        threading.Event().wait()
    elif mode == "names":
        # Six threads named "first-N", each saying "NAME tid ident name"; on SIGUSR1 they end
        # (joined) and six named "second-N" start: glibc hands a new thread an ended one's stack
        # and pthread_t, so the new ones mostly get the old ones' idents (threading._active keys).
        import signal
        asked = threading.Event()
        signal.signal(signal.SIGUSR1, lambda *_: asked.set())

        def named(stop, said):
            say("NAME %d %d %s" % (threading.get_native_id(), threading.get_ident(),
                                   threading.current_thread().name))
            said.wait()
            stop.wait()

        def start(tag):
            # READY only after every NAME line
            stop, said = threading.Event(), threading.Barrier(7)
            ts = [threading.Thread(target=named, args=(stop, said), name="%s-%d" % (tag, i), daemon=True)
                  for i in range(6)]
            for t in ts:
                t.start()
            said.wait()
            return stop, ts

        stop, ts = start("first")
        say("READY")
        while not asked.wait(0.05):
            pass
        stop.set()
        for t in ts:
            t.join()
        start("second")
        say("READY")
        threading.Event().wait()
    elif mode == "forge":
        import ctypes
        buf = ctypes.create_string_buffer(1 << 20)
        say("BUFFER %d %d" % (ctypes.addressof(buf), len(buf)))
        say("READY")
        threading.Event().wait()


if __name__ == "__main__":
    main()
