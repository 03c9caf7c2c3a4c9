"""TF1's assertions (ops/check_ops.py): each passes and fails where NumPy says the condition
holds or not, at run time or, for values known when built, at once."""

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy

BINARY = [("assert_equal", np.equal), ("assert_none_equal", np.not_equal),
          ("assert_less", np.less), ("assert_less_equal", np.less_equal),
          ("assert_greater", np.greater), ("assert_greater_equal", np.greater_equal)]
UNARY = [("assert_positive", lambda v: v > 0), ("assert_negative", lambda v: v < 0),
         ("assert_non_negative", lambda v: v >= 0), ("assert_non_positive", lambda v: v <= 0)]
VALUES = [np.array([1.0, 2.0]), np.array([2.0, 2.0]), np.array([-1.0, 0.0]),
          np.array([3.0, 3.0]), np.array([-2.0, -1.0])]


@pytest.mark.parametrize("name, holds", BINARY, ids=[b[0] for b in BINARY])
def test_binary_assertions_at_run_time_and_when_built(g, name, holds):
    check = getattr(sg, name)
    x = sg.placeholder(sg.float64, [None], name="x")
    y = sg.placeholder(sg.float64, [None], name="y")
    op = check(x, y, message="checked")
    sess = sg.Session()
    for a in VALUES:
        for b in VALUES[:2]:
            if holds(a, b).all():
                sess.run(op, {x: a, y: b})
            else:
                with pytest.raises(sg.errors.InvalidArgumentError,
                                   match=r"checked: Condition x .* did not hold element-wise"
                                         r".* \(Assert op .* created at \S*test_check_ops.py"):
                    sess.run(op, {x: a, y: b})
        ok = holds(a, VALUES[1]).all()
        if ok:
            assert check(a, VALUES[1]).type == "NoOp"
        else:
            with pytest.raises(sg.errors.InvalidArgumentError, match=r"test_check_ops.py"):
                check(a, VALUES[1])
    assert getattr(sg.debugging, name) is check


@pytest.mark.parametrize("name, holds", UNARY, ids=[u[0] for u in UNARY])
def test_assertions_against_zero(g, name, holds):
    x = sg.placeholder(sg.float64, [None], name="x")
    op = getattr(sg, name)(x)
    sess = sg.Session()
    for v in VALUES:
        if holds(v).all():
            sess.run(op, {x: v})
        else:
            with pytest.raises(sg.errors.InvalidArgumentError, match=r"did not hold"):
                sess.run(op, {x: v})


def test_rank_type_integer_and_scalar(g):
    known = sg.placeholder(sg.float32, [None, 3], name="known")
    free = sg.placeholder(sg.float32, None, name="free")
    assert sg.assert_rank(known, 2).type == "NoOp"
    assert sg.assert_rank_at_least(known, 1).type == "NoOp"
    with pytest.raises(ValueError, match=r"known:0 must have rank 3; it has rank 2, shape "
                                         r"\(\?, 3\) \(at \S*test_check_ops.py"):
        sg.assert_rank(known, 3)
    with pytest.raises(ValueError, match=r"must have rank at least 3"):
        sg.assert_rank_at_least(known, 3)
    check = sg.assert_rank(free, 2)
    sess = sg.Session()
    sess.run(check, {free: np.zeros((2, 2), np.float32)})
    with pytest.raises(sg.errors.InvalidArgumentError, match=r"free:0 must have rank == 2"):
        sess.run(check, {free: np.zeros(3, np.float32)})
    with pytest.raises(TypeError, match=r"known:0 must be of type int32, not float32"):
        sg.assert_type(known, sg.int32)
    with pytest.raises(TypeError, match=r"must be of integer dtype"):
        sg.assert_integer(known)
    assert sg.assert_integer(sg.constant([1])).type == "NoOp"
    with pytest.raises(ValueError, match=r"must be a scalar, got shape \(\?, 3\)"):
        sg.assert_scalar(known)


def test_the_dynamic_mode_checks_at_once():
    with dy.eager_mode():
        sg.assert_less(dy.tensor([1.0]), dy.tensor([2.0]))
        with pytest.raises(sg.errors.InvalidArgumentError, match=r"did not hold"):
            sg.assert_positive(dy.tensor([-1.0]) * 2)
