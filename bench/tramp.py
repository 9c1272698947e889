#!/usr/bin/env python3
"""Overhead of pyebpf_jit trampolines, measured against the same interpreter in the same run.

    python3 bench/tramp.py [--build DIR] [--rounds N] [--only calls,ir,register,gdb]
                           [--pythons 3.11,3.14,...]

1. calls: a call-heavy microbenchmark (recursive fib(27) + 400,000 method-call loop iterations,
   ~1.84 million Python calls; process CPU time) without the module, with trampolines and each sink (none, gdb, jitdump,
   perfmap, all three), and with CPython's own -X perf (3.12, 3.13) and -X perf_jit (3.13).
   Each configuration runs in its own process, best of 5 repetitions in-process; configurations
   are interleaved over N rounds and the median of the rounds is reported. Ratio = time / time
   without the module; ns/call = extra time per Python call.
2. ir: instructions per Python call (valgrind --tool=callgrind, whole process, children traced):
   a recursive fib(15) (1,973 calls) run K times minus run 0 times, divided by the calls, for
   each configuration; deterministic, unlike the times of 1 on a shared machine.
3. register: cost per new code object: 10,000 distinct functions called once (trampoline made and
   published) minus called again (trampoline cached), with the module off as the baseline.
4. gdb: wall time of `gdb -p PID -batch -ex bt` on a process that called 10,000 distinct
   functions, with the gdb sink on and with the module off.

Interpreters: pyenv 3.11.7, 3.12.1, 3.13.0 and, when `make test-pythons` fetched them, Debian
unstable's 3.14 and 3.15 (BUILD/pythons/bin/python3.X, loader wrappers: gdb is given the
interpreter binary, see tests/integration/py_gdb.sh).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHONS = [
    ("3.11.7", "/root/.pyenv/versions/3.11.7/bin/python3.11"),
    ("3.12.1", "/root/.pyenv/versions/3.12.1/bin/python3.12"),
    ("3.13.0", "/root/.pyenv/versions/3.13.0/bin/python3.13"),
]


def add_test_pythons(build):
    """Debian unstable's 3.14 and 3.15 under BUILD/pythons, labelled with their full version."""
    for minor in ("3.14", "3.15"):
        py = os.path.join(build, "pythons", "bin", "python" + minor)
        if os.path.exists(py):
            ver = subprocess.run([py, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True).stdout.strip()
            if ver.startswith(minor):
                PYTHONS.append((ver, py))

CALLS = r'''
import json, sys, time
mode = sys.argv[1]
if mode.startswith("pyebpf:"):
    import pyebpf_jit
    s = mode.split(":")[1]
    pyebpf_jit.enable(gdb="gdb" in s, jitdump="jitdump" in s, perfmap="perfmap" in s)

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

class P:
    __slots__ = ("x",)
    def __init__(self, x):
        self.x = x
    def get(self):
        return self.x
    def add(self, o):
        return P(self.x + o.get())

def methods(n):
    p, one = P(0), P(1)
    for _ in range(n):
        p = p.add(one)
    return p.x

def run():
    return fib(27) + methods(400000)

run()
best = 1e9
for _ in range(5):
    # CPU time of this process: the machine is shared, wall time counts other jobs too
    t = time.process_time()
    run()
    best = min(best, time.process_time() - t)
# fib(27): 635,621 calls; methods: 3 per iteration (add, get, __init__) + 1
print(json.dumps({"t": best, "calls": 635621 + 3 * 400000 + 1}))
'''

REGISTER = r'''
import json, sys, time
N = 10000
mode = sys.argv[1]
if mode.startswith("pyebpf:"):
    import pyebpf_jit
    s = mode.split(":")[1]
    pyebpf_jit.enable(gdb="gdb" in s, jitdump="jitdump" in s, perfmap="perfmap" in s)
src = "".join("def f%d(x):\n    return x + %d\n" % (i, i) for i in range(N))
ns = {}
exec(compile(src, "reg.py", "exec"), ns)
fs = [ns["f%d" % i] for i in range(N)]
t0 = time.perf_counter()
for f in fs: f(1)
t1 = time.perf_counter()
for f in fs: f(1)
t2 = time.perf_counter()
out = {"first": t1 - t0, "again": t2 - t1}
if mode.startswith("pyebpf:"):
    out["publish_us"] = pyebpf_jit.stats()["publish_us"]
print(json.dumps(out))
'''

GDB_TARGET = r'''
import os, sys, time
mode = sys.argv[1]
if mode != "off":
    import pyebpf_jit
    pyebpf_jit.enable(gdb=True, jitdump=False)
src = "".join("def f%d(x):\n    return x + %d\n" % (i, i) for i in range(10000))
ns = {}
exec(compile(src, "many.py", "exec"), ns)
for i in range(10000): ns["f%d" % i](1)
def level3():
    print("ready", os.path.realpath(sys.executable), flush=True)
    time.sleep(600)
def level2(): level3()
def level1(): level2()
level1()
'''


IR = r'''
import sys
mode, k = sys.argv[1], int(sys.argv[2])
if mode.startswith("pyebpf:"):
    import pyebpf_jit
    s = mode.split(":")[1]
    pyebpf_jit.enable(gdb="gdb" in s, jitdump="jitdump" in s, perfmap="perfmap" in s)

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

fib(15)  # trampoline made (and specialisation warmed) in both runs
for _ in range(k):
    fib(15)
'''
IR_CALLS = 1973  # calls of one fib(15)


def pkg_dir(build, ver):
    return os.path.join(build, "python" + ver.rsplit(".", 1)[0])


SPAWNED = []  # pids whose /tmp/perf-PID.map (perfmap sink, -X perf) we remove at the end


def run_json(py, args, env, cwd):
    p = subprocess.Popen([py] + args, env=env, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    SPAWNED.append(p.pid)
    out, err = p.communicate(timeout=600)
    if p.returncode != 0:
        raise RuntimeError("%s %s: %s" % (py, " ".join(args), err[-500:]))
    return json.loads(out.strip().splitlines()[-1])


def bench_calls(build, rounds, tmp):
    rows = []
    for ver, py in PYTHONS:
        if not os.path.exists(py):
            continue
        env = dict(os.environ, PYTHONPATH=pkg_dir(build, ver), PYEBPF_JITDUMP_DIR=tmp)
        env.pop("PYEBPF_JIT", None)
        configs = [("no module", [], "off")]
        for s in ("none", "gdb", "jitdump", "perfmap", "gdb,jitdump,perfmap"):
            configs.append(("pyebpf_jit sinks=" + s, [], "pyebpf:" + s))
        if ver >= "3.12":
            configs.append(("CPython -X perf", ["-X", "perf"], "off"))
        if ver >= "3.13":
            configs.append(("CPython -X perf_jit", ["-X", "perf_jit"], "off"))
        script = os.path.join(tmp, "calls.py")
        with open(script, "w") as f:
            f.write(CALLS)
        times = {c[0]: [] for c in configs}
        calls = 0
        for _ in range(rounds):
            for name, xopt, mode in configs:
                r = run_json(py, xopt + [script, mode], env, tmp)
                times[name].append(r["t"])
                calls = r["calls"]
        base = statistics.median(times["no module"])
        for name, _, _ in configs:
            t = statistics.median(times[name])
            rows.append((ver, name, t, t / base, (t - base) / calls * 1e9))
    print("\n## calls: fib(27) + 400,000 method-call iterations, CPU s (median of %d rounds, best of 5)" % rounds)
    print("| Python | configuration | time (s) | ratio | extra ns/call |")
    print("|---|---|---:|---:|---:|")
    for ver, name, t, ratio, ns in rows:
        print("| %s | %s | %.3f | %.3f | %.1f |" % (ver, name, t, ratio, ns))
    return rows


def bench_ir(build, tmp, k=20):
    vg = shutil.which("valgrind")
    if not vg:
        print("\n## ir: skipped (no valgrind)")
        return
    print("\n## ir: instructions per Python call (callgrind; fib(15) x %d minus x 0, / %d calls)"
          % (k, k * IR_CALLS))
    print("| Python | configuration | Ir per call | extra Ir per call |")
    print("|---|---|---:|---:|")
    script = os.path.join(tmp, "ir.py")
    with open(script, "w") as f:
        f.write(IR)

    def total_ir(py, xopt, mode, n, env):
        out = os.path.join(tmp, "cg.out.%p")
        r = subprocess.run([vg, "--tool=callgrind", "--trace-children=yes", "--callgrind-out-file=" + out,
                            py] + xopt + [script, mode, str(n)], env=env, cwd=tmp, capture_output=True,
                           text=True, timeout=1200)
        if r.returncode != 0:
            raise RuntimeError("%s %s: %s" % (py, mode, r.stderr[-500:]))
        # the last "Collected" line is the interpreter's (a wrapper shell execs into it)
        lines = [l for l in r.stderr.splitlines() if "Collected :" in l]
        for f in os.listdir(tmp):
            if f.startswith("cg.out."):
                os.unlink(os.path.join(tmp, f))
        return int(lines[-1].split(":")[-1])

    for ver, py in PYTHONS:
        if not os.path.exists(py):
            continue
        # a fixed hash seed: string hashing (dict layouts, set orders) then costs the same in
        # every run, so the two runs of a configuration differ by the calls alone
        env = dict(os.environ, PYTHONPATH=pkg_dir(build, ver), PYEBPF_JITDUMP_DIR=tmp, PYTHONHASHSEED="0")
        env.pop("PYEBPF_JIT", None)
        configs = [("no module", [], "off"), ("pyebpf_jit sinks=none", [], "pyebpf:none"),
                   ("pyebpf_jit sinks=gdb,jitdump,perfmap", [], "pyebpf:gdb,jitdump,perfmap")]
        if ver >= "3.12":
            configs.append(("CPython -X perf", ["-X", "perf"], "off"))
        if ver >= "3.13":
            configs.append(("CPython -X perf_jit", ["-X", "perf_jit"], "off"))
        base = None
        for name, xopt, mode in configs:
            per = (total_ir(py, xopt, mode, k, env) - total_ir(py, xopt, mode, 0, env)) / (k * IR_CALLS)
            base = per if base is None else base
            print("| %s | %s | %.0f | %+.0f |" % (ver, name, per, per - base), flush=True)


def bench_register(build, tmp):
    print("\n## register: cost per new code object (10,000 functions, each called once)")
    print("| Python | sinks | µs per code object (wall, minus module off) | µs in tramp_make (stats) |")
    print("|---|---|---:|---:|")
    script = os.path.join(tmp, "reg.py")
    with open(script, "w") as f:
        f.write(REGISTER)
    for ver, py in PYTHONS:
        if not os.path.exists(py):
            continue
        env = dict(os.environ, PYTHONPATH=pkg_dir(build, ver), PYEBPF_JITDUMP_DIR=tmp)
        env.pop("PYEBPF_JIT", None)
        off = [run_json(py, [script, "off"], env, tmp) for _ in range(3)]
        off_d = statistics.median(r["first"] - r["again"] for r in off)
        for s in ("none", "gdb", "jitdump", "perfmap", "gdb,jitdump,perfmap"):
            on = [run_json(py, [script, "pyebpf:" + s], env, tmp) for _ in range(3)]
            on_d = statistics.median(r["first"] - r["again"] for r in on)
            pub = statistics.median(r["publish_us"] for r in on)
            print("| %s | %s | %.2f | %.2f |" % (ver, s, (on_d - off_d) / 10000 * 1e6, pub))


def bench_gdb(build, tmp):
    gdb = shutil.which("gdb")
    if not gdb:
        print("\n## gdb: skipped (no gdb)")
        return
    print("\n## gdb: `gdb -p PID -batch -ex bt` after 10,000 distinct functions were called")
    print("| Python | module | wall time (s) | py:: frames in bt |")
    print("|---|---|---:|---:|")
    script = os.path.join(tmp, "many.py")
    with open(script, "w") as f:
        f.write(GDB_TARGET)
    for ver, py in PYTHONS:
        if not os.path.exists(py):
            continue
        env = dict(os.environ, PYTHONPATH=pkg_dir(build, ver))
        env.pop("PYEBPF_JIT", None)
        for mode in ("off", "gdb"):
            p = subprocess.Popen([py, script, mode], env=env, cwd=tmp, stdout=subprocess.PIPE, text=True)
            SPAWNED.append(p.pid)
            try:
                exe = p.stdout.readline().split()[-1]
                time.sleep(0.2)
                args = [gdb, "-p", str(p.pid), "-batch", "-ex", "bt"]
                if os.path.realpath("/proc/%d/exe" % p.pid) != exe:
                    # a loader started by hand (build/pythons): gdb must be given the interpreter
                    args[1:1] = ["-iex", "set exec-file-mismatch off", exe]
                t = time.perf_counter()
                r = subprocess.run(args,
                                   capture_output=True, text=True, timeout=600)
                dt = time.perf_counter() - t
                n = r.stdout.count(" py::")
            finally:
                p.kill()
                p.wait()
            print("| %s | %s | %.2f | %d |" % (ver, "off" if mode == "off" else "gdb sink", dt, n))


def main(argv):
    build = os.path.join(ROOT, "build")
    rounds = 5
    only = "calls,ir,register,gdb"
    want = None
    i = 0
    while i < len(argv):
        if argv[i] == "--build":
            build = os.path.abspath(argv[i + 1]); i += 1
        elif argv[i] == "--rounds":
            rounds = int(argv[i + 1]); i += 1
        elif argv[i] == "--only":
            only = argv[i + 1]; i += 1
        elif argv[i] == "--pythons":
            want = argv[i + 1].split(","); i += 1
        else:
            sys.exit(__doc__)
        i += 1
    add_test_pythons(build)
    if want:
        PYTHONS[:] = [(v, p) for v, p in PYTHONS if any(v == w or v.startswith(w + ".") for w in want)]
    tmp = tempfile.mkdtemp(prefix="pyebpf-bench.")
    try:
        print("# pyebpf_jit overhead (%s, %s)" % (time.strftime("%Y-%m-%d %H:%M"), os.uname().machine))
        if "calls" in only:
            bench_calls(build, rounds, tmp)
        if "ir" in only:
            bench_ir(build, tmp)
        if "register" in only:
            bench_register(build, tmp)
        if "gdb" in only:
            bench_gdb(build, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for pid in SPAWNED:
            try:
                os.unlink("/tmp/perf-%d.map" % pid)
            except OSError:
                pass


if __name__ == "__main__":
    main(sys.argv[1:])
