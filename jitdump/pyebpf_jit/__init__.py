"""Name Python functions on the native stack, for gdb and perf.

With the module on, every Python function runs inside a small machine-code trampoline of its own,
named ``py::<qualname>:<filename>`` and published to gdb (JIT interface), perf (jitdump file for
``perf record -k 1`` + ``perf inject --jit``) and/or the perf map. ``gdb -p PID -batch -ex bt``
then shows which Python functions are on the stack, and ``perf report`` names them.

    import pyebpf_jit
    pyebpf_jit.enable()                      # gdb + jitdump
    pyebpf_jit.enable(gdb=True, jitdump=False, perfmap=True)
    pyebpf_jit.disable()                     # restore the previous frame evaluator

Also: ``python -m pyebpf_jit [--gdb] [--jitdump] [--perf-map] script.py args...`` and, once
installed with ``make install``, the environment variable ``PYEBPF_JIT=gdb,jitdump,perfmap``.
CPython 3.11 to 3.15, and the free-threaded builds of 3.14 and 3.15 (python3.14t, python3.15t).
"""
import sys

if sys.implementation.name != "cpython" or not ((3, 11) <= sys.version_info[:2] <= (3, 15)):
    raise ImportError(
        "pyebpf_jit supports CPython 3.11 to 3.15; this is %s %s"
        % (sys.implementation.name, sys.version.split()[0])
    )
# Free-threaded builds (abiflags "t"): 3.13t is experimental and has no PyMutex-safe co_extra
# story; 3.14t and 3.15t are built with their own extension (cp314t) and its own locking.
if "t" in getattr(sys, "abiflags", "") and sys.version_info[:2] < (3, 14):
    raise ImportError(
        "pyebpf_jit supports free-threaded builds from 3.14 on; this is %s (abiflags %r)"
        % (sys.version.split()[0], sys.abiflags)
    )

import atexit
import os

try:
    from . import _native
except ImportError:
    # A package copied from another version's build has no _native for this one: say so
    # (Python's own message would suggest a circular import).
    from importlib.machinery import EXTENSION_SUFFIXES

    if not any(os.path.exists(os.path.join(__path__[0], "_native" + x)) for x in EXTENSION_SUFFIXES):
        raise ImportError(
            "pyebpf_jit: no extension for CPython %d.%d in %s (build it with make for this "
            "interpreter)" % (sys.version_info[0], sys.version_info[1], __path__[0])
        ) from None
    raise

__all__ = ["enable", "disable", "is_enabled", "flush", "stats", "enable_from_env"]

SINKS = ("gdb", "jitdump", "perfmap")


def enable(gdb=True, jitdump=True, perfmap=False, jitdump_dir=None, perfmap_dir=None):
    """Install the frame-evaluation hook; new Python frames run through named trampolines.

    The sinks are chosen once per process: a later enable() with other sinks raises ValueError.
    jitdump_dir defaults to $PYEBPF_JITDUMP_DIR, else the current directory; perfmap_dir to /tmp.
    """
    _native.enable(bool(gdb), bool(jitdump), bool(perfmap), jitdump_dir, perfmap_dir)


def disable():
    """Restore the frame evaluator that was there before enable(). Code stays mapped."""
    _native.disable()


def is_enabled():
    return _native.is_enabled()


def flush():
    """Push buffered registrations out to gdb and the files now."""
    _native.flush()


def stats():
    """Counters: trampolines made/reused/retired, mean publish cost (µs), mapped bytes, sinks."""
    return _native.stats()


def parse_sinks(text):
    """'gdb,jitdump,perfmap' (any subset, also 'perf-map', 'perf_map') -> enable() keywords.
    '1', 'on', 'yes', 'default' -> gdb + jitdump; 'none' -> trampolines without sinks.
    Returns None for '', '0', 'off', 'no'."""
    t = text.strip().lower()
    if t in ("", "0", "off", "no", "false"):
        return None
    if t in ("1", "on", "yes", "true", "default"):
        return dict(gdb=True, jitdump=True, perfmap=False)
    kw = dict(gdb=False, jitdump=False, perfmap=False)
    for part in t.replace(" ", "").split(","):
        if not part or part == "none":
            continue
        part = part.replace("-", "").replace("_", "")
        if part not in SINKS:
            raise ValueError("PYEBPF_JIT: unknown sink %r (want gdb, jitdump, perfmap)" % part)
        kw[part] = True
    return kw


def enable_from_env(var="PYEBPF_JIT"):
    """enable() as $PYEBPF_JIT says; a bad value is reported on stderr, never fatal."""
    try:
        kw = parse_sinks(os.environ.get(var, ""))
        if kw is not None:
            enable(**kw)
    except Exception as e:  # startup must not fail because of us
        sys.stderr.write("pyebpf_jit: %s\n" % e)


atexit.register(_native._shutdown)
