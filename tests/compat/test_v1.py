"""sg.compat.v1 is staticgrad's API under TF2's name for TF1 (`import ... compat.v1 as tf`),
and sg.random TF1's tf.random."""

from __future__ import annotations

import numpy as np

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


def test_sg_random_is_tf1s_tf_random(g):
    a = sg.random.normal([3], seed=4)
    b = sg.random_normal([3], seed=4)
    u = sg.random.uniform([2], minval=1.0, maxval=2.0, seed=1)
    t = sg.random.truncated_normal([50], seed=2)
    with sg.Session() as sess:
        va, vb, vu, vt = sess.run([a, b, u, t])
    np.testing.assert_array_equal(va, vb)  # the same op and seed: the same stream
    assert ((1 <= vu) & (vu < 2)).all() and (np.abs(vt) <= 2).all()
