"""dynamic_rnn, bidirectional_dynamic_rnn and static_rnn (staticgrad/rnn/loops.py): against
NumPy loops written by hand, sequence_length masking as TF1's, gradients against finite
differences, TF1's variable names, and a model that learns."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg

rnn_cell = sg.nn.rnn_cell
RNG = np.random.default_rng(5)
XS = RNG.normal(size=(3, 6, 2))       # [batch, time, depth]
LENGTHS = np.array([6, 2, 4])


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _gru_by_hand(v, prefix, xs, lengths=None, reverse=False):
    """Outputs [batch, time, units] and last state of a GRU over xs, TF1's masking."""
    gk, gb = v[prefix + "gates/kernel"], v[prefix + "gates/bias"]
    ck, cb = v[prefix + "candidate/kernel"], v[prefix + "candidate/bias"]
    batch, time = xs.shape[:2]
    n = cb.shape[0]
    h, outs = np.zeros((batch, n)), np.zeros((batch, time, n))
    order = range(time - 1, -1, -1) if reverse else range(time)
    for t in order:
        x = xs[:, t]
        r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ gk + gb), 2, axis=1)
        c = np.tanh(np.concatenate([x, r * h], 1) @ ck + cb)
        new = u * h + (1 - u) * c
        keep = (t < lengths if lengths is not None else np.ones(batch, bool))[:, None]
        h = np.where(keep, new, h)
        outs[:, t] = np.where(keep, new, 0)
    return outs, h


def _values(sess):
    return dict(zip([v.op.name for v in sg.global_variables()],
                    sess.run(sg.global_variables())))


@pytest.mark.parametrize("time_major", [False, True])
def test_dynamic_rnn_masks_steps_past_each_rows_length(g, time_major):
    xs = sg.placeholder(sg.float64, [None, None, 2] if not time_major else [None, None, 2])
    lengths = sg.placeholder(sg.int32, [None])
    outputs, state = sg.nn.dynamic_rnn(rnn_cell.GRUCell(4), xs, sequence_length=lengths,
                                       dtype=sg.float64, time_major=time_major)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    feed = XS.transpose(1, 0, 2) if time_major else XS
    got_out, got_state = sess.run([outputs, state], {xs: feed, lengths: LENGTHS})
    want_out, want_state = _gru_by_hand(_values(sess), "rnn/gru_cell/", XS, LENGTHS)
    np.testing.assert_allclose(got_out, want_out.transpose(1, 0, 2) if time_major
                               else want_out, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_state, want_state, rtol=1e-12)
    # without lengths every step counts; and another batch size runs the same graph
    full_out, _ = sess.run([outputs, state], {xs: feed[:, :2] if time_major else feed[:2],
                                              lengths: [6, 6]})
    assert full_out.shape == ((6, 2, 4) if time_major else (2, 6, 4))


def test_gradients_through_dynamic_rnn_match_finite_differences(g):
    xs = sg.placeholder(sg.float64, [3, 6, 2], name="xs")
    cell = rnn_cell.LSTMCell(3, use_peepholes=True, num_proj=2)
    outputs, state = sg.nn.dynamic_rnn(cell, xs, sequence_length=LENGTHS, dtype=sg.float64)
    loss = sg.reduce_sum(outputs * outputs) + sg.reduce_sum(state.c)
    weights = cell.variables
    grads = sg.gradients(loss, [xs, *weights])
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    got = sess.run(grads, {xs: XS})
    run_loss = sess.make_callable(loss, [xs, *weights])
    values = [XS, *sess.run(weights)]
    eps = 1e-6
    for k, (value, grad) in enumerate(zip(values, got)):
        want = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            up = [v.copy() for v in values]
            down = [v.copy() for v in values]
            up[k][idx] += eps
            down[k][idx] -= eps
            want[idx] = (run_loss(*up) - run_loss(*down)) / (2 * eps)
        np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-8, err_msg=f"input {k}")


def test_bidirectional_dynamic_rnn_reads_each_row_backwards_from_its_length(g):
    xs = sg.placeholder(sg.float64, [3, 6, 2])
    (out_fw, out_bw), (st_fw, st_bw) = sg.nn.bidirectional_dynamic_rnn(
        rnn_cell.GRUCell(4), rnn_cell.GRUCell(3), xs, sequence_length=LENGTHS,
        dtype=sg.float64)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    v = _values(sess)
    assert sorted(v) == sorted(f"bidirectional_rnn/{d}/gru_cell/{part}"
                               for d in ("fw", "bw")
                               for part in ("gates/kernel", "gates/bias", "candidate/kernel",
                                            "candidate/bias"))
    got = sess.run([out_fw, out_bw, st_fw, st_bw], {xs: XS})
    fw = _gru_by_hand(v, "bidirectional_rnn/fw/gru_cell/", XS, LENGTHS)
    bw = _gru_by_hand(v, "bidirectional_rnn/bw/gru_cell/", XS, LENGTHS, reverse=True)
    for a, b in zip(got, (fw[0], bw[0], fw[1], bw[1])):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_static_rnn_unrolls_the_same_steps(g):
    xs = sg.placeholder(sg.float64, [3, 6, 2])
    cell = rnn_cell.GRUCell(4)
    dyn_out, dyn_state = sg.nn.dynamic_rnn(cell, xs, sequence_length=LENGTHS,
                                           dtype=sg.float64)
    with sg.variable_scope("rnn", reuse=True):  # (the cell keeps its variables anyway)
        outs, state = sg.nn.static_rnn(cell, sg.unstack(xs, axis=1), dtype=sg.float64,
                                       sequence_length=LENGTHS)
    assert len(outs) == 6 and len(sg.global_variables()) == 4
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    a, b, c, d = sess.run([dyn_out, dyn_state, sg.stack(outs, axis=1), state], {xs: XS})
    np.testing.assert_allclose(c, a, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d, b, rtol=1e-12)


def test_multi_rnn_cell_in_dynamic_rnn_names_as_tf1(g):
    xs = sg.placeholder(sg.float32, [None, 5, 3])
    cell = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(8) for _ in range(2)])
    outputs, state = sg.nn.dynamic_rnn(cell, xs, dtype=sg.float32)
    assert [v.op.name for v in sg.global_variables()] == [
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias"]
    assert [v.shape.as_list() for v in sg.global_variables()] == [[11, 32], [32], [16, 32],
                                                                  [32]]
    assert outputs.shape.as_list() == [None, 5, 8] and len(state) == 2


def test_dropout_in_dynamic_rnn_draws_before_the_loop_and_differentiates(g):
    xs = sg.placeholder(sg.float64, [3, 6, 2], name="xs")
    cell = rnn_cell.DropoutWrapper(rnn_cell.BasicRNNCell(5), input_keep_prob=0.7,
                                   output_keep_prob=0.6, state_keep_prob=0.8)
    outputs, _ = sg.nn.dynamic_rnn(cell, xs, dtype=sg.float64)
    loss = sg.reduce_sum(outputs * outputs)
    noise = [op.outputs[0] for op in g.get_operations()  # (not the kernel's initializer)
             if op.type == "RandomUniform" and op.outputs[0].shape.ndims == 3]
    assert [t.shape.as_list() for t in noise] == [[6, 3, 2], [6, 3, 5], [6, 3, 5]]
    (dxs,) = sg.gradients(loss, [xs])
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    first, second = sess.run(outputs, {xs: XS}), sess.run(outputs, {xs: XS})
    assert (first == 0).any() and not np.array_equal(first == 0, second == 0)  # fresh masks
    fixed = {t: RNG.uniform(size=t.shape.as_list()) for t in noise}  # fed: deterministic
    run_loss = sess.make_callable(loss, [xs, *fixed])
    got = sess.run(dxs, {xs: XS, **fixed})
    eps, want = 1e-6, np.zeros_like(XS)
    for idx in np.ndindex(XS.shape):
        up, down = XS.copy(), XS.copy()
        up[idx] += eps
        down[idx] -= eps
        want[idx] = (run_loss(up, *fixed.values()) - run_loss(down, *fixed.values())) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-8)


def test_an_lstm_learns_to_sum_a_sequence(g):
    rng = np.random.default_rng(0)
    xs = sg.placeholder(sg.float32, [None, 8, 1])
    target = sg.placeholder(sg.float32, [None, 1])
    outputs, state = sg.nn.dynamic_rnn(rnn_cell.BasicLSTMCell(16), xs, dtype=sg.float32)
    prediction = sg.layers.dense(state.h, 1)
    loss = sg.reduce_mean(sg.square(prediction - target))
    train = sg.train.AdamOptimizer(0.02).minimize(loss)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    losses = []
    for _ in range(150):
        batch = rng.uniform(-0.5, 0.5, size=(32, 8, 1)).astype(np.float32)
        value, _ = sess.run([loss, train], {xs: batch, target: batch.sum(axis=1)})
        losses.append(value)
    assert np.mean(losses[-10:]) < 0.1 * np.mean(losses[:10])


def test_a_nan_past_a_rows_length_stays_there(g):
    # (masking chooses; a blend 0 * NaN made the state NaN)
    xs = sg.placeholder(sg.float64, [2, 3, 2])
    outputs, state = sg.nn.dynamic_rnn(rnn_cell.BasicRNNCell(2), xs, sequence_length=[3, 1],
                                       dtype=sg.float64)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    padded = XS[:2, :3].copy()
    padded[1, 1:] = np.nan
    got_out, got_state = sess.run([outputs, state], {xs: padded})
    assert np.isfinite(got_state).all() and np.isfinite(got_out).all()
    np.testing.assert_array_equal(got_out[1, 1:], 0)
    np.testing.assert_array_equal(got_state[1], got_out[1, 0])


def test_sequence_length_must_have_a_length_for_each_row(g):
    xs = sg.placeholder(sg.float32, [None, 4, 3])
    lengths = sg.placeholder(sg.int32, [None])
    outputs, _ = sg.nn.dynamic_rnn(rnn_cell.GRUCell(2), xs, sequence_length=lengths,
                                   dtype=sg.float32)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=r"dynamic_rnn at \S*test_loops.py:\d+: sequence_length must have "
                             r"one length for each row of the batch; lengths, rows:\] \[3\] "
                             r"\[2\]"):
        sess.run(outputs, {xs: np.ones((2, 4, 3)), lengths: [4, 4, 4]})
    fixed = sg.placeholder(sg.float32, [2, 4, 3])
    with pytest.raises(ValueError, match=r"sequence_length has 3 lengths, but the batch has 2 "
                                         r"rows"):
        sg.nn.dynamic_rnn(rnn_cell.GRUCell(2, name="other"), fixed, sequence_length=[1, 2, 3],
                          dtype=sg.float32)


@pytest.mark.parametrize("build, error, message", [
    (lambda x: sg.nn.dynamic_rnn(rnn_cell.BasicLSTMCell(3), x, initial_state=sg.zeros([2, 3])),
     ValueError, r"initial_state has 1 tensors, but the cell's state has 2"),
    (lambda x: sg.nn.dynamic_rnn(rnn_cell.GRUCell(3), x, initial_state=sg.zeros([2, 4])),
     ValueError, r"tensor 0 of initial_state \(zeros\S*:0\) has shape \(2, 4\), but the "
                 r"cell's state there is 3 wide"),
    (lambda x: sg.nn.dynamic_rnn(rnn_cell.GRUCell(3), sg.placeholder(sg.float32),
                                 dtype=sg.float32),
     ValueError, r"the rank of the inputs \(\S+\) must be known"),
    (lambda x: sg.nn.dynamic_rnn("cell", x, dtype=sg.float32), TypeError,
     r"dynamic_rnn at \S*test_loops.py:\d+: cell must be an RNN cell"),
    (lambda x: sg.nn.dynamic_rnn(rnn_cell.GRUCell(3), x), ValueError,
     r"dynamic_rnn at \S*test_loops.py:\d+: give initial_state or dtype"),
    (lambda x: sg.nn.dynamic_rnn(rnn_cell.GRUCell(3), x[:, 0], dtype=sg.float32), ValueError,
     r"inputs must be at least 3-D \(\[batch, time, depth\]\)"),
    (lambda x: sg.nn.dynamic_rnn(rnn_cell.GRUCell(3), x, dtype=sg.float64), TypeError,
     r"dtype is float64 but the inputs are float32"),
    (lambda x: sg.nn.dynamic_rnn(rnn_cell.GRUCell(3), x, sequence_length=[[1, 2]],
                                 dtype=sg.float32), ValueError,
     r"sequence_length must be a vector of integers"),
    (lambda x: sg.nn.static_rnn(rnn_cell.GRUCell(3), x, dtype=sg.float32), TypeError,
     r"static_rnn at \S*test_loops.py:\d+: inputs must be a non-empty list"),
])
def test_mistakes_are_refused_at_the_user_line(build, error, message):
    x = sg.placeholder(sg.float32, [2, 4, 3])
    with pytest.raises(error, match=message):
        build(x)


def test_dynamic_rnn_refuses_dynamic_tensors_clearly():
    import staticgrad.dynamic as dy
    with pytest.raises(TypeError, match=r"dynamic_rnn at \S*test_loops.py:\d+: dynamic_rnn "
                                        r"builds a loop into a graph"):
        sg.nn.dynamic_rnn(rnn_cell.GRUCell(3), dy.ones(2, 4, 3), dtype=sg.float32)
