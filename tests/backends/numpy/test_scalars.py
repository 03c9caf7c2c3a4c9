"""The scalar fast path: chains of elementwise nodes on one-element values run on NumPy
scalars, with the values and dtypes of the array path."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def _elementwise_cases():
    """Every elementwise op of the registry on one-element inputs: (type, fn, arrays)."""
    from staticgrad.ops.table import REGISTRY
    cases = []
    for op_type, opdef in sorted(REGISTRY.items()):
        if not opdef.elementwise or opdef.stateful or opdef.numpy is None:
            continue
        for dtype, value in ((np.float64, 0.7), (np.int32, 3), (np.bool_, True)):
            if op_type == "Cast":
                attrs = {"dtype": sg.float32}
            elif op_type == "LeakyRelu":
                attrs = {"alpha": 0.2}
            else:
                attrs = {}
            n_in = 3 if op_type in ("Select", "ClipByValue") else (2 if op_type in _BINARY else 1)
            arrays = [np.full((1,), value, dtype) for _ in range(n_in)]
            if op_type == "Select":
                arrays[0] = np.array([True])
            try:
                with sg.Graph().as_default():
                    xs = [sg.constant(a) for a in arrays]
                    sg.get_default_graph().create_op(op_type, xs, attrs)
            except (TypeError, ValueError):
                continue
            cases.append((op_type, attrs, arrays))
            break
    return cases


_BINARY = {"Add", "Sub", "Mul", "RealDiv", "FloorDiv", "FloorMod", "Pow", "Maximum", "Minimum",
           "Greater", "Less", "GreaterEqual", "LessEqual", "Equal", "NotEqual", "LogicalAnd",
           "LogicalOr", "ReluGrad", "AddN"}


@pytest.mark.parametrize("op_type,attrs,arrays", _elementwise_cases(),
                         ids=[c[0] for c in _elementwise_cases()])
def test_scalar_path_gives_the_same_values_and_dtypes(op_type, attrs, arrays):
    results = []
    for options in (sg.CompileOptions(), sg.CompileOptions(disable={"scalars"})):
        with sg.Graph().as_default() as g:
            xs = [sg.placeholder(sg.as_dtype(a.dtype), a.shape) for a in arrays]
            y = g.create_op(op_type, xs, dict(attrs)).outputs[0]
            z = sg.logical_not(y) if y.dtype.is_bool else y + y  # a chain of two nodes
            with sg.Session(options=options) as sess:
                src = sess.source(z, dict(zip(xs, arrays)))
                results.append(sess.run(z, dict(zip(xs, arrays))))
        if not options.disable and op_type not in ("Identity", "StopGradient"):
            assert "[0]" in src  # those two are simplified away
    assert results[0].dtype == results[1].dtype and results[0].shape == results[1].shape == (1,)
    np.testing.assert_array_equal(results[0], results[1])


def test_scalar_path_makes_w1_cheap_and_exact():
    a = sg.placeholder(sg.float32, [1], name="a")
    ws = [sg.Variable(np.array([v], np.float32), name=f"w{i}") for i, v in enumerate((2, 5, 9, 7))]
    w1, w2, w3, w4 = ws
    loss = 10.0 - (w3 * (w1 * a) + w4 * (w2 * a))
    fetches = [loss, *sg.gradients(loss, ws)]
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        src = sess.source(fetches, {a: [4.0]})
        got = sess.run(fetches, {a: [4.0]})
    assert "a_s = a[0]" in src and "np.multiply" not in src
    assert [v.tolist() for v in got] == [[-202.0], [-36.0], [-28.0], [-8.0], [-20.0]]
    assert all(v.dtype == np.float32 and v.shape == (1,) for v in got)
