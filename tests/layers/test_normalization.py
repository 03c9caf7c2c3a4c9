"""sg.layers.batch_normalization (layers/normalization.py) against NumPy written by hand:
batch statistics while training, moving averages otherwise, the updates in UPDATE_OPS."""

import numpy as np
import pytest

import staticgrad as sg
from tests.conftest import numeric_grad

RNG = np.random.default_rng(8)
X = RNG.normal(2.0, 3.0, size=(6, 2, 3))


def _by_hand(v, mean, var, gamma=1.0, beta=0.0, eps=1e-3):
    return (v - mean) / np.sqrt(var + eps) * gamma + beta


def test_training_normalizes_by_the_batch_and_moves_the_averages(g):
    x = sg.placeholder(sg.float64, [None, 2, 3], name="x")
    y = sg.layers.batch_normalization(x, axis=1, momentum=0.9, training=True)
    names = sorted(v.op.name for v in sg.global_variables())
    assert names == ["batch_normalization/beta", "batch_normalization/gamma",
                     "batch_normalization/moving_mean", "batch_normalization/moving_variance"]
    assert [v.op.name for v in sg.trainable_variables()] == ["batch_normalization/gamma",
                                                             "batch_normalization/beta"]
    updates = sg.get_collection(sg.GraphKeys.UPDATE_OPS)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    got, *_ = sess.run([y, *updates], {x: X})
    mean, var = X.mean(axis=(0, 2), keepdims=True), X.var(axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(got, _by_hand(X, mean, var), rtol=1e-10)
    moving = sess.run([v for v in sg.global_variables() if "moving" in v.op.name])
    np.testing.assert_allclose(moving[0], 0.1 * mean.ravel(), rtol=1e-10)
    np.testing.assert_allclose(moving[1], 0.9 + 0.1 * var.ravel(), rtol=1e-10)


@pytest.mark.parametrize("make_training", [
    lambda: sg.placeholder(sg.bool, [], name="training"),
    # TF1's usual switch; its scalar default was once folded into the update's rate (0)
    lambda: sg.placeholder_with_default(False, [], name="training")],
    ids=["placeholder", "placeholder_with_default"])
def test_inference_uses_the_moving_averages_and_a_tensor_chooses(g, make_training):
    x = sg.placeholder(sg.float64, [None, 3], name="x")
    training = make_training()
    y = sg.layers.batch_normalization(x, training=training, momentum=0.5)
    frozen = sg.layers.batch_normalization(x, training=False, name="frozen")
    updates = sg.get_collection(sg.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2  # (the frozen one has none)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    v = X[:, 0, :]
    np.testing.assert_allclose(sess.run(frozen, {x: v}), _by_hand(v, 0.0, 1.0), rtol=1e-10)
    np.testing.assert_allclose(sess.run(y, {x: v, training: False}), _by_hand(v, 0.0, 1.0),
                               rtol=1e-10)
    sess.run(updates, {x: v, training: False})  # (not training: the averages stay)
    np.testing.assert_allclose(sess.run(y, {x: v, training: False}), _by_hand(v, 0.0, 1.0))
    got, *_ = sess.run([y, *updates], {x: v, training: True})
    np.testing.assert_allclose(got, _by_hand(v, v.mean(0), v.var(0)), rtol=1e-10)
    mean = sess.run([w for w in sg.global_variables() if w.op.name ==
                     "batch_normalization/moving_mean"][0])
    np.testing.assert_allclose(mean, 0.5 * v.mean(0), rtol=1e-10)


def test_its_gradient_through_the_batch_statistics(g):
    x = sg.placeholder(sg.float64, [6, 3], name="x")
    w = RNG.normal(size=(6, 3))
    y = sg.layers.batch_normalization(x, training=True, epsilon=0.1)
    (dx,) = sg.gradients(sg.reduce_sum(y * w), [x])
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    v = X[:, 0, :]
    want = numeric_grad(lambda u: float((_by_hand(u, u.mean(0), u.var(0), eps=0.1) * w).sum()),
                        v)
    np.testing.assert_allclose(sess.run(dx, {x: v}), want, rtol=1e-6, atol=1e-9)


def test_what_it_refuses(g):
    with pytest.raises(ValueError, match=r"axis 1 .* must be known"):
        sg.layers.batch_normalization(sg.placeholder(sg.float32, [2, None]))
    with pytest.raises(ValueError, match=r"renorm, virtual_batch_size and adjustment"):
        sg.layers.batch_normalization(sg.placeholder(sg.float32, [2, 3]), renorm=True)


@pytest.mark.parametrize("fused", [None, False])
def test_four_d_inputs_track_the_unbiased_variance_as_tf1s_fused_kernel(g, fused):
    x = sg.placeholder(sg.float64, [2, 3, 3, 2], name="x")
    y = sg.layers.batch_normalization(x, momentum=0.0, training=True, fused=fused)
    updates = sg.get_collection(sg.GraphKeys.UPDATE_OPS)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    v = RNG.normal(size=(2, 3, 3, 2))
    got, *_ = sess.run([y, *updates], {x: v})
    var = v.var(axis=(0, 1, 2))
    np.testing.assert_allclose(got, _by_hand(v, v.mean(axis=(0, 1, 2)), var), rtol=1e-10)
    moving = sess.run([w for w in sg.global_variables() if "moving_variance" in w.op.name][0])
    want = var * 18 / 17 if fused is None else var
    np.testing.assert_allclose(moving, want, rtol=1e-10)
