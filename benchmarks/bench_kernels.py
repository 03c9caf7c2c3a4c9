"""staticgrad's elementwise runtime kernels against the NumPy call one would write, side by side.

NumPy computes exp, log, tanh, sin and cos of float32 arrays in SIMD loops, but log1p and
logaddexp (and expm1, tan) one element at a time through the C library, several times
slower. staticgrad's kernels for ops built on those are written with the SIMD ones instead,
keeping their accuracy by an exact correction (`staticgrad/runtime.py`). Timed in one
process, interleaved round by round, float32, on standard normal values (|x| for log1p):

  np.logaddexp(0, x)                the one-call softplus         (the baseline)
  rt.softplus(x)                    staticgrad's Softplus
  np.log1p(x)                       (the baseline)
  rt.log1p(x)                       staticgrad's Log1p (the same steps when fused)
  1 / (1 + np.exp(-x))              the sigmoid one writes        (the baseline)
  rt.sigmoid(x)                     staticgrad's Sigmoid: the same four passes, in place

Before timing, each way's largest error on these values is measured in ulps against long
double (80-bit on x86), and staticgrad's must be within 5.5 (softplus's bound over every
float32 number). Reported: median microseconds per call, the ratio to its baseline and the
errors, at 16K, 128K (one fused block) and 1M elements.

    python benchmarks/bench_kernels.py [--rounds 7] [--number 20] [--out PATH]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
from staticgrad import runtime as rt  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "kernels.json")
SIZES = (1 << 14, 1 << 17, 1 << 20)
MAX_ULPS = 5.5  # rt.softplus's bound (NumPy's float32 log alone may be 3.8 off)


def pairs(n: int) -> dict:
    """{kernel: (baseline, staticgrad's, its input, the long double reference)}."""
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    ax = np.abs(x)
    one = np.float32(1)
    return {
        "softplus": (lambda: np.logaddexp(np.float32(0), x), lambda: rt.softplus(x), x,
                     lambda v: np.logaddexp(0, v)),
        "log1p": (lambda: np.log1p(ax), lambda: rt.log1p(ax), ax, np.log1p),
        "sigmoid": (lambda: one / (one + np.exp(-x)), lambda: rt.sigmoid(x), x,
                    lambda v: 1 / (1 + np.exp(-v))),
    }


def ulps(got: np.ndarray, x: np.ndarray, reference) -> float:
    """The largest error of `got` (float32) in float32 ulps of the long double value."""
    want = reference(x.astype(np.longdouble))
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.longdouble)
    return float(np.max(np.abs(got.astype(np.longdouble) - want) / spacing))


def main(argv=None):
    args = _harness.timing_arguments(__doc__, 20, "calls", DEFAULT_OUT).parse_args(argv)

    results = {"benchmark": "kernels", "rounds": args.rounds, "number_per_round": args.number,
               "max_ulps": MAX_ULPS, "sizes": {},
               "environment": _harness.environment(with_platform=True)}
    print(f"float32, standard normal values; median of {args.rounds} rounds x {args.number} "
          "calls (us a call; error in ulps)")
    print(f"{'elements':>10}  {'kernel':<9} {'NumPy':>9} {'staticgrad':>11} {'ratio':>6}   "
          f"{'error':>5} {'ours':>5}")
    for n in SIZES:
        kernels = pairs(n)
        calls, errors = {}, {}
        for name, (baseline, ours, x, reference) in kernels.items():
            errors[name] = {"numpy": ulps(baseline(), x, reference),
                            "staticgrad": ulps(ours(), x, reference)}
            if errors[name]["staticgrad"] > MAX_ULPS:
                raise SystemExit(f"rt.{name} is {errors[name]['staticgrad']:.2f} ulps off at "
                                 f"{n} elements (at most {MAX_ULPS})")
            calls[f"{name}_numpy"], calls[name] = baseline, ours
        per_call = _harness.time_interleaved(calls, args.rounds, args.number, warmup=2,
                                             scale=1e6)
        median = {k: float(np.median(v)) for k, v in per_call.items()}
        ratio = {name: median[name] / median[f"{name}_numpy"] for name in kernels}
        for name in kernels:
            print(f"{n:>10}  {name:<9} {median[f'{name}_numpy']:>9.1f} {median[name]:>11.1f} "
                  f"{ratio[name]:>6.2f}   {errors[name]['numpy']:>5.2f} "
                  f"{errors[name]['staticgrad']:>5.2f}")
        results["sizes"][str(n)] = {"us_per_call_median": median, "ratio": ratio,
                                    "ulps": errors, "us_per_call_rounds": per_call}
    _harness.write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
