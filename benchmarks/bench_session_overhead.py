"""Per-call overhead of Session.run against the same computation written by hand in NumPy.

The computation is the forward pass of the seed-000 weights chain,
L = 10 - (w3*(w1*a) + w4*(w2*a)), on float32 arrays of shape (1,): so small that
the time per call is almost all dispatch overhead. Three ways are timed side by
side in one process, interleaved round by round (so drifts in machine load hit
all three alike):

  hand NumPy        a Python function doing the five NumPy operations
  sess.run          sess.run(L, {a: a_value}) -- feed dict, signature lookup, cache hit
  make_callable     sess.make_callable(L, [a])(a_value) -- the fast path

Reported: the median microseconds per call over the rounds, and each way's ratio to
hand NumPy. Absolute times depend on the machine; compare the ratios.

    python benchmarks/bench_session_overhead.py [--rounds 7] [--number 2000] [--out PATH]
"""

import _harness

# Limit threads before NumPy is imported (it reads these once, at import).
_harness.limit_threads()

import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
import staticgrad as sg  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "session_overhead.json")


def build():
    """The seed-000 graph: a fed as a placeholder, w1..w4 variables, fetch L."""
    g = sg.Graph()
    with g.as_default():
        a = sg.placeholder(sg.float32, [1], name="a")
        ws = [sg.Variable(np.array([v], np.float32), name=f"w{i}")
              for i, v in enumerate((2, 5, 9, 7), start=1)]
        w1, w2, w3, w4 = ws
        L = 10.0 - (w3 * (w1 * a) + w4 * (w2 * a))
        init = sg.global_variables_initializer()
    return g, a, L, init


def main(argv=None):
    args = _harness.timing_arguments(__doc__, 2000, "calls", DEFAULT_OUT).parse_args(argv)

    g, a, L, init = build()
    sess = sg.Session(graph=g)
    sess.run(init)

    a_val = np.array([4.0], np.float32)
    w1, w2, w3, w4 = (np.array([v], np.float32) for v in (2, 5, 9, 7))
    ten = np.float32(10.0)

    def hand():
        b = w1 * a_val
        c = w2 * a_val
        d = w3 * b + w4 * c
        return ten - d

    feed = {a: a_val}
    fast = sess.make_callable(L, [a])
    ways = {
        "hand_numpy": hand,
        "sess_run_feed_dict": lambda: sess.run(L, feed),
        "make_callable": lambda: fast(a_val),
    }

    # Same answer three ways (and compile before timing).
    for name, fn in ways.items():
        value = np.asarray(fn())
        if value.shape != (1,) or float(value[0]) != -202.0:
            raise SystemExit(f"{name} computed {value!r}, expected [-202.]")

    # warm up, then interleaved rounds (every round times all three), in us
    per_call = _harness.time_interleaved(ways, args.rounds, args.number, warmup=200, scale=1e6)
    sess.close()

    median, ratio = _harness.medians_and_ratios(per_call)

    labels = {"hand_numpy": "hand NumPy", "sess_run_feed_dict": "sess.run(L, feed_dict)",
              "make_callable": "make_callable(L, [a])"}
    print(f"seed-000 weights chain forward, float32 shape (1,); median of {args.rounds} rounds "
          f"x {args.number} calls, interleaved")
    print(f"{'':<26}{'us/call':>10}{'x hand NumPy':>15}")
    for name in ways:
        print(f"{labels[name]:<26}{median[name]:>10.2f}{ratio[name]:>15.2f}")

    results = {
        "benchmark": "session_overhead",
        "computation": "seed-000 weights chain forward: L = 10 - (w3*(w1*a) + w4*(w2*a)), "
                       "float32 arrays of shape (1,)",
        "rounds": args.rounds,
        "number_per_round": args.number,
        "us_per_call_median": median,
        "us_per_call_rounds": per_call,
        "ratio_to_hand_numpy": ratio,
        "environment": _harness.environment(
            with_platform=True, threads=("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")),
    }
    _harness.write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
