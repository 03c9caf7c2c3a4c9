"""sg.case (staticgrad/control_flow/case.py): the first true predicate's function, as nested
conds; TF1's run-time checks with `exclusive` and without a default."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg

F = sg.float64


def _piecewise(x):
    return sg.case([(x < 0, lambda: -x), (x < 1, lambda: x * x)], default=lambda: sg.sqrt(x))


def test_the_first_true_predicate_chooses_and_gradients_follow_it(g):
    x = sg.placeholder(F, [], name="x")
    y = _piecewise(x)
    (dx,) = sg.gradients(y, [x])
    sess = sg.Session()
    for v, want, slope in ((-2.0, 2.0, -1.0), (0.5, 0.25, 1.0), (4.0, 2.0, 0.25)):
        assert sess.run([y, dx], {x: v}) == [want, slope]
    ifs = [op.name for op in g.get_operations()
           if op.type == "If" and not op.name.startswith("gradients/")]
    assert ifs == ["case/cond/If"]  # (the second cond is inside the first's else branch)


def test_without_a_default_the_last_pair_is_checked_at_run_time(g):
    x = sg.placeholder(F, [], name="x")
    y = sg.case([(x < 0, lambda: -x), (x > 1, lambda: x * x)])
    sess = sg.Session()
    assert sess.run(y, {x: 2.0}) == 4.0 and sess.run(y, {x: -1.0}) == 1.0
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=r"assertion failed: \[none of the conditions evaluated as True "
                             r"\(case at \S*test_case.py:\d+\); conditions:\] \[False False\]"):
        sess.run(y, {x: 0.5})


def test_exclusive_checks_that_at_most_one_predicate_holds(g):
    x = sg.placeholder(F, [], name="x")
    y = sg.case({x < 0: lambda: -x, x < 1: lambda: x * x}, default=lambda: x, exclusive=True)
    sess = sg.Session()
    assert sess.run(y, {x: 3.0}) == 3.0 and sess.run(y, {x: 0.5}) == 0.25
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=r"more than one condition evaluated as True but exclusive=True "
                             r"\(case at \S*test_case.py:\d+\); conditions:\] \[True True\]"):
        sess.run(y, {x: -0.5})


def test_structures_and_strict_as_cond(g):
    x = sg.placeholder(F, [2], name="x")
    p = sg.placeholder(sg.bool_, [], name="p")
    out = sg.case([(p, lambda: {"a": x, "b": [x * 2.0]})],
                  default=lambda: {"a": -x, "b": [x]})
    single = sg.case([(p, lambda: [x])], default=lambda: [x * 0.0])
    strict = sg.case([(p, lambda: [x])], default=lambda: [x * 0.0], strict=True)
    assert isinstance(single, sg.Tensor) and isinstance(strict, list)
    got = sg.Session().run(out, {x: [1.0, 2.0], p: False})
    np.testing.assert_array_equal(got["a"], [-1, -2])
    np.testing.assert_array_equal(got["b"][0], [1, 2])


@pytest.mark.parametrize("build, error, message", [
    (lambda x: sg.case([]), ValueError, r"case at \S*test_case.py:\d+: pred_fn_pairs is empty"),
    (lambda x: sg.case([(x > 0, x)]), TypeError, r"the function of pair 0 must be callable"),
    (lambda x: sg.case([(x, lambda: x)]), TypeError,
     r"the predicate of pair 0 must be a bool scalar, got float64\(\)"),
    (lambda x: sg.case([x > 0]), TypeError, r"pair 0 must be a \(predicate, function\) pair"),
    (lambda x: sg.case([(x > 0, lambda: x)], default=1.0), TypeError,
     r"default must be callable"),
])
def test_mistakes_are_refused_at_the_case_line(g, build, error, message):
    x = sg.placeholder(F, [], name="x")
    with pytest.raises(error, match=message):
        build(x)


def test_the_dynamic_mode_checks_at_once_and_runs_the_chosen_function():
    import staticgrad.dynamic as dy
    x = dy.tensor(-1.0)
    assert float(sg.case([(x < 0, lambda: -x * 3.0)])) == 3.0  # (its check passed)
    assert float(sg.case([(x < 0, lambda: x), (x < 1, lambda: x * 2.0)],
                         default=lambda: x, exclusive=False)) == -1.0
    with pytest.raises(sg.errors.InvalidArgumentError, match="more than one condition"):
        sg.case([(x < 0, lambda: x), (x < 1, lambda: x * 2.0)], default=lambda: x,
                exclusive=True)
