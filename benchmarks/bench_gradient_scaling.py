"""Time `sg.gradients()` and the first compile + run on elementwise chains of N ops.

Linear growth shows as a flat time per forward op across N; the table prints that per-op
cost and its ratio to the smallest N (measured in one run, so the ratios are comparable).

    python benchmarks/bench_gradient_scaling.py [--sizes 100 1000 10000] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import staticgrad as sg  # noqa: E402


def measure(n: int) -> dict:
    g = sg.Graph()
    with g.as_default():
        t0 = time.perf_counter()
        x = sg.placeholder(sg.float32, [16], name="x")
        y = x
        for i in range(n):
            y = sg.sin(y) if i % 2 else y * 1.0001
        t1 = time.perf_counter()
        forward_ops = len(g.get_operations())
        dx, = sg.gradients(y, [x])
        t2 = time.perf_counter()
        gradient_ops = len(g.get_operations()) - forward_ops
        sess = sg.Session()
        sess.run([y, dx], {x: np.ones(16, np.float32)})
        t3 = time.perf_counter()
    return {"n": n, "build_s": t1 - t0, "gradients_s": t2 - t1, "compile_and_first_run_s": t3 - t2,
            "forward_ops": forward_ops, "gradient_ops": gradient_ops}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "gradient_scaling.json"))
    args = parser.parse_args(argv)
    rows = [measure(n) for n in args.sizes]
    base = rows[0]
    print(f"{'N':>7} {'gradients()':>12} {'compile+run':>12} {'us/op grad':>11} "
          f"{'us/op compile':>14} {'ratio grad':>11} {'ratio compile':>14} {'grad ops/N':>10}")
    for r in rows:
        per_grad = r["gradients_s"] / r["n"] * 1e6
        per_comp = r["compile_and_first_run_s"] / r["n"] * 1e6
        r["grad_us_per_op"], r["compile_us_per_op"] = per_grad, per_comp
        r["grad_ratio_to_smallest"] = per_grad / (base["gradients_s"] / base["n"] * 1e6)
        r["compile_ratio_to_smallest"] = per_comp / (base["compile_and_first_run_s"] /
                                                     base["n"] * 1e6)
        print(f"{r['n']:>7} {r['gradients_s']:>11.3f}s {r['compile_and_first_run_s']:>11.3f}s "
              f"{per_grad:>11.1f} {per_comp:>14.1f} {r['grad_ratio_to_smallest']:>11.2f} "
              f"{r['compile_ratio_to_smallest']:>14.2f} {r['gradient_ops'] / r['n']:>10.2f}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rows": rows, "numpy": np.__version__}, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
