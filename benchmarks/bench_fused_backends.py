"""Why fused groups run on NumPy blocks and not numexpr: W3 evaluated three ways, side by side.

W3 is y = sum(tanh(1.5x + 0.3) * sigmoid(x) + 0.5 exp(-x^2) + log1p(x^2)) and dy/dx over a
million float32 values (benchmarks/workloads/w3.py). Ways, interleaved round by round in one
process, threads limited to 2:

  hand NumPy   the expression and its derivative written by hand, one NumPy call per op
  staticgrad   make_callable on the graph: one fused group, run in blocks on threads
  numexpr      the same two expressions given to numexpr.evaluate (if numexpr is installed),
               which is what an optional `staticgrad[fast]` extra would have used

Each way's y and dy/dx are checked against hand NumPy first, and the dtype numexpr returns
is reported: numexpr reads the Python constants as float64 and returns float64 for float32
input. Reported: median milliseconds per call and the ratio to hand NumPy.

    python benchmarks/bench_fused_backends.py [--rounds 7] [--number 5] [--out PATH]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
from workloads import w3  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "fused_backends.json")
Y = "sum(tanh(1.5*x + 0.3) / (1 + exp(-x)) + 0.5*exp(-x*x) + log1p(x*x))"
DY = ("1.5*(1 - tanh(1.5*x + 0.3)**2) / (1 + exp(-x))"
      " + tanh(1.5*x + 0.3) * exp(-x) / (1 + exp(-x))**2 - x*exp(-x*x) + 2*x / (1 + x*x)")


def numexpr_way():
    """(call, its first result, numexpr's version and whether it uses Intel's VML), or None."""
    try:
        import numexpr
    except ImportError:
        return None
    numexpr.set_num_threads(2)
    x = w3.data()

    def call():
        return numexpr.evaluate(Y, {"x": x}), numexpr.evaluate(DY, {"x": x})
    return call, call(), f"{numexpr.__version__} (VML: {numexpr.use_vml})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    parser.add_argument("--number", type=int, default=5, help="calls per round and way")
    parser.add_argument("--out", default=DEFAULT_OUT, help="JSON results file")
    args = parser.parse_args(argv)

    hand, want = w3.hand_numpy()
    ours, got = w3.staticgrad_way(None, fast=True)()
    ways, dtypes, versions = {"hand_numpy": hand, "staticgrad": ours}, {}, {}
    results = {"hand_numpy": want, "staticgrad": got}
    found = numexpr_way()
    if found is None:
        print("numexpr is not installed: `pip install numexpr` to compare it")
    else:
        ways["numexpr"], results["numexpr"], versions["numexpr"] = found
    for name, values in results.items():  # every way computes W3
        dtypes[name] = str(values[1].dtype)
        np.testing.assert_allclose(values[0], want[0], rtol=1e-4)
        np.testing.assert_allclose(values[1], want[1], rtol=1e-4, atol=1e-5)

    per_call = _harness.time_interleaved(ways, args.rounds, args.number, warmup=2, scale=1e3)
    median, ratio = _harness.medians_and_ratios(per_call)
    print(f"W3, {w3.SIZE:,} float32 values; median of {args.rounds} rounds x {args.number} "
          "calls, interleaved")
    print(f"{'':<14}{'ms/call':>10}{'x hand NumPy':>15}  result dtype")
    for name in ways:
        print(f"{name:<14}{median[name]:>10.2f}{ratio[name]:>15.3f}  {dtypes[name]}")
    if versions:
        print(f"numexpr {versions['numexpr']}")
    out = {"benchmark": "fused_backends", "workload": "W3", "rounds": args.rounds,
           "number_per_round": args.number, "ms_per_call_median": median,
           "ms_per_call_rounds": per_call, "ratio_to_hand_numpy": ratio,
           "result_dtype": dtypes, "versions": versions,
           "environment": _harness.environment()}
    _harness.write_json(args.out, out)
    return out


if __name__ == "__main__":
    main()
