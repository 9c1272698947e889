#!/usr/bin/env python3
"""Writes small jitdump files that use every record kind (seeds for fuzz_jitdump_read).

Usage: synth_jitdump.py OUTDIR. Layout as in jitdump/jitdump_format.h and perf's jitdump.h:
40-byte header; records = 16-byte prefix (id, total_size, timestamp) + body.
"""
import os
import struct
import sys

MAGIC = 0x4A695444


def header(pid=4242, mach=62):
    return struct.pack("<IIIIIIQQ", MAGIC, 1, 40, mach, 0, pid, 1000, 0)


def record(rid, body, ts=2000):
    return struct.pack("<IIQ", rid, 16 + len(body), ts) + body


def code_load(addr, code, name, index):
    body = struct.pack("<IIQQQQ", 4242, 4243, addr, addr, len(code), index)
    return record(0, body + name + b"\0" + code)


def debug_info(addr, entries):
    body = struct.pack("<QQ", addr, len(entries))
    for a, line, fname in entries:
        body += struct.pack("<QiI", a, line, 0) + fname + b"\0"
    return record(2, body)


def unwinding_info(eh_frame, hdr):
    data = eh_frame + hdr
    body = struct.pack("<QQQ", len(data), len(hdr), (len(data) + 7) & ~7) + data
    body += b"\0" * (-len(body) % 8)
    return record(4, body)


def code_move(old, new, size, index):
    return record(1, struct.pack("<IIQQQQQ", 4242, 4243, old, old, new, size, index))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    code = bytes([0x55, 0x48, 0x89, 0xE5, 0xFF, 0xD6, 0x5D, 0xC3])
    # CIE (code align 1, data align -8, ra 16, augmentation zR, pcrel|sdata4) + one FDE
    cie = struct.pack("<IIB", 0x14, 0, 1) + b"zR\0" + bytes([1, 0x78, 16, 1, 0x1B, 0x0C, 7, 8, 0x90, 1, 0, 0])
    fde_body = struct.pack("<IiIB", 0, -0x30, len(code), 0) + bytes([0x41, 0x0E, 16, 0x86, 2, 0x43, 0x0D, 6, 0, 0, 0])
    fde = struct.pack("<I", len(fde_body)) + struct.pack("<I", len(cie) + 4) + fde_body[4:]
    ehf = cie + fde + b"\0\0\0\0"
    hdr = bytes([1, 0x1B, 0x03, 0x3B]) + struct.pack("<iIii", -len(ehf) - 4, 1, -0x40, -len(ehf))
    base = 0x7F0000001000
    full = header()
    full += debug_info(base, [(base, 10, b"/x.py"), (base + 4, 11, b"/x.py"), (base + 8, 11, b"/x.py")])
    full += unwinding_info(ehf, hdr)
    full += code_load(base, code, b"py::f:/x.py", 0)
    full += code_load(base + 0x40, code, b"py::g:/y.py", 1)
    full += code_move(base + 0x40, base + 0x80, len(code), 1)
    full += record(77, b"unknown record body")
    full += record(3, b"")
    files = {
        "synth-all-records.dump": full,
        "synth-header-only.dump": header(),
        "synth-truncated.dump": full[:-30],
        "synth-swapped.dump": struct.pack(">I", MAGIC) + header()[4:],
        "synth-aarch64.dump": header(mach=183) + code_load(base, b"\xfd\x7b\xbf\xa9" * 2, b"a64", 0),
    }
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
