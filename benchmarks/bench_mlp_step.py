"""W2: one training step of a 784-512-512-10 ReLU MLP against the same step written in NumPy.

The step: forward through two ReLU layers and a linear output, softmax cross-entropy with
one-hot labels averaged over a batch of 256, the backward pass, and an SGD update of all six
weight arrays; float32 throughout, NumPy's threads limited to 2. Ways, timed side by side in
one process and interleaved round by round (drifts in machine load hit all alike):

  hand NumPy     the step written by hand: fused softmax-cross-entropy gradient (p - y) / B,
                 ReLU masks, in-place `W -= lr * dW` updates
  sess.run       sess.run([loss, train_op], {x: ..., y: ...}) on a graph built with
                 sg.layers-free TF1 code and GradientDescentOptimizer.minimize
  make_callable  sess.make_callable([loss, train_op], [x, y])(...)

Before timing, one step of each is checked to give the same loss and the same updated
weights (to float32 rounding). Reported: median milliseconds per step and the ratio to hand
NumPy. Absolute times depend on the machine; compare the ratios.

    python benchmarks/bench_mlp_step.py [--rounds 7] [--number 10] [--out PATH]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
import staticgrad as sg  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "mlp_step.json")
SIZES = (784, 512, 512, 10)
BATCH = 256
LR = 0.01


def initial_weights(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        limit = np.sqrt(6 / (fan_in + fan_out))
        out.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
        out.append(np.zeros(fan_out, np.float32))
    return out


def batch(seed=1):
    """One batch: standard-normal inputs and one-hot labels, float32."""
    rng = np.random.default_rng(seed)
    xb = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    yb = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    return xb, yb


def build_graph(weights):
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [None, SIZES[0]], name="x")
        y = sg.placeholder(sg.float32, [None, SIZES[-1]], name="y")
        params = [sg.Variable(w, name=n) for w, n in zip(weights, ("W1", "b1", "W2", "b2",
                                                                   "W3", "b3"))]
        W1, b1, W2, b2, W3, b3 = params
        h1 = sg.nn.relu(sg.matmul(x, W1) + b1)
        h2 = sg.nn.relu(sg.matmul(h1, W2) + b2)
        logits = sg.matmul(h2, W3) + b3
        loss = sg.reduce_mean(sg.nn.softmax_cross_entropy_with_logits_v2(labels=y,
                                                                         logits=logits))
        train = sg.train.GradientDescentOptimizer(LR).minimize(loss)
        init = sg.global_variables_initializer()
    return g, x, y, params, loss, train, init


class HandNumPy:
    """The same step, as one would write it by hand."""

    def __init__(self, weights):
        self.p = [w.copy() for w in weights]

    def step(self, x, y):
        W1, b1, W2, b2, W3, b3 = self.p
        z1 = x @ W1 + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ W2 + b2
        h2 = np.maximum(z2, 0)
        logits = h2 @ W3 + b3
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=1, keepdims=True)
        loss = -(y * (shifted - np.log(s))).sum(axis=1).mean()
        d_logits = (e / s - y) / np.float32(x.shape[0])
        d_z2 = (d_logits @ W3.T) * (z2 > 0)
        d_z1 = (d_z2 @ W2.T) * (z1 > 0)
        grads = (x.T @ d_z1, d_z1.sum(0), h1.T @ d_z2, d_z2.sum(0), h2.T @ d_logits,
                 d_logits.sum(0))
        lr = np.float32(LR)
        for w, g in zip(self.p, grads):
            w -= lr * g
        return loss


def main(argv=None):
    args = _harness.timing_arguments(__doc__, 10, "steps", DEFAULT_OUT).parse_args(argv)

    xb, yb = batch()
    weights = initial_weights()

    g, x, y, params, loss, train, init = build_graph(weights)
    sess = sg.Session(graph=g)
    sess.run(init)
    hand = HandNumPy(weights)

    # One step each from the same start: same loss, same updated weights.
    got_loss, _ = sess.run([loss, train], {x: xb, y: yb})
    want_loss = hand.step(xb, yb)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5)
    for got, want in zip(sess.run(params), hand.p):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)

    feed = {x: xb, y: yb}
    fast = sess.make_callable([loss, train], [x, y])
    ways = {
        "hand_numpy": lambda: hand.step(xb, yb),
        "sess_run_feed_dict": lambda: sess.run([loss, train], feed),
        "make_callable": lambda: fast(xb, yb),
    }
    # warm up (and compile), then interleaved rounds, in ms
    per_step = _harness.time_interleaved(ways, args.rounds, args.number, warmup=3, scale=1e3)
    sess.close()

    median, ratio = _harness.medians_and_ratios(per_step)
    labels = {"hand_numpy": "hand NumPy", "sess_run_feed_dict": "sess.run([loss, train], feed)",
              "make_callable": "make_callable"}
    print(f"W2: 784-512-512-10 ReLU MLP SGD step, batch {BATCH}, float32; median of "
          f"{args.rounds} rounds x {args.number} steps, interleaved")
    print(f"{'':<32}{'ms/step':>10}{'x hand NumPy':>15}")
    for name in ways:
        print(f"{labels[name]:<32}{median[name]:>10.2f}{ratio[name]:>15.3f}")

    results = {
        "benchmark": "mlp_step",
        "workload": "W2: 784-512-512-10 ReLU MLP, softmax cross-entropy, SGD, batch 256, float32",
        "rounds": args.rounds,
        "number_per_round": args.number,
        "ms_per_step_median": median,
        "ms_per_step_rounds": per_step,
        "ratio_to_hand_numpy": ratio,
        "environment": _harness.environment(),
    }
    _harness.write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
