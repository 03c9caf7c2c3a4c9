"""Softmax, log-softmax, bias_add, l2_loss and the cross-entropies (ops/nn_ops.py)
against NumPy written by hand, and stable for huge logits. See helpers.py for what each
case checks and the feeding modes."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from tests.ops.helpers import (
    F32,
    F64,
    FLOATS,
    I32,
    I64,
    MODES,
    NUMERIC,
    RNG,
    _dt_name,
    _shape_name,
    check_result,
    data,
    run_graph,
)


def _np_softmax(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True, initial=-np.inf)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def _np_log_softmax(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True, initial=-np.inf)
    with np.errstate(divide="ignore"):  # log(0) only along an empty axis
        return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


SOFTMAX = [((5,), None), ((3, 4), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((0, 3), None),
           ((1, 1), None), ((3, 0), None), ((0,), None)]


@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, axis", SOFTMAX,
                         ids=[f"{_shape_name(s)}-axis{a}" for s, a in SOFTMAX])
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_softmax(which, shape, axis, dtype, mode):
    x = data(shape, dtype, -5, 5)
    fn = getattr(sg.nn, which)
    t, res = run_graph(lambda p: fn(p) if axis is None else fn(p, axis=axis), [x], mode)
    ref = _np_softmax if which == "softmax" else _np_log_softmax
    check_result(t, res, ref(x, -1 if axis is None else axis).astype(dtype), out_dtype=dtype,
                 mode=mode)


@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
def test_softmax_is_stable_for_huge_logits(which):
    x = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -1000.0]], F32)
    t, res = run_graph(getattr(sg.nn, which), [x])
    assert np.all(np.isfinite(res))
    ref = _np_softmax if which == "softmax" else _np_log_softmax
    check_result(t, res, ref(x, -1).astype(F32), out_dtype=F32)


@pytest.mark.parametrize("vshape", [(3,), (2, 3), (2, 4, 3), (0, 3)], ids=_shape_name)
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_bias_add(vshape, dtype, mode):
    v, b = data(vshape, dtype), data((3,), dtype)
    t, res = run_graph(sg.nn.bias_add, [v, b], mode)
    check_result(t, res, (v + b).astype(dtype), out_dtype=dtype, mode=mode)


def test_bias_add_mismatch():
    g = sg.Graph()
    with g.as_default():
        with pytest.raises(ValueError):
            sg.nn.bias_add(sg.placeholder(sg.float32, [2, 3]), sg.placeholder(sg.float32, [4]))


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (0, 2)], ids=_shape_name)
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_l2_loss(shape, dtype, mode):
    x = data(shape, dtype)
    t, res = run_graph(sg.nn.l2_loss, [x], mode)
    expected = (x.astype(np.float64) ** 2).sum() / 2
    check_result(t, res, np.asarray(expected, dtype), out_dtype=dtype, mode=mode)


def _np_xent(labels, logits, axis=-1):
    return -(labels.astype(np.float64) * _np_log_softmax(logits, axis)).sum(axis=axis)


XENT_SHAPES = [(4, 3), (5,), (2, 3, 4), (0, 3), (1, 1), (3, 0)]


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("shape", XENT_SHAPES, ids=_shape_name)
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_softmax_cross_entropy(version, shape, dtype, mode):
    logits = data(shape, dtype, -4, 4)
    labels = _np_softmax(data(shape, dtype, -2, 2), -1).astype(dtype)
    fn = sg.nn.softmax_cross_entropy_with_logits if version == "v1" else \
        sg.nn.softmax_cross_entropy_with_logits_v2
    t, res = run_graph(lambda la, lo: fn(labels=la, logits=lo), [labels, logits], mode)
    check_result(t, res, _np_xent(labels, logits).astype(dtype), out_dtype=dtype, mode=mode)


def test_softmax_cross_entropy_axis():
    logits = data((3, 4), F64)
    labels = _np_softmax(data((3, 4), F64), 0)
    t, res = run_graph(
        lambda la, lo: sg.nn.softmax_cross_entropy_with_logits_v2(labels=la, logits=lo, axis=0),
        [labels, logits])
    check_result(t, res, _np_xent(labels, logits, axis=0), out_dtype=F64)


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
def test_softmax_cross_entropy_stable_for_huge_logits(version, dtype):
    logits = np.array([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 1000.0],
                       [-1000.0, -1000.0, -1000.0]], dtype)
    labels = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.0, 1.0, 0.0]], dtype)
    fn = sg.nn.softmax_cross_entropy_with_logits if version == "v1" else \
        sg.nn.softmax_cross_entropy_with_logits_v2
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        t, res = run_graph(lambda la, lo: fn(labels=la, logits=lo), [labels, logits])
    assert np.all(np.isfinite(res))
    check_result(t, res, np.array([0.0, np.log(2.0), np.log(3.0)], dtype), out_dtype=dtype,
                 atol=1e-5)


@pytest.mark.parametrize("lshape", [(4,), (2, 3), (), (0,)], ids=_shape_name)
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("itype", [I32, I64], ids=_dt_name)
@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_sparse_softmax_cross_entropy(lshape, dtype, itype, mode):
    classes = 5
    logits = data(lshape + (classes,), dtype, -4, 4)
    labels = RNG.integers(0, classes, size=lshape).astype(itype)
    g = sg.Graph()
    with g.as_default():
        pl = sg.placeholder(sg.as_dtype(itype),
                            lshape if mode == "static" else [None] * len(lshape))
        po = sg.placeholder(sg.as_dtype(dtype), lshape + (classes,) if mode == "static"
                            else [None] * len(lshape) + [classes])
        t = sg.nn.sparse_softmax_cross_entropy_with_logits(labels=pl, logits=po)
    res = sg.Session(graph=g).run(t, {pl: labels, po: logits})
    lsm = _np_log_softmax(logits, -1)
    expected = np.empty(lshape, np.float64)
    for pos in np.ndindex(*lshape):
        expected[pos] = -lsm[pos + (int(labels[pos]),)]
    check_result(t, res, expected.astype(dtype), out_dtype=dtype, mode=mode)


def test_sparse_softmax_cross_entropy_stable_for_huge_logits():
    logits = np.array([[1000.0, -1000.0], [-1000.0, 1000.0], [1000.0, 1000.0]], F32)
    labels = np.array([0, 0, 1], I32)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        t, res = run_graph(
            lambda la, lo: sg.nn.sparse_softmax_cross_entropy_with_logits(labels=la, logits=lo),
            [labels, logits])
    assert np.all(np.isfinite(res))
    check_result(t, res, np.array([0.0, 2000.0, np.log(2.0)], F32), out_dtype=F32)


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (0, 2)], ids=_shape_name)
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_sigmoid_cross_entropy(shape, dtype, mode):
    logits = data(shape, dtype, -6, 6)
    labels = data(shape, dtype, 0, 1)
    t, res = run_graph(
        lambda la, lo: sg.nn.sigmoid_cross_entropy_with_logits(labels=la, logits=lo),
        [labels, logits], mode)
    x, z = logits.astype(np.float64), labels.astype(np.float64)
    p = 1 / (1 + np.exp(-x))
    expected = -(z * np.log(p) + (1 - z) * np.log(1 - p))
    check_result(t, res, expected.astype(dtype), out_dtype=dtype, mode=mode, rtol=1e-4,
                 atol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
def test_sigmoid_cross_entropy_stable_for_huge_logits(dtype):
    logits = np.array([1000.0, -1000.0, 1000.0, -1000.0], dtype)
    labels = np.array([1.0, 0.0, 0.0, 1.0], dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        t, res = run_graph(
            lambda la, lo: sg.nn.sigmoid_cross_entropy_with_logits(labels=la, logits=lo),
            [labels, logits])
    assert np.all(np.isfinite(res))
    check_result(t, res, np.array([0.0, 0.0, 1000.0, 1000.0], dtype), out_dtype=dtype)
