"""The benchmark suite of issue 5: W1-W5, staticgrad against hand NumPy and the peers.

    W1  the weights chain of seed 000, forward + 4 gradients, per call (float32, shape (1,))
    W2  one SGD step of a 784-512-512-10 ReLU MLP, batch 256
    W3  y = sum(tanh(1.5x+0.3)*sigmoid(x) + 0.5*exp(-x^2) + log1p(x^2)) and dy/dx, 1M float32
    W4  build + differentiate + compile + first run of an N-op elementwise chain,
        N = 100, 1,000, 5,000 (the headline), 20,000
    W5  peak memory of W3 in steady state, over the baseline before the call

Ways: hand-written NumPy (the baseline, always), staticgrad (`sess.run` with a feed dict, and
`make_callable`), staticgrad with every compiler pass off, staticgrad without fusion (W3/W5,
once `"fuse"` is in `staticgrad.compiler.PASS_NAMES`), and each peer that imports: TF 1
(`tensorflow.compat.v1`), PyTorch eager, JAX (jit), PyTensor. Peers are optional; the
suite says which are missing. Float32 throughout; threads limited to 2 (set here, before NumPy
or any peer is imported).

W1-W3 are timed in this process, every way in turn within each round (interleaved, so drifts
in load hit all alike; the order is reversed every other round, so that no way always follows
the same one); reported: the median time per call and its ratio to hand NumPy measured in the
same run, over 15 rounds (`--rounds`): with 7, two ways running the same
code (W2's sess.run and make_callable) came out 0.93x and 1.13x of hand NumPy in one run on
this shared VM. Before timing, each way's result must match hand NumPy's. W4 and W5 run each
way in a fresh child process (see `workloads/w4.py`, `workloads/w5.py`); W4 takes the median
of 5 children per way and N (`--w4-repeats`), as one run of a second or less moves by 20-30%
on a shared VM; the children run in rounds, every way in turn in each, so a slow spell of the
machine falls on all ways alike.

    python benchmarks/suite.py                      # everything
    python benchmarks/suite.py --only W1 W3 --rounds 11
    python benchmarks/suite.py --quick --no-peers   # a smoke run of a few seconds
    PYTHONPATH=$PWD /path/to/venv/bin/python benchmarks/suite.py   # with peers from a venv

Output: a table on stdout, JSON (`--out`, default benchmarks/results/suite.json) and, with
matplotlib, suite.png (ratios) and w4_scaling.png beside the JSON. No figure is asserted on.
"""

import os

import _harness

# Before NumPy (or any peer) is imported: they read these once.
_harness.limit_threads()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if "floatX" not in os.environ.get("PYTENSOR_FLAGS", ""):
    os.environ["PYTENSOR_FLAGS"] = ",".join(
        f for f in (os.environ.get("PYTENSOR_FLAGS", ""), "floatX=float32") if f)

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import queue  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # staticgrad from the checkout
sys.path.insert(0, HERE)  # workloads/ and bench_mlp_step
from workloads import charts, common, peers, w1, w2, w3, w4, w5  # noqa: E402

import staticgrad as sg  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "results", "suite.json")
TIMED = {"W1": w1.WORKLOAD, "W2": w2.WORKLOAD, "W3": w3.WORKLOAD}
ALL = ("W1", "W2", "W3", "W4", "W5")


# ---------------------------------------------------------------------------------------------
# W1-W3: in this process

def run_timed(workload: common.Workload, available, rounds: int, number: int,
              warmup: int, settle_s: float) -> dict:
    entries, calls, reference = {}, {}, None
    for way in workload.ways(available):
        entry = entries[way.name] = {"label": way.label}
        try:
            call, first = way.setup()
        except Exception as e:  # noqa: BLE001 -- a failing way is reported, the rest go on
            entry["error"] = common.error_text(e)
            continue
        if way.name == "hand_numpy":
            reference = first
        else:
            wrong = common.mismatch(first, reference, workload.rtol, workload.atol)
            if wrong:
                entry["error"] = f"wrong result: {wrong}"
                continue
        calls[way.name] = call
    per_call = common.interleaved(calls, rounds, number, warmup, settle_s)
    hand = per_call["hand_numpy"]
    base = common.median(hand)
    for name, times in per_call.items():
        # the ratio of the medians, and the median of each round's ratio (a round's ways run
        # within a second of each other: the paired figure is steadier when the load drifts)
        entries[name].update(median=common.median(times) * workload.scale,
                             rounds=[t * workload.scale for t in times],
                             ratio=common.median(times) / base,
                             paired_ratio=common.median([t / h for t, h in zip(times, hand)]))
    return {"title": workload.title.format(size=w3.SIZE), "unit": workload.unit, "rounds": rounds,
            "calls_per_round": number, "ways": entries}


# ---------------------------------------------------------------------------------------------
# W4, W5: a child process per way

def run_child(argv: list, env: dict, ready_timeout: float, run_timeout: float) -> dict:
    """Run `suite.py --child ...` and return the JSON it prints after RESULT. The run clock
    starts when the child prints READY; a child still running `run_timeout` seconds later is
    killed, giving {"over_s": run_timeout}."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", *argv],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        lines = queue.Queue()

        def read():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)  # end of output
        threading.Thread(target=read, daemon=True).start()
        started, deadline = False, time.monotonic() + ready_timeout
        try:
            while True:
                try:
                    line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    proc.kill()
                    if started:
                        return {"over_s": run_timeout}
                    return {"error": f"no READY from the child within {ready_timeout:.0f} s"}
                if line is None:
                    proc.wait()
                    err.seek(0)
                    return {"error": f"child exited with {proc.returncode}: "
                                     f"{err.read()[-800:]}"}
                if line.startswith("READY"):
                    started, deadline = True, time.monotonic() + run_timeout
                elif line.startswith("RESULT "):
                    return json.loads(line[len("RESULT "):])
        finally:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def child_main(kind: str, argv: list) -> None:
    """In the child: measure one way, print READY / RESULT {json}."""
    def ready():
        print("READY", flush=True)
    try:
        if kind == "w4":
            name, n = argv
            result = w4.child(name, int(n), ready)
        else:
            name, size = argv
            ready()
            result = w5.child(name, [name] if name in peers.PEER_NAMES else [], int(size))
    except Exception as e:  # noqa: BLE001 -- reported to the parent
        result = {"error": common.error_text(e)}
    print("RESULT " + json.dumps(result), flush=True)


W4_ONCE_ABOVE_S = 10.0  # a W4 way slower than this runs once per N (no repeats)
ROUNDS = 15      # timing rounds for W1-W3
W4_REPEATS = 5   # fresh children per W4 way and N


def run_w4_round_robin(names: list, n: int, env: dict, cap_s: float, repeats: int) -> dict:
    """{way: result} for every W4 way at one N: `repeats` rounds of fresh children, each round
    running every way in turn, so that a slow spell of the shared machine falls on all ways
    alike rather than on one way's every run. A way's result is its median run, with every
    run's seconds as "rounds"; a way that fails, is stopped, or takes over W4_ONCE_ABOVE_S
    runs no more rounds."""
    runs = {name: [] for name in names}
    final = {}
    for _ in range(repeats):
        for name in names:
            if name in final:
                continue
            r = run_child(["w4", name, str(n)], env, ready_timeout=600, run_timeout=cap_s)
            print(".", end="", flush=True)  # progress: one dot a child
            runs[name].append(r)
            if r.get("seconds") is None or r["check"] or r["seconds"] > W4_ONCE_ABOVE_S:
                done = runs[name]
                final[name] = r if len(done) == 1 else \
                    {**r, "rounds": [x["seconds"] for x in done[:-1]]}
    for name in names:
        if name not in final:
            done = sorted(runs[name], key=lambda x: x["seconds"])
            final[name] = {**done[len(done) // 2], "rounds": [x["seconds"] for x in done]}
    return final


def run_w4(available, sizes, cap_s: float, repeats: int) -> dict:
    labels = w4.way_names(available)
    env = dict(os.environ)
    compiledir = None
    if "pytensor" in labels:  # a compile cache new to this run: W4 times compiling
        compiledir = tempfile.mkdtemp(prefix="staticgrad-suite-pytensor-")
        env["PYTENSOR_FLAGS"] += f",compiledir={compiledir}"
    scaling = {name: {} for name in labels}
    stopped_at = {}
    try:
        for n in sizes:  # N by N, every way in turn
            running = [name for name in labels if name not in stopped_at]
            print(f"  W4 N={n}: {repeats} round{'s' * (repeats != 1)} of {len(running)} ways ",
                  end="", flush=True)
            results = run_w4_round_robin(running, n, env, cap_s, repeats)
            print()
            for name in labels:
                if name in stopped_at:
                    scaling[name][str(n)] = {"skipped": f"stopped at N = {stopped_at[name]} "
                                                        f"(over {cap_s:g} s)"}
                    continue
                print(f"  W4 N={n:<6} {labels[name]:<40}", end="")
                r = scaling[name][str(n)] = results[name]
                print(f"  > {cap_s:g} s (stopped)" if "over_s" in r else
                      f"  {r['error']}" if "error" in r else
                      f"  {r['seconds']:.3f} s" + (f"  WRONG: {r['check']}" if r["check"] else "")
                      + (f"  (median of {', '.join(f'{t:.3f}' for t in r['rounds'])})"
                         if len(r.get("rounds", ())) > 1 else ""))
                if "over_s" in r or r.get("seconds", 0) > cap_s:
                    stopped_at[name] = n
    finally:
        if compiledir:
            shutil.rmtree(compiledir, ignore_errors=True)
    headline = w4.HEADLINE_N if w4.HEADLINE_N in sizes else max(sizes)
    base = scaling["hand_numpy"][str(headline)].get("seconds")
    ways = {}
    for name, label in labels.items():
        r = scaling[name][str(headline)]
        entry = ways[name] = {"label": label}
        if r.get("seconds") is not None and not r.get("check"):
            entry.update(median=r["seconds"], ratio=r["seconds"] / base)
        elif r.get("check"):
            entry["error"] = f"wrong result: {r['check']}"
        elif "over_s" in r:
            entry.update(over_s=r["over_s"], ratio_lower_bound=r["over_s"] / base)
        elif "skipped" in r:
            entry["skipped"] = r["skipped"]
        else:
            entry["error"] = r.get("error")
    return {"title": f"build + differentiate + compile + first run, {headline}-op elementwise "
                     f"chain", "unit": "s", "headline_n": headline, "sizes": list(sizes),
            "cap_s": cap_s, "ways": ways, "scaling": scaling}


def run_w5(available, repeats: int) -> dict:
    labels = w5.way_names(available)
    per_way = {name: [] for name in labels}
    for _ in range(repeats):
        for name in labels:
            per_way[name].append(run_child(["w5", name, str(w3.SIZE)], dict(os.environ), 600,
                                           600))
    ways = {}
    for name, label in labels.items():
        runs = per_way[name]
        entry = ways[name] = {"label": label}
        errors = [r.get("error") or f"over {r['over_s']} s" for r in runs if "rss_mb" not in r]
        if errors:
            entry["error"] = errors[0]
            continue
        entry["median"] = common.median([r["rss_mb"] for r in runs])
        entry["rounds"] = [r["rss_mb"] for r in runs]
        if runs[0]["tracemalloc_mb"] is not None:
            entry["tracemalloc_mb"] = common.median([r["tracemalloc_mb"] for r in runs])
    base = ways["hand_numpy"].get("median")
    for entry in ways.values():
        if "median" in entry and base:
            entry["ratio"] = entry["median"] / base
    return {"title": "peak memory of W3 in steady state, over baseline (RSS)", "unit": "MB",
            "size": w3.SIZE, "repeats": repeats, "ways": ways}


# ---------------------------------------------------------------------------------------------
# output

def cell(entry: dict, unit: str) -> tuple:
    if "median" in entry:
        return f"{entry['median']:.4g} {unit}", f"{entry['ratio']:.3g}x"
    if "over_s" in entry:
        return f"> {entry['over_s']:g} s", f"> {entry['ratio_lower_bound']:.3g}x"
    if "skipped" in entry:
        return "skipped", "skipped"
    return "failed", "failed"


def print_workload(key: str, wl: dict) -> None:
    print(f"\n{key}: {wl['title']}")
    width = max(len(e["label"]) for e in wl["ways"].values()) + 2
    paired = any("paired_ratio" in e for e in wl["ways"].values())
    print(f"  {'way':<{width}}{'median':>14}{'x hand NumPy':>15}"
          + ("  tracemalloc" if key == "W5" else "") + ("  (per round)" if paired else ""))
    for entry in wl["ways"].values():
        median, ratio = cell(entry, wl["unit"])
        extra = f"  {entry['tracemalloc_mb']:.4g} MB" if entry.get("tracemalloc_mb") else ""
        if "paired_ratio" in entry:
            extra += f"  ({entry['paired_ratio']:.3g}x)"
        print(f"  {entry['label']:<{width}}{median:>14}{ratio:>15}{extra}")
        if "error" in entry or "skipped" in entry:
            print(f"      {entry.get('error') or entry['skipped']}")


def print_summary(results: dict) -> None:
    workloads = results["workloads"]
    names = []
    for wl in workloads.values():
        names += [n for n in wl["ways"] if n not in names]
    print("\nRatios to hand NumPy (medians; lower is better)")
    print(f"  {'way':<34}" + "".join(f"{k:>12}" for k in workloads))
    for n in names:
        row = ""
        for wl in workloads.values():
            e = wl["ways"].get(n)
            row += f"{cell(e, wl['unit'])[1] if e else '':>12}"
        print(f"  {common.SHORT_LABELS.get(n, n):<34}{row}")


def environment(found: dict, missing: dict) -> dict:
    def git(*argv):
        try:
            return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = git("rev-parse", "HEAD")
    uncommitted = git("status", "--porcelain", "--", "staticgrad", "codegen_templates")
    try:
        import numexpr
        numexpr_version = numexpr.__version__
    except ImportError:
        numexpr_version = None
    return {"python": platform.python_version(), "numpy": np.__version__,
            "staticgrad": sg.__version__, "staticgrad_commit": commit,
            "staticgrad_uncommitted_changes": uncommitted.splitlines(),
            "compiler_passes": list(sg.compiler.PASS_NAMES), "numexpr": numexpr_version,
            "vector_math": sg.runtime_fast.why_not() or "on: runtime_fast (numba, libmvec)",
            "peers": found, "peers_missing": missing, "peer_setup": peers.notes(found),
            "machine": platform.machine(),
            "platform": platform.platform(), "cpus": os.cpu_count(),
            "threads": {v: os.environ[v] for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                   "MKL_NUM_THREADS")}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", type=str.upper, choices=ALL, default=list(ALL),
                        metavar="W", help="workloads to run (default: all of W1-W5)")
    parser.add_argument("--rounds", type=int, help=f"timing rounds for W1-W3 (default {ROUNDS}; "
                                                   "2 with --quick); W5 runs min(rounds, 3)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: few calls, W3 and W5 on 100,000 values, W4 at N = "
                             "100 and 300 only")
    parser.add_argument("--peers", nargs="*", choices=peers.PEER_NAMES,
                        default=list(peers.PEER_NAMES), help="peers to try (default: all)")
    parser.add_argument("--no-peers", action="store_true", help="hand NumPy and staticgrad only")
    parser.add_argument("--w4-sizes", nargs="+", type=int, help="W4's N (default 100 1000 "
                                                                "5000 20000)")
    parser.add_argument("--w4-cap", type=float, default=60.0,
                        help="stop a W4 way past this many seconds and skip its larger N "
                             "(default 60)")
    parser.add_argument("--w4-repeats", type=int, default=W4_REPEATS,
                        help="fresh children per W4 way and N, the median reported (default "
                             f"{W4_REPEATS}; 1 with --quick; a way over {W4_ONCE_ABOVE_S:g} s "
                             "runs once)")
    parser.add_argument("--settle", type=float, default=0.3,
                        help="seconds of rest before each way's turn in W1-W3, so that "
                             "spinning thread pools of the way before go idle (default 0.3)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="JSON file; the PNGs go beside it")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG charts")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child[0], args.child[1:])

    rounds = args.rounds or (2 if args.quick else ROUNDS)
    if args.quick:
        w3.SIZE = w3.QUICK_SIZE
    found, missing = peers.find([] if args.no_peers else args.peers)
    available = list(found)
    print("peers: " + (", ".join(f"{peers.LABELS[p]} {v}" for p, v in found.items()) or "none"))
    for name, why in missing.items():
        print(f"  {peers.LABELS[name]} is missing ({why}); skipped")
    print(f"staticgrad {sg.__version__}, NumPy {np.__version__}, passes "
          f"{list(sg.compiler.PASS_NAMES)}; load average {os.getloadavg()[0]:.2f}")
    print("fused exp/log/sigmoid: " + ("runtime_fast (the [fast] extra)" if
                                       sg.runtime_fast.available() else
                                       f"NumPy's ({sg.runtime_fast.why_not()})"))

    results = {"suite": "staticgrad benchmark suite (issue 5)", "quick": args.quick,
               "rounds": rounds, "load_average_start": list(os.getloadavg()),
               "environment": environment(found, missing), "workloads": {}}
    started = time.perf_counter()
    for key in ALL:
        if key not in args.only:
            continue
        if key in TIMED:
            wl = TIMED[key]
            number = wl.quick_number if args.quick else wl.number
            result = run_timed(wl, available, rounds, number, 1 if args.quick else 2,
                               0.0 if args.quick else args.settle)
        elif key == "W4":
            sizes = args.w4_sizes or (w4.QUICK_SIZES if args.quick else w4.SIZES)
            result = run_w4(available, sizes, args.w4_cap,
                            1 if args.quick else max(1, args.w4_repeats))
        else:
            result = run_w5(available, 1 if args.quick else min(rounds, 3))
        results["workloads"][key] = result
        print_workload(key, result)
    results["load_average_end"] = list(os.getloadavg())
    results["wall_s"] = time.perf_counter() - started
    print_summary(results)
    print(f"load average: {results['load_average_start'][0]:.2f} at the start, "
          f"{results['load_average_end'][0]:.2f} at the end; {results['wall_s']:.0f} s in all")

    _harness.write_json(args.out, results)
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not args.no_plots:
        try:
            charts.ratios(results, os.path.join(out_dir, "suite.png"))
            print(f"wrote {os.path.join(out_dir, 'suite.png')}")
            if "W4" in results["workloads"]:
                charts.scaling(results["workloads"]["W4"], os.path.join(out_dir,
                                                                        "w4_scaling.png"))
                print(f"wrote {os.path.join(out_dir, 'w4_scaling.png')}")
        except ImportError:
            print("charts skipped: matplotlib is not installed")
    return results


if __name__ == "__main__":
    main()
