"""Seed 003's regression loop, define-by-run against define-then-run, as a ratio in one run.

One gradient-descent step of w x^2 + b on the article's 100 points (summed squared error,
lr 0.001), float32, NumPy's threads limited to 2. The models and loops are those of
examples/course/compare_static_dynamic.py, imported. Ways, timed side by side in one
process and interleaved round by round (drifts in machine load hit all alike):

  hand NumPy     the step written by hand, the gradients derived on paper
  dynamic        staticgrad.dynamic: forward (records the tape), backward(), the update
                 under no_grad, zero the gradients
  sess.run       sess.run([train_op, loss], feed) on the graph declared once
  make_callable  sess.make_callable([train_op, loss], [x, y])(x, y)

Before timing, one step of each from the same start must give the same w and b. Reported:
median microseconds per step, each way's ratio to hand NumPy, the ratio dynamic / sess.run,
and the static side's one-time cost (declare the graph, its gradients and update, compile)
with the number of steps after which it has paid for itself.

    python benchmarks/bench_static_vs_dynamic.py [--rounds 7] [--number 200] [--out PATH]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import math  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "course"))  # also puts ROOT on sys.path
import compare_static_dynamic as course  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "static_vs_dynamic.json")


class HandNumPy:
    """The step by hand: d/dw sum((y - w x^2 - b)^2) = sum(-2 r x^2), d/db = sum(-2 r)."""

    def __init__(self, model):
        (self.x, self.y), self.lr = model.inputs, np.float32(model.lr)
        self.x2 = self.x**2
        self.w, self.b = (p.copy() for p in model.initial)

    def step(self):
        r = self.y - (self.w * self.x2 + self.b)
        self.w -= self.lr * np.sum(-2 * r * self.x2)
        self.b -= self.lr * np.sum(-2 * r)
        return np.sum(r * r)


def main(argv=None):
    parser = _harness.timing_arguments(__doc__, 200, "steps", DEFAULT_OUT)
    parser.add_argument("--builds", type=int, default=5,
                        help="times the static graph is built and compiled (default 5)")
    args = parser.parse_args(argv)

    model = course.regression_model()
    hand = HandNumPy(model)
    dynamic = course.Dynamic(model)
    static = course.Static(model)
    fast = static.sess.make_callable([static.step, static.loss], static.feeds)

    def dynamic_step():
        dynamic.backward_and_update(dynamic.forward())

    ways = {
        "hand_numpy": hand.step,
        "dynamic": dynamic_step,
        "sess_run": lambda: static.sess.run([static.step, static.loss], static.feed),
        "make_callable": lambda: fast(*model.inputs),
    }

    # One step each from the same start: the same w and b.
    for name in ("hand_numpy", "dynamic", "sess_run"):
        ways[name]()
    got = {"dynamic": [p.detach().numpy() for p in dynamic.params],
           "sess_run": static.sess.run(static.params)}
    for name, (w, b) in got.items():
        np.testing.assert_allclose([w.item(), b.item()], [hand.w.item(), hand.b.item()],
                                   rtol=1e-5, err_msg=f"{name} took another step")

    # warm up, then interleaved rounds (every round times every way), in us
    per_step = _harness.time_interleaved(ways, args.rounds, args.number, warmup=10, scale=1e6)
    builds = []
    for _ in range(args.builds):
        start = time.perf_counter()
        course.Static(model)
        builds.append((time.perf_counter() - start) * 1e6)

    median, ratio = _harness.medians_and_ratios(per_step)
    dynamic_over_static = median["dynamic"] / median["sess_run"]
    build = statistics.median(builds)
    saved = median["dynamic"] - median["sess_run"]
    # the first whole step by which the build is paid back (rounded up: a step is not split)
    break_even = math.ceil(build / saved) if saved > 0 else None

    labels = {"hand_numpy": "hand NumPy", "dynamic": "dynamic (forward, backward, update)",
              "sess_run": "static sess.run([train, loss], feed)",
              "make_callable": "static make_callable"}
    print(f"seed 003 regression step (w x^2 + b, 100 points, float32); median of "
          f"{args.rounds} rounds x {args.number} steps, interleaved")
    print(f"{'':<38}{'us/step':>10}{'x hand NumPy':>15}")
    for name in ways:
        print(f"{labels[name]:<38}{median[name]:>10.1f}{ratio[name]:>15.2f}")
    print(f"dynamic / static (sess.run): {dynamic_over_static:.2f}")
    print(f"static one-time build + compile: {build / 1e3:.2f} ms (median of {args.builds}); "
          + (f"paid back after {break_even} steps" if break_even else "never paid back"))

    results = {
        "benchmark": "static_vs_dynamic",
        "workload": "seed 003 regression: one gradient-descent step of w x^2 + b, 100 points, "
                    "summed squared error, lr 0.001, float32",
        "rounds": args.rounds,
        "number_per_round": args.number,
        "us_per_step_median": median,
        "us_per_step_rounds": per_step,
        "ratio_to_hand_numpy": ratio,
        "ratio_dynamic_to_static_sess_run": dynamic_over_static,
        "static_build_us_median": build,
        "static_build_us": builds,
        "static_break_even_steps": break_even,
        "environment": _harness.environment(),
    }
    _harness.write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
