"""The `expand` pass and the ClipByValue op it writes log1p with: the steps give the values of
the helper they replace, bit for bit (special values included), and share what they say."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import runtime as rt
from staticgrad.ops.creation import apply1
from tests.passes.test_negations import _run, _same, _values


@pytest.fixture(autouse=True)
def fresh_graph():
    with sg.Graph().as_default() as g:
        yield g


# -- expand ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_log1p_steps_give_rt_log1p_bit_for_bit(dtype):
    """(Without vector math: with it, a float32 log1p is runtime_fast's, tests/backends/numpy/
    test_fast.py.)"""
    x = sg.placeholder(sg.as_dtype(dtype), [None], name="x")
    y = sg.log1p(x)
    xv = _values(dtype)
    with sg.Session(options=sg.CompileOptions(vector_math=False)) as sess, \
            np.errstate(all="ignore"):
        src, got = sess.source(y, {x: xv}), sess.run(y, {x: xv})
    assert "rt.clip(" in src and "rt.log1p" not in src.split('"""')[-1]
    with np.errstate(all="ignore"):
        want = rt.log1p(xv)
    _same(got, want)
    with np.errstate(all="ignore"):
        ref = np.log1p(xv.astype(np.float64))
    finite = np.isfinite(ref) & (np.abs(ref) < np.finfo(dtype).max)
    np.testing.assert_allclose(got[finite], ref[finite].astype(dtype), rtol=np.finfo(dtype).eps * 2)
    assert np.array_equal(np.isnan(got), np.isnan(ref)) and got[6] == -np.inf  # log1p(-1)


def test_log1p_and_its_gradient_compute_one_plus_x_once():
    x = sg.placeholder(sg.float32, [None], name="x")
    v = x * x
    y = sg.reduce_sum(sg.log1p(v))
    (dx,) = sg.gradients(y, [x])
    xv = _values(np.float32)
    src, got = _run([y, dx], {x: xv})
    _, want = _run([y, dx], {x: xv}, off={"expand"})
    assert src.count("np.add(f32_1_0, ") == 1, src  # (1.0 as a 0-d float32 constant)
    _same(got[1], want[1])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)  # the same sums, in blocks


def test_small_log1p_stays_one_call():
    x = sg.placeholder(sg.float32, [None], name="x")
    src, got = _run(sg.log1p(x), {x: np.array([0.5, -1.0, 1e-8], np.float32)})
    assert "rt.log1p(x)" in src and "clip" not in src
    with np.errstate(divide="ignore"):
        _same(got, rt.log1p(np.array([0.5, -1.0, 1e-8], np.float32)))


@pytest.mark.parametrize("n", [10, 70001])  # one rt.log1p call, or the expanded steps
def test_log1p_warns_and_raises_as_np_log1p_at_any_size(n):
    """Found by review: rt.log1p hid log's warnings, the expanded steps did not, so the same
    graph raised under np.errstate(all="raise") or not depending on the array's size."""
    x = sg.placeholder(sg.float32, [n], name="x")
    y = sg.log1p(x, name="the_log1p")
    for bad, what in ((-1.0, "divide by zero"), (-2.0, "invalid value")):
        v = np.zeros(n, np.float32)
        v[-1] = bad
        with sg.Session() as sess:
            with np.errstate(all="raise"), pytest.raises(sg.errors.InvalidArgumentError,
                                                         match=f"the_log1p.*{what}"):
                sess.run(y, {x: v})
            with pytest.warns(RuntimeWarning, match=what):
                got = sess.run(y, {x: v})
        assert got[-1] == -np.inf if bad == -1 else np.isnan(got[-1])


# -- ClipByValue ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_clip_by_value_op_is_np_clip(dtype):
    t = np.array([[-5, -1, 0], [2, 3, 9]], dtype)
    for lo, hi in ((np.array(-1, dtype), np.array(3, dtype)),
                   (np.array([[0, 0, 0], [1, 1, 1]], dtype), np.array(2, dtype))):
        y = apply1("ClipByValue", [sg.constant(t), sg.constant(lo), sg.constant(hi)])
        with sg.Session() as sess:
            got = sess.run(y)
        _same(got, np.clip(t, lo, hi))


def test_clip_by_value_op_names_what_is_wrong():
    t = sg.placeholder(sg.float32, [2, 3], name="t")
    with pytest.raises(ValueError, match=r"clip_value_max has shape \(2,\)"):
        apply1("ClipByValue", [t, sg.constant(0.0), sg.constant([1.0, 2.0])])
    with pytest.raises(TypeError, match="input 1 has dtype float64"):
        apply1("ClipByValue", [t, sg.constant(0.0, sg.float64), sg.constant(1.0)])
    with pytest.raises(ValueError, match="takes 3 inputs"):
        apply1("ClipByValue", [t, sg.constant(0.0)])
