"""A thread whose threading name becomes readable only after its last record
(tests/integration/sample_modes.sh).

    python3 late_name.py SECONDS

The thread is started with _thread, so threading does not know it: it sleeps 0.2 s (a record at
the wake-up, while its name cannot be read), runs 1 s on the CPU (no record: the looks made at
that record's drain find no name), then registers (threading.current_thread() makes its
_DummyThread), is renamed "late", runs on the CPU SECONDS seconds more and ends the process.
Off-CPU records come from switches: after its name became readable the thread has none (unless
the machine preempts it), so only a look that does not wait for a record finds its name. 3.14+
name the OS thread itself and nothing is looked for: the kernel gives a record the name the
thread has then, so there the thread sleeps a moment after the rename (a record under "late").
Prints "TID MainThread" at the start, "TID late" and "READY" once the thread is named. The main
thread blocks from the start: no wake-up of its own takes the GIL from the thread.
"""
import _thread
import os
import sys
import threading
import time

DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def late():
    time.sleep(0.2)
    spin(1.0)
    threading.current_thread().name = "late"
    if sys.version_info >= (3, 14):
        time.sleep(0.01)
    print(threading.get_native_id(), "late", flush=True)
    print("READY", flush=True)
    spin(DURATION)
    os._exit(0)


print(threading.get_native_id(), threading.current_thread().name, flush=True)
_thread.start_new_thread(late, ())
threading.Event().wait()
