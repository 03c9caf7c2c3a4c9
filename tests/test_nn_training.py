"""The training-side nn functions, losses and layers against NumPy written by hand, and their
gradients against central differences (they are compositions of ops, checked end to end)."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from tests.ops.test_gradients import _numeric_grad

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def fresh_graph():
    with sg.Graph().as_default() as g:
        yield g


def run(fetches, feed=None):
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        return sess.run(fetches, feed)


def check_grad(fn, *values, eps=1e-6, rtol=1e-5, atol=1e-7):
    """fn's gradient of sum(fn(xs) * w) against central differences, in float64."""
    xs = [sg.placeholder(sg.float64, v.shape) for v in values]
    y = fn(*xs)
    w = RNG.uniform(0.5, 1.5, y.shape.as_list())
    loss = sg.reduce_sum(y * w)
    grads = sg.gradients(loss, xs)
    with sg.Session() as sess:
        f = sess.make_callable(loss, xs)
        got = sess.make_callable(grads, xs)(*values)
        for i in range(len(values)):
            want = _numeric_grad(lambda vs: f(*vs), values, i, eps=eps)
            np.testing.assert_allclose(got[i], want, rtol=rtol, atol=atol)


# -- dropout ---------------------------------------------------------------------------------
def test_dropout_keeps_or_zeroes_and_scales_with_a_fresh_mask_each_run():
    sg.set_random_seed(0)
    x = sg.placeholder(sg.float32, [None, 1000])
    y = sg.nn.dropout(x, keep_prob=0.75)
    ones = np.ones((20, 1000), np.float32)
    with sg.Session() as sess:
        a, b = sess.run(y, {x: ones}), sess.run(y, {x: ones})
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((a != 0).mean() - 0.75) < 0.02
    assert not np.array_equal(a, b)
    assert a.dtype == np.float32


def test_dropout_rate_and_keep_prob_agree_and_keep_prob_one_is_identity():
    x = sg.constant(np.ones((50, 50)))
    assert sg.nn.dropout(x, keep_prob=1.0) is x
    assert sg.nn.dropout(x, rate=0.0) is x
    sg.set_random_seed(3)
    a = sg.nn.dropout(x, rate=0.4, seed=7)
    sg.set_random_seed(3)
    b = sg.nn.dropout(x, keep_prob=0.6, seed=7)
    va, vb = run([a, b])
    np.testing.assert_allclose(va, vb)


def test_dropout_with_a_fed_keep_prob():
    x = sg.constant(RNG.normal(size=(20, 30)).astype(np.float32))
    keep = sg.placeholder(sg.float32, [])
    y = sg.nn.dropout(x, keep_prob=keep)
    with sg.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {keep: 1.0}), sess.run(x))
        half = sess.run(y, {keep: 0.5})
    kept = half != 0
    np.testing.assert_allclose(half[kept], 2 * run(x)[kept], rtol=1e-6)


def test_dropout_gradient_is_the_mask_times_the_scale():
    x = sg.placeholder(sg.float64, [200])
    y = sg.nn.dropout(x, rate=0.5, seed=1)
    (g,) = sg.gradients(sg.reduce_sum(y), [x])
    with sg.Session() as sess:
        yv, gv = sess.run([y, g], {x: np.full(200, 3.0)})
    np.testing.assert_allclose(gv, yv / 3.0)


def test_dropout_noise_shape_and_errors():
    x = sg.constant(np.ones((6, 40)))
    y = run(sg.nn.dropout(x, rate=0.5, noise_shape=[1, 40]))
    assert (y == y[0]).all()  # one mask row, broadcast over the batch
    with pytest.raises(ValueError, match="exactly one of keep_prob and rate"):
        sg.nn.dropout(x, keep_prob=0.5, rate=0.5)
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
        sg.nn.dropout(x, rate=1.0)
    with pytest.raises(ValueError, match="floating point"):
        sg.nn.dropout(sg.constant([1, 2]), rate=0.5)


# -- moments, batch normalization ------------------------------------------------------------
def test_moments_match_numpy():
    v = RNG.normal(size=(4, 5, 3))
    mean, var = sg.nn.moments(sg.constant(v), axes=[0, 1])
    m, s = run([mean, var])
    np.testing.assert_allclose(m, v.mean(axis=(0, 1)))
    np.testing.assert_allclose(s, v.var(axis=(0, 1)))
    mean, var = sg.nn.moments(sg.constant(v), axes=[2], keep_dims=True)
    assert mean.shape.as_list() == [4, 5, 1]
    np.testing.assert_allclose(run(var), v.var(axis=2, keepdims=True))


def test_batch_normalization_matches_numpy():
    x, mu, var = RNG.normal(size=(6, 3)), RNG.normal(size=3), RNG.uniform(0.5, 2, 3)
    beta, gamma = RNG.normal(size=3), RNG.normal(size=3)
    y = sg.nn.batch_normalization(x, mu, var, beta, gamma, 1e-3)
    np.testing.assert_allclose(run(y), (x - mu) / np.sqrt(var + 1e-3) * gamma + beta)
    y = sg.nn.batch_normalization(x, mu, var, None, None, 1e-3)
    np.testing.assert_allclose(run(y), (x - mu) / np.sqrt(var + 1e-3))


def test_moments_and_batch_normalization_gradients():
    def bn(x, gamma, beta):
        mean, var = sg.nn.moments(x, axes=[0])
        return sg.nn.batch_normalization(x, mean, var, beta, gamma, 1e-3)
    check_grad(bn, RNG.normal(size=(5, 3)), RNG.uniform(0.5, 2, 3), RNG.normal(size=3))
    check_grad(lambda x: sg.add_n(list(sg.nn.moments(x, axes=[1]))), RNG.normal(size=(3, 4)))


# -- clipping --------------------------------------------------------------------------------
def test_clip_by_norm_matches_numpy():
    v = np.array([[3.0, 4.0], [0.3, 0.4]])
    np.testing.assert_allclose(run(sg.clip_by_norm(v, 1.0)), v / np.linalg.norm(v))
    np.testing.assert_allclose(run(sg.clip_by_norm(v, 100.0)), v)
    rows = run(sg.clip_by_norm(v, 1.0, axes=[1]))
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.3, 0.4]])
    np.testing.assert_array_equal(run(sg.clip_by_norm(np.zeros(3), 1.0)), np.zeros(3))


def test_clip_by_norm_gradient_including_at_zero():
    check_grad(lambda x: sg.clip_by_norm(x, 1.0), RNG.normal(size=(2, 3)) * 3)
    x = sg.placeholder(sg.float64, [3])
    (g,) = sg.gradients(sg.reduce_sum(sg.clip_by_norm(x, 1.0)), [x])
    with sg.Session() as sess:
        assert np.isfinite(sess.run(g, {x: np.zeros(3)})).all()


def test_clip_by_global_norm_matches_numpy():
    a, b = RNG.normal(size=(3, 2)) * 5, RNG.normal(size=4) * 5
    norm = np.sqrt((a ** 2).sum() + (b ** 2).sum())
    (ca, none, cb), n = sg.clip_by_global_norm([a, None, b], 2.0)
    assert none is None
    got_a, got_b, got_n = run([ca, cb, n])
    np.testing.assert_allclose(got_n, norm)
    np.testing.assert_allclose(got_a, a * 2.0 / norm)
    np.testing.assert_allclose(got_b, b * 2.0 / norm)
    (small,), _ = sg.clip_by_global_norm([a / 1000], 2.0)
    np.testing.assert_allclose(run(small), a / 1000)
    (bad,), _ = sg.clip_by_global_norm([np.array([np.inf, 1.0])], 2.0)
    assert np.isnan(run(bad)).all()
    with pytest.raises(TypeError, match="list of tensors"):
        sg.clip_by_global_norm(sg.constant([1.0]), 1.0)


def test_clip_by_global_norm_gradient():
    check_grad(lambda a, b: sg.clip_by_global_norm([a, b], 1.0)[0][0],
               RNG.normal(size=(2, 2)), RNG.normal(size=3))


# -- losses ----------------------------------------------------------------------------------
def test_mean_squared_error_and_weights():
    y, p = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    assert np.isclose(run(sg.losses.mean_squared_error(y, p)), ((p - y) ** 2).mean())
    w = np.array([[1.0], [0.0], [2.0], [1.0]])
    got = run(sg.losses.mean_squared_error(y, p, weights=w))
    assert np.isclose(got, (((p - y) ** 2) * w).sum() / 9)  # 3 rows of non-zero weight
    got = run(sg.losses.mean_squared_error(y, p, reduction=sg.losses.Reduction.SUM))
    assert np.isclose(got, ((p - y) ** 2).sum())
    got = run(sg.losses.mean_squared_error(y, p, weights=w, reduction=sg.losses.Reduction.MEAN))
    assert np.isclose(got, (((p - y) ** 2) * w).sum() / (w.sum() * 3))
    none = run(sg.losses.mean_squared_error(y, p, reduction=sg.losses.Reduction.NONE))
    np.testing.assert_allclose(none, (p - y) ** 2)
    zero = run(sg.losses.mean_squared_error(y, p, weights=0.0))
    assert zero == 0.0
    assert len(sg.losses.get_losses()) == 6


def test_softmax_cross_entropy_loss_with_label_smoothing():
    logits = RNG.normal(size=(5, 4))
    labels = np.eye(4)[[0, 3, 1, 1, 2]]
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    got = run(sg.losses.softmax_cross_entropy(labels, logits))
    assert np.isclose(got, -(labels * logp).sum(axis=1).mean())
    smooth = labels * 0.9 + 0.1 / 4
    got = run(sg.losses.softmax_cross_entropy(labels, logits, label_smoothing=0.1))
    assert np.isclose(got, -(smooth * logp).sum(axis=1).mean())
    got = run(sg.losses.sparse_softmax_cross_entropy([0, 3, 1, 1, 2], logits))
    assert np.isclose(got, -(labels * logp).sum(axis=1).mean())


def test_other_losses_match_numpy():
    y = RNG.uniform(0, 1, (3, 4)).round()
    p = RNG.uniform(0.05, 0.95, (3, 4))
    assert np.isclose(run(sg.losses.absolute_difference(y, p)), np.abs(p - y).mean())
    want = (-y * np.log(p + 1e-7) - (1 - y) * np.log(1 - p + 1e-7)).mean()
    assert np.isclose(run(sg.losses.log_loss(y, p)), want)
    z = RNG.normal(size=(3, 4)) * 3
    want = (np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))).mean()
    assert np.isclose(run(sg.losses.sigmoid_cross_entropy(y, z)), want)
    e = np.abs(z - y)
    want = np.where(e <= 1.0, 0.5 * e ** 2, e - 0.5).mean()
    assert np.isclose(run(sg.losses.huber_loss(y, z)), want)


def test_loss_gradients_and_errors():
    y = RNG.normal(size=(3, 2))
    check_grad(lambda p: sg.losses.mean_squared_error(y, p, weights=[[1.0], [0.0], [2.0]]),
               RNG.normal(size=(3, 2)))
    labels = np.eye(3)[[0, 2]]
    check_grad(lambda z: sg.losses.softmax_cross_entropy(labels, z, label_smoothing=0.2),
               RNG.normal(size=(2, 3)))
    with pytest.raises(ValueError, match="not compatible"):
        sg.losses.mean_squared_error(np.zeros((2, 3)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="labels must not be None"):
        sg.losses.mean_squared_error(None, np.zeros(2))
    with pytest.raises(ValueError, match="invalid Reduction"):
        sg.losses.mean_squared_error(y, y, reduction="avg")


def test_total_loss_adds_regularization():
    w = sg.get_variable("w", initializer=np.array([1.0, 2.0]),
                        regularizer=lambda v: 0.1 * sg.reduce_sum(sg.square(v)))
    sg.losses.mean_squared_error([0.0, 0.0], w)
    total = sg.losses.get_total_loss()
    assert np.isclose(run(total), 2.5 + 0.5)
    assert np.isclose(run(sg.losses.get_regularization_loss()), 0.5)


# -- layers ----------------------------------------------------------------------------------
def test_dense_matches_numpy_and_names_its_variables():
    x = sg.placeholder(sg.float32, [None, 3], name="x")
    y = sg.layers.dense(x, 4, activation=sg.nn.relu)
    z = sg.layers.dense(y, 2, use_bias=False, name="out")
    names = [v.op.name for v in sg.trainable_variables()]
    assert names == ["dense/kernel", "dense/bias", "out/kernel"]
    assert y.shape.as_list() == [None, 4] and y.op.type == "Relu"
    xv = RNG.normal(size=(5, 3)).astype(np.float32)
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        k, b, k2 = sess.run(sg.trainable_variables())
        np.testing.assert_array_equal(b, np.zeros(4))
        assert np.abs(k).max() <= np.sqrt(6 / 7)
        got = sess.run(z, {x: xv})
    np.testing.assert_allclose(got, np.maximum(xv @ k + b, 0) @ k2, rtol=1e-5)


def test_dense_reuse_and_errors():
    x = sg.placeholder(sg.float32, [None, 3])
    a = sg.layers.dense(x, 2, name="shared")
    b = sg.layers.dense(x, 2, name="shared", reuse=True)
    assert len(sg.trainable_variables()) == 2
    np.testing.assert_array_equal(*run([a, b], {x: np.ones((1, 3))}))
    with pytest.raises(ValueError, match="Variable shared/kernel already exists"):
        sg.layers.dense(x, 2, name="shared")
    with pytest.raises(ValueError, match="last dimension of the inputs must be known"):
        sg.layers.dense(sg.placeholder(sg.float32, [None, None]), 2)
    with pytest.raises(ValueError, match="units must be a positive integer"):
        sg.layers.dense(x, 0)


def test_dense_on_rank_3_inputs():
    x = RNG.normal(size=(2, 5, 3))
    y = sg.layers.dense(sg.constant(x), 4, kernel_initializer=sg.ones_initializer(),
                        bias_initializer=sg.constant_initializer(0.5))
    np.testing.assert_allclose(run(y), x @ np.ones((3, 4)) + 0.5)


def test_conv_pool_flatten_layers():
    x = sg.placeholder(sg.float32, [None, 8, 8, 2])
    c = sg.layers.conv2d(x, 3, 3, padding="same", activation=sg.nn.relu)
    p = sg.layers.max_pooling2d(c, 2, 2)
    f = sg.layers.flatten(p)
    assert c.shape.as_list() == [None, 8, 8, 3] and f.shape.as_list() == [None, 48]
    assert [v.op.name for v in sg.trainable_variables()] == ["conv2d/kernel", "conv2d/bias"]
    xv = RNG.normal(size=(2, 8, 8, 2)).astype(np.float32)
    fv, cv = run([f, c], {x: xv})
    pooled = cv.reshape(2, 4, 2, 4, 2, 3).max(axis=(2, 4))
    np.testing.assert_allclose(fv, pooled.reshape(2, -1))
    a = sg.layers.average_pooling2d(c, 2, 2)
    assert a.shape.as_list() == [None, 4, 4, 3]


def test_dropout_layer_follows_training_flag():
    x = sg.constant(np.ones((10, 100), np.float32))
    assert (run(sg.layers.dropout(x, 0.5, training=False)) == 1).all()
    training = sg.placeholder(sg.bool, [])
    y = sg.layers.dropout(x, 0.5, training=training)
    with sg.Session() as sess:
        assert (sess.run(y, {training: False}) == 1).all()
        on = sess.run(y, {training: True})
    assert set(np.unique(on)) == {0.0, 2.0}


def test_loss_weights_must_broadcast_as_in_tf1():
    p = sg.constant([[1.0], [2.0], [3.0], [4.0]])
    with pytest.raises(ValueError, match=r"weights of shape \(4,\).*losses of shape \(4, 1\)"):
        sg.losses.mean_squared_error(np.zeros((4, 1)), p, weights=[1.0, 0.0, 0.0, 0.0])
    ok = sg.losses.mean_squared_error(np.zeros((4, 1)), p, weights=[[1.0], [0.0], [0.0], [0.0]])
    assert run(ok) == 1.0


def test_sparse_loss_takes_labels_of_shape_batch_by_one():
    logits = RNG.normal(size=(3, 5))
    a = sg.losses.sparse_softmax_cross_entropy([[1], [4], [0]], logits)
    b = sg.losses.sparse_softmax_cross_entropy([1, 4, 0], logits)
    np.testing.assert_allclose(*run([a, b]))
    with pytest.raises(ValueError, match="must not be None"):
        sg.losses.sparse_softmax_cross_entropy(None, logits)


def test_moments_of_float16_answer_in_float16():
    mean, var = sg.nn.moments(sg.constant(np.arange(6, dtype=np.float16)), axes=[0])
    assert mean.dtype is sg.float16 and var.dtype is sg.float16
    np.testing.assert_allclose(run([mean, var]), [2.5, np.var(np.arange(6.0))], rtol=1e-3)


def test_dense_takes_numpy_integer_units_and_initializes_glorot():
    x = sg.placeholder(sg.float32, [None, 30])
    sg.layers.dense(x, np.int64(40))
    kernel = run(sg.trainable_variables()[0])
    limit = np.sqrt(6 / 70)
    assert kernel.shape == (30, 40) and 0.9 * limit < np.abs(kernel).max() <= limit
