"""A training step through an embedding table, at 1k and at 1M rows: the sparse update.

The step (word2vec's shape, float32): look up a batch of 128 ids in a [rows, 128] table,
project each row to 64 outputs through a dense [128, 64] weight, loss = mean squared error
against fed targets, then one GradientDescent step on both. Its table gradient is an
IndexedSlices, applied as `scatter_sub` to the 128 rows looked up, so the step should cost
about the same whatever the table's size. The issue's target: the 1M-row step at most 2x the
1k-row one.

Timed interleaved in one process (NumPy's threads limited to 2): staticgrad at 1k and at 1M
rows, and the same step written by hand in NumPy at 1M rows (gather the rows, the gradients
by hand, `np.subtract.at` into the table, each value computed once), the expert's baseline.
TF1 compat.v1 at 1M rows joins when TensorFlow is installed. Before timing, one staticgrad
step is checked against the hand-written one.

    python benchmarks/bench_embedding.py [--rounds 7] [--number 20] [--out PATH]
"""

import _harness

_harness.limit_threads()  # before NumPy is imported

import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
import staticgrad as sg  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "benchmarks", "results", "embedding.json")
DIM, OUT, BATCH, LR = 128, 64, 128, 0.1


def data(rows, seed=0):
    rng = np.random.default_rng(seed)
    table = rng.uniform(-1, 1, (rows, DIM)).astype(np.float32)
    w = rng.normal(0, 0.1, (DIM, OUT)).astype(np.float32)
    ids = rng.integers(0, rows, BATCH).astype(np.int32)
    y = rng.normal(size=(BATCH, OUT)).astype(np.float32)
    return table, w, ids, y


def static_step(table, w):
    """(step(ids, y), session, table variable, w variable) of the staticgrad graph."""
    g = sg.Graph()
    with g.as_default():
        emb = sg.Variable(table, name="emb")
        weights = sg.Variable(w, name="w")
        ids = sg.placeholder(sg.int32, [BATCH], name="ids")
        y = sg.placeholder(sg.float32, [BATCH, OUT], name="y")
        pred = sg.matmul(sg.nn.embedding_lookup(emb, ids), weights)
        loss = sg.reduce_mean(sg.square(pred - y))
        train = sg.train.GradientDescentOptimizer(LR).minimize(loss)
        sess = sg.Session(graph=g)
        sess.run(sg.global_variables_initializer())
        return sess.make_callable(train, [ids, y]), sess, emb, weights


def hand_step(table, w, ids, y):
    """The same step in NumPy, in place."""
    rows = table[ids]
    pred = rows @ w
    d_pred = (pred - y) * np.float32(2.0 / pred.size)
    d_w = rows.T @ d_pred
    d_rows = d_pred @ w.T
    w -= np.float32(LR) * d_w
    np.subtract.at(table, ids, np.float32(LR) * d_rows)


def tf1_step(table, w):
    """The step in TF1 compat.v1 (its embedding gradient is IndexedSlices too), or None."""
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        return None
    tf.disable_eager_execution()
    g = tf.Graph()
    with g.as_default():
        emb = tf.Variable(table)
        weights = tf.Variable(w)
        ids = tf.placeholder(tf.int32, [BATCH])
        y = tf.placeholder(tf.float32, [BATCH, OUT])
        pred = tf.matmul(tf.nn.embedding_lookup(emb, ids), weights)
        train = tf.train.GradientDescentOptimizer(LR).minimize(
            tf.reduce_mean(tf.square(pred - y)))
        config = tf.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=2)
        sess = tf.Session(graph=g, config=config)
        sess.run(tf.global_variables_initializer())
    return lambda i, t: sess.run(train, {ids: i, y: t})


def check(small):
    """One staticgrad step equals the hand-written one."""
    table, w, ids, y = data(small)
    step, sess, emb, weights = static_step(table, w)
    step(ids, y)
    hand_step(table, w, ids, y)
    np.testing.assert_allclose(sess.run(emb), table, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sess.run(weights), w, rtol=1e-5, atol=1e-6)


def main():
    parser = _harness.timing_arguments(__doc__, 20, "steps", DEFAULT_OUT)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    args = parser.parse_args()
    check(args.small)

    small_table, small_w, ids_small, y = data(args.small)
    large_table, large_w, ids_large, _ = data(args.large)
    step_small = static_step(small_table, small_w)[0]
    step_large = static_step(large_table, large_w)[0]
    hand_table, hand_w = large_table.copy(), large_w.copy()
    ways = {"staticgrad_1k": lambda: step_small(ids_small, y),
            "staticgrad_1M": lambda: step_large(ids_large, y),
            "hand_numpy_1M": lambda: hand_step(hand_table, hand_w, ids_large, y)}
    tf1 = tf1_step(large_table, large_w)
    if tf1 is not None:
        ways["tf1_1M"] = lambda: tf1(ids_large, y)
    per_call = _harness.time_interleaved(ways, args.rounds, args.number, 3, 1e6)
    median, by_small = _harness.medians_and_ratios(per_call, "staticgrad_1k")
    _, by_hand = _harness.medians_and_ratios(per_call, "hand_numpy_1M")
    print(f"\nembedding step, us per step (median of {args.rounds} rounds of {args.number})")
    for way in per_call:
        print(f"  {way:16s} {median[way]:9.1f}   {by_small[way]:5.2f}x staticgrad_1k   "
              f"{by_hand[way]:5.2f}x hand_numpy_1M")
    if tf1 is None:
        print("  tf1_1M           not installed here")
    _harness.write_json(args.out, {
        "environment": _harness.environment(with_platform=True),
        "rows": {"small": args.small, "large": args.large},
        "median_us": median, "ratio_to_staticgrad_1k": by_small,
        "ratio_to_hand_numpy_1M": by_hand, "rounds": per_call})


if __name__ == "__main__":
    main()
