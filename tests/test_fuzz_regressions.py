"""Regression tests for the failures the differential fuzzing (tests/test_fuzz.py) found, one
per failure, each named after what it protects. A test marked xfail(strict=True) is a bug not
fixed yet: the fix makes it pass, and then its mark must go."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import compiler


@pytest.mark.xfail(strict=True, reason=(
    "bug: with memory.MIN_BYTES at most 8 (so one-element buffers are planned), "
    "render() raises KeyError in free(): the memory plan frees values that the scalars pass "
    "holds as NumPy scalars (they are in `scal`, never in `expr`). Repro: "
    "y = negative(negative(x)) for a float32 placeholder x of shape [], fetch reduce_sum(y), "
    "simplify off"))
def test_memory_plan_never_frees_a_value_held_as_a_scalar(g, monkeypatch):
    from staticgrad.passes import memory
    monkeypatch.setattr(memory, "MIN_BYTES", 0)
    x = sg.placeholder(sg.float32, [])
    total = sg.reduce_sum(sg.negative(sg.negative(x)))
    with sg.Session(options=compiler.CompileOptions(disable={"simplify"}, verify=True)) as sess:
        assert sess.run(total, {x: 1.5}) == np.float32(1.5)


@pytest.mark.xfail(strict=True, reason=(
    "bug: runtime.softplus's large-array path (taken from SOFTPLUS_MIN_SIZE elements up) fails "
    "on a 0-d input: np.abs(x) of a 0-d array is a NumPy scalar, so np.negative(v, out=v) "
    "raises TypeError 'return arrays must be of ArrayType'. Latent with the default threshold "
    "(1024); reached by softplus of a held scalar once the threshold is lowered"))
def test_softplus_large_path_takes_a_zero_dimensional_input(monkeypatch):
    from staticgrad import runtime
    monkeypatch.setattr(runtime, "SOFTPLUS_MIN_SIZE", 0)
    for x in (np.float32(1.0), np.array(1.0, np.float32), np.float64(-2.0)):
        np.testing.assert_allclose(runtime.softplus(x), np.logaddexp(0, x), rtol=1e-6)


@pytest.mark.xfail(strict=True, reason=(
    "bug: a float32 rank-0 relu gradient comes back as float64. The seed of "
    "d reduce_sum(relu(x) * 0.75) / dx is a 0-d constant; the NumPy backend inlines it as the "
    "weak literal 0.75 (_weak_ok: another operand, relu(x), is float32), but ReluGrad's "
    "expression '{0} * ({1} > 0)' multiplies it by a bool, so NEP 50 makes it float64. "
    "Repro: x = placeholder(float32, []), g = gradients(reduce_sum(relu(x) * 0.75), [x])"))
def test_rank0_relu_gradient_keeps_float32(g):
    x = sg.placeholder(sg.float32, [])
    grad, = sg.gradients(sg.reduce_sum(sg.nn.relu(x) * 0.75), [x])
    with sg.Session() as sess:
        out = sess.run(grad, {x: np.float32(1.25)})
    assert np.asarray(out).dtype == np.float32 and out == np.float32(0.75)
