"""TF1's layer classes (layers/classes.py): variables made by the first call and shared by
the later ones, the same results as the functional layers."""

import numpy as np
import pytest

import staticgrad as sg

RNG = np.random.default_rng(9)


def test_a_dense_layer_shares_its_variables_across_calls(g):
    x = sg.placeholder(sg.float32, [None, 3], name="x")
    layer = sg.layers.Dense(4, activation=sg.nn.relu)
    with pytest.raises(AttributeError, match=r"has no kernel \(yet"):
        layer.kernel  # noqa: B018
    a, b = layer(x), layer.apply(x * 2.0)
    other = sg.layers.Dense(2, name="head", use_bias=False)
    c = other(a)
    assert layer.name == "dense" and other.name == "head"
    assert [v.op.name for v in layer.variables] == ["dense/kernel", "dense/bias"]
    assert layer.kernel.shape.as_list() == [3, 4] and layer.trainable_weights == layer.weights
    assert [v.op.name for v in other.variables] == ["head/kernel"]
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    xv = RNG.normal(size=(5, 3)).astype(np.float32)
    k, bias, k2 = sess.run([layer.kernel, layer.bias, other.kernel])
    got = sess.run([a, b, c], {x: xv})
    np.testing.assert_allclose(got[0], np.maximum(xv @ k + bias, 0), rtol=1e-5)
    np.testing.assert_allclose(got[1], np.maximum(2 * xv @ k + bias, 0), rtol=1e-5)
    np.testing.assert_allclose(got[2], got[0] @ k2, rtol=1e-5)


def test_a_layer_called_under_another_scope_keeps_its_own(g):
    x = sg.placeholder(sg.float32, [None, 3], name="x")
    with sg.variable_scope("outer"):
        layer = sg.layers.Dense(4)
        first = layer(x)
    with sg.variable_scope("other"):
        again = layer(x)
    assert layer.name == "outer/dense" and len(sg.trainable_variables()) == 2
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    xv = RNG.normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_array_equal(*sess.run([first, again], {x: xv}))
    with pytest.raises(ValueError, match=r"kernel_constraint and bias_constraint are not "
                                         r"offered"):
        sg.layers.Dense(2, kernel_constraint=lambda w: w)


def test_a_small_cnn_of_layer_objects(g):
    x = sg.placeholder(sg.float32, [None, 8, 8, 1], name="x")
    training = sg.placeholder_with_default(False, [], name="training")
    conv = sg.layers.Conv2D(4, 3, padding="same", activation=sg.nn.relu)
    layers = [conv, sg.layers.MaxPooling2D(2, 2), sg.layers.BatchNormalization(),
              sg.layers.Flatten(), sg.layers.Dropout(0.5), sg.layers.Dense(3)]
    h = x
    for layer in layers:
        h = layer(h, training=training) if isinstance(
            layer, sg.layers.Dropout | sg.layers.BatchNormalization) else layer(h)
    assert h.shape.as_list() == [None, 3]
    assert conv.kernel.shape.as_list() == [3, 3, 1, 4]
    bn = layers[2]
    assert bn.moving_mean in bn.non_trainable_variables and bn.gamma in bn.trainable_variables
    assert repr(layers[1]) == "<sg.layers.MaxPooling2D 'max_pooling2d'>"
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    xv = RNG.normal(size=(2, 8, 8, 1)).astype(np.float32)
    first, again = sess.run(h, {x: xv}), sess.run(h, {x: xv})
    np.testing.assert_array_equal(first, again)  # (not training: no dropout, moving stats)
    assert not np.array_equal(sess.run(h, {x: xv, training: True}), first)
