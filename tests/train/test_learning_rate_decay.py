"""TF1's learning-rate schedules (staticgrad/train/learning_rate_decay.py) against their
formulas written by hand, at steps fed through the global step, and driving an optimizer."""

import math

import numpy as np
import pytest

import staticgrad as sg

STEPS = [0, 1, 7, 10, 25, 100, 250]


def _rates(make, steps=STEPS):
    step = sg.train.get_or_create_global_step()
    rate = make(step)
    sess = sg.Session()
    sess.run(step.initializer)
    out = []
    for s in steps:
        step.load(s, sess)
        out.append(sess.run(rate))
    return rate, np.array(out)


SCHEDULES = [
    ("exponential", lambda g: sg.train.exponential_decay(0.1, g, 10, 0.5),
     lambda s: 0.1 * 0.5 ** (s / 10)),
    ("exponential staircase", lambda g: sg.train.exponential_decay(0.1, g, 10, 0.5, True),
     lambda s: 0.1 * 0.5 ** (s // 10)),
    ("natural_exp", lambda g: sg.train.natural_exp_decay(0.1, g, 10, 0.3),
     lambda s: 0.1 * math.exp(-0.3 * s / 10)),
    ("inverse_time staircase", lambda g: sg.train.inverse_time_decay(0.1, g, 10, 0.5, True),
     lambda s: 0.1 / (1 + 0.5 * (s // 10))),
    ("polynomial", lambda g: sg.train.polynomial_decay(0.1, g, 100, 0.01, power=2.0),
     lambda s: (0.1 - 0.01) * (1 - min(s, 100) / 100) ** 2 + 0.01),
    ("polynomial cycle", lambda g: sg.train.polynomial_decay(0.1, g, 10, 0.01, cycle=True),
     lambda s: (0.1 - 0.01) * (1 - s / (10 * max(math.ceil(s / 10), 1))) + 0.01),
    ("cosine", lambda g: sg.train.cosine_decay(0.1, g, 100, alpha=0.1),
     lambda s: 0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(s, 100) / 100)) + 0.1)),
    ("piecewise", lambda g: sg.train.piecewise_constant(g, [10, 100], [1.0, 0.5, 0.1]),
     lambda s: 1.0 if s <= 10 else 0.5 if s <= 100 else 0.1),
]


@pytest.mark.parametrize("make, formula", [s[1:] for s in SCHEDULES],
                         ids=[s[0] for s in SCHEDULES])
def test_a_schedule_follows_its_formula_step_by_step(g, make, formula):
    rate, got = _rates(make)
    assert rate.dtype is sg.float32
    np.testing.assert_allclose(got, [formula(s) for s in STEPS], rtol=1e-6)


def test_a_decayed_rate_drives_an_optimizer_through_the_global_step(g):
    w = sg.Variable(1.0, name="w")
    step = sg.train.get_or_create_global_step()
    rate = sg.train.exponential_decay(0.5, step, 1, 0.5, staircase=True)
    train = sg.train.GradientDescentOptimizer(rate).minimize(w * 2.0, global_step=step)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    for _ in range(3):
        sess.run(train)
    assert sess.run(step) == 3
    np.testing.assert_allclose(sess.run(w), 1.0 - 2.0 * (0.5 + 0.25 + 0.125), rtol=1e-6)


def test_what_a_schedule_refuses(g):
    with pytest.raises(ValueError, match=r"exponential_decay at \S*test_learning_rate_decay"
                                         r".py:\d+: global_step is required"):
        sg.train.exponential_decay(0.1, None, 10, 0.5)
    with pytest.raises(ValueError, match=r"values must have one more item than boundaries"):
        sg.train.piecewise_constant(sg.train.get_or_create_global_step(), [1, 2], [1.0, 2.0])
    with pytest.raises(TypeError, match=r"learning_rate must be a float, got int32"):
        sg.train.cosine_decay(sg.constant(1), sg.train.get_or_create_global_step(), 10)
