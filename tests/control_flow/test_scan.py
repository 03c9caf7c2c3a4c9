"""sg.scan, map_fn, foldl and foldr (staticgrad/control_flow/scan.py): one Scan op whose
body is a closed sub-graph run once per row. Values against NumPy loops written by hand,
gradients (first and second order) against finite differences (the registry's rows are in
tests/ops/test_gradients.py), and the errors that name the user's line."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import staticgrad as sg
from tests.conftest import numeric_grad

F = sg.float64
RNG = np.random.default_rng(7)
XS = RNG.normal(size=(5, 3))


def test_scan_stacks_every_accumulator_as_tf1_does():
    xs = sg.placeholder(F, [5, 3], name="xs")
    plain = sg.scan(lambda a, x: a * 0.5 + x, xs)
    started = sg.scan(lambda a, x: a * 0.5 + x, xs, initializer=sg.ones([3], F))
    backwards = sg.scan(lambda a, x: a * 0.5 + x, xs, reverse=True)
    got = sg.Session().run([plain, started, backwards], {xs: XS})

    def by_hand(rows, acc=None):
        out = []
        for r in rows:
            acc = r if acc is None else acc * 0.5 + r
            out.append(acc)
        return np.array(out)

    np.testing.assert_allclose(got[0], by_hand(XS))
    np.testing.assert_allclose(got[1], by_hand(XS, np.ones(3)))
    np.testing.assert_allclose(got[2], by_hand(XS[::-1])[::-1])


def test_folds_give_the_last_accumulator_from_either_end():
    xs = sg.placeholder(F, [5, 3], name="xs")
    left = sg.foldl(lambda a, x: a * x + 1.0, xs)
    right = sg.foldr(lambda a, x: a * x + 1.0, xs, initializer=sg.zeros([3], F))
    got_left, got_right = sg.Session().run([left, right], {xs: XS})
    acc = XS[0]
    for r in XS[1:]:
        acc = acc * r + 1.0
    np.testing.assert_allclose(got_left, acc)
    acc = np.zeros(3)
    for r in XS[::-1]:
        acc = acc * r + 1.0
    np.testing.assert_allclose(got_right, acc)


def test_map_fn_maps_structures_and_may_change_dtype():
    xs = sg.placeholder(F, [5, 3], name="xs")
    out = sg.map_fn(lambda r: (sg.reduce_sum(r["a"] * r["b"]), sg.argmax(r["a"])),
                    {"a": xs, "b": xs + 1.0}, dtype=(F, sg.int64))
    dots, args = sg.Session().run(out, {xs: XS})
    np.testing.assert_allclose(dots, (XS * (XS + 1)).sum(axis=1))
    np.testing.assert_array_equal(args, XS.argmax(axis=1))
    assert args.dtype == np.int64
    with pytest.raises(TypeError, match=r"map_fn at \S*test_scan.py:\d+: fn returns a "
                                         r"tensor of \['float64'\], but dtype says \['int32'\]"):
        sg.map_fn(lambda r: r * 2.0, xs, dtype=sg.int32)
    with pytest.raises(TypeError, match=r"but dtype says \['float64', 'float64'\]"):
        sg.map_fn(lambda r: r * 2.0, xs, dtype=(F, F))


def test_an_rnn_by_scan_sums_its_weights_gradient_and_has_a_hessian():
    w = sg.Variable(RNG.normal(size=(3, 3)) * 0.5, name="W")
    xs = sg.placeholder(F, [5, 3], name="xs")
    hs = sg.scan(lambda h, x: sg.tanh(sg.reshape(sg.matmul(w, sg.reshape(h, [3, 1])), [3]) + x),
                 xs, initializer=sg.zeros([3], F))
    loss = sg.reduce_sum(hs * hs)
    (dw,) = sg.gradients(loss, [w])
    v = RNG.normal(size=(3, 3))
    (hv,) = sg.gradients(sg.reduce_sum(dw * v), [w])
    sess = sg.Session()
    sess.run(w.initializer)
    w0 = sess.run(w)

    def by_hand(wv):
        h, total = np.zeros(3), 0.0
        for x in XS:
            h = np.tanh(wv @ h + x)
            total += (h * h).sum()
        return total

    np.testing.assert_allclose(sess.run(dw, {xs: XS}), numeric_grad(by_hand, w0), rtol=1e-6)
    grad_at = sess.make_callable(dw, [w, xs])  # (a variable is fed like any tensor)
    want = numeric_grad(lambda wv: float((grad_at(wv, XS) * v).sum()), w0)
    np.testing.assert_allclose(sess.run(hv, {xs: XS}), want, rtol=1e-5, atol=1e-8)


def test_no_rows_give_an_empty_stack_and_the_initializer():
    xs = sg.placeholder(F, [None, 3], name="xs")
    stacked = sg.scan(lambda a, x: a + x, xs, initializer=sg.ones([3], F))
    folded = sg.foldl(lambda a, x: a + x, xs, initializer=sg.ones([3], F))
    (dxs,) = sg.gradients(sg.reduce_sum(stacked), [xs])
    got = sg.Session().run([stacked, folded, dxs], {xs: np.zeros((0, 3))})
    assert got[0].shape == (0, 3) and got[2].shape == (0, 3)
    np.testing.assert_array_equal(got[1], np.ones(3))


def test_the_generated_code_is_a_python_for_over_the_rows(g):
    xs = sg.placeholder(F, [5, 3], name="xs")
    ys = sg.scan(lambda a, x: a * x, xs, initializer=sg.ones([3], F), name="prod")
    source = sg.Session().source(ys, {xs: XS})
    assert "    for step in range(5):\n        prod_Scan, prod_Scan_1[step] = " \
           "prod_Scan_body(prod_Scan, xs[step])\n" in source
    assert "np.empty((5, 3), dtype=np.float64)" in source
    assert source.count("np.empty(") == 1  # each step's carried values: only for a gradient
    (dxs,) = sg.gradients(sg.reduce_sum(ys), [xs])
    source = sg.Session().source(dxs, {xs: XS})
    assert "prod_Scan_2[step] = prod_Scan\n" in source
    assert "in range(4, -1, -1):" in source  # the gradient runs over the rows backwards


@pytest.mark.parametrize("build, error, message", [
    (lambda xs: sg.scan("fn", xs), TypeError,
     r"scan at \S*test_scan.py:\d+: fn must be callable"),
    (lambda xs: sg.foldl(lambda a, x: a + x, []), ValueError,
     r"foldl at \S*test_scan.py:\d+: elems is empty"),
    (lambda xs: sg.scan(lambda a, x: a + x[0], (xs, xs[:3]), initializer=xs[0]), ValueError,
     r"scan at \S*test_scan.py:\d+: its elems have different numbers of rows: \[3, 5\]"),
    (lambda xs: sg.scan(lambda a, x: sg.concat([a, x], 0), xs), ValueError,
     r"scan at \S*test_scan.py:\d+: carried value 0 has shape \(3,\) on entry but \(6,\) "
     r"after one step"),
    (lambda xs: sg.scan(lambda a, x: (a, x), xs), ValueError,
     r"fn must return the structure of the accumulator, a tensor; it returned \(a tensor, "
     r"a tensor\)"),
    (lambda xs: sg.foldl(lambda a, x: sg.cast(a, sg.float32), xs), TypeError,
     r"carried value 0 enters as float64 but fn returns float32"),
    (lambda xs: sg.map_fn(lambda r: r + sg.random_normal([3], dtype=F), xs), ValueError,
     r"fn creates .*draws random numbers; the function of a scan, map_fn or fold may not"),
    (lambda xs: sg.scan(lambda a, x: a, sg.constant(1.0)), ValueError,
     r"scan at \S*test_scan.py:\d+: elems 0 has shape \(\); its elems must have a first "
     r"axis"),
])
def test_mistakes_are_refused_at_the_user_line(build, error, message):
    xs = sg.placeholder(F, [5, 3], name="xs")
    with pytest.raises(error, match=message):
        build(xs)


def test_back_prop_false_stops_gradients():
    xs = sg.placeholder(F, [5, 3], name="xs")
    ys = sg.scan(lambda a, x: a + x, xs, back_prop=False)
    assert sg.gradients(sg.reduce_sum(ys), [xs]) == [None]


def test_an_exported_module_carries_the_scan_and_its_gradient(tmp_path):
    xs = sg.placeholder(F, [5, 3], name="xs")
    ys = sg.scan(lambda a, x: sg.sin(a) + x, xs)
    (dxs,) = sg.gradients(sg.reduce_sum(ys), [xs])
    sess = sg.Session()
    want = sess.run([ys, dxs], {xs: XS})
    path = sg.export([ys, dxs], [xs], str(tmp_path / "scanner.py"))
    spec = importlib.util.spec_from_file_location("scanner", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for got, expected in zip(module.run(XS), want):
        np.testing.assert_allclose(got, expected)


def test_every_pass_switched_off_agrees():
    xs = sg.placeholder(F, [5, 3], name="xs")
    ys = sg.scan(lambda a, x: sg.exp(a * 0.1) * x, xs, initializer=sg.ones([3], F))
    (dxs,) = sg.gradients(sg.reduce_sum(ys * ys), [xs])
    want = None
    for name in sg.compiler.PASS_NAMES:
        options = sg.CompileOptions(disable=frozenset([name]), verify=True)
        with sg.Session(options=options) as sess:
            got = sess.run([ys, dxs], {xs: XS})
        want = want or got
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=name)


def test_the_dynamic_mode_loops_in_python_with_the_same_results():
    import staticgrad.dynamic as dy
    x = dy.tensor(XS, requires_grad=True)
    ys = sg.scan(lambda a, r: a * 0.5 + r, x, reverse=True)
    folded = sg.foldl(lambda a, r: a * r, x, initializer=dy.ones(3, dtype=dy.float64))
    mapped = sg.map_fn(lambda r: r * r, x)
    xs = sg.placeholder(F, [5, 3])
    want = sg.Session().run([sg.scan(lambda a, r: a * 0.5 + r, xs, reverse=True),
                             sg.foldl(lambda a, r: a * r, xs, initializer=sg.ones([3], F)),
                             sg.map_fn(lambda r: r * r, xs)], {xs: XS})
    for got, expected in zip((ys, folded, mapped), want):
        np.testing.assert_allclose(got.detach().numpy(), expected)
    ys.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(),
                               numeric_grad(lambda v: _reverse_scan_sum(v), XS), rtol=1e-6)


def _reverse_scan_sum(v):
    acc, total = None, 0.0
    for r in v[::-1]:
        acc = r if acc is None else acc * 0.5 + r
        total += acc.sum()
    return total


def test_kept_rows_are_lists_of_each_steps_values_and_unread_stacks_are_never_made(g):
    w = sg.placeholder(F, [3], name="w")
    xs = sg.placeholder(F, [5, 3], name="xs")
    final = sg.foldl(lambda a, x: (a[0] * sg.tanh(x * w), a[1]), xs,
                     initializer=(sg.ones([3], F), sg.zeros([3], F)))
    (dw,) = sg.gradients(sg.reduce_sum(final[0]), [w])
    ys = sg.scan(lambda a, x: sg.sin(a) + x, xs, initializer=sg.zeros([3], F), name="ys")
    sess = sg.Session()
    source = sess.source([dw, ys[-1]], {w: XS[0], xs: XS})
    assert " = [None] * 5\n" in source  # (the history and kept values its gradient reads)
    assert "np.empty((5, 3), dtype=np.float64)" in source  # (ys: read by a slice)
    got, last = sess.run([dw, ys[-1]], {w: XS[0], xs: XS})
    want = numeric_grad(lambda v: np.prod(np.tanh(XS * v), axis=0).sum(), XS[0])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)
    acc = np.zeros(3)
    for x in XS:
        acc = np.sin(acc) + x
    np.testing.assert_allclose(last, acc)
    unread = sg.Session().source(final[0], {w: XS[0], xs: XS})
    assert "np.empty" not in unread and "[None]" not in unread


def test_a_large_scan_whose_history_nothing_reads_runs(g):
    # (the memory plan freed the unread history, which was never made: UnboundLocalError)
    big = RNG.normal(size=(6, 5000))
    xs = sg.placeholder(F, [6, 5000], name="xs")
    total = sg.foldl(lambda a, x: a * 0.5 + x, xs, initializer=sg.zeros([5000], F))
    got = sg.Session().run(sg.reduce_sum(total * 2.0), {xs: big})
    acc = np.zeros(5000)
    for row in big:
        acc = acc * 0.5 + row
    np.testing.assert_allclose(got, (acc * 2).sum())


def test_rows_known_when_compiling_are_one_row_only_when_equal_bit_for_bit(g):
    # (0.0 and -0.0 compare equal, but 1 / x tells them apart: each step sees its own row)
    with np.errstate(divide="ignore"):
        got = sg.Session().run(sg.map_fn(lambda x: 1.0 / x,
                                         sg.constant(np.array([[0.0], [-0.0]]))))
    np.testing.assert_array_equal(got.ravel(), [np.inf, -np.inf])
    same = sg.map_fn(lambda x: sg.shape(x) * 2, sg.constant(np.ones((3, 2, 5))))
    np.testing.assert_array_equal(sg.Session().run(same), [[4, 10]] * 3)
