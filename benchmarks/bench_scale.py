"""Scale (issue 21): a 100,000-op chain and W4's 5,000-op chain, built, differentiated,
compiled and run, in fresh processes; each phase's wall time, CPU time and memory.

    chain  y_0 = x;  y_{i+1} = tanh(sin(y_i) * 1.0001 + 0.01), 25,000 steps (100,000 ops:
           sin, mul, add, tanh; the two numbers are constants, as W4's 1.0001 is);
           L = sum(y_N); dL/dx
    w4     the suite's W4 (benchmarks/workloads/w4.py): y * 1.0001 and sin alternating,
           5,000 ops; L = sum(y_N); dL/dx

x is 16 float32 values (W4's). Each child process, as the suite's W4 children do, first runs
the same work on 10 steps untimed (one-time start-up: the templates, the first compile), then
times, one after another: build (placeholder to L), gradients (`sg.gradients`), compile
(`sess.run`'s compile, up to the compiled function) and run (its first call). Per phase: wall
time (perf_counter), CPU time (process_time), the CPU time of staticgrad's compile helpers
(codegen/pycompile.py: they compile part of a long module in processes of their own, which
process_time does not count; /proc/PID/stat), peak RSS so far (getrusage's ru_maxrss) and RSS
at its end (/proc/self/statm). The result is checked against the chain computed directly in NumPy.

The parent runs `--runs` rounds (5), each one child per workload in turn, and reports each
figure's median over the rounds. Then `--traced-runs` (1) more children per workload run with
tracemalloc on (slower, so not timed) for each phase's peak of memory allocated by Python and
NumPy, and what is left at its end.

`--instructions` counts instead the instructions each child process runs, with valgrind
(`--tool=cachegrind --cache-sim=no`), once at the workload's size and once at 10 (start-up,
imports, the warm-up), and reports the difference: a figure the machine's load does not move,
for comparing commits on a shared machine whose speed drifts from day to day by 2x or more
(run it in a checkout of each). Those children compile without helpers
(STATICGRAD_COMPILE_HELPERS=0), so that every instruction of the work is counted. Under
valgrind the chain takes about 8 minutes, W4 one.

    python benchmarks/bench_scale.py                       # 5 rounds, chain and w4
    python benchmarks/bench_scale.py --only w4 --runs 11
    python benchmarks/bench_scale.py --steps 5000 --w4-n 1000 --runs 3 --out /tmp/scale.json
    python benchmarks/bench_scale.py --instructions        # needs valgrind
"""

from __future__ import annotations

import os

import _harness

_harness.limit_threads()  # before NumPy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # staticgrad from the checkout
sys.path.insert(0, HERE)  # workloads/

DEFAULT_OUT = os.path.join(HERE, "results", "scale.json")
INSTRUCTIONS_OUT = os.path.join(HERE, "results", "scale_instructions.json")
PHASES = ("build", "gradients", "compile", "run")
FACTOR, OFFSET = 1.0001, 0.01   # the chain's constants (W4's factor)
STEPS = 25_000                  # 4 ops a step: 100,000 ops
W4_N = 5_000
TARGETS = {"chain": {"seconds": 8.0, "peak_rss_mb": 400.0}, "w4": {"seconds": 0.5}}
MB = 1 << 20


# ---------------------------------------------------------------------------------------------
# the workloads (in the child)

def build_chain(sg, x, steps):
    y = x
    for _ in range(steps):
        y = sg.tanh(sg.sin(y) * FACTOR + OFFSET)
    return y


def hand_chain(np, x, steps):
    """L and dL/dx, computed directly (float32, as staticgrad's are)."""
    factor, offset = np.float32(FACTOR), np.float32(OFFSET)
    y, grads = x, []
    for _ in range(steps):
        t = np.tanh(np.sin(y) * factor + offset)
        grads.append(np.cos(y) * factor * (np.float32(1) - t * t))
        y = t
    grad = np.ones_like(x)
    for g in reversed(grads):
        grad = grad * g
    return np.sum(y), grad


def build_w4(sg, x, n):
    from workloads import w4
    y = x
    for i in range(n):
        y = sg.sin(y) if i % 2 else y * w4.FACTOR
    return y


def hand_w4(np, x, n):
    from workloads import w4
    return w4.hand_numpy(n, w4.Clock())


WORKLOADS = {"chain": (build_chain, hand_chain), "w4": (build_w4, hand_w4)}


def rss_now_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def helpers_cpu_s() -> float:
    """The CPU seconds staticgrad's compile helpers (codegen/pycompile.py: processes that
    compile part of a long module beside this one) have used so far, which process_time does
    not count."""
    from staticgrad.codegen import pycompile

    total = 0.0
    for helper in list(pycompile._POOL.idle):
        try:
            with open(f"/proc/{helper.process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return total


class Phases:
    """Each phase's wall and CPU seconds and memory, measured from one mark to the next."""

    def __init__(self, traced: bool):
        self.traced, self.phases = traced, {}
        if traced:
            import tracemalloc
            self.tracemalloc = tracemalloc
            tracemalloc.start()
        self._start()

    def _start(self):
        if self.traced:
            self.tracemalloc.reset_peak()
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        self.helpers = helpers_cpu_s()

    def mark(self, name):
        wall, cpu, helpers = time.perf_counter(), time.process_time(), helpers_cpu_s()
        entry = {"wall_s": wall - self.wall, "cpu_s": cpu - self.cpu,
                 "helpers_cpu_s": helpers - self.helpers,
                 "peak_rss_mb": peak_rss_mb(), "rss_mb": rss_now_mb()}
        if self.traced:
            current, peak = self.tracemalloc.get_traced_memory()
            entry.update(traced_peak_mb=peak / MB, traced_mb=current / MB)
        self.phases[name] = entry
        self._start()


def measure(workload: str, size: int, traced: bool = False, clock=None) -> dict:
    """Build, differentiate, compile and run `workload` of `size`; its phases and result."""
    import numpy as np

    import staticgrad as sg
    from staticgrad import session

    build, _ = WORKLOADS[workload]
    x_value = np.linspace(0.1, 1.6, 16, dtype=np.float32)
    compile_plan = session.compile_plan

    def marked_compile_plan(*args, **kwargs):  # the end of the compile phase
        plan = compile_plan(*args, **kwargs)
        if clock is not None:
            clock.mark("compile")
        return plan

    session.compile_plan = marked_compile_plan
    try:
        g = sg.Graph()
        with g.as_default():
            x = sg.placeholder(sg.float32, [16], name="x")
            L = sg.reduce_sum(build(sg, x, size))
            if clock is not None:
                clock.mark("build")
            ops = len(g.get_operations())
            dx, = sg.gradients(L, [x])
            if clock is not None:
                clock.mark("gradients")
            gradient_ops = len(g.get_operations()) - ops
            out = sg.Session(graph=g).run([L, dx], {x: x_value})
            if clock is not None:
                clock.mark("run")
    finally:
        session.compile_plan = compile_plan
    return {"ops": ops, "gradient_ops": gradient_ops, "out": out}


def child(workload: str, size: int, traced: bool) -> dict:
    import gc

    import numpy as np
    from workloads import common

    measure(workload, 10)  # warm-up, as W4's children do
    gc.collect()
    base = {"peak_rss_mb": peak_rss_mb(), "rss_mb": rss_now_mb()}
    clock = Phases(traced)
    got = measure(workload, size, traced, clock)
    phases = clock.phases
    total = {key: sum(p[key] for p in phases.values())
             for key in ("wall_s", "cpu_s", "helpers_cpu_s")}
    total.update(peak_rss_mb=peak_rss_mb(), rss_mb=phases["run"]["rss_mb"])
    if traced:
        total.update(traced_peak_mb=max(p["traced_peak_mb"] for p in phases.values()),
                     traced_mb=phases["run"]["traced_mb"])
    x_value = np.linspace(0.1, 1.6, 16, dtype=np.float32)
    want = WORKLOADS[workload][1](np, x_value, size)
    check = common.mismatch(common.as_arrays(got["out"]), common.as_arrays(want),
                            rtol=1e-3, atol=1e-6)
    return {"workload": workload, "size": size, "ops": got["ops"],
            "gradient_ops": got["gradient_ops"], "before": base, "phases": phases,
            "total": total, "check": check}


# ---------------------------------------------------------------------------------------------
# the parent

def child_argv(workload: str, size: int) -> list[str]:
    return [sys.executable, os.path.abspath(__file__), "--child", workload, str(size)]


def count_instructions(workload: str, size: int) -> int:
    """The instructions a child process runs for `workload` at `size` (valgrind's count)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("--instructions needs valgrind (apt install valgrind)")
    proc = subprocess.run([valgrind, "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", *child_argv(workload, size)],
                          capture_output=True, text=True,
                          env={**os.environ, "STATICGRAD_COMPILE_HELPERS": "0"})
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    result = next((json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines()
                   if line.startswith("RESULT ")), None)
    if proc.returncode or found is None or result is None or "error" in result:
        sys.exit(f"{workload} under valgrind failed ({proc.returncode}): "
                 f"{(result or {}).get('error') or proc.stderr[-1500:]}")
    if result["check"]:
        sys.exit(f"{workload} computed something else: {result['check']}")
    return int(found.group(1).replace(",", ""))


def instructions(names: list[str], sizes: dict) -> dict:
    """{workload: millions of instructions at its size, at 10, and the difference}."""
    out = {}
    for name in names:
        print(f"{name} under valgrind ...", end=" ", flush=True)
        whole, start = (count_instructions(name, n) / 1e6 for n in (sizes[name], 10))
        out[name] = {"size": sizes[name], "whole_process_M": whole, "at_10_M": start,
                     "workload_M": whole - start}
        print(f"{whole:,.0f} M instructions, {start:,.0f} M of them at size 10: "
              f"{whole - start:,.0f} M for the workload", flush=True)
    return out


def run_child(workload: str, size: int, traced: bool) -> dict:
    argv = child_argv(workload, size)
    if traced:
        argv.append("--traced")
    proc = subprocess.run(argv, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"error": f"child exited with {proc.returncode}: {proc.stderr[-1500:]}"}


def medians(runs: list) -> dict:
    """{phase or "total": {figure: median over the runs}}."""
    out = {}
    for part in (*PHASES, "total"):
        entries = [r["phases"][part] if part in PHASES else r["total"] for r in runs]
        out[part] = {key: statistics.median(e[key] for e in entries) for key in entries[0]}
    return out


def print_table(name: str, size: int, result: dict) -> None:
    runs, med = result["runs"], result["median"]
    first = runs[0]
    print(f"\n{name}: {size:,} {'steps' if name == 'chain' else 'ops'}, {first['ops']:,} graph "
          f"ops + {first['gradient_ops']:,} gradient ops; median of {len(runs)} processes")
    traced = result.get("traced", {})
    head = (f"  {'phase':<10} {'wall s':>8} {'CPU s':>8} {'helpers CPU s':>14} "
            f"{'peak RSS MB':>12} {'RSS MB':>8}")
    print(head + (f" {'traced peak MB':>15} {'traced end MB':>14}" if traced else ""))
    for part in (*PHASES, "total"):
        m = med[part]
        line = (f"  {part:<10} {m['wall_s']:>8.3f} {m['cpu_s']:>8.3f} "
                f"{m.get('helpers_cpu_s', 0.0):>14.3f} {m['peak_rss_mb']:>12.1f} "
                f"{m['rss_mb']:>8.1f}")
        if traced:
            t = traced[part]
            line += f" {t['traced_peak_mb']:>15.1f} {t['traced_mb']:>14.1f}"
        print(line)
    walls = ", ".join(f"{r['total']['wall_s']:.2f}" for r in runs)
    cpus = ", ".join(f"{r['total']['cpu_s']:.2f}" for r in runs)
    print(f"  every run's total: wall {walls}; CPU {cpus}")
    target = TARGETS.get(name)
    if target:
        said = [f"{med['total']['wall_s']:.2f} s wall / {med['total']['cpu_s']:.2f} s CPU "
                f"against {target['seconds']:g} s"]
        if "peak_rss_mb" in target:
            said.append(f"peak RSS {med['total']['peak_rss_mb']:.0f} MB against "
                        f"{target['peak_rss_mb']:g} MB")
        print("  target (issue 21): " + "; ".join(said))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5,
                        help="fresh processes per workload, the median reported (default 5)")
    parser.add_argument("--traced-runs", type=int, default=1,
                        help="more processes per workload with tracemalloc on (default 1)")
    parser.add_argument("--steps", type=int, default=STEPS,
                        help=f"steps of the chain, 4 ops each (default {STEPS:,})")
    parser.add_argument("--w4-n", type=int, default=W4_N, help=f"W4's ops (default {W4_N:,})")
    parser.add_argument("--only", nargs="+", choices=tuple(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 200 steps, W4 of 300 ops, 1 run, 1 traced run")
    parser.add_argument("--instructions", action="store_true",
                        help="count each workload's instructions with valgrind instead of "
                             "timing it (load-independent; for comparing commits)")
    parser.add_argument("--out", help=f"JSON results file (default "
                                      f"{os.path.relpath(DEFAULT_OUT)}; with --instructions "
                                      f"{os.path.relpath(INSTRUCTIONS_OUT)})")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        try:
            result = child(args.child[0], int(args.child[1]), args.traced)
        except Exception as e:  # noqa: BLE001 -- reported to the parent
            result = {"error": f"{type(e).__name__}: {e}"}
        print("RESULT " + json.dumps(result), flush=True)
        return
    if args.quick:
        args.steps, args.w4_n, args.runs, args.traced_runs = 200, 300, 1, 1
    sizes = {"chain": args.steps, "w4": args.w4_n}
    if args.instructions:
        counted = instructions(args.only, sizes)
        _harness.write_json(args.out or INSTRUCTIONS_OUT,
                            {"environment": _harness.environment(with_platform=True),
                             "instructions": counted})
        return
    load_before = os.getloadavg()
    results = {name: {"size": sizes[name], "runs": []} for name in args.only}
    for r in range(args.runs):
        for name in args.only:
            print(f"round {r + 1}/{args.runs}: {name} ...", end=" ", flush=True)
            run = run_child(name, sizes[name], traced=False)
            if "error" in run:
                sys.exit(f"{name} failed: {run['error']}")
            if run["check"]:
                sys.exit(f"{name} computed something else: {run['check']}")
            results[name]["runs"].append(run)
            print(f"{run['total']['wall_s']:.2f} s wall, {run['total']['cpu_s']:.2f} s CPU, "
                  f"peak RSS {run['total']['peak_rss_mb']:.0f} MB", flush=True)
    for name in args.only:
        results[name]["median"] = medians(results[name]["runs"])
        traced_runs = []
        for _ in range(args.traced_runs):
            print(f"{name} with tracemalloc ...", flush=True)
            run = run_child(name, sizes[name], traced=True)
            if "error" in run:
                sys.exit(f"{name} failed under tracemalloc: {run['error']}")
            traced_runs.append(run)
        if traced_runs:
            results[name]["traced_runs"] = traced_runs
            results[name]["traced"] = medians(traced_runs)
    load_after = os.getloadavg()
    for name in args.only:
        print_table(name, sizes[name], results[name])
    print(f"\nload average (1, 5, 15 min): {', '.join(f'{v:.2f}' for v in load_before)} at the "
          f"start, {', '.join(f'{v:.2f}' for v in load_after)} at the end; "
          f"{os.cpu_count()} CPUs")
    env = _harness.environment(with_platform=True)
    env.update(load_average_start=load_before, load_average_end=load_after,
               cpus=os.cpu_count())
    _harness.write_json(args.out or DEFAULT_OUT, {"environment": env, "targets": TARGETS,
                                   "workloads": results})


if __name__ == "__main__":
    main()
