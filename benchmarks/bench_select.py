"""Selections by a mask: np.where against the forms staticgrad generates, side by side.

Gradients select all the time (where(x > 0, g, 0) for maximum, clip, leaky ReLU, select
itself), and their masks follow the data, with no pattern a CPU's branch predictor could
learn. NumPy's np.where branches on every element; staticgrad computes the same bits
without a branch. Timed in one process, interleaved round by round, float32, each call on
the next of 8 random masks (so that no mask repeats within a few calls):

  np.where(c, g, 0.0)               hand NumPy's select           (the baseline)
  rt.select(c, g, 0.0)              staticgrad's Select: y ^ ((x ^ y) & mask) on the bits
  np.where(x > 0, x, 0.2 * x)       hand NumPy's leaky ReLU       (the baseline)
  np.maximum(x * 0.2, x)            staticgrad's LeakyRelu for 0 < alpha <= 1

Each pair is checked to give the same bits first. Reported: median microseconds per call
and the ratio to its baseline, at 16K, 128K (one fused block) and 1M elements.

    python benchmarks/bench_select.py [--rounds 7] [--number 20] [--out PATH]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import itertools  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
from staticgrad import runtime as rt  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "select.json")
SIZES = (1 << 14, 1 << 17, 1 << 20)


def ways(n: int) -> dict:
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(8)]
    masks = [x > 0 for x in xs]
    g = rng.standard_normal(n).astype(np.float32)
    a, b, c, d = (itertools.cycle(range(8)).__next__ for _ in range(4))  # each way's turn
    return {
        "where": lambda: np.where(masks[a()], g, 0.0),
        "select": lambda: rt.select(masks[b()], g, 0.0),
        "leaky_where": lambda: (x := xs[c()], np.where(x > 0, x, 0.2 * x))[1],
        "leaky_max": lambda: (x := xs[d()], np.maximum(x * 0.2, x))[1],
    }


def main(argv=None):
    args = _harness.timing_arguments(__doc__, 20, "calls", DEFAULT_OUT).parse_args(argv)

    results = {"benchmark": "select", "rounds": args.rounds, "number_per_round": args.number,
               "sizes": {}, "environment": _harness.environment(with_platform=True)}
    print(f"float32, random masks; median of {args.rounds} rounds x {args.number} calls")
    print(f"{'elements':>10}  {'np.where':>9} {'rt.select':>10} {'ratio':>6}   "
          f"{'leaky where':>11} {'leaky max':>10} {'ratio':>6}   (us a call)")
    for n in SIZES:
        calls = ways(n)
        for a, b in (("where", "select"), ("leaky_where", "leaky_max")):
            want, got = calls[a](), calls[b]()  # both on the first mask
            if not np.array_equal(want.view(np.int32), got.view(np.int32)):
                raise SystemExit(f"{b} differs from {a} at {n} elements")
        per_call = _harness.time_interleaved(calls, args.rounds, args.number, warmup=2,
                                             scale=1e6)
        median = {k: float(np.median(v)) for k, v in per_call.items()}
        ratio = {"select": median["select"] / median["where"],
                 "leaky_max": median["leaky_max"] / median["leaky_where"]}
        print(f"{n:>10}  {median['where']:>9.1f} {median['select']:>10.1f} "
              f"{ratio['select']:>6.2f}   {median['leaky_where']:>11.1f} "
              f"{median['leaky_max']:>10.1f} {ratio['leaky_max']:>6.2f}")
        results["sizes"][str(n)] = {"us_per_call_median": median, "ratio": ratio,
                                    "us_per_call_rounds": per_call}
    _harness.write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
