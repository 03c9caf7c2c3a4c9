"""sg.cond (staticgrad/control_flow/cond.py): branches as closed sub-graphs that only run when
taken, their captures, what they return, their errors, the generated code, and gradients. (Finite
differences of first and second order through cond, nested conds included, and parity with
the dynamic mode's Python `if`: the If rows of tests/ops/test_gradients.py, which
tests/dynamic/test_parity.py runs in both modes.)"""

from __future__ import annotations

import collections
import importlib.util

import numpy as np
import pytest

import staticgrad as sg

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph

XV = np.array([1.0, 4.0, 9.0], np.float32)


def _feeds():
    return sg.placeholder(sg.float32, [3], name="x"), sg.placeholder(sg.bool, [], name="p")


def test_each_branch_runs_when_its_predicate_says_and_reads_what_it_captured():
    x, p = _feeds()
    w = sg.Variable([1.0, 2.0, 3.0], name="w")
    y = sg.cond(p, lambda: sg.sqrt(x) * w, lambda: -x + 1.0)
    assert y.shape == (3,) and y.dtype is sg.float32 and y.op.type == "If"
    assert [t.name for t in y.op.inputs] == ["p:0", "x:0", "w:0"]  # the captures, explicit
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y, {x: XV, p: True}), [1.0, 4.0, 9.0])
        np.testing.assert_allclose(sess.run(y, {x: XV, p: False}), [0.0, -3.0, -8.0])


def test_a_predicate_computed_in_the_graph_chooses_per_run():
    x, _ = _feeds()
    y = sg.cond(sg.reduce_sum(x) > 10.0, lambda: x * 2.0, lambda: x / 2.0)
    with sg.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: XV}), XV * 2)
        np.testing.assert_allclose(sess.run(y, {x: XV / 10}), XV / 20)


def test_only_the_taken_branch_runs():
    """The log of a negative number is checked in the branch not taken: nothing is raised;
    taken, the error names the op inside the branch and its line."""
    x, p = _feeds()
    y = sg.cond(p, lambda: sg.debugging.check_numerics(sg.log(x), "log of x"), lambda: -x)
    bad = np.array([-1.0, 4.0, 9.0], np.float32)
    with sg.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: bad, p: False}), -bad)
        with pytest.raises(sg.errors.InvalidArgumentError,
                           match=r'log of x : Tensor had NaN values; tensor cond/Log:0 was made '
                                 r'by Log op "cond/Log" created at \S*test_cond.py:\d+'), \
                np.errstate(invalid="ignore"):
            sess.run(y, {x: bad, p: True})


def test_branches_return_structures_constants_and_outer_tensors():
    x, p = _feeds()
    Pair = collections.namedtuple("Pair", "a b")
    out = sg.cond(p, lambda: {"s": Pair(x, 1.0), "t": [x * 2.0]},
                  lambda: {"s": Pair(x * 3.0, 2.0), "t": [x]})
    assert isinstance(out["s"], Pair) and isinstance(out["t"], list)
    single = sg.cond(p, lambda: [x], lambda: [x + 1.0])            # one-element lists: unpacked
    strict = sg.cond(p, lambda: [x], lambda: [x + 1.0], strict=True)
    assert isinstance(single, sg.Tensor) and isinstance(strict, list)
    with sg.Session() as sess:
        for pv, want in ((True, (XV, 1.0, XV * 2)), (False, (XV * 3, 2.0, XV))):
            got = sess.run(out, {x: XV, p: pv})
            np.testing.assert_allclose(got["s"].a, want[0])
            assert got["s"].b == want[1] and got["s"].b.dtype == np.float32
            np.testing.assert_allclose(got["t"][0], want[2])


def test_a_cond_inside_a_branch_reads_tensors_from_further_out():
    x, p = _feeds()
    q = sg.placeholder(sg.bool, [], name="q")
    y = sg.cond(p, lambda: sg.cond(q, lambda: x + 1.0, lambda: x * x), lambda: x)
    with sg.Session() as sess:
        for pv, qv, want in ((True, True, XV + 1), (True, False, XV * XV), (False, True, XV)):
            np.testing.assert_allclose(sess.run(y, {x: XV, p: pv, q: qv}), want)


def test_ops_outside_the_branch_functions_run_whatever_the_predicate_as_in_tf1():
    """TF1's rule, kept: an op built before cond is an input of the If, computed first."""
    x, p = _feeds()
    counted = sg.Variable(0.0, name="counted")
    bump = sg.assign_add(counted, 1.0)
    with sg.control_dependencies([bump]):
        outside = sg.identity(x)
    y = sg.cond(p, lambda: outside * 2.0, lambda: x)
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        sess.run(y, {x: XV, p: False})  # `outside` is read only by the branch not taken,
        assert sess.run(counted) == 1.0  # yet it ran, and its control dependency with it
        sess.run(y, {x: XV, p: True})
        assert sess.run(counted) == 2.0


def test_gradients_flow_through_the_taken_branch_only_and_sum_over_captures():
    x, p = _feeds()
    w = sg.Variable([1.0, 2.0, 3.0], name="w")
    y = sg.cond(p, lambda: sg.sin(x) * w + w, lambda: x * x)
    dx, dw = sg.gradients(sg.reduce_sum(y), [x, w])
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        gx, gw = sess.run([dx, dw], {x: XV, p: True})
        np.testing.assert_allclose(gx, np.cos(XV) * [1, 2, 3], rtol=1e-6)
        np.testing.assert_allclose(gw, np.sin(XV) + 1, rtol=1e-6)
        gx, gw = sess.run([dx, dw], {x: XV, p: False})
        np.testing.assert_allclose(gx, 2 * XV)
        np.testing.assert_array_equal(gw, [0, 0, 0])


def test_the_generated_code_is_a_python_if_around_a_function_per_branch():
    x, p = _feeds()
    y = sg.cond(p, lambda: sg.sqrt(x), lambda: -x, name="choose")
    source = sg.Session().source(y, {x: XV, p: True})
    assert "    if p:\n        choose_If, = choose_If_then(x)\n    else:\n" in source
    assert "def choose_If_then(choose_capture_x):" in source
    assert "# Sqrt 'choose/Sqrt' at test_cond.py:" in source
    assert "def choose_If_else(" in source


def test_an_exported_module_carries_the_branches(tmp_path):
    x, p = _feeds()
    y = sg.cond(p, lambda: sg.sqrt(x), lambda: -x)
    path = sg.export(y, [x, p], str(tmp_path / "chooser.py"))
    spec = importlib.util.spec_from_file_location("chooser", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_allclose(module.run(XV, True)[0], np.sqrt(XV))
    np.testing.assert_allclose(module.run(XV, False)[0], -XV)


def test_make_callable_and_every_pass_switched_off_agree():
    x, p = _feeds()
    y = sg.cond(p, lambda: sg.exp(x * 0.1) + x * 0.0, lambda: sg.tanh(x))
    want = {True: np.exp(XV * 0.1), False: np.tanh(XV)}
    for name in sg.compiler.PASS_NAMES:
        options = sg.CompileOptions(disable=frozenset([name]), verify=True)
        with sg.Session(options=options) as sess:
            run = sess.make_callable(y, [x, p])
            for pv in (True, False):
                np.testing.assert_allclose(run(XV, pv), want[pv], rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("make, error, match", [
    (lambda x, p: sg.cond(x, lambda: x, lambda: x), TypeError,
     r"cond at \S*test_cond.py:\d+: the predicate has dtype float32"),
    (lambda x, p: sg.cond(x > 0, lambda: x, lambda: x), ValueError,
     r"the predicate has shape \(3,\); cond needs a scalar"),
    (lambda x, p: sg.cond(p, lambda: x, lambda: (x, x)), ValueError,
     r"cond at \S*test_cond.py:\d+: true_fn and false_fn must return the same "
     r"structure; true_fn returned a tensor, false_fn \(a tensor, a tensor\)"),
    (lambda x, p: sg.cond(p, lambda: x, lambda: sg.cast(x, sg.int32)), TypeError,
     "output 0 is float32 in true_fn but int32 in false_fn"),
    (lambda x, p: sg.cond(p, lambda: x[:2], lambda: x), ValueError,
     r"output 0 has shape \(2,\) in true_fn but \(3,\) in false_fn"),
    (lambda x, p: sg.cond(p, lambda: sg.random_uniform([3]) * x, lambda: x), ValueError,
     r"true_fn creates RandomUniform op .*draws random numbers; a cond branch may not"),
    (lambda x, p: sg.cond(p, lambda: sg.no_op(), lambda: x), TypeError,
     "true_fn returned the operation cond/NoOp; a branch must return tensors"),
    (lambda x, p: sg.cond(p, x, lambda: x), TypeError, "cond: true_fn must be callable"),
    (lambda x, p: sg.cond(p, lambda: [], lambda: []), ValueError,
     "the branches return no tensors"),
])
def test_mistakes_are_refused_where_the_cond_is_written(make, error, match):
    x, p = _feeds()
    with pytest.raises(error, match=match):
        make(x, p)


def test_branches_giving_shapes_that_differ_with_the_fed_shapes_are_refused_at_compile():
    x = sg.placeholder(sg.float32, [None], name="x")
    p = sg.placeholder(sg.bool, [], name="p")
    y = sg.cond(p, lambda: x[:2], lambda: x[1:])
    with sg.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: XV, p: False}), XV[1:])  # both (2,)
        with pytest.raises(sg.errors.UnimplementedError,
                           match=r"output 0 has shape \(2,\) in then_branch but \(3,\) in "
                                 r"else_branch"):
            sess.run(y, {x: np.zeros(4, np.float32), p: True})


def test_a_graph_file_carries_a_cond_and_its_gradient(g, tmp_path):
    x, p = _feeds()
    y = sg.cond(p, lambda: sg.sqrt(x), lambda: -x)
    (dx,) = sg.gradients(sg.reduce_sum(y), [x])
    path = str(tmp_path / "chooser.json")
    sg.train.export_meta_graph(path)
    want = [sg.Session().run([y, dx], {x: XV, p: v}) for v in (True, False)]
    with sg.Graph().as_default():
        sg.train.import_meta_graph(path)
        sess = sg.Session()
        got = [sess.run([y.name, dx.name], {"x:0": XV, "p:0": v}) for v in (True, False)]
    for a, b in zip(sum(want, []), sum(got, [])):
        np.testing.assert_array_equal(a, b)


# -- an attacker's review: each finding, kept -------------------------------------------------
def test_a_cond_in_a_branch_with_a_predicate_from_outside_is_built_in_the_branch():
    x, p = _feeds()
    q = sg.placeholder(sg.bool, [], name="q")

    def true_fn():
        m = x * 2.0  # made in the branch, read by the inner cond's branches
        return sg.cond(q, lambda: m + 1.0, lambda: sg.debugging.check_numerics(sg.log(m), "m"))

    y = sg.cond(p, true_fn, lambda: -x)
    bad = np.array([-1.0, 2.0, 3.0], np.float32)
    with sg.Session() as sess:  # the inner cond runs only when the outer one takes it
        np.testing.assert_allclose(sess.run(y, {x: bad, p: False, q: False}), -bad)
        np.testing.assert_allclose(sess.run(y, {x: XV, p: True, q: True}), XV * 2 + 1)
        np.testing.assert_allclose(sess.run(y, {x: XV, p: True, q: False}), np.log(XV * 2),
                                   rtol=1e-6)


def test_device_scopes_reach_the_branches_and_their_ops_are_placed_too():
    x, p = _feeds()
    with sg.device("/gpu:0"):
        around = sg.cond(p, lambda: sg.sqrt(x), lambda: -x)
    assert around.op.attrs["then_branch"].outputs[0].device == "/device:GPU:0"

    def on_gpu():
        with sg.device("/gpu:0"):
            return sg.sqrt(x, name="root")

    y = sg.cond(p, on_gpu, lambda: -x)
    assert y.device == ""
    z = sg.cond(p, lambda: x, lambda: x * 2.0)
    with sg.Session() as sess:
        with pytest.raises(sg.errors.InvalidArgumentError, match="operation cond_1/root"):
            sess.run(y, {x: XV, p: True})
        np.testing.assert_allclose(sess.run(z, {x: XV, p: False}), XV * 2)
    soft = sg.ConfigProto(allow_soft_placement=True)
    with sg.Session(config=soft) as sess:
        np.testing.assert_allclose(sess.run(y, {x: XV, p: True}), np.sqrt(XV))


def test_a_branch_sees_the_static_values_of_what_it_captures():
    x = sg.placeholder(sg.float32, [None, 3], name="x")
    p = sg.placeholder(sg.bool, [], name="p")
    shape = sg.shape(x)
    y = sg.cond(p, lambda: sg.zeros(shape), lambda: sg.ones(shape))
    with sg.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: np.zeros((2, 3), np.float32), p: False}),
                                      np.ones((2, 3)))


def test_gradients_inside_a_branch_may_be_taken_with_respect_to_outside_tensors():
    x, p = _feeds()
    g = sg.cond(p, lambda: sg.gradients(sg.reduce_sum(sg.sin(x) * x), x)[0], lambda: x)
    np.testing.assert_allclose(sg.Session().run(g, {x: XV, p: True}),
                               np.cos(XV) * XV + np.sin(XV), rtol=1e-6)


def test_a_branch_may_wait_on_an_op_from_outside_and_the_if_waits_on_it():
    x, p = _feeds()
    count = sg.Variable(0.0, name="count")
    bump = sg.assign_add(count, 1.0)

    def true_fn():
        with sg.control_dependencies([bump]):
            return sg.identity(x)

    y = sg.cond(p, true_fn, lambda: x)
    assert bump.op in y.op.control_inputs
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        sess.run(y, {x: XV, p: True})
        assert sess.run(count) == 1.0


def test_a_control_dependency_on_another_graph_is_refused_at_the_users_line():
    other = sg.Graph()
    with other.as_default():
        op = sg.no_op(name="elsewhere")
    with pytest.raises(ValueError, match=r"from another graph .* at \S*test_cond.py:\d+"):
        sg.control_dependencies([op])


def test_a_tensor_made_in_a_branch_cannot_be_used_outside_it():
    x, p = _feeds()
    leaked = []
    sg.cond(p, lambda: leaked.append(sg.sqrt(x)) or leaked[0], lambda: x)
    with pytest.raises(ValueError, match=r"made inside true_fn of the cond at \S*"
                                         r"test_cond.py:\d+, which exists only there"):
        sg.reduce_sum(leaked[0])


def test_structures_keep_their_types_and_a_mismatch_names_them():
    x, p = _feeds()
    Pair = collections.namedtuple("Pair", "a b")
    made = sg.cond(p, lambda: collections.defaultdict(list, {1: x, "k": x}),
                   lambda: collections.defaultdict(list, {1: -x, "k": x}))
    assert isinstance(made, collections.defaultdict) and made.default_factory is list
    with pytest.raises(ValueError, match=r"true_fn returned Pair\(a tensor, a tensor\), "
                                         r"false_fn \(a tensor, a tensor\)"):
        sg.cond(p, lambda: Pair(x, x), lambda: (x, x))


def test_the_dynamic_mode_checks_the_predicate_and_gives_tensors():
    import staticgrad.dynamic as dy
    t = dy.tensor([1.0, 2.0])
    with dy.eager_mode():
        with pytest.raises(TypeError, match="the predicate has dtype float32"):
            sg.cond(t, lambda: t, lambda: t)
        with pytest.raises(ValueError, match=r"the predicate has shape dy.Size\(\[2\]\)"):
            sg.cond(t > 0, lambda: t, lambda: t)
        out = sg.cond(dy.tensor(True), lambda: 1.0, lambda: 2.0)
    assert isinstance(out, dy.Tensor) and out.item() == 1.0
