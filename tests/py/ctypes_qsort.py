"""A Python comparison callback called by libc's qsort through ctypes; the first call spins.

Prints "EXPECT <tid> compare:<lo>-<hi> sort_items:<line> main:<line> <module>:<line>" (leaf
first: what a reader of the Python frames must find), then READY, and keeps spinning inside the
callback until killed.
"""
import ctypes
import ctypes.util
import sys
import threading

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
said = []


def report(here, spin_line):
    chain = ["compare:%d-%d" % (spin_line, spin_line + 1)]
    frame = here.f_back
    while frame is not None:
        chain.append("%s:%d" % (frame.f_code.co_name, frame.f_lineno))
        frame = frame.f_back
    print("EXPECT %d %s" % (threading.get_native_id(), " ".join(chain)), flush=True)
    print("READY", flush=True)


def compare(a, b):
    if not said:
        said.append(1)
        report(sys._getframe(), sys._getframe().f_lineno + 1)
        while True:
            pass
    return a[0] - b[0]


def sort_items():
    arr = (ctypes.c_int * 8)(5, 3, 7, 1, 8, 2, 6, 4)
    libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), CMP(compare))


def main():
    sort_items()


main()
