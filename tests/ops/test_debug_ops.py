"""check_numerics and add_check_numerics_ops: a NaN or an infinity is an InvalidArgumentError
that names the op that made it, the line of the program that created that op, and the
message; finite values pass through untouched."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy

HERE = "test_debug_ops.py"


@pytest.fixture
def g():
    with sg.Graph().as_default() as graph:
        yield graph


def test_check_numerics_passes_finite_values_through_unchanged(g):
    x = sg.placeholder(sg.float32, [None], name="x")
    y = sg.debugging.check_numerics(sg.log(x), "log of x")
    with sg.Session() as sess:
        out = sess.run(y, {x: [1.0, np.e]})
        assert "rt.check_numerics(Log, 'log of x')" in sess.source(y, {x: [1.0]})
    np.testing.assert_allclose(out, [0.0, 1.0], rtol=1e-6)


@pytest.mark.parametrize("value, kind", [(-1.0, "NaN"), (0.0, "Inf")])
def test_check_numerics_names_the_op_its_line_and_the_message(g, value, kind):
    x = sg.placeholder(sg.float32, [None], name="x")
    y = sg.log(x, name="the_log")
    z = sg.check_numerics(y, "log of the input") * 2.0
    with sg.Session() as sess, np.errstate(all="ignore"), \
            pytest.raises(sg.errors.InvalidArgumentError) as info:
        sess.run(z, {x: [1.0, value]})
    text = str(info.value)
    assert f"log of the input : Tensor had {kind} values" in text
    assert 'Log op "the_log" created at' in text and HERE in text
    assert info.value.op.name == "the_log"


def test_check_numerics_refuses_an_integer_tensor(g):
    with pytest.raises(TypeError, match="CheckNumerics.*int32"):
        sg.check_numerics(sg.constant([1, 2]), "ints")


def test_a_hostile_message_stays_a_string(g):
    message = "x'); __import__('os').system('false') #\n\"\"\""
    x = sg.placeholder(sg.float32, [1], name="x")
    y = sg.check_numerics(x, message)
    with sg.Session() as sess, pytest.raises(sg.errors.InvalidArgumentError) as info:
        sess.run(y, {x: [np.nan]})
    assert message in str(info.value)


def test_add_check_numerics_ops_names_the_first_op_that_made_a_nan(g):
    x = sg.placeholder(sg.float32, [None], name="x")
    a = sg.multiply(x, 2.0, name="doubled")
    b = sg.sqrt(a, name="root")         # NaN first appears here
    c = sg.add(b, 1.0, name="shifted")  # and flows on from here
    check = sg.add_check_numerics_ops()
    with sg.Session() as sess:
        assert sess.run([c, check], {x: [1.0]})[1] is None
        with np.errstate(all="ignore"), pytest.raises(sg.errors.InvalidArgumentError) as info:
            sess.run([c, check], {x: [-1.0]})
    assert info.value.op.name == "root"
    assert "root:0 : Tensor had NaN values" in str(info.value) and HERE in str(info.value)


def test_the_gradient_is_checked_too(g):
    x = sg.placeholder(sg.float32, [1], name="x")
    y = sg.sqrt(sg.check_numerics(x, "sqrt"))  # d sqrt(0) = inf flows into the check
    (dx,) = sg.gradients(y, [x])
    with sg.Session() as sess, np.errstate(all="ignore"), \
            pytest.raises(sg.errors.InvalidArgumentError, match="detected in gradient. sqrt"):
        sess.run(dx, {x: [0.0]})


def test_check_numerics_in_the_dynamic_mode_names_the_users_line():
    t = dy.tensor([1.0, np.inf])
    with dy.eager_mode(), pytest.raises(sg.errors.InvalidArgumentError) as info:
        sg.check_numerics(t, "dynamic")
    assert "dynamic : Tensor had Inf values" in str(info.value) and HERE in str(info.value)


def test_an_exported_module_checks_numerics(g, tmp_path):
    x = sg.placeholder(sg.float32, [2], name="x")
    y = sg.check_numerics(sg.log(x), "exported")
    with sg.Session() as sess:
        sg.export(y, [x], str(tmp_path / "checked.py"), session=sess)
    spec = importlib.util.spec_from_file_location("checked", tmp_path / "checked.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_allclose(module.run(np.array([1.0, 1.0], np.float32))[0], [0.0, 0.0])
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match="exported : Tensor"):
        module.run(np.array([1.0, -1.0], np.float32))


# -- Assert ---------------------------------------------------------------------------------------
def test_assert_runs_when_waited_on_and_names_its_line(g):
    x = sg.placeholder(sg.float64, [4], name="x")
    check = sg.Assert(sg.reduce_min(x) > 0, ["x must be positive:", x], summarize=3)
    with sg.control_dependencies([check]):
        y = sg.identity(x * 2.0)
    unguarded = x * 3.0
    sess = sg.Session()
    np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2, 3, 4]}), [2, 4, 6, 8])
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=r"^assertion failed: \[x must be positive:\] \[1.0 -2.0 3.0\.\.\.\] "
                             r"\(Assert op \"Assert\" created at \S*test_debug_ops.py:\d+\)"):
        sess.run(y, {x: [1.0, -2, 3, 4]})
    # (only what is fetched or waited on runs, as in TF1)
    np.testing.assert_array_equal(sess.run(unguarded, {x: [1.0, -2, 3, 4]}), [3, -6, 9, 12])
    assert sess.run(check, {x: [1.0, 2, 3, 4]}) is None


def test_assert_message_is_a_literal_in_the_generated_code(g):
    x = sg.placeholder(sg.float64, [2], name="x")
    hostile = "'); import os; os.system('touch /tmp/sg_pwned') #\n"
    check = sg.Assert(sg.reduce_min(x) > 0, [hostile, x])
    source = sg.Session().source(check, {x: np.ones(2)})
    line = r"\n    rt\.assert_true\(\w+, " + re.escape(repr(hostile)) + r", 3, \(x,\)\)\n"
    assert re.search(line, source)
    with pytest.raises(sg.errors.InvalidArgumentError, match="os.system"):
        sg.Session().run(check, {x: -np.ones(2)})


@pytest.mark.parametrize("condition, error, message", [
    (lambda x: x, TypeError, r"its condition has dtype float64; it needs a bool"),
    (lambda x: x > 0, ValueError, r"its condition has shape \(2,\); it needs a scalar"),
])
def test_assert_needs_a_bool_scalar(g, condition, error, message):
    x = sg.placeholder(sg.float64, [2])
    with pytest.raises(error, match=r"Assert op .* created at \S*test_debug_ops.py:\d+: "
                                    + message):
        sg.Assert(condition(x), [x])
