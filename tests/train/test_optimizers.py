"""Optimizers against their published update rules, written out in NumPy by hand; the global
step; slot variables; the errors a training script can run into."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg

RNG = np.random.default_rng(3)
X = RNG.normal(size=(6, 3))
Y = RNG.normal(size=(6, 2))
W0 = RNG.normal(size=(3, 2))
B0 = RNG.normal(size=(2,))
STEPS = 6


def _grads(w, b):
    """d/dw, d/db of 0.5 * sum((X @ w + b - Y)^2), by hand."""
    r = X @ w + b - Y
    return X.T @ r, r.sum(axis=0)


# -- the published rules (TF1's training_ops), one step each, in float64 ----------------------
def sgd(lr):
    def step(p, g, s, t):
        return p - lr * g
    return step


def momentum(lr, mu, nesterov=False):
    def step(p, g, s, t):
        s["a"] = mu * s.get("a", 0.0) + g
        return p - (lr * g + lr * mu * s["a"] if nesterov else lr * s["a"])
    return step


def adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def step(p, g, s, t):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        return p - lr_t * s["m"] / (np.sqrt(s["v"]) + eps)
    return step


def rmsprop(lr, decay=0.9, mu=0.0, eps=1e-10, centered=False):
    def step(p, g, s, t):
        s["ms"] = decay * s.get("ms", 1.0) + (1 - decay) * g * g   # ms starts at ones
        denom = s["ms"] + eps
        if centered:
            s["mg"] = decay * s.get("mg", 0.0) + (1 - decay) * g
            denom = s["ms"] - s["mg"] ** 2 + eps
        s["mom"] = mu * s.get("mom", 0.0) + lr * g / np.sqrt(denom)
        return p - s["mom"]
    return step


def adagrad(lr, init=0.1):
    def step(p, g, s, t):
        s["acc"] = s.get("acc", init) + g * g
        return p - lr * g / np.sqrt(s["acc"])
    return step


def adadelta(lr, rho=0.95, eps=1e-8):
    def step(p, g, s, t):
        s["acc"] = rho * s.get("acc", 0.0) + (1 - rho) * g * g
        update = np.sqrt(s.get("upd", 0.0) + eps) / np.sqrt(s["acc"] + eps) * g
        s["upd"] = rho * s.get("upd", 0.0) + (1 - rho) * update * update
        return p - lr * update
    return step


def ftrl(lr, power=-0.5, init=0.1, l1=0.0, l2=0.0, shrinkage=0.0):
    def step(p, g, s, t):
        acc = s.get("acc", init)
        new = acc + g * g
        s["z"] = s.get("z", 0.0) + g + 2 * shrinkage * p - (new ** -power - acc ** -power) / lr * p
        s["acc"] = new
        z = s["z"]
        return np.where(np.abs(z) > l1, (l1 * np.sign(z) - z) / (new ** -power / lr + 2 * l2),
                        0.0)
    return step


CASES = [
    ("sgd", lambda: sg.train.GradientDescentOptimizer(0.05), sgd(0.05)),
    ("momentum", lambda: sg.train.MomentumOptimizer(0.05, 0.9), momentum(0.05, 0.9)),
    ("nesterov", lambda: sg.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
     momentum(0.05, 0.9, nesterov=True)),
    ("adam", lambda: sg.train.AdamOptimizer(0.1), adam(0.1)),
    ("adam-custom", lambda: sg.train.AdamOptimizer(0.03, beta1=0.5, beta2=0.9, epsilon=1e-3),
     adam(0.03, 0.5, 0.9, 1e-3)),
    ("rmsprop", lambda: sg.train.RMSPropOptimizer(0.01), rmsprop(0.01)),
    ("rmsprop-momentum", lambda: sg.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5,
                                                           epsilon=1e-6),
     rmsprop(0.01, 0.8, 0.5, 1e-6)),
    ("rmsprop-centered", lambda: sg.train.RMSPropOptimizer(0.01, momentum=0.3, centered=True),
     rmsprop(0.01, mu=0.3, centered=True)),
    ("adagrad", lambda: sg.train.AdagradOptimizer(0.2), adagrad(0.2)),
    ("adagrad-init", lambda: sg.train.AdagradOptimizer(0.2, initial_accumulator_value=0.5),
     adagrad(0.2, 0.5)),
    ("adadelta", lambda: sg.train.AdadeltaOptimizer(1.0), adadelta(1.0)),
    ("adadelta-custom", lambda: sg.train.AdadeltaOptimizer(0.5, rho=0.8, epsilon=1e-4),
     adadelta(0.5, 0.8, 1e-4)),
    ("ftrl", lambda: sg.train.FtrlOptimizer(0.3), ftrl(0.3)),
    ("ftrl-regularized", lambda: sg.train.FtrlOptimizer(
        0.3, learning_rate_power=-0.7, initial_accumulator_value=0.5,
        l1_regularization_strength=0.05, l2_regularization_strength=0.1,
        l2_shrinkage_regularization_strength=0.02),
     ftrl(0.3, -0.7, 0.5, 0.05, 0.1, 0.02)),
]


def _model(dtype=sg.float64):
    x = sg.placeholder(dtype, [None, 3], name="x")
    y = sg.placeholder(dtype, [None, 2], name="y")
    w = sg.Variable(W0.astype(dtype.np), name="w")
    b = sg.Variable(B0.astype(dtype.np), name="b")
    loss = 0.5 * sg.reduce_sum(sg.square(sg.matmul(x, w) + b - y))
    return x, y, w, b, loss


@pytest.mark.parametrize("name,make,rule", CASES, ids=[c[0] for c in CASES])
def test_optimizer_matches_published_rule(name, make, rule):
    with sg.Graph().as_default():
        x, y, w, b, loss = _model()
        step = sg.train.get_or_create_global_step()
        train = make().minimize(loss, global_step=step)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            w_ref, b_ref, sw, sb = W0.copy(), B0.copy(), {}, {}
            for t in range(1, STEPS + 1):
                gw, gb = _grads(w_ref, b_ref)
                w_ref, b_ref = rule(w_ref, gw, sw, t), rule(b_ref, gb, sb, t)
                sess.run(train, {x: X, y: Y})
                np.testing.assert_allclose(sess.run(w), w_ref, rtol=1e-10, atol=1e-12)
                np.testing.assert_allclose(sess.run(b), b_ref, rtol=1e-10, atol=1e-12)
            assert sess.run(step) == STEPS


@pytest.mark.parametrize("name,make,rule", CASES[:6:2], ids=[c[0] for c in CASES[:6:2]])
def test_optimizer_in_float32_keeps_float32(name, make, rule):
    with sg.Graph().as_default():
        x, y, w, b, loss = _model(sg.float32)
        train = make().minimize(loss)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            w_ref, b_ref, sw, sb = W0.copy(), B0.copy(), {}, {}
            for t in range(1, 4):
                gw, gb = _grads(w_ref, b_ref)
                w_ref, b_ref = rule(w_ref, gw, sw, t), rule(b_ref, gb, sb, t)
                sess.run(train, {x: X, y: Y})
            got = sess.run(w)
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, w_ref, rtol=1e-4, atol=1e-5)


def test_compute_then_apply_gradients_with_a_tensor_learning_rate():
    with sg.Graph().as_default():
        x, y, w, b, loss = _model()
        lr = sg.placeholder(sg.float64, [], name="lr")
        opt = sg.train.GradientDescentOptimizer(lr)
        gvs = opt.compute_gradients(loss, var_list=[w])
        assert [v for _, v in gvs] == [w]
        clipped = [(sg.clip_by_value(g, -1.0, 1.0), v) for g, v in gvs]
        train = opt.apply_gradients(clipped)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            sess.run(train, {x: X, y: Y, lr: 0.5})
            gw, _ = _grads(W0, B0)
            np.testing.assert_allclose(sess.run(w), W0 - 0.5 * np.clip(gw, -1, 1))
            np.testing.assert_allclose(sess.run(b), B0)  # not in var_list


def test_slots_are_global_non_trainable_and_named_as_in_tf1():
    with sg.Graph().as_default():
        x, y, w, b, loss = _model()
        opt = sg.train.AdamOptimizer()
        opt.minimize(loss)
        names = {v.op.name for v in sg.global_variables()}
        assert {"w/Adam", "w/Adam_1", "b/Adam", "b/Adam_1", "beta1_power",
                "beta2_power"} <= names
        assert {v.op.name for v in sg.trainable_variables()} == {"w", "b"}
        assert opt.get_slot(w, "m").op.name == "w/Adam"
        assert opt.get_slot_names() == ["m", "v"]
        assert len(opt.variables()) == 6
        rms = sg.train.RMSPropOptimizer(0.1)
        rms.minimize(loss)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())  # covers every slot
            np.testing.assert_array_equal(sess.run(rms.get_slot(w, "rms")), np.ones((3, 2)))


def test_minimize_without_gradients_names_the_variables_and_the_loss():
    with sg.Graph().as_default():
        w = sg.Variable(1.0, name="weight")
        loss = sg.stop_gradient(w * 2.0, name="the_loss")
        with pytest.raises(ValueError, match="No gradients provided") as e:
            sg.train.GradientDescentOptimizer(0.1).minimize(loss)
        assert "weight:0" in str(e.value) and "the_loss:0" in str(e.value)
        assert "test_optimizers.py" in str(e.value)


def test_no_variables_and_bad_losses_are_clear_errors():
    with sg.Graph().as_default():
        c = sg.constant(1.0)
        with pytest.raises(ValueError, match="No variables to optimize"):
            sg.train.AdamOptimizer().minimize(c * 2.0)
        sg.Variable(1, name="count")
        with pytest.raises(TypeError, match="floating-point loss"):
            sg.train.AdamOptimizer().minimize(sg.constant(3))
        with pytest.raises(ValueError, match="No variables provided"):
            sg.train.AdamOptimizer().apply_gradients([])


def test_train_op_runs_updates_once_and_step_after_them():
    with sg.Graph().as_default():
        w = sg.Variable(0.0, name="w")
        step = sg.train.get_or_create_global_step()
        assert sg.train.get_or_create_global_step() is step
        assert step.dtype is sg.int64 and not step.trainable
        train = sg.train.GradientDescentOptimizer(1.0).minimize(-w, global_step=step)
        assert train in sg.get_collection(sg.GraphKeys.TRAIN_OP)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
            assert sess.run(w) == 3.0
            assert sg.train.global_step(sess, step) == 3


def test_minimize_inside_control_dependencies_keeps_slot_initializers_free():
    # batch-norm style: `with control_dependencies(update_ops): train = opt.minimize(...)`
    with sg.Graph().as_default():
        counter = sg.Variable(0.0, name="counter")
        w = sg.Variable(1.0, name="w")
        bump = sg.assign_add(counter, 1.0)
        with sg.control_dependencies([bump]):
            train = sg.train.MomentumOptimizer(0.1, 0.9).minimize(sg.square(w))
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            assert sess.run(counter) == 0.0  # initializing the slot did not run `bump`
            sess.run(train)
            assert sess.run(counter) == 1.0


def test_optimizers_fit_a_line():
    for make in (lambda: sg.train.GradientDescentOptimizer(0.1),
                 lambda: sg.train.AdamOptimizer(0.1)):
        with sg.Graph().as_default():
            xs = np.linspace(-1, 1, 50)
            x = sg.placeholder(sg.float64, [50])
            a, c = sg.Variable(0.0, dtype=sg.float64), sg.Variable(0.0, dtype=sg.float64)
            loss = sg.reduce_mean(sg.square(a * x + c - (2 * xs - 1)))
            train = make().minimize(loss)
            with sg.Session() as sess:
                sess.run(sg.global_variables_initializer())
                for _ in range(500):
                    sess.run(train, {x: xs})
                np.testing.assert_allclose(sess.run([a, c]), [2, -1], atol=1e-3)


@pytest.mark.parametrize("name,make,rule", CASES[5:], ids=[c[0] for c in CASES[5:]])
def test_rmsprop_and_adagrad_keep_float32(name, make, rule):
    test_optimizer_in_float32_keeps_float32(name, make, rule)


def test_integer_variables_without_gradients_are_skipped():
    with sg.Graph().as_default():
        x, y, w, b, loss = _model()
        step = sg.train.get_or_create_global_step()
        train = sg.train.GradientDescentOptimizer(0.1).minimize(
            loss, var_list=sg.global_variables(), global_step=step)
        assert train is not None


def test_optimizer_variables_are_the_current_graphs_sorted():
    opt = sg.train.AdamOptimizer()
    graphs = [sg.Graph(), sg.Graph()]
    for g in graphs:
        with g.as_default():
            opt.minimize(_model()[-1])
    with graphs[1].as_default():
        names = [v.op.name for v in opt.variables()]
        assert all(v.graph is graphs[1] for v in opt.variables())
    assert names == sorted(names) and len(names) == 6


def test_a_variable_named_global_step_is_the_global_step():
    with sg.Graph().as_default():
        mine = sg.Variable(0, name="global_step", trainable=False)
        assert sg.train.get_global_step() is mine
        assert sg.train.get_or_create_global_step() is mine
    with sg.Graph().as_default():
        sg.Variable(0.5, name="global_step")
        with pytest.raises(TypeError, match="must be an integer scalar"):
            sg.train.get_global_step()


def test_apply_gradients_errors_say_where():
    with sg.Graph().as_default():
        w = sg.Variable(np.zeros((3, 2)), name="w")
        g = sg.constant(np.zeros((2, 3)), name="g")
        with pytest.raises(ValueError, match=r"shape \(2, 3\).*\(3, 2\).*test_optimizers.py"):
            sg.train.GradientDescentOptimizer(0.1).apply_gradients([(g, w)])


def test_ftrl_refuses_what_tf1_refuses():
    with pytest.raises(ValueError, match=r"learning_rate_power must be <= 0, got 0.5"):
        sg.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match=r"l1_regularization_strength must be >= 0"):
        sg.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0)


# -- sparse updates: an embedding's IndexedSlices gradient ----------------------------------------
TABLE0 = RNG.normal(size=(8, 3))
LOOKUPS = [[1, 4, 1], [4, 6], [0, 1, 1, 7]]  # rows that vary from step to step, some repeated


def _sparse_by_hand(rule):
    """The table after training sum(rows**2) with `rule`, which gets each step's deduplicated
    rows (summed gradients) and updates only them, as TF1's sparse kernels do."""
    table, state = TABLE0.copy(), {}
    for ids in LOOKUPS:
        grad = np.zeros_like(table)
        np.add.at(grad, ids, 2 * table[ids])
        rows = sorted(set(ids))
        rule(table, rows, grad[rows], state)
    return table


def _momentum_rows(lr, mu, nesterov=False):
    def rule(table, rows, g, state):
        a = state.setdefault("a", np.zeros_like(table))
        a[rows] = mu * a[rows] + g
        table[rows] -= lr * g + lr * mu * a[rows] if nesterov else lr * a[rows]
    return rule


def _adagrad_rows(lr, initial):
    def rule(table, rows, g, state):
        acc = state.setdefault("acc", np.full_like(table, initial))
        acc[rows] += g * g
        table[rows] -= lr * g / np.sqrt(acc[rows])
    return rule


def _train_lookups(make):
    g = sg.Graph()
    with g.as_default():
        table = sg.Variable(TABLE0, name="table")
        ids = sg.placeholder(sg.int32, [None])
        loss = sg.reduce_sum(sg.square(sg.nn.embedding_lookup(table, ids)))
        (grad, _), = make().compute_gradients(loss)
        assert isinstance(grad, sg.IndexedSlices)
        step = make().apply_gradients([(grad, table)])
        sess = sg.Session()
        sess.run(sg.global_variables_initializer())
        for lookup in LOOKUPS:
            sess.run(step, {ids: lookup})
        return sess.run(table)


@pytest.mark.parametrize("make, rule", [
    (lambda: sg.train.GradientDescentOptimizer(0.1),
     lambda table, rows, g, state: table.__setitem__(rows, table[rows] - 0.1 * g)),
    (lambda: sg.train.MomentumOptimizer(0.1, 0.9), _momentum_rows(0.1, 0.9)),
    (lambda: sg.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
     _momentum_rows(0.1, 0.9, nesterov=True)),
    (lambda: sg.train.AdagradOptimizer(0.2, 0.5), _adagrad_rows(0.2, 0.5)),
], ids=["sgd", "momentum", "nesterov", "adagrad"])
def test_sparse_updates_touch_only_the_looked_up_rows_as_tf1s_kernels(make, rule):
    np.testing.assert_allclose(_train_lookups(make), _sparse_by_hand(rule), rtol=1e-12)


def test_adam_applies_an_indexed_slices_gradient_as_its_dense_tensor():
    got = _train_lookups(lambda: sg.train.AdamOptimizer(0.1))
    table, m, v = TABLE0.copy(), np.zeros_like(TABLE0), np.zeros_like(TABLE0)
    for t, ids in enumerate(LOOKUPS, 1):
        grad = np.zeros_like(table)
        np.add.at(grad, ids, 2 * table[ids])
        m, v = 0.9 * m + 0.1 * grad, 0.999 * v + 0.001 * grad * grad
        table -= 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(got, table, rtol=1e-10)
