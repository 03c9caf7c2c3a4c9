"""sg.compat.v1 is staticgrad's API under TF2's name for TF1 (`import ... compat.v1 as tf`),
and sg.random TF1's tf.random."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.compat.v1 as tf


def test_a_tf1_program_runs_through_compat_v1(g):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable([[1.0], [-1.0]], name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(loss, {x: [[1.0, 0.0]]})
        sess.run(step, {x: [[1.0, 0.0]]})
        after = sess.run(loss, {x: [[1.0, 0.0]]})
    assert before == 1.0 and after < before
    assert tf.nn.relu is sg.nn.relu and tf.placeholder is sg.placeholder
    from staticgrad.compat.v1 import Session  # from-imports find the names too
    assert Session is sg.Session and sorted(dir(tf)) == sorted(sg.__all__)


def test_compat_v1_forwards_public_names_only():
    """No private name, and no __path__: compat.v1 is no package, so `staticgrad.compat.v1.
    session` cannot load a second copy of the library's modules."""
    import importlib
    with pytest.raises(AttributeError):
        tf._namespace  # noqa: B018
    with pytest.raises(AttributeError):
        tf.__path__  # noqa: B018
    with pytest.raises(AttributeError, match=r"^staticgrad.compat.v1 has no 'not_an_api' "
                                             r"\(TF1's tf.compat.v1.not_an_api\)$"):
        tf.not_an_api  # noqa: B018
    copy_of_session = ".".join(["staticgrad", "compat", "v1", "session"])  # (not an API use)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(copy_of_session)


def test_sg_random_is_tf1s_tf_random(g):
    a = sg.random.normal([3], seed=4)
    b = sg.random_normal([3], seed=4)
    u = sg.random.uniform([2], minval=1.0, maxval=2.0, seed=1)
    t = sg.random.truncated_normal([50], seed=2)
    with sg.Session() as sess:
        va, vb, vu, vt = sess.run([a, b, u, t])
    np.testing.assert_array_equal(va, vb)  # the same op and seed: the same stream
    assert ((1 <= vu) & (vu < 2)).all() and (np.abs(vt) <= 2).all()


def test_a_tf1_program_ported_to_tf2s_compat_v1_runs_its_switches_first(g):
    """`tf.disable_v2_behavior()` and `tf.disable_eager_execution()`, which such programs call
    before building anything, change nothing: the graph API always builds graphs."""
    tf.disable_v2_behavior()
    tf.disable_eager_execution()
    assert tf.executing_eagerly() is False
    x = tf.placeholder(tf.float32, [2], name="x")
    y = x * 2.0
    assert isinstance(y, sg.Tensor)  # a graph tensor, computed only in a session
    with tf.Session() as sess:
        assert sess.run(y, {x: [1.0, 2.0]}).tolist() == [2.0, 4.0]
