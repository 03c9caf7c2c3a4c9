"""Initializers: values, the variance-scaling formulas, dtypes, and run-to-run reproducibility."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import staticgrad as sg

ROOT = Path(__file__).resolve().parents[1]


def _value(init, shape, dtype=sg.float32, seed=0):
    with sg.Graph().as_default():
        sg.set_random_seed(seed)
        t = init(shape, dtype=dtype)
        with sg.Session() as sess:
            return sess.run(t)


def test_constant_initializers():
    np.testing.assert_array_equal(_value(sg.zeros_initializer(), [2, 3]), np.zeros((2, 3)))
    np.testing.assert_array_equal(_value(sg.ones_initializer(), [4], sg.float64), np.ones(4))
    np.testing.assert_array_equal(_value(sg.constant_initializer(2.5), [2]), [2.5, 2.5])
    # a list fills in order, its last value repeated (TF1)
    np.testing.assert_array_equal(_value(sg.constant_initializer([1, 2]), [2, 2]),
                                  [[1, 2], [2, 2]])
    assert _value(sg.zeros_initializer(), [2], sg.int32).dtype == np.int32


def test_constant_initializer_errors():
    with pytest.raises(ValueError, match="3 values do not fit"):
        _value(sg.constant_initializer([1, 2, 3]), [2])
    with pytest.raises(TypeError, match="not the variable's shape"):
        _value(sg.constant_initializer([1, 2], verify_shape=True), [1, 2])


def test_random_initializer_statistics():
    n = (200, 300)
    v = _value(sg.random_normal_initializer(1.0, 2.0), n)
    assert abs(v.mean() - 1.0) < 0.05 and abs(v.std() - 2.0) < 0.05
    v = _value(sg.truncated_normal_initializer(0.0, 0.5), n)
    assert np.abs(v).max() <= 1.0 and abs(v.mean()) < 0.02
    v = _value(sg.random_uniform_initializer(-3.0, 1.0), n)
    assert v.min() >= -3.0 and v.max() < 1.0 and abs(v.mean() + 1.0) < 0.05
    assert v.dtype == np.float32


@pytest.mark.parametrize("init,shape,var", [
    (sg.glorot_uniform_initializer(), [300, 500], 2 / 800),
    (sg.glorot_normal_initializer(), [300, 500], 2 / 800),
    (sg.variance_scaling_initializer(2.0, "fan_in", "normal"), [400, 100], 2 / 400),
    (sg.variance_scaling_initializer(1.0, "fan_out", "uniform"), [100, 400], 1 / 400),
    (sg.variance_scaling_initializer(1.0, "fan_in", "untruncated_normal"), [500, 300], 1 / 500),
    # a conv kernel [h, w, in, out]: fan_in = h * w * in
    (sg.variance_scaling_initializer(2.0, "fan_in", "truncated_normal"), [5, 5, 16, 600],
     2 / 400),
])
def test_variance_scaling_gives_the_published_variance(init, shape, var):
    v = _value(init, shape, sg.float64)
    assert v.shape == tuple(shape)
    assert abs(v.var() / var - 1) < 0.05
    assert abs(v.mean()) < 0.05 * np.sqrt(var) * 10


def test_glorot_uniform_bounds():
    v = _value(sg.glorot_uniform_initializer(), [100, 200])
    limit = np.sqrt(6 / 300)
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.99 * limit


def test_variance_scaling_rejects_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        sg.variance_scaling_initializer(mode="fan_sideways")
    with pytest.raises(ValueError, match="distribution"):
        sg.variance_scaling_initializer(distribution="cauchy")
    with pytest.raises(ValueError, match="positive"):
        sg.variance_scaling_initializer(scale=0.0)
    with pytest.raises(TypeError, match="floating-point"):
        _value(sg.glorot_uniform_initializer(), [2, 2], sg.int32)


def test_seeds_make_values_repeat_and_differ():
    a = _value(sg.glorot_uniform_initializer(), [3, 3], seed=1)
    b = _value(sg.glorot_uniform_initializer(), [3, 3], seed=1)
    c = _value(sg.glorot_uniform_initializer(), [3, 3], seed=2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    d = _value(sg.random_normal_initializer(seed=5), [4], seed=None)
    e = _value(sg.random_normal_initializer(seed=5), [4], seed=None)
    np.testing.assert_array_equal(d, e)


PROGRAM = """
import staticgrad as sg
sg.set_random_seed(42)
w = sg.get_variable("w", [3, 2])
v = sg.get_variable("v", [2], initializer=sg.random_normal_initializer())
d = sg.nn.dropout(sg.ones([8]), rate=0.5)
with sg.Session() as s:
    s.run(sg.global_variables_initializer())
    print(s.run(w).tolist(), s.run(v).tolist(), s.run(d).tolist(), s.run(d).tolist())
"""


def test_set_random_seed_makes_a_whole_program_reproducible_run_to_run():
    outs = [subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                           cwd=ROOT, check=True).stdout for _ in range(2)]
    assert outs[0] == outs[1] and outs[0].strip()
