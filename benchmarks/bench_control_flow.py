"""Control flow in the graph against the same loops written by hand, timed side by side.

Two workloads, each timed interleaved in one process (NumPy's threads limited to 2):

  while   a while_loop of 10,000 iterations of a small scalar body (i += 1; s = s * 0.999 +
          0.5), run by make_callable, against a hand-written Python loop doing the same
          NumPy scalar work. The issue's target: at most 2x.
  lstm    an LSTM (input 32, 128 units, 50 steps, batch 64, float32; TF1's BasicLSTMCell
          with forget_bias 1), loss = the sum of the last output's squares, forward and
          backward (the loss, and its gradients for the kernel and the bias), against the
          same model written by hand in NumPy (forward keeping each step's gates, backward
          through time). The issue's target: within 1.5x. PyTorch (a Python loop over
          nn.LSTMCell, and the fused nn.LSTM) and TF1 compat.v1's dynamic_rnn (TensorFlow
          2.16+ needs the tf_keras package for it) join the same run when they are
          installed; they are reported as absent otherwise.

Before timing, each way's results are checked against the hand-written ones.

    python benchmarks/bench_control_flow.py [--rounds 7] [--number 3] [--out PATH]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import functools  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
import staticgrad as sg  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "control_flow.json")
ITERATIONS = 10_000
INPUT, UNITS, STEPS, BATCH = 32, 128, 50, 64


# -- while -------------------------------------------------------------------------------------
def hand_loop(x, n):
    i, s = 0, np.float64(x)
    while i < n:
        i, s = i + 1, s * 0.999 + 0.5
    return s


def static_loop():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float64, [], name="x")
        n = sg.placeholder(sg.int32, [], name="n")
        _, s = sg.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * 0.999 + 0.5), (0, x))
        return sg.Session(graph=g).make_callable(s, [x, n])


# -- lstm --------------------------------------------------------------------------------------
def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def hand_lstm(x, kernel, bias):
    """(loss, d kernel, d bias) of BasicLSTMCell over x [time, batch, input], by hand."""
    h_units = bias.size // 4
    batch = x.shape[1]
    h = np.zeros((batch, h_units), np.float32)
    c = np.zeros((batch, h_units), np.float32)
    kept = []
    for x_t in x:
        xh = np.concatenate([x_t, h], 1)
        z = xh @ kernel
        z += bias
        i, j, f, o = np.split(z, 4, axis=1)
        i, j, f, o = sigmoid(i), np.tanh(j), sigmoid(f + np.float32(1)), sigmoid(o)
        c_prev = c
        c = c_prev * f + i * j
        tc = np.tanh(c)
        h = tc * o
        kept.append((xh, i, j, f, o, c_prev, tc))
    loss = np.sum(h * h)
    dh, dc = 2 * h, np.zeros_like(c)
    d_kernel, d_bias = np.zeros_like(kernel), np.zeros_like(bias)
    for xh, i, j, f, o, c_prev, tc in reversed(kept):
        do = dh * tc
        dc = dc + dh * o * (1 - tc * tc)
        dz = np.concatenate([dc * j * i * (1 - i), dc * i * (1 - j * j),
                             dc * c_prev * f * (1 - f), do * o * (1 - o)], 1)
        d_kernel += xh.T @ dz
        d_bias += dz.sum(0)
        dh = (dz @ kernel.T)[:, x.shape[2]:]
        dc = dc * f
    return loss, d_kernel, d_bias


def static_lstm(kernel, bias):
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [STEPS, BATCH, INPUT], name="x")
        cell = sg.nn.rnn_cell.BasicLSTMCell(UNITS)
        _, state = sg.nn.dynamic_rnn(cell, x, dtype=sg.float32, time_major=True)
        loss = sg.reduce_sum(state.h * state.h)
        k, b = cell.variables
        grads = sg.gradients(loss, [k, b])
        sess = sg.Session(graph=g)
        sess.run(sg.global_variables_initializer())
        k.load(kernel, sess)
        b.load(bias, sess)
        return sess.make_callable([loss, *grads], [x])


def torch_ways(kernel, bias):
    """PyTorch's two LSTMs with the same weights (its gate order i, f, g, o; forget_bias
    folded into the bias), if PyTorch is installed."""
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(2)
    i, j, f, o = np.split(kernel, 4, axis=1)
    bi, bj, bf, bo = np.split(bias, 4)
    w = np.concatenate([i, f, j, o], 1).T  # [4H, input + H]
    b = np.concatenate([bi, bf + 1, bj, bo])
    w_ih = torch.tensor(w[:, :INPUT].copy(), requires_grad=True)
    w_hh = torch.tensor(w[:, INPUT:].copy(), requires_grad=True)
    b_ih = torch.tensor(b, requires_grad=True)
    cell = torch.nn.LSTMCell(INPUT, UNITS)
    fused = torch.nn.LSTM(INPUT, UNITS)
    with torch.no_grad():
        for m, (wi, wh) in ((cell, ("weight_ih", "weight_hh")),
                            (fused, ("weight_ih_l0", "weight_hh_l0"))):
            getattr(m, wi).copy_(w_ih)
            getattr(m, wh).copy_(w_hh)
            for name in ("bias_ih", "bias_hh") if m is cell else ("bias_ih_l0", "bias_hh_l0"):
                getattr(m, name).copy_(b_ih if "ih" in name else torch.zeros_like(b_ih))

    def loop(x):
        xt = torch.from_numpy(x)
        h = torch.zeros(BATCH, UNITS)
        c = torch.zeros(BATCH, UNITS)
        for t in range(STEPS):
            h, c = cell(xt[t], (h, c))
        loss = (h * h).sum()
        cell.zero_grad()
        loss.backward()
        return float(loss.detach())

    def whole(x):
        out, _ = fused(torch.from_numpy(x))
        loss = (out[-1] * out[-1]).sum()
        fused.zero_grad()
        loss.backward()
        return float(loss.detach())

    return {"torch_lstmcell_loop": loop, "torch_nn_lstm": whole}


def tf1_way(kernel, bias):
    """TF1 compat.v1's dynamic_rnn with the same weights, if TensorFlow is installed."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # (TF 2.16+: rnn_cell needs tf_keras)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow.compat.v1 as tf
        tf.nn.rnn_cell.BasicLSTMCell  # noqa: B018 - (absent without the tf_keras package)
    except (ImportError, AttributeError):
        return {}
    tf.disable_eager_execution()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [STEPS, BATCH, INPUT])
        cell = tf.nn.rnn_cell.BasicLSTMCell(UNITS)
        _, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, time_major=True)
        loss = tf.reduce_sum(state.h * state.h)
        grads = tf.gradients(loss, cell.variables)
        config = tf.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=2)
        sess = tf.Session(graph=g, config=config)
        sess.run(tf.global_variables_initializer())
        cell.variables[0].load(kernel, sess)
        cell.variables[1].load(bias, sess)
        run = sess.make_callable([loss, *grads], [x])
    return {"tf1_dynamic_rnn": run}


# -- the run -----------------------------------------------------------------------------------
def main():
    parser = _harness.timing_arguments(__doc__, 3, "runs", DEFAULT_OUT)
    args = parser.parse_args()
    results = {"environment": _harness.environment(with_platform=True), "workloads": {}}

    loop = static_loop()
    assert np.isclose(loop(1.0, ITERATIONS), hand_loop(1.0, ITERATIONS), rtol=1e-12)
    ways = {"hand_numpy": lambda: hand_loop(1.0, ITERATIONS),
            "staticgrad": lambda: loop(1.0, ITERATIONS)}
    per_call = _harness.time_interleaved(ways, args.rounds, args.number * 10, 2, 1e3)
    _report(results, "while", per_call, f"{ITERATIONS:,} iterations, ms per loop")

    rng = np.random.default_rng(0)
    limit = np.sqrt(6 / (INPUT + 2 * UNITS + 4 * UNITS))
    kernel = rng.uniform(-limit, limit, (INPUT + UNITS, 4 * UNITS)).astype(np.float32)
    bias = rng.uniform(-0.1, 0.1, 4 * UNITS).astype(np.float32)
    x = rng.normal(size=(STEPS, BATCH, INPUT)).astype(np.float32)
    want = hand_lstm(x, kernel, bias)
    lstm = static_lstm(kernel, bias)
    for a, b in zip(lstm(x), want):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3)
    ways = {"hand_numpy": lambda: hand_lstm(x, kernel, bias), "staticgrad": lambda: lstm(x)}
    peers = {**torch_ways(kernel, bias), **tf1_way(kernel, bias)}
    for name, fn in peers.items():
        got = fn(x)
        loss = got if np.isscalar(got) else got[0]
        assert np.isclose(loss, want[0], rtol=2e-3), (name, loss, want[0])
        ways[name] = functools.partial(fn, x)
    per_call = _harness.time_interleaved(ways, args.rounds, args.number, 1, 1e3)
    absent = [p for p in ("torch_lstmcell_loop", "torch_nn_lstm", "tf1_dynamic_rnn")
              if p not in ways]
    _report(results, "lstm", per_call, "ms per forward and backward", absent)
    _harness.write_json(args.out, results)


def _report(results, name, per_call, unit, absent=()):
    median, ratio = _harness.medians_and_ratios(per_call)
    print(f"\n{name}: {unit} (median of {len(next(iter(per_call.values())))} rounds)")
    for way in per_call:
        print(f"  {way:22s} {median[way]:9.3f}   {ratio[way]:5.2f}x hand NumPy")
    for way in absent:
        print(f"  {way:22s} not installed here")
    results["workloads"][name] = {"unit": unit, "median": median, "ratio": ratio,
                                  "rounds": per_call, "absent": list(absent)}


if __name__ == "__main__":
    main()
