"""sg.train.ExponentialMovingAverage (train/moving_averages.py) against the averages written
by hand in NumPy, and restoring them through a Saver."""

import numpy as np
import pytest

import staticgrad as sg


def test_shadows_follow_their_variables(g):
    w = sg.Variable([1.0, 2.0], name="w")
    b = sg.Variable(0.5, name="b")
    step = sg.Variable(0, name="step", trainable=False)
    ema = sg.train.ExponentialMovingAverage(0.9, num_updates=step)
    move = [sg.assign_add(w, [1.0, -1.0]), sg.assign_add(b, 1.0), sg.assign_add(step, 1)]
    with sg.control_dependencies(move):
        average = ema.apply([w, b])
    shadow = ema.average(w)
    assert shadow.op.name == "w/ExponentialMovingAverage" and not shadow.trainable
    assert ema.average_name(b) == "b/ExponentialMovingAverage"
    assert shadow in sg.get_collection(sg.GraphKeys.MOVING_AVERAGE_VARIABLES)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    want_w, want_b, wv, bv = np.array([1.0, 2.0]), 0.5, np.array([1.0, 2.0]), 0.5
    for n in range(1, 5):
        sess.run(average)
        wv, bv = wv + [1.0, -1.0], bv + 1.0
        decay = min(0.9, (1 + n) / (10 + n))
        want_w = want_w - (want_w - wv) * (1 - decay)
        want_b = want_b - (want_b - bv) * (1 - decay)
        np.testing.assert_allclose(sess.run(shadow), want_w, rtol=1e-6)
        np.testing.assert_allclose(sess.run(ema.average(b)), want_b, rtol=1e-6)


def test_variables_to_restore_reads_the_averages(g, tmp_path):
    w = sg.Variable([1.0, 2.0], name="w")
    other = sg.Variable(3.0, name="other", trainable=False)
    ema = sg.train.ExponentialMovingAverage(0.5)
    update = ema.apply([w])
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    sess.run(sg.assign(w, [5.0, 6.0]))
    sess.run(update)  # the shadow: [3, 4]
    path = sg.train.Saver().save(sess, str(tmp_path / "model"))
    restore = ema.variables_to_restore()
    assert restore == {"w/ExponentialMovingAverage": w, "other": other}
    sg.train.Saver(restore).restore(sess, path)
    np.testing.assert_allclose(sess.run(w), [3.0, 4.0])
    with pytest.raises(TypeError, match=r"is not a float variable"):
        ema.apply([sg.Variable(1, name="count")])
