"""variable_scope / get_variable: naming, the reuse rules, defaults, and their errors (TF1)."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg


@pytest.fixture(autouse=True)
def fresh_graph():
    with sg.Graph().as_default() as g:
        yield g


def test_names_follow_the_scopes():
    with sg.variable_scope("outer"):
        with sg.variable_scope("inner"):
            v = sg.get_variable("v", [2, 3])
            assert sg.get_variable_scope().name == "outer/inner"
    assert v.name == "outer/inner/v:0"
    assert v.shape.as_list() == [2, 3] and v.dtype is sg.float32
    assert v in sg.trainable_variables() and v in sg.global_variables()


def test_reuse_true_returns_the_same_variable():
    with sg.variable_scope("layer"):
        w = sg.get_variable("w", [3])
    with sg.variable_scope("layer", reuse=True):
        assert sg.get_variable("w") is w
        assert sg.get_variable("w", [3]) is w
    with sg.variable_scope("layer") as scope:
        scope.reuse_variables()
        assert sg.get_variable("w") is w


def test_creating_a_duplicate_without_reuse_names_the_variable_and_its_line():
    with sg.variable_scope("layer"):
        sg.get_variable("w", [3])
    with sg.variable_scope("layer"):
        with pytest.raises(ValueError, match="Variable layer/w already exists") as e:
            sg.get_variable("w", [3])
    assert "test_variable_scope.py" in str(e.value)


def test_reuse_of_a_missing_variable_is_an_error():
    with sg.variable_scope("layer", reuse=True):
        with pytest.raises(ValueError, match="Variable layer/nope does not exist"):
            sg.get_variable("nope", [1])


def test_sharing_with_another_shape_or_dtype_is_an_error():
    with sg.variable_scope("s"):
        sg.get_variable("w", [3])
    with sg.variable_scope("s", reuse=True):
        with pytest.raises(ValueError, match=r"specified shape \(4,\).*found shape \(3,\)"):
            sg.get_variable("w", [4])
        with pytest.raises(ValueError, match="dtype float64"):
            sg.get_variable("w", [3], dtype=sg.float64)


def test_auto_reuse_creates_once_then_shares():
    def layer():
        with sg.variable_scope("shared", reuse=sg.AUTO_REUSE):
            return sg.get_variable("w", [2])
    assert layer() is layer()
    assert len(sg.global_variables()) == 1


def test_reuse_is_inherited_by_inner_scopes():
    with sg.variable_scope("a"):
        with sg.variable_scope("b"):
            v = sg.get_variable("v", [1])
    with sg.variable_scope("a", reuse=True):
        with sg.variable_scope("b", reuse=False):  # cannot switch reuse off inside, as in TF1
            assert sg.get_variable("v") is v


def test_reentering_a_scope_object_and_fresh_op_names():
    with sg.variable_scope("net") as net:
        w = sg.get_variable("w", [2])
        y1 = w * 2.0
    with sg.variable_scope(net, reuse=True):
        assert sg.get_variable("w") is w
    with sg.variable_scope("net", reuse=True):
        y2 = sg.get_variable("w") * 2.0
    assert y1.op.name == "net/Mul"
    assert y2.op.name == "net_1/Mul"  # same variables, new name scope for the ops


def test_default_names_are_made_unique():
    with sg.variable_scope(None, default_name="dense"):
        a = sg.get_variable("kernel", [1])
    with sg.variable_scope(None, default_name="dense"):
        b = sg.get_variable("kernel", [1])
    assert (a.op.name, b.op.name) == ("dense/kernel", "dense_1/kernel")


def test_initializers_come_from_the_argument_then_the_scope_then_glorot():
    with sg.variable_scope("s", initializer=sg.constant_initializer(7.0)):
        from_scope = sg.get_variable("a", [2])
        given = sg.get_variable("b", [2], initializer=sg.ones_initializer())
    default = sg.get_variable("c", [40, 60])
    counter = sg.get_variable("n", [2], dtype=sg.int32)
    value = sg.get_variable("d", initializer=np.array([1.0, 2.0], np.float32))
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(from_scope), [7, 7])
        np.testing.assert_array_equal(sess.run(given), [1, 1])
        c = sess.run(default)
        limit = np.sqrt(6 / (40 + 60))
        assert np.abs(c).max() <= limit and np.abs(c).max() > 0.9 * limit
        np.testing.assert_array_equal(sess.run(counter), [0, 0])
        np.testing.assert_array_equal(sess.run(value), [1, 2])


def test_shape_errors_name_the_variable():
    with pytest.raises(ValueError, match="get_variable w: the shape must be fully known"):
        sg.get_variable("w", [None, 3])
    with pytest.raises(ValueError, match="leave out the shape"):
        sg.get_variable("v", [2], initializer=np.zeros(2, np.float32))


def test_variable_scope_needs_a_name_and_valid_reuse():
    with pytest.raises(TypeError, match="name_or_scope or a default_name"):
        with sg.variable_scope(None):
            pass
    with pytest.raises(ValueError, match="reuse must be"):
        with sg.variable_scope("x", reuse="yes"):
            pass


def test_regularizer_losses_are_collected():
    reg = lambda w: 0.5 * sg.reduce_sum(sg.square(w))
    w = sg.get_variable("w", initializer=np.array([1.0, 3.0], np.float32), regularizer=reg)
    (loss,) = sg.get_collection(sg.GraphKeys.REGULARIZATION_LOSSES)
    with sg.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(loss) == 5.0


def test_op_names_do_not_collide_with_a_get_variable_name():
    w = sg.get_variable("w", [1])
    other = sg.identity(sg.constant([1.0]), name="w")
    assert w.op.name == "w" and other.op.name == "w_1"


def test_unnamed_layers_are_numbered_dense_dense_1_dense_2():
    x = sg.placeholder(sg.float32, [None, 8])
    h = sg.layers.dense(x, 8)
    h = sg.layers.dense(h, 8)
    sg.layers.dense(h, 2)
    assert [v.op.name for v in sg.trainable_variables()][::2] == [
        "dense/kernel", "dense_1/kernel", "dense_2/kernel"]


def test_auto_reuse_towers_share_layer_by_layer():
    def model(x):
        with sg.variable_scope("model", reuse=sg.AUTO_REUSE):
            h = sg.layers.dense(x, 4, activation=sg.nn.relu)
            return sg.layers.dense(h, 3)
    x = sg.placeholder(sg.float32, [None, 5])
    train_out, test_out = model(x), model(x * 2.0)
    assert [v.op.name for v in sg.trainable_variables()] == [
        "model/dense/kernel", "model/dense/bias", "model/dense_1/kernel", "model/dense_1/bias"]
    assert test_out.shape.as_list() == [None, 3]
    xv = np.ones((1, 5), np.float32)
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        tested = sess.run(test_out, {x: xv})
        trained = sess.run(train_out, {x: 2 * xv})
    np.testing.assert_array_equal(tested, trained)  # the same weights, layer by layer


def test_discriminator_called_twice_with_reuse():
    def disc(x, reuse):
        with sg.variable_scope("disc", reuse=reuse):
            h = sg.layers.dense(x, 8, activation=sg.nn.relu)
            return sg.layers.dense(h, 1)
    x = sg.placeholder(sg.float32, [None, 4])
    disc(x, False)
    disc(x, True)
    assert len(sg.trainable_variables()) == 4


def test_unnamed_layer_with_reuse_uses_the_plain_scope():
    x = sg.placeholder(sg.float32, [None, 3])
    a = sg.layers.dense(x, 2)
    b = sg.layers.dense(x, 2, reuse=True)
    assert len(sg.trainable_variables()) == 2
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        va, vb = sess.run([a, b], {x: [[1.0, 2.0, 3.0]]})
    np.testing.assert_array_equal(va, vb)


def test_reentering_a_scope_object_restores_default_name_counts():
    with sg.variable_scope("outer") as outer:
        sg.layers.dense(sg.placeholder(sg.float32, [None, 2]), 2)
    with sg.variable_scope(outer, reuse=True):
        sg.layers.dense(sg.placeholder(sg.float32, [None, 2]), 2)  # dense again, reused
    assert len(sg.trainable_variables()) == 2


def test_get_variable_after_a_variable_of_that_name_gets_a_unique_op_name():
    plain = sg.Variable(1.0, name="w")
    got = sg.get_variable("w", [2])
    assert plain.op.name == "w" and got.op.name == "w_1"
    with sg.variable_scope(sg.get_variable_scope(), reuse=True):
        assert sg.get_variable("w") is got


def test_initializer_given_as_a_class():
    b = sg.get_variable("b", [3], initializer=sg.zeros_initializer)
    with sg.Session() as sess:
        sess.run(b.initializer)
        np.testing.assert_array_equal(sess.run(b), np.zeros(3))


def test_variable_scope_values_switch_to_their_graph():
    other = sg.Graph()
    with other.as_default():
        t = sg.constant(1.0)
    with sg.variable_scope("s", values=[t]):
        v = sg.get_variable("v", [1])
    assert v.graph is other and v.op.name == "s/v"


def test_reuse_false_inside_auto_reuse_still_reuses():
    with sg.variable_scope("s", reuse=sg.AUTO_REUSE):
        with sg.variable_scope("inner", reuse=False):
            u = sg.get_variable("u", [1])
    with sg.variable_scope("s", reuse=sg.AUTO_REUSE):
        with sg.variable_scope("inner", reuse=False):
            assert sg.get_variable("u") is u
    assert sg.get_variable_scope().reuse is False
