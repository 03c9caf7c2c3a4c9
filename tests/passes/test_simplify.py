"""Algebraic simplification: each rewrite alone on small programs, and its values bit for
bit those of the program with simplify off (NaN, Inf, signed zeros and overflow too)."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.passes.dce import eliminate_dead_code
from staticgrad.passes.fold import fold_constants
from staticgrad.passes.simplify import simplify
from staticgrad.verify import verify
from tests.passes.helpers import X, program_for, types

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def test_simplify_removes_what_changes_nothing():
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    y = sg.transpose(sg.transpose(x)) * sg.ones_like(x) + 0.0
    y = sg.negative(sg.negative(sg.reshape(sg.identity(y), [2, 3])))
    z = sg.cast(y, sg.float32) / 1.0 - 0.0
    p = simplify(program_for([z], {x: X}))
    verify(p)
    assert p.fetches[0] is p.feeds[0]
    assert eliminate_dead_code(p).nodes == []


def test_simplify_powers_of_one_and_two():
    x = sg.placeholder(sg.float32, [4], name="x")
    (dx,) = sg.gradients(sg.reduce_sum(x ** 3 + x ** 2), [x])  # holds x ** 2 and x ** 1
    xv = np.array([np.nan, np.inf, -2.0, 0.5], np.float32)
    with sg.Session() as sess, np.errstate(invalid="ignore"):
        src = sess.source(dx, {x: xv})
        got = sess.run(dx, {x: xv})
    with sg.Session(options=sg.CompileOptions(disable={"simplify"})) as sess, \
            np.errstate(invalid="ignore"):
        want = sess.run(dx, {x: xv})
    assert "** 1.0" not in src and "** 2.0" not in src and "np.square(" in src
    np.testing.assert_array_equal(got, want)


def test_simplify_keeps_nan_and_inf_semantics():
    x = sg.placeholder(sg.float32, [3], name="x")
    y = x * 0.0  # NaN * 0 is NaN, not 0: never simplified
    p = simplify(program_for([y], {x: X[0]}))
    assert types(p) == ["Mul"]
    with sg.Session() as sess, np.errstate(invalid="ignore"):
        out = sess.run(y, {x: [np.nan, np.inf, 1.0]})
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == 0


def test_simplify_merges_two_transposes_into_one():
    x = sg.placeholder(sg.float32, [2, 3, 4], name="x")
    y = sg.transpose(sg.transpose(x, [1, 0, 2]), [0, 2, 1])
    p = eliminate_dead_code(simplify(program_for([y], {x: np.zeros((2, 3, 4), np.float32)})))
    (node,) = p.nodes
    assert node.type == "Transpose" and node.attrs["perm"] == (1, 2, 0)


def test_simplify_never_drops_a_node_with_control_dependencies():
    v = sg.Variable(0.0)
    x = sg.placeholder(sg.float32, [], name="x")
    bump = sg.assign_add(v, 1.0)
    with sg.control_dependencies([bump]):
        y = sg.identity(x)
    p = simplify(program_for([y], {x: np.float32(1)}))
    assert "Identity" in types(p)


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 1e-38, 2.5, -0.75],
                   np.float32)


def _simplified_and_plain(fetch, x, xv):
    """(simplified program without dead nodes, its result, the result with simplify off)."""
    p = eliminate_dead_code(simplify(fold_constants(program_for([fetch], {x: xv}))))
    verify(p)
    results = []
    for off in (set(), {"simplify"}):
        with sg.Session(options=sg.CompileOptions(disable=off | {"fuse"})) as sess, \
                np.errstate(all="ignore"):
            results.append(sess.run(fetch, {x: xv}))
    return p, *results


def test_simplify_folds_factors_when_a_power_of_two_makes_it_exact():
    x = sg.placeholder(sg.float32, [SPECIAL.size], name="x")
    cases = [  # (expression, the node types left, the constant factor left)
        (-((0.5 * sg.exp(x)) * 2.0) * x, ["Exp", "Neg", "Mul"], None),
        ((1.0 / (1.0 + x)) * 2.0, ["Add", "RealDiv"], 2.0),
        (3.0 * (x * 4.0), ["Mul"], 12.0),
        (-(x * 0.75), ["Mul"], -0.75),
        (sg.negative(x) * 0.25, ["Mul"], -0.25),
    ]
    for y, left, factor in cases:
        p, got, want = _simplified_and_plain(y, x, SPECIAL)
        assert types(p) == left, (types(p), left)
        if factor is not None:
            assert [float(v.const) for n in p.nodes for v in n.inputs
                    if v.const is not None and v.const.size == 1][-1] == factor
        np.testing.assert_array_equal(got, want)  # NaN, Inf, signed zeros and overflow too
        number = ~np.isnan(want)  # (a NaN's sign means nothing: x86 keeps an operand's)
        assert (np.signbit(got) == np.signbit(want))[number].all()


def test_simplify_leaves_factors_that_would_round_or_overflow():
    x = sg.placeholder(sg.float32, [SPECIAL.size], name="x")
    for y in (1.5 * (x * 3.0),  # no power of two: (x*3)*1.5 may round twice
              (x * 3e38) * 4.0,  # 1.2e39 is no float32
              (x * 1e-38) * 0.5):  # 5e-39 is subnormal
        p, got, want = _simplified_and_plain(y, x, SPECIAL)
        assert types(p) == ["Mul", "Mul"]
        np.testing.assert_array_equal(got, want)


def test_simplify_reads_a_broadcast_gradient_seed_as_its_number():
    """d/dx sum(0.5 exp(-x^2) + log1p(x^2)) as W3 has it: the seed broadcast_to(1, [n])
    disappears, 1/(1+x^2)*2 becomes 2/(1+x^2) and -(0.5 e)*2 becomes -e."""
    x = sg.placeholder(sg.float32, [None], name="x")
    (dx,) = sg.gradients(sg.reduce_sum(0.5 * sg.exp(-x ** 2) + sg.log1p(x ** 2)), [x])
    for size in (50, 5000):  # the seed folded to a constant of ones, or a broadcast
        xv = np.concatenate([SPECIAL, np.linspace(-4, 4, size, dtype=np.float32)])
        p, got, want = _simplified_and_plain(dx, x, xv)
        assert "BroadcastTo" not in types(p) and types(p).count("Mul") == 2  # each term * x
        np.testing.assert_array_equal(got, want)
        with np.errstate(all="ignore"):
            x64 = xv.astype(np.float64)
            exact = -x64 * np.exp(-x64 ** 2) + 2 * x64 / (1 + x64 ** 2)
        finite = np.isfinite(exact)
        np.testing.assert_allclose(got[finite], exact[finite], rtol=2e-6, atol=1e-30)


def test_simplify_spreads_an_op_of_numbers_and_keeps_broadcasts_it_needs():
    x = sg.placeholder(sg.float32, [3000], name="x")  # too big to fold the broadcast
    spread = sg.broadcast_to(sg.constant([2.0]), [4, 3000])
    y = 0.5 * spread + x  # the sum still needs the [4, 3000] shape
    p, got, want = _simplified_and_plain(y, x, np.arange(3000, dtype=np.float32))
    assert types(p) == ["BroadcastTo", "Add"]
    assert float(p.nodes[0].inputs[0].const) == 1.0
    np.testing.assert_array_equal(got, want)
    assert got.shape == (4, 3000)


def test_simplify_never_moves_a_variable_read_into_a_folded_factor():
    """v * 2 is read before the assignment; folding (v * 2) * 4 into v * 8 would read v
    again where the outer product runs, after it."""
    v = sg.Variable(np.ones(3, np.float32))
    inner = v * 2.0
    with sg.control_dependencies([inner]):
        bump = sg.assign_add(v, np.ones(3, np.float32))
    y = inner * 4.0  # made after the assignment, so it runs after it
    with sg.Session() as sess:
        sess.run(v.initializer)
        got, _ = sess.run([y, bump])
    np.testing.assert_array_equal(got, np.full(3, 8.0, np.float32))


def _on_off(fetch, feed):
    results = []
    for off in (set(), {"simplify"}):
        with sg.Session(options=sg.CompileOptions(disable=off)) as sess, \
                np.errstate(all="ignore"):
            sess.run(sg.global_variables_initializer())
            results.append(sess.run(fetch, feed))
    return results


def test_simplify_found_by_review():
    """Each of these went wrong in a first version of the broadcast and factor rules."""
    n = 4  # a broadcast row into matmul: matmul does not broadcast as elementwise ops do
    x, v = sg.placeholder(sg.float32, [n, n]), sg.placeholder(sg.float32, [n])
    w = sg.Variable(np.arange(n * n, dtype=np.float32).reshape(n, n))
    (dx,) = sg.gradients(sg.reduce_sum(sg.reduce_sum(sg.matmul(x, w), axis=0) * v), [x])
    got, want = _on_off(dx, {x: np.ones((n, n)), v: np.arange(n)})
    assert got.shape == (n, n)
    np.testing.assert_array_equal(got, want)

    x = sg.placeholder(sg.float32, [None])
    xv = np.concatenate([np.arange(1, 1001), [2e-38, 1e38, 3e38]]).astype(np.float32)
    for y in ((2.0 / x) * 0.1,  # a / x rounds: only a power-of-two factor folds exactly
              (x * 4.0) * 0.25, (16.0 / x) * 0.25, -(x * 4.0) * 0.25):  # overflows stay
        got, want = _on_off(y, {x: xv})
        np.testing.assert_array_equal(got, want)
    assert np.isinf(_on_off((x * 4.0) * 0.25, {x: xv})[0][-1])

    # numbers spread over a shape, with a number of higher rank
    y = sg.broadcast_to(sg.constant(2.0), [3000]) * sg.constant([[0.5]])
    got, want = _on_off(y, {})
    assert got.shape == (1, 3000)
    np.testing.assert_array_equal(got, want)
