"""The `negations` pass: each rewrite gives the values of the program without it, bit for
bit (special values included), and removes the negations it says it does."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.backends.numpy.policy import FUSE
from staticgrad.passes.negations import fold_negations

N = FUSE.min_elements + 5  # large enough to be fused (and expanded)
SPECIAL = [0.0, -0.0, 1e-30, -1e-30, 1e-7, -0.5, -1.0, -2.0, -1e30, 0.5, 3.0, 1e30,
           np.inf, -np.inf, np.nan]


@pytest.fixture(autouse=True)
def fresh_graph():
    with sg.Graph().as_default() as g:
        yield g


def _run(fetches, feed, off=()):
    with sg.Session(options=sg.CompileOptions(disable=set(off))) as sess, \
            np.errstate(all="ignore"):
        return sess.source(fetches, feed), sess.run(fetches, feed)


def _values(dtype, n=N):
    rng = np.random.default_rng(0)
    v = (rng.standard_normal(n) * 3).astype(dtype)
    special = np.array(SPECIAL)
    if np.dtype(dtype).kind == "i":
        special = np.nan_to_num(special, posinf=2**31 - 1, neginf=-2**31).clip(-2**31, 2**31 - 1)
    with np.errstate(over="ignore"):
        v[:len(SPECIAL)] = special.astype(dtype)
    return v


# -- negations -----------------------------------------------------------------------------------
def _same(a, b):
    np.testing.assert_array_equal(a, b)  # NaN where NaN, equal elsewhere
    assert a.dtype == b.dtype


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_sums_of_negations_become_subtractions_with_the_same_values(dtype):
    a = sg.placeholder(sg.as_dtype(dtype), [None], name="a")
    b = sg.placeholder(sg.as_dtype(dtype), [None], name="b")
    c = sg.placeholder(sg.as_dtype(dtype), [None], name="c")
    fetches = [a + (-b), (-a) + b, a - (-b), (-a) * b + c, c + a * (-b),
               sg.add_n([a, -b, c, (-c) * a]), sg.add_n([-a, b]), sg.add_n([-a, -b, c])]
    feed = {a: _values(dtype, 50), b: _values(dtype, 50)[::-1].copy(),
            c: _values(dtype, 50)[5:].repeat(2)[:50]}
    src, got = _run(fetches, feed)
    _, want = _run(fetches, feed, off={"negations"})
    for x, y in zip(got, want):
        _same(x, y)
    body = src[src.index("def run"):]
    # left: -a in add_n(-a, -b, c), which has nothing to subtract it from
    assert body.count("-a") + body.count("np.negative(a") == 1, src
    assert "-b" not in body and "-c" not in body, src


def test_a_negated_product_read_elsewhere_is_left_alone(g):
    a = sg.placeholder(sg.float32, [3], name="a")
    b = sg.placeholder(sg.float32, [3], name="b")
    p = (-a) * b
    from tests.passes.helpers import program_for, types
    program = program_for([p + b, p * 2.0], {a: np.ones(3), b: np.ones(3)})
    assert types(fold_negations(program)) == types(program)  # p is needed anyway: no p' = a*b
    program = program_for([p + b], {a: np.ones(3), b: np.ones(3)})
    rewritten = fold_negations(program)
    assert types(rewritten)[-2:] == ["Mul", "Sub"]  # b - a * b, the old p now unread
    assert types(program)[-1] == "Add"  # the input program is unchanged


def test_the_gradient_sum_of_w3_subtracts_instead_of_negating():
    x = sg.placeholder(sg.float32, [None], name="x")
    y = sg.reduce_sum(sg.tanh(1.5 * x + 0.3) * sg.sigmoid(x) + 0.5 * sg.exp(-x ** 2)
                      + sg.log1p(x ** 2))
    (dx,) = sg.gradients(y, [x])  # ... + (-e) * x + ...: the -e is not computed
    xv = _values(np.float32)
    src, got = _run([y, dx], {x: xv})
    _, want = _run([y, dx], {x: xv}, off={"negations"})
    kernel = src[src.index("def fused"):]
    assert kernel.count("np.negative(") == 1 and "np.subtract(gradients" in kernel, src
    _same(got[1], want[1])


@pytest.mark.parametrize("form", ["add", "sub", "add_n", "product"])
def test_a_variable_read_is_not_moved_past_an_assignment(form):
    """Found by review: a + (-v) became a - v, reading v where the sum runs, after an
    assignment to v that the negation ran before."""
    results = []
    for off in (set(), {"negations"}):
        with sg.Graph().as_default():
            v = sg.Variable(np.array([1.0, 2.0, 3.0], np.float32))
            w = sg.Variable(np.array([2.0, 2.0, 2.0], np.float32))
            n, m = -v, (-w) * v
            with sg.control_dependencies([n, m]):
                up = sg.assign(v, [10.0, 10.0, 10.0])
            y = {"add": up + n, "sub": up - n, "add_n": sg.add_n([up, n, up]),
                 "product": up + m}[form]
            with sg.Session(options=sg.CompileOptions(disable=off)) as sess:
                sess.run(sg.global_variables_initializer())
                results.append(sess.run(y))
    want = {"add": [9, 8, 7], "sub": [11, 12, 13], "add_n": [19, 18, 17], "product": [8, 6, 4]}
    np.testing.assert_array_equal(results[0], np.array(want[form], np.float32))
    np.testing.assert_array_equal(results[0], results[1])


def test_a_negated_product_something_waits_on_is_not_computed_twice(g):
    from tests.passes.helpers import program_for, types
    a = sg.placeholder(sg.float32, [3], name="a")
    b = sg.placeholder(sg.float32, [3], name="b")
    p = (-a) * b
    with sg.control_dependencies([p.op]):
        z = sg.identity(b)  # waits on the product
    program = program_for([z + p], {a: np.ones(3), b: np.ones(3)})
    assert types(fold_negations(program)).count("Mul") == 1
