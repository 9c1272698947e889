"""python -m pyebpf_jit [--gdb] [--jitdump] [--perf-map] [--jitdump-dir DIR]
                        (script.py | -m module | -c command) [args...]

Runs the program with pyebpf_jit on. Without a sink option: --gdb --jitdump."""
import os
import runpy
import sys

import pyebpf_jit


def usage(code):
    sys.stderr.write(__doc__.strip() + "\n")
    sys.exit(code)


def main(argv):
    kw = dict(gdb=False, jitdump=False, perfmap=False)
    jitdump_dir = None
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-m", "-c", "-"):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a == "--gdb":
            kw["gdb"] = True
        elif a == "--jitdump":
            kw["jitdump"] = True
        elif a in ("--perf-map", "--perfmap"):
            kw["perfmap"] = True
        elif a == "--jitdump-dir" and i + 1 < len(argv):
            i += 1
            jitdump_dir = argv[i]
        elif a in ("-h", "--help"):
            usage(0)
        else:
            sys.stderr.write("pyebpf_jit: unknown option %s\n" % a)
            usage(2)
        i += 1
    rest = argv[i:]
    if not rest:
        usage(2)
    if not any(kw.values()):
        kw.update(gdb=True, jitdump=True)

    try:
        pyebpf_jit.enable(jitdump_dir=jitdump_dir, **kw)
    except (ValueError, OSError, RuntimeError) as e:
        # e.g. PYEBPF_JIT already switched it on with other sinks at start-up
        msg = str(e)
        sys.stderr.write(("" if msg.startswith("pyebpf_jit") else "pyebpf_jit: ") + msg + "\n")
        sys.exit(2)
    if rest[0] == "-m":
        if len(rest) < 2:
            usage(2)
        sys.argv = rest[1:]
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
    elif rest[0] == "-c":
        if len(rest) < 2:
            usage(2)
        sys.argv = ["-c"] + rest[2:]
        code = compile(rest[1], "<string>", "exec")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    else:
        sys.argv = rest
        sys.path[0] = os.path.dirname(os.path.abspath(rest[0]))
        runpy.run_path(rest[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
