"""Four kinds of thread for the off-CPU and wall modes (tests/integration/sample_modes.sh).

    python3 waits.py SECONDS

  cpu       hashes a large buffer in a loop: CPU-bound, mostly without the GIL (hashlib
            releases it for large inputs)
  sleeper   time.sleep(1.0) in a loop: idle (each wake-up waits for the GIL a moment)
  reader    socket.recv on a socketpair, blocked: a feeder thread sends one byte every second
  gil-1/2   pure Python loops: CPU-bound, fighting each other for the GIL

Each thread is named through threading.Thread(name=...) and prints "TID NAME" once; "READY"
when all are running. Runs SECONDS seconds from READY, then prints each worker's lifetime (first
line of its function to its last) as "LIFE NAME SECONDS" and its thread CPU time as
"CPU NAME SECONDS".
"""
import hashlib
import socket
import sys
import threading
import time

DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
stop = threading.Event()
started = threading.Barrier(7)
cpu_times = {}
lives = {}
born = {}
tids = {}


def announce():
    t = threading.current_thread()
    born[t.name] = time.monotonic()
    tids[t.name] = threading.get_native_id()
    started.wait()


def finish():
    name = threading.current_thread().name
    cpu_times[name] = time.thread_time()
    lives[name] = time.monotonic() - born[name]


def cpu_work():
    announce()
    data = b"x" * (4 << 20)
    while not stop.is_set():
        hashlib.sha256(data).digest()
    finish()


def sleeper_work():
    announce()
    while not stop.is_set():
        time.sleep(1.0)
    finish()


def reader_work(sock):
    announce()
    while not stop.is_set():
        sock.recv(1)
    finish()


def feeder_work(sock):
    announce()
    while not stop.wait(1.0):
        sock.send(b"x")
    sock.send(b"x")  # the reader's last recv returns
    finish()


def spin():
    n = 0
    for i in range(20000):
        n += i * i
    return n


def gil_work():
    announce()
    while not stop.is_set():
        spin()
    finish()


def main():
    a, b = socket.socketpair()
    threads = [
        threading.Thread(target=cpu_work, name="cpu"),
        threading.Thread(target=sleeper_work, name="sleeper"),
        threading.Thread(target=reader_work, args=(a,), name="reader"),
        threading.Thread(target=feeder_work, args=(b,), name="feeder"),
        threading.Thread(target=gil_work, name="gil-1"),
        threading.Thread(target=gil_work, name="gil-2"),
    ]
    for t in threads:
        t.start()
    started.wait()
    for name, tid in tids.items():
        print(tid, name)
    print("READY", flush=True)
    time.sleep(DURATION)
    stop.set()
    for t in threads:
        t.join()
    for name in sorted(lives):
        print("LIFE", name, "%.3f" % lives[name])
        print("CPU", name, "%.3f" % cpu_times[name], flush=True)


main()
