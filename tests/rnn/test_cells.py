"""The RNN cells (staticgrad/rnn/cells.py, wrappers.py): each step against NumPy written by
hand from TF1's equations, TF1's variable names and shapes (so checkpoints line up), and
the errors. The loops that run them are tests/rnn/test_loops.py's."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg

rnn_cell = sg.nn.rnn_cell
RNG = np.random.default_rng(3)
X = RNG.normal(size=(4, 3))


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _step(cell, state_np, g):
    """One call of `cell` on X and `state_np` (a structure of arrays); (output, state, the
    variables' values by name)."""
    x = sg.constant(X)
    state = _const(state_np)
    out, new = cell(x, state)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    values = dict(zip([v.op.name for v in sg.global_variables()],
                      sess.run(sg.global_variables())))
    got_out, got_state = sess.run([out, new])
    return got_out, got_state, values


def _const(structure):
    if isinstance(structure, tuple):
        items = [_const(s) for s in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    return sg.constant(structure)


def test_basic_rnn_cell(g):
    h = RNG.normal(size=(4, 5))
    out, new, v = _step(rnn_cell.BasicRNNCell(5), h, g)
    assert {k: val.shape for k, val in v.items()} == {"basic_rnn_cell/kernel": (8, 5),
                                                       "basic_rnn_cell/bias": (5,)}
    want = np.tanh(np.concatenate([X, h], 1) @ v["basic_rnn_cell/kernel"] +
                   v["basic_rnn_cell/bias"])
    np.testing.assert_allclose(out, want)
    np.testing.assert_allclose(new, want)


@pytest.mark.parametrize("state_is_tuple", [True, False])
def test_basic_lstm_cell_gates_are_i_j_f_o_with_forget_bias(g, state_is_tuple):
    c, h = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 5))
    state = rnn_cell.LSTMStateTuple(c, h) if state_is_tuple else np.concatenate([c, h], 1)
    cell = rnn_cell.BasicLSTMCell(5, forget_bias=0.7, state_is_tuple=state_is_tuple)
    out, new, v = _step(cell, state, g)
    kernel, bias = v["basic_lstm_cell/kernel"], v["basic_lstm_cell/bias"]
    assert kernel.shape == (8, 20) and bias.shape == (20,) and not bias.any()
    i, j, f, o = np.split(np.concatenate([X, h], 1) @ kernel + bias, 4, axis=1)
    new_c = c * sigmoid(f + 0.7) + sigmoid(i) * np.tanh(j)
    new_h = np.tanh(new_c) * sigmoid(o)
    np.testing.assert_allclose(out, new_h)
    if state_is_tuple:
        assert isinstance(new, rnn_cell.LSTMStateTuple)
        np.testing.assert_allclose(new.c, new_c)
        np.testing.assert_allclose(new.h, new_h)
    else:
        np.testing.assert_allclose(new, np.concatenate([new_c, new_h], 1))
    assert cell.state_size == ((5, 5) if state_is_tuple else 10) and cell.output_size == 5


def test_lstm_cell_with_peepholes_clips_and_a_projection(g):
    c, m = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 2))
    cell = rnn_cell.LSTMCell(5, use_peepholes=True, cell_clip=0.5, num_proj=2, proj_clip=0.3,
                             initializer=sg.random_uniform_initializer(-0.5, 0.5, seed=1))
    out, new, v = _step(cell, rnn_cell.LSTMStateTuple(c, m), g)
    assert {k: val.shape for k, val in v.items()} == {
        "lstm_cell/kernel": (5, 20), "lstm_cell/bias": (20,), "lstm_cell/w_f_diag": (5,),
        "lstm_cell/w_i_diag": (5,), "lstm_cell/w_o_diag": (5,),
        "lstm_cell/projection/kernel": (5, 2)}
    i, j, f, o = np.split(np.concatenate([X, m], 1) @ v["lstm_cell/kernel"] +
                          v["lstm_cell/bias"], 4, axis=1)
    new_c = sigmoid(f + 1.0 + v["lstm_cell/w_f_diag"] * c) * c + \
        sigmoid(i + v["lstm_cell/w_i_diag"] * c) * np.tanh(j)
    new_c = np.clip(new_c, -0.5, 0.5)
    new_m = sigmoid(o + v["lstm_cell/w_o_diag"] * new_c) * np.tanh(new_c)
    new_m = np.clip(new_m @ v["lstm_cell/projection/kernel"], -0.3, 0.3)
    np.testing.assert_allclose(out, new_m)
    np.testing.assert_allclose(new.c, new_c)
    np.testing.assert_allclose(new.h, new_m)
    assert cell.state_size == (5, 2) and cell.output_size == 2


def test_gru_cell_gates_start_open_and_the_candidate_reads_the_reset_state(g):
    h = RNG.normal(size=(4, 5))
    out, new, v = _step(rnn_cell.GRUCell(5), h, g)
    assert {k: val.shape for k, val in v.items()} == {
        "gru_cell/gates/kernel": (8, 10), "gru_cell/gates/bias": (10,),
        "gru_cell/candidate/kernel": (8, 5), "gru_cell/candidate/bias": (5,)}
    assert (v["gru_cell/gates/bias"] == 1).all() and not v["gru_cell/candidate/bias"].any()
    r, u = np.split(sigmoid(np.concatenate([X, h], 1) @ v["gru_cell/gates/kernel"] +
                            v["gru_cell/gates/bias"]), 2, axis=1)
    cand = np.tanh(np.concatenate([X, r * h], 1) @ v["gru_cell/candidate/kernel"] +
                   v["gru_cell/candidate/bias"])
    np.testing.assert_allclose(out, u * h + (1 - u) * cand)
    np.testing.assert_allclose(new, out)


def test_multi_rnn_cell_stacks_cells_in_scopes_of_their_own(g):
    cells = [rnn_cell.BasicLSTMCell(5), rnn_cell.GRUCell(4)]
    multi = rnn_cell.MultiRNNCell(cells)
    state = (rnn_cell.LSTMStateTuple(np.zeros((4, 5)), np.zeros((4, 5))), np.zeros((4, 4)))
    out, new, v = _step(multi, state, g)
    assert sorted(v) == ["multi_rnn_cell/cell_0/basic_lstm_cell/bias",
                         "multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
                         "multi_rnn_cell/cell_1/gru_cell/candidate/bias",
                         "multi_rnn_cell/cell_1/gru_cell/candidate/kernel",
                         "multi_rnn_cell/cell_1/gru_cell/gates/bias",
                         "multi_rnn_cell/cell_1/gru_cell/gates/kernel"]
    assert v["multi_rnn_cell/cell_1/gru_cell/gates/kernel"].shape == (9, 8)  # 5 in, 4 units
    assert out.shape == (4, 4) and multi.state_size == ((5, 5), 4)
    assert len(multi.variables) == 6


def test_a_cell_reuses_its_variables_on_every_call(g):
    cell = rnn_cell.BasicRNNCell(5)
    x, h = sg.constant(X), sg.zeros([4, 5], sg.float64)
    for _ in range(3):
        _, h = cell(x, h)
    assert [v.op.name for v in sg.global_variables()] == ["basic_rnn_cell/kernel",
                                                          "basic_rnn_cell/bias"]
    other = rnn_cell.BasicRNNCell(5)
    other(x, h)  # a second cell in the same scope: its own variables, as TF1 names them
    assert [v.op.name for v in other.variables] == ["basic_rnn_cell_1/kernel",
                                                   "basic_rnn_cell_1/bias"]


def test_zero_state_has_the_state_structure(g):
    state = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(3), rnn_cell.BasicRNNCell(2)]) \
        .zero_state(4, sg.float32)
    got = sg.Session().run(state)
    assert got[0].c.shape == (4, 3) and got[0].h.shape == (4, 3) and got[1].shape == (4, 2)
    assert not got[1].any()


def test_dropout_wrapper_outside_a_loop_drops_and_scales(g):
    cell = rnn_cell.DropoutWrapper(rnn_cell.BasicRNNCell(200), output_keep_prob=0.5, seed=4)
    out, _ = cell(sg.constant(X), sg.zeros([4, 200], sg.float64))
    inner = sg.get_default_graph().get_operation_by_name("basic_rnn_cell/Tanh").outputs[0]
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    got, full = sess.run([out, inner])
    kept = got != 0
    np.testing.assert_allclose(got[kept], full[kept] * 2)
    assert 0.35 < kept.mean() < 0.65


@pytest.mark.parametrize("make, error, message", [
    (lambda: rnn_cell.BasicLSTMCell(0), ValueError, "num_units must be a positive int, got 0"),
    (lambda: rnn_cell.LSTMCell(4, num_unit_shards=2), ValueError, "deprecated"),
    (lambda: rnn_cell.MultiRNNCell([]), ValueError, "needs at least one cell"),
    (lambda: rnn_cell.MultiRNNCell([object()]), TypeError, "cell 0 is .*, not an RNN cell"),
    (lambda: rnn_cell.DropoutWrapper(rnn_cell.GRUCell(3), input_keep_prob=1.5), ValueError,
     r"input_keep_prob must be in \(0, 1\], got 1.5"),
    (lambda: rnn_cell.BasicRNNCell(3, activation="tanh"), TypeError,
     "activation must be callable"),
    (lambda: rnn_cell.BasicRNNCell(3)(sg.placeholder(sg.float32, [2, None]),
                                      sg.zeros([2, 3])), ValueError,
     r"BasicRNNCell at \S*test_cells.py:\d+: the last dimension of its inputs "
     r"\(Placeholder\S*:0\) must be known, got shape \(2, \?\)"),
])
def test_mistakes_are_refused(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_state_dropout_of_an_lstm_drops_h_only_unless_a_visitor_says(g):
    x = sg.ones([200, 4], sg.float64)
    plain = rnn_cell.DropoutWrapper(rnn_cell.BasicLSTMCell(5), state_keep_prob=0.5, seed=3)
    _, state = plain(x, plain.zero_state(200, sg.float64))
    everything = rnn_cell.DropoutWrapper(rnn_cell.BasicLSTMCell(5, name="all"),
                                         state_keep_prob=0.5, seed=3,
                                         dropout_state_filter_visitor=lambda s: True)
    _, all_state = everything(x, everything.zero_state(200, sg.float64))
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    got, got_all = sess.run([state, all_state])
    assert not (got.c == 0).any() and 0.4 < (got.h == 0).mean() < 0.6  # (TF1's default)
    assert 0.4 < (got_all.c == 0).mean() < 0.6


def test_each_dropout_mask_draws_with_a_seed_of_its_own(g):
    cell = rnn_cell.DropoutWrapper(rnn_cell.BasicRNNCell(6), input_keep_prob=0.5,
                                   output_keep_prob=0.5, seed=1)
    cell(sg.ones([3, 6], sg.float64), sg.zeros([3, 6], sg.float64))
    seeds = [op.attrs.get("seed2", op.attrs.get("seed")) for op in g.get_operations()
             if op.type == "RandomUniform" and op.name.startswith("dropout")]
    assert len(seeds) == 2 and seeds[0] != seeds[1]


def test_cells_refuse_dynamic_tensors_clearly():
    import staticgrad.dynamic as dy
    with pytest.raises(TypeError, match=r"BasicRNNCell at \S*test_cells.py:\d+: the RNN cells "
                                        r"build graph ops and variables"):
        rnn_cell.BasicRNNCell(3)(dy.ones(2, 4), dy.zeros(2, 3))
