"""Session semantics: fetch structures, feeds, errors, variables, threads, names, source."""

from __future__ import annotations

import collections
import os
import threading

import hypothesis
import hypothesis.strategies as st
import numpy as np
import pytest

import staticgrad as sg
from tests.conftest import lineno

HERE = os.path.basename(__file__)


# -- fetch structures -----------------------------------------------------------------------------

Pair = collections.namedtuple("Pair", ["a", "b"])


def test_fetch_single_tensor_op_and_names(g):
    x = sg.placeholder(sg.float32, [2], name="x")
    y = sg.add(x, 1.0, name="y")
    noop = sg.no_op(name="nothing")
    sess = sg.Session()
    feed = {x: [1.0, 2.0]}
    r = sess.run(y, feed)
    assert isinstance(r, np.ndarray) and r.dtype == np.float32
    np.testing.assert_array_equal(r, [2.0, 3.0])
    assert sess.run(noop) is None
    np.testing.assert_array_equal(sess.run("y:0", feed), [2.0, 3.0])
    assert sess.run("nothing") is None
    np.testing.assert_array_equal(sess.run(y, {"x:0": [0.0, 0.0]}), [1.0, 1.0])
    with pytest.raises((ValueError, KeyError)):
        sess.run("nope:0", feed)


def test_fetch_nested_structures(g):
    x = sg.placeholder(sg.float32, [], name="x")
    a, b, c = x + 1, x * 2, x - 3
    op = sg.group(a, b)
    sess = sg.Session()
    out = sess.run({"a": a, "rest": [b, (c, op)], "pair": Pair(a=b, b=[c, "x:0"]),
                    "nested": {"deep": [[a]]}}, {x: 5.0})
    assert set(out) == {"a", "rest", "pair", "nested"}
    assert out["a"] == 6.0 and isinstance(out["a"], np.float32)
    assert isinstance(out["rest"], list) and isinstance(out["rest"][1], tuple)
    assert out["rest"][0] == 10.0 and out["rest"][1][0] == 2.0 and out["rest"][1][1] is None
    assert isinstance(out["pair"], Pair)
    assert out["pair"].a == 10.0 and out["pair"].b[0] == 2.0 and out["pair"].b[1] == 5.0
    assert out["nested"]["deep"][0][0] == 6.0
    # tuples, lists of one element, the same tensor twice, an empty list
    assert sess.run((a,), {x: 1.0}) == (2.0,)
    assert sess.run([a, a], {x: 1.0}) == [2.0, 2.0]
    assert sess.run([], {x: 1.0}) == []
    # a flat list of tensors (keyed without recursion) and the same tensors nested
    assert sess.run([a, b], {x: 1.0}) == [2.0, 2.0]
    assert sess.run([[a], b], {x: 1.0}) == [[2.0], 2.0]
    assert sess.run([a, [b]], {x: 1.0}) == [2.0, [2.0]]
    od = sess.run(collections.OrderedDict([("z", c), ("y", a)]), {x: 0.0})
    assert isinstance(od, collections.OrderedDict) and list(od) == ["z", "y"]


def test_fetch_variable_and_bad_fetches(g):
    v = sg.Variable([1.0, 2.0], name="v")
    sess = sg.Session()
    sess.run(v.initializer)
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
    with pytest.raises(TypeError):
        sess.run(None)
    with pytest.raises(TypeError):
        sess.run(3.5)


def test_fetched_arrays_do_not_alias_state_or_feeds(g):
    x = sg.placeholder(sg.float32, [3], name="x")
    v = sg.Variable([1.0, 2.0, 3.0], name="v")
    ident = sg.identity(x)
    sess = sg.Session()
    sess.run(v.initializer)
    val = sess.run(v)
    val[:] = -1
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
    feed = np.array([4.0, 5.0, 6.0], np.float32)
    out = sess.run(ident, {x: feed})
    out[:] = 0
    np.testing.assert_array_equal(feed, [4.0, 5.0, 6.0])


# -- feeds ----------------------------------------------------------------------------------------

def test_feeding_an_intermediate_cuts_the_graph(g):
    x = sg.placeholder(sg.float32, [None], name="x")
    y = x * 2.0
    z = y + 1.0
    sess = sg.Session()
    # x is not fed, and not needed: y is fed
    np.testing.assert_array_equal(sess.run(z, {y: [10.0, 20.0]}), [11.0, 21.0])
    np.testing.assert_array_equal(sess.run(z, {x: [1.0]}), [3.0])
    # feeding a constant replaces it
    c = sg.constant(3.0)
    w = c * 2.0
    assert sess.run(w) == 6.0
    assert sess.run(w, {c: 5.0}) == 10.0
    # feeding a variable read replaces it, and needs no initialization
    v = sg.Variable(1.0, name="v")
    assert sess.run(v * 3.0, {v: 2.0}) == 6.0


def test_feeding_the_fetched_tensor_returns_the_feed(g):
    x = sg.placeholder(sg.float32, [2], name="x")
    y = x + 1.0
    sess = sg.Session()
    np.testing.assert_array_equal(sess.run(y, {y: [7.0, 8.0]}), [7.0, 8.0])


def test_unfed_placeholder_not_needed_is_fine(g):
    x = sg.placeholder(sg.float32, [2], name="x")
    unused = sg.placeholder(sg.float32, [2], name="unused")
    _ = unused * 2.0
    sess = sg.Session()
    np.testing.assert_array_equal(sess.run(x * 3.0, {x: [1.0, 2.0]}), [3.0, 6.0])


def _run_error(sess, error_type, *run_args):
    """The error_type error that sess.run(*run_args) raises."""
    with pytest.raises(error_type) as info:
        sess.run(*run_args)
    return info.value


def test_missing_feed_names_placeholder_and_line(g):
    x = sg.placeholder(sg.float32, [None, 3], name="my_input"); line = lineno()  # noqa: E702
    y = sg.reduce_sum(x * 2.0)
    sess = sg.Session()
    error = _run_error(sess, sg.errors.InvalidArgumentError, y)
    msg = str(error)
    assert "my_input" in msg
    assert f"{HERE}:{line}" in msg
    assert isinstance(error, sg.errors.OpError)
    assert error.op is x.op


def test_missing_feed_in_a_structure(g):
    a = sg.placeholder(sg.int32, [], name="a")
    b = sg.placeholder(sg.int32, [], name="b_input")
    sess = sg.Session()
    with pytest.raises(sg.errors.InvalidArgumentError, match="b_input"):
        sess.run({"s": a + b}, {a: 1})


def test_wrong_feed_shape(g):
    x = sg.placeholder(sg.float32, [None, 3], name="shaped"); line = lineno()  # noqa: E702
    y = x + 1.0
    sess = sg.Session()
    error = _run_error(sess, sg.errors.InvalidArgumentError, y, {x: np.zeros((2, 4))})
    msg = str(error)
    assert "shaped" in msg and "(2, 4)" in msg and "(?, 3)" in msg
    assert f"{HERE}:{line}" in msg
    with pytest.raises(sg.errors.InvalidArgumentError):
        sess.run(y, {x: np.zeros(3)})  # wrong rank
    # a good feed still works afterwards
    assert sess.run(y, {x: np.zeros((1, 3))}).shape == (1, 3)


def test_feed_dtypes(g):
    i = sg.placeholder(sg.int32, [2], name="ints")
    f = sg.placeholder(sg.float32, [2], name="floats")
    b = sg.placeholder(sg.bool_, [2], name="bools")
    sess = sg.Session()
    error = _run_error(sess, sg.errors.InvalidArgumentError, i * 2, {i: [1.5, 2.0]})
    assert "ints" in str(error)
    with pytest.raises(sg.errors.InvalidArgumentError):
        sess.run(i * 2, {i: np.array([1.0, np.nan])})
    with pytest.raises(sg.errors.InvalidArgumentError):
        sess.run(i * 2, {i: np.array([2**40, 1], dtype=np.int64)})  # does not fit
    with pytest.raises(sg.errors.InvalidArgumentError):
        sess.run(sg.logical_not(b), {b: [1, 0]})
    with pytest.raises(sg.errors.InvalidArgumentError):
        sess.run(i * 2, {i: ["a", "b"]})
    # safe conversions are accepted
    r = sess.run(i * 2, {i: [1.0, 2.0]})
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, [2, 4])
    r = sess.run(f * 2, {f: np.array([1, 2], np.int64)})
    assert r.dtype == np.float32
    r = sess.run(f * 2, {f: np.array([1, 2], np.float64)})
    assert r.dtype == np.float32
    np.testing.assert_array_equal(sess.run(sg.logical_not(b), {b: [True, False]}), [False, True])


def test_feed_python_scalars_and_numpy_scalars(g):
    x = sg.placeholder(sg.float64, [], name="x")
    y = x * 2.0
    sess = sg.Session()
    for v in (1.5, np.float64(1.5), np.array(1.5), np.float32(1.5), 1.5):
        r = sess.run(y, {x: v})
        assert isinstance(r, np.float64) and r == 3.0


def test_fetch_from_another_graph_is_a_value_error(g):
    other = sg.Graph()
    with other.as_default():
        foreign = sg.constant(1.0) + 1.0
        foreign_ph = sg.placeholder(sg.float32, [])
    sess = sg.Session()
    with pytest.raises(ValueError):
        sess.run(foreign)
    with pytest.raises(ValueError):
        sess.run([sg.constant(2.0), foreign])
    with pytest.raises(ValueError):
        sess.run(foreign.op)
    with pytest.raises(ValueError):
        sess.run(sg.constant(1.0), {foreign_ph: 1.0})


def test_inputs_from_another_graph_is_a_value_error(g):
    other = sg.Graph()
    with other.as_default():
        foreign = sg.placeholder(sg.float32, [])
    with pytest.raises(ValueError):
        sg.add(sg.placeholder(sg.float32, []), foreign)


def test_uninitialized_variable(g):
    v = sg.Variable(np.zeros(3, np.float32), name="weights"); line = lineno()  # noqa: E702
    y = v * 2.0
    sess = sg.Session()
    error = _run_error(sess, sg.errors.FailedPreconditionError, y)
    msg = str(error)
    assert "weights" in msg
    assert f"{HERE}:{line}" in msg
    sess.run(v.initializer)
    np.testing.assert_array_equal(sess.run(y), [0, 0, 0])


def test_runtime_failure_names_the_op(g):
    x = sg.placeholder(sg.int32, [None], name="x")
    idx = sg.placeholder(sg.int32, [None], name="idx")
    y = sg.gather(x, idx, name="pick"); line = lineno()  # noqa: E702
    sess = sg.Session()
    error = _run_error(sess, sg.errors.InvalidArgumentError, y, {x: [1, 2, 3], idx: [5]})
    assert "pick" in str(error) and f"{HERE}:{line}" in str(error)


# -- shape errors at graph construction -----------------------------------------------------------

def test_matmul_shape_error_names_op_shapes_and_line(g):
    a = sg.placeholder(sg.float32, [2, 3])
    b = sg.placeholder(sg.float32, [4, 5])
    line = lineno() + 2
    with pytest.raises(ValueError) as info:
        sg.matmul(a, b)
    msg = str(info.value)
    assert "MatMul" in msg and "(2, 3)" in msg and "(4, 5)" in msg
    assert f"{HERE}:{line}" in msg


def test_add_shape_error_names_op_shapes_and_line(g):
    a = sg.placeholder(sg.float32, [2])
    b = sg.placeholder(sg.float32, [3])
    line = lineno() + 2
    with pytest.raises(ValueError) as info:
        a + b  # noqa: B018
    msg = str(info.value)
    assert "Add" in msg and "(2,)" in msg and "(3,)" in msg
    assert f"{HERE}:{line}" in msg
    with pytest.raises(ValueError) as info:
        sg.multiply(sg.placeholder(sg.float32, [2, 3]), sg.placeholder(sg.float32, [4, 3]))
    assert "Mul" in str(info.value) and "(2, 3)" in str(info.value)
    assert len(g.get_operations()) == 4  # failed ops are not added (only the placeholders)


def test_shape_error_found_when_specialized(g):
    a = sg.placeholder(sg.float32, [None])
    b = sg.placeholder(sg.float32, [None])
    c = a + b; line = lineno()  # noqa: E702
    sess = sg.Session()
    np.testing.assert_array_equal(sess.run(c, {a: [1.0], b: [1.0, 2.0]}), [2.0, 3.0])
    error = _run_error(sess, sg.errors.InvalidArgumentError, c, {a: [1.0, 2.0, 3.0], b: [1.0, 2.0]})
    assert "Add" in str(error) and f"{HERE}:{line}" in str(error)


# -- variables ------------------------------------------------------------------------------------

def test_two_sessions_hold_independent_variables(g):
    v = sg.Variable(1.0, name="counter")
    inc = sg.assign_add(v, 1.0)
    s1, s2 = sg.Session(), sg.Session()
    s1.run(v.initializer)
    s2.run(sg.global_variables_initializer())
    for _ in range(3):
        s1.run(inc)
    assert s1.run(v) == 4.0
    assert s2.run(v) == 1.0
    s2.run(inc)
    assert s2.run(v) == 2.0 and s1.run(v) == 4.0


def test_assign_ops_return_new_value(g):
    v = sg.Variable([1.0, 2.0], name="v")
    a = sg.assign(v, [5.0, 6.0])
    aa = sg.assign_add(v, [1.0, 1.0])
    asub = v.assign_sub([0.5, 0.5])
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    np.testing.assert_array_equal(sess.run(a), [5.0, 6.0])
    np.testing.assert_array_equal(sess.run(aa), [6.0, 7.0])
    np.testing.assert_array_equal(sess.run(aa), [7.0, 8.0])
    np.testing.assert_array_equal(sess.run(asub), [6.5, 7.5])
    np.testing.assert_array_equal(sess.run(v), [6.5, 7.5])
    out = sess.run(aa)
    out[:] = 0  # the returned value is not the variable's storage
    np.testing.assert_array_equal(sess.run(v), [7.5, 8.5])
    with pytest.raises(ValueError):
        sg.assign(v, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError):
        sg.assign(v, sg.constant([1, 2]))


def test_assign_from_a_feed_does_not_alias_it(g):
    v = sg.Variable([0.0, 0.0], name="v")
    x = sg.placeholder(sg.float32, [2])
    a = sg.assign(v, x)
    sess = sg.Session()
    feed = np.array([1.0, 2.0], np.float32)
    sess.run(a, {x: feed})
    feed[:] = 9.0
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_variable_collections(g):
    w = sg.Variable(1.0, name="w")
    b = sg.Variable(2.0, name="b", trainable=False)
    assert sg.global_variables() == [w, b]
    assert sg.trainable_variables() == [w]
    assert g.get_collection(sg.GraphKeys.GLOBAL_VARIABLES) == [w, b]
    assert w.name == "w:0" and b.name == "b:0"
    init = sg.global_variables_initializer()
    sess = sg.Session()
    sess.run(init)
    assert sess.run([w, b]) == [1.0, 2.0]


def test_control_dependencies_ordering(g):
    v = sg.Variable(1.0, name="v")
    assign_op = sg.assign(v, 10.0)
    with sg.control_dependencies([assign_op]):
        after = sg.identity(v)
    before = sg.identity(v)
    sess = sg.Session()
    sess.run(v.initializer)
    assert sess.run(before) == 1.0
    assert sess.run(after) == 10.0
    sess.run(v.initializer)
    # an increment chain: read after the assignment sees the new value
    inc = sg.assign_add(v, 5.0)
    with sg.control_dependencies([inc]):
        read = v * 1.0
    assert sess.run(read) == 6.0
    assert sess.run(read) == 11.0
    assert sess.run(after.op) is None


def test_a_value_known_before_running_still_waits_on_its_control_dependencies(g):
    # (it used to be folded into its consumers as a constant, and what it waited on never ran)
    counter = sg.Variable(0.0, name="counter")
    with sg.control_dependencies([sg.assign_add(counter, 1.0)]):
        two = sg.identity(sg.constant(2.0))
        three = sg.constant(3.0)
    x = sg.placeholder(sg.float32, [2])
    sess = sg.Session()
    sess.run(counter.initializer)
    np.testing.assert_array_equal(sess.run(x * two, {x: [1.0, 2.0]}), [2.0, 4.0])
    assert sess.run(counter) == 1.0
    np.testing.assert_array_equal(sess.run(x * three, {x: [1.0, 2.0]}), [3.0, 6.0])
    assert sess.run(counter) == 2.0
    assert sess.run(x * 2.0, {x: [1.0, 2.0]}).tolist() == [2.0, 4.0]
    assert sess.run(counter) == 2.0  # (nothing waits here)
    six = two * 3.0  # known too, and waits through `two`
    np.testing.assert_array_equal(sess.run(x * six, {x: [1.0, 2.0]}), [6.0, 12.0])
    assert sess.run(counter) == 3.0


def test_control_dependencies_on_a_group(g):
    v = sg.Variable(0, name="v")
    w = sg.Variable(0, name="w")
    step = sg.group(sg.assign_add(v, 1), sg.assign_add(w, 2))
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    sess.run(step)
    sess.run(step)
    assert sess.run([v, w]) == [2, 4]


def test_variable_load_and_eval(g):
    v = sg.Variable([1.0, 2.0], name="v")
    sess = sg.Session()
    with sess.as_default():
        v.load([3.0, 4.0])
        np.testing.assert_array_equal(v.eval(), [3.0, 4.0])


# -- session and graph lifecycle ------------------------------------------------------------------

def test_ops_added_after_session_creation_are_visible(g):
    x = sg.placeholder(sg.float32, [], name="x")
    y = x + 1.0
    sess = sg.Session()
    assert sess.run(y, {x: 1.0}) == 2.0
    z = y * 10.0  # added after the session ran
    v = sg.Variable(3.0, name="late")
    sess.run(v.initializer)
    assert sess.run(z, {x: 1.0}) == 20.0
    assert sess.run(z * v, {x: 1.0}) == 60.0


def test_make_callable(g):
    x = sg.placeholder(sg.float32, [None], name="x")
    k = sg.placeholder(sg.float32, [], name="k")
    y = x * k
    s = sg.reduce_sum(y)
    sess = sg.Session()
    f = sess.make_callable([y, s], [x, k])
    r = f([1.0, 2.0], 3.0)
    np.testing.assert_array_equal(r[0], [3.0, 6.0])
    assert r[1] == 9.0 and isinstance(r[1], np.float32)
    r = f(np.array([1.0, 1.0, 1.0], np.float32), 2.0)  # new shape: recompiles
    np.testing.assert_array_equal(r[0], [2.0, 2.0, 2.0])
    single = sess.make_callable(s, [x, k])
    assert single([1.0], 5.0) == 5.0
    with pytest.raises(TypeError):
        single([1.0])
    with pytest.raises(sg.errors.InvalidArgumentError):
        single([[1.0]], 1.0)
    by_name = sess.make_callable("Sum:0" if s.name == "Sum:0" else s.name, ["x:0", "k:0"])
    assert by_name([2.0], 2.0) == 4.0
    noargs = sess.make_callable(sg.constant(4) * 2)
    assert noargs() == 8


def test_source_names_and_comments(g):
    x = sg.placeholder(sg.float32, [None, 3], name="inputs")
    with sg.name_scope("layer"):
        w = sg.constant(np.ones((3, 2), np.float32), name="weights")
        h = sg.matmul(x, w, name="hidden"); line = lineno()  # noqa: E702
        act = sg.nn.relu(h, name="act")
    sess = sg.Session()
    src = sess.source(act, {x: np.zeros((4, 3))})
    assert "def run(inputs)" in src
    assert "layer_hidden" in src and "layer_act" in src
    assert f"# MatMul 'layer/hidden' at {HERE}:{line}" in src
    assert "Relu" in src
    compile(src, "<check>", "exec")  # it is valid Python


@pytest.mark.parametrize("bad", ["x;import os", "a b", "x\nimport os", "x'\"", "", "-lead",
                                 "x)", "__import__('os')", "a:0"])
def test_malicious_node_name_is_rejected(g, bad):
    if bad == "":
        return  # an empty name means "use the default name"
    with pytest.raises(ValueError):
        sg.placeholder(sg.float32, [], name=bad)
    with pytest.raises(ValueError):
        sg.add(sg.constant(1.0), 2.0, name=bad)
    if bad != "-lead":  # TF1 scope names may start with '-'
        with pytest.raises(ValueError):
            with sg.name_scope(bad):
                pass


@pytest.mark.parametrize("bad", ['a"""\nimport os\n"""/', "x;y/", "a b/"])
def test_reentered_scope_names_are_checked_too(g, bad):
    """A scope re-entered by its full name ('name/') must not smuggle code into the source."""
    with pytest.raises(ValueError, match="not a valid scope name"):
        with sg.name_scope(bad):
            pass


@pytest.mark.parametrize("bad", ["y\n", "y\n\n", "scope/y\n", "y\r", "\ny"])
def test_name_with_a_trailing_newline_is_rejected(g, bad):
    """`$` matches before a trailing newline: names are checked with fullmatch, whole."""
    with pytest.raises(ValueError, match=f"not a valid node name.*given at .*{HERE}:"):
        sg.placeholder(sg.float32, [], name=bad)
    with pytest.raises(ValueError, match="not a valid node name"):
        sg.identity(sg.constant(1.0), name=bad)
    with pytest.raises(ValueError, match=f"not a valid scope name.*given at .*{HERE}:"):
        with sg.name_scope(bad):
            pass
    with pytest.raises(ValueError, match="not a valid scope name"):
        with sg.name_scope(bad + "/"):
            pass
    assert not [op for op in g.get_operations() if "\n" in op.name or "\r" in op.name]


def test_tensor_name_index_is_digits_only(g):
    """int() reads "0\n", " 0", "+0" and "0_0" as numbers: a mistyped tensor name must not
    find a tensor."""
    x = sg.placeholder(sg.float32, [], name="x")
    assert g.get_tensor_by_name("x:0") is x
    for bad in ["x:0\n", "x: 0", "x:+0", "x:0_0", "x:\u0660", "x:"]:
        with pytest.raises(KeyError, match="digits 0-9 only"):
            g.get_tensor_by_name(bad)
        with pytest.raises(ValueError, match="cannot feed"):
            sg.Session().run(x * 2.0, {bad: 1.0})


def test_no_validation_regex_ends_in_dollar():
    """Every pattern in the package is used with fullmatch or search, none anchored with `$`
    (which also matches before a trailing newline)."""
    import ast
    import pathlib
    package = pathlib.Path(sg.__file__).parent
    found = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") in
                    ("compile", "match", "fullmatch", "search") and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and node.args[0].value.endswith("$")):
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not found, found


def test_non_string_names_are_type_errors(g):
    from staticgrad.graph import check_op_name
    with pytest.raises(TypeError, match="node names are strings"):
        check_op_name(5)
    with pytest.raises(TypeError, match="scope name is a string"):
        with sg.name_scope(5):
            pass


def test_builtin_names_cannot_shadow_what_generated_code_calls(g):
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    t = sg.identity(x, name="tuple")
    a, b, c = sg.unstack(sg.reshape(t * 2.0, [2, 3]), axis=1)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(sg.Session().run(c, {x: xv}), xv[:, 2] * 2)


def test_odd_but_valid_names_give_valid_source(g):
    x = sg.placeholder(sg.float32, [], name="class")
    y = sg.add(x, 1.0, name="1.weird-name>x")
    z = sg.multiply(y, 2.0, name="np")
    r = sg.add(z, 0.5, name="run")
    sess = sg.Session()
    assert sess.run(r, {x: 1.0}) == 4.5
    compile(sess.source(r, {x: 1.0}), "<check>", "exec")


def test_session_run_from_threads(g):
    x = sg.placeholder(sg.float64, [None, 4], name="x")
    w = sg.Variable(np.arange(8.0).reshape(4, 2), name="w")
    y = sg.nn.softmax(sg.matmul(x, w))
    s = sg.reduce_sum(x, axis=1)
    sess = sg.Session()
    sess.run(w.initializer)
    wv = np.arange(8.0).reshape(4, 2)
    errors, barrier = [], threading.Barrier(8)

    def work(k):
        try:
            rng = np.random.default_rng(k)
            barrier.wait()
            for i in range(30):
                xv = rng.normal(size=(1 + (k + i) % 5, 4))
                fetch = [y, s] if (k + i) % 2 else {"s": s, "y": y}
                out = sess.run(fetch, {x: xv})
                yv, sv = (out if isinstance(out, list) else (out["y"], out["s"]))
                z = xv @ wv
                e = np.exp(z - z.max(axis=1, keepdims=True))
                np.testing.assert_allclose(yv, e / e.sum(axis=1, keepdims=True), rtol=1e-12)
                np.testing.assert_allclose(sv, xv.sum(axis=1), rtol=1e-12)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_eval_and_run_under_as_default(g):
    x = sg.placeholder(sg.float32, [2], name="x")
    v = sg.Variable([1.0, 1.0], name="v")
    inc = sg.assign_add(v, [1.0, 2.0])
    sess = sg.Session()
    with pytest.raises(ValueError):
        (x * 2.0).eval(feed_dict={x: [1.0, 2.0]})  # no default session
    with sess.as_default():
        assert sg.get_default_session() is sess
        v.initializer.run()
        inc.op.run()
        np.testing.assert_array_equal((x * 2.0).eval(feed_dict={x: [1.0, 2.0]}), [2.0, 4.0])
        np.testing.assert_array_equal(v.eval(), [2.0, 3.0])
    assert sg.get_default_session() is None
    np.testing.assert_array_equal((v * 1.0).eval(session=sess), [2.0, 3.0])


def test_session_context_manager(g):
    other = sg.Graph()
    with other.as_default():
        c = sg.constant(3) * 2
    with sg.Session(graph=other) as sess:
        assert sg.get_default_graph() is other
        assert sg.get_default_session() is sess
        assert c.eval() == 6
    assert sg.get_default_graph() is g
    with pytest.raises(RuntimeError, match=r"^Attempted to use a closed Session\. \(run\(Mul:0\)"):
        sess.run(c)  # closed when the block ended
    sess.close()  # closing again does nothing
    assert sess.closed and "closed" in repr(sess)


def test_nested_with_of_one_session_keeps_the_outer_defaults(g):
    """The inner `with` replaced the outer one's graph context, which was then finalized as
    garbage: the session's graph stopped being the default inside the outer block."""
    other = sg.Graph()
    sess = sg.Session(graph=other)
    with sess:
        with sess:
            assert sg.get_default_graph() is other
        assert sg.get_default_graph() is other and sg.get_default_session() is sess
    assert sg.get_default_graph() is g and sg.get_default_session() is None
    with pytest.raises(RuntimeError, match="did not enter"):
        sess.__exit__(None, None, None)


# -- closing --------------------------------------------------------------------------------------

def test_closed_session_refuses_every_entry_point(g):
    """After close(), make_callable's callables kept running and source() still compiled."""
    x = sg.placeholder(sg.float32, [None], name="x")
    k = sg.placeholder(sg.float32, [], name="k")
    v = sg.Variable([1.0, 2.0], name="v")
    y = sg.multiply(x, v, name="y")
    sess = sg.Session(); made = lineno()  # noqa: E702
    sess.run(v.initializer)
    one_feed = sess.make_callable(y, [x])
    two_feeds = sess.make_callable({"y": y, "v": v}, [x, k])
    no_feeds = sess.make_callable(v)
    np.testing.assert_array_equal(one_feed([1.0, 1.0]), [1.0, 2.0])
    two_feeds([1.0, 1.0], 2.0)
    no_feeds()
    sess.close(); closed = lineno()  # noqa: E702
    calls = [
        (r"run\(y:0\)", lambda: sess.run(y, {x: [1.0, 2.0]})),
        (r"run\(\[y:0, v:0\]\)", lambda: sess.run([y, v], {x: [1.0, 2.0]})),
        (r"a callable made by make_callable\(y:0\)", lambda: one_feed([1.0, 2.0])),
        (r"a callable made by make_callable\(\[y:0, v:0\]\)",
         lambda: two_feeds([1.0, 2.0], 1.0)),
        (r"a callable made by make_callable\(v:0\)", no_feeds),
        (r"make_callable\(y:0\)", lambda: sess.make_callable(y, [x])),
        (r"source\(y:0\)", lambda: sess.source(y, {x: [1.0, 2.0]})),
        (r"plan\(y:0\)", lambda: sess.plan(y, {x: [1.0, 2.0]})),
        (r"loading a value into variable v:0", lambda: v.load([0.0, 0.0], sess)),
        (r"run\(y:0\)", lambda: y.eval({x: [1.0, 2.0]}, session=sess)),
        (r"list_devices", sess.list_devices),
    ]
    for what, call in calls:
        with pytest.raises(RuntimeError, match=(
                rf"^Attempted to use a closed Session\. \({what}.*; the session was created "
                rf"at .*{HERE}:{made} and closed at .*{HERE}:{closed}\)")):
            call()
    with sess.as_default():  # entering it is allowed, as in TF1; using it is not
        with pytest.raises(RuntimeError, match="closed Session"):
            v.eval()


def test_closing_frees_what_callables_compiled(g):
    import gc
    import weakref
    x = sg.placeholder(sg.float32, [None], name="x")
    v = sg.Variable(np.ones(3, np.float32), name="v")
    sess = sg.Session()
    sess.run(v.initializer)
    f = sess.make_callable(x * v, [x])
    f(np.ones(3, np.float32))
    plan = weakref.ref(sess.plan(x * v, {x: np.ones(3, np.float32)}))
    value = weakref.ref(sess._vars["v"])
    assert plan() is not None and value() is not None
    sess.close()
    gc.collect()
    assert plan() is None, "a callable kept after close() still holds its compiled code"
    assert value() is None, "a closed session still holds its variables"
    with pytest.raises(RuntimeError, match="closed Session"):
        f(np.ones(3, np.float32))


def _patch_runtime_normal(monkeypatch):
    """rt.normal made to wait (after drawing) until the test lets it go on."""
    from staticgrad.backends.numpy import runtime as rt  # the generated code's rt
    drawn, go_on = threading.Event(), threading.Event()
    real = rt.normal

    def normal(*args):
        out = real(*args)
        drawn.set()
        assert go_on.wait(30)
        return out
    monkeypatch.setattr(rt, "normal", normal)
    return drawn, go_on


def _run_in_thread(call):
    outcome = []

    def work():
        try:
            outcome.append(call())
        except Exception as e:  # noqa: BLE001
            outcome.append(e)
    thread = threading.Thread(target=work)
    thread.start()
    return thread, outcome


def test_close_during_a_run_cancels_its_later_variable_reads(g, monkeypatch):
    v = sg.Variable([1.0, 2.0], name="v")
    y = sg.add(sg.random_normal([2], seed=3), v, name="y")
    sess = sg.Session()
    sess.run(v.initializer)
    src = sess.source(y)
    assert src.index("rt.normal(") < src.index("V['v']"), src  # the run draws, then reads v
    drawn, go_on = _patch_runtime_normal(monkeypatch)
    thread, outcome = _run_in_thread(lambda: sess.run(y))
    assert drawn.wait(30)
    sess.close(); closed = lineno()  # noqa: E702
    go_on.set()
    thread.join()
    (error,) = outcome
    assert isinstance(error, sg.errors.CancelledError), error
    assert f"{HERE}:{closed}" in str(error) and "y:0" in str(error)
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(y)


def test_close_during_a_run_lets_a_run_past_its_reads_finish(g, monkeypatch):
    v = sg.Variable([1.0, 2.0], name="v")
    doubled = v * 2.0  # made first, so computed first
    y = sg.add(doubled, sg.random_normal([2], seed=3), name="y")
    sess = sg.Session()
    sess.run(v.initializer)
    want = sess.run(y)
    src = sess.source(y)
    assert src.index("V['v']") < src.index("rt.normal("), src  # the run reads v, then draws
    drawn, go_on = _patch_runtime_normal(monkeypatch)
    thread, outcome = _run_in_thread(lambda: sess.run(y))
    assert drawn.wait(30)
    sess.close()
    go_on.set()
    thread.join()
    (result,) = outcome
    assert isinstance(result, np.ndarray), result
    assert result.shape == want.shape and result.dtype == want.dtype
    assert np.all(np.isfinite(result))


def test_interactive_session(g):
    x = sg.placeholder(sg.float32, [], name="x")
    y = x * 3.0
    sess = sg.InteractiveSession()
    try:
        assert sg.get_default_session() is sess
        assert y.eval(feed_dict={x: 2.0}) == 6.0
        # visible from other threads too
        seen = []
        t = threading.Thread(target=lambda: seen.append(sg.get_default_session()))
        t.start()
        t.join()
        assert seen == [sess]
    finally:
        sess.close()
    assert sg.get_default_session() is None


def test_finalized_graph_rejects_new_ops(g):
    x = sg.placeholder(sg.float32, [], name="x")
    y = x + 1.0
    g.finalize()
    assert g.finalized
    with pytest.raises(RuntimeError):
        sg.constant(1.0)
    with pytest.raises(RuntimeError):
        _ = y * 2.0
    with pytest.raises(RuntimeError):
        sg.Variable(1.0)
    assert sg.Session().run(y, {x: 1.0}) == 2.0  # running is still fine


# -- names and lookups ----------------------------------------------------------------------------

def test_unique_names_and_scopes(g):
    a = sg.placeholder(sg.float32, [None, 10], name="a")
    b = sg.placeholder(sg.float32, [10, 10], name="b")
    s1 = a + a
    s2 = sg.add(a, a)
    s3 = a + a
    assert (s1.name, s2.name, s3.name) == ("Add:0", "Add_1:0", "Add_2:0")
    with sg.name_scope("scope") as scope:
        assert scope == "scope/"
        m = sg.matmul(a, b)
        m2 = sg.matmul(a, b)
        with sg.name_scope("inner"):
            n = sg.negative(m, name="neg")
    with sg.name_scope("scope"):
        again = sg.matmul(a, b)
    assert m.name == "scope/MatMul:0" and m2.name == "scope/MatMul_1:0"
    assert n.name == "scope/inner/neg:0"
    assert again.name == "scope_1/MatMul:0"
    named = sg.identity(a, name="out")
    named2 = sg.identity(a, name="out")
    assert named.name == "out:0" and named2.name == "out_1:0"
    assert m.op.name == "scope/MatMul" and m.op.type == "MatMul"


def test_get_by_name(g):
    a = sg.placeholder(sg.float32, [None, 10], name="a")
    with sg.name_scope("s"):
        y = sg.nn.relu(a, name="r")
    parts = sg.split(sg.constant(np.zeros((4, 2))), 2)
    assert g.get_tensor_by_name("s/r:0") is y
    assert g.get_operation_by_name("s/r") is y.op
    assert g.get_tensor_by_name(parts[1].name) is parts[1] and parts[1].name.endswith(":1")
    with pytest.raises(KeyError):
        g.get_tensor_by_name("missing:0")
    with pytest.raises(KeyError):
        g.get_operation_by_name("missing")
    with pytest.raises(ValueError):
        g.get_tensor_by_name("s/r")  # an op name, not a tensor name
    with pytest.raises(KeyError):
        g.get_tensor_by_name("s/r:3")


def test_repr(g):
    a = sg.placeholder(sg.float32, [None, 10], name="a")
    s = a + a
    assert repr(s) == '<Tensor "Add:0" shape=(?, 10) dtype=float32>'
    assert repr(sg.placeholder(sg.int32, [3])) == \
        '<Tensor "Placeholder:0" shape=(3,) dtype=int32>'
    assert repr(sg.placeholder(sg.float64)) == \
        '<Tensor "Placeholder_1:0" shape=<unknown> dtype=float64>'
    assert repr(sg.constant(1.0)) == '<Tensor "Const:0" shape=() dtype=float32>'
    # print shows TF1's form
    assert str(s) == 'Tensor("Add:0", shape=(?, 10), dtype=float32)'
    assert str(s.shape) == "(?, 10)" and s.shape.as_list() == [None, 10]
    assert s.get_shape() == sg.TensorShape([None, 10])


def test_tensor_is_not_a_bool(g):
    a = sg.placeholder(sg.float32, [])
    with pytest.raises(TypeError):
        bool(a > 1.0)


def test_source_then_run_compile_once(g, caplog):
    import logging
    x = sg.placeholder(sg.float32, [None], name="x")
    y = sg.exp(x)
    sess = sg.Session()
    with caplog.at_level(logging.DEBUG, logger="staticgrad.session"):
        sess.source(y, {x: [1.0]})
        sess.run(y, {x: [2.0]})
        sess.make_callable(y, [x])(np.array([3.0], np.float32))
        sess.run(y, {x: [1.0, 2.0]})
    compiles = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compiling")]
    assert len(compiles) == 2, compiles
    assert "first run" in compiles[0]
    assert "(1,)" in compiles[1] and "(2,)" in compiles[1]


def test_div_floors_integers_like_tf1(g):
    got = sg.Session().run([sg.div([7, -7], 2), sg.div([7.0, -7.0], 2.0), sg.divide([7, -7], 2)])
    np.testing.assert_array_equal(got[0], [3, -4])
    np.testing.assert_array_equal(got[1], [3.5, -3.5])
    np.testing.assert_array_equal(got[2], [3.5, -3.5])


def test_ragged_feed_names_the_placeholder(g):
    x = sg.placeholder(sg.float32, [None, None], name="ragged_x")
    with pytest.raises(sg.errors.InvalidArgumentError, match=r"ragged_x:0.*rectangular"):
        sg.Session().run(x * 2.0, {x: [[1.0, 2.0], [3.0]]})


@hypothesis.settings(max_examples=400, deadline=None)
@hypothesis.given(st.lists(st.one_of(st.text(max_size=12), st.text("ab_1/.->é ", max_size=12)),
                           min_size=1, max_size=6))
def test_generated_names_are_identifiers_made_as_the_regex_makes_them(texts):
    """Names.make's fast path (op names, with '/' for scopes) gives what the general rule
    gives: every character outside [A-Za-z0-9_] becomes '_', edges stripped, 't_' before a
    digit or keyword, a suffix when taken. Each name is a fresh identifier."""
    import keyword
    import re

    from staticgrad.backends.numpy.render import RESERVED
    from staticgrad.codegen.walk import Names
    names, used = Names(RESERVED), set(RESERVED)
    for text in texts:
        base = re.sub(r"\W", "_", text, flags=re.ASCII).strip("_") or "t"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "t_" + base
        want, i = base, 1
        while want in used:
            want, i = f"{base}_{i}", i + 1
        used.add(want)
        got = names.make(text)
        assert got == want
        assert got.isidentifier() and got.isascii() and not keyword.iskeyword(got)


# -- random generators --------------------------------------------------------------------------
def _two_draws(graph_seed, op_seed):
    with sg.Graph().as_default():
        if graph_seed is not None:
            sg.set_random_seed(graph_seed)
        r = sg.random_uniform([4], seed=op_seed)
        with sg.Session() as sess:
            return sess.run(r), sess.run(r)


def test_negative_seeds_run_as_their_64_bits_read_unsigned():
    """TF1 takes negative seeds; NumPy's generators take none: each part is taken modulo
    2**64 (the same bits), and non-negative seeds seed as they always did."""
    first, second = _two_draws(-5, -3)
    assert first.shape == (4,) and not np.array_equal(first, second)  # the generator goes on
    np.testing.assert_array_equal(first, _two_draws(2**64 - 5, 2**64 - 3)[0])
    assert not np.array_equal(first, _two_draws(5, 3)[0])
    np.testing.assert_array_equal(_two_draws(None, -7)[0], _two_draws(None, 2**64 - 7)[0])


def test_generator_seed_leaves_non_negative_seeds_as_they_were():
    from staticgrad.session import generator_seed
    assert generator_seed((None, None)) is None
    assert generator_seed((5, 3)) == [5, 3]
    assert generator_seed((5, None)) == [5, 0]
    assert generator_seed((None, 7)) == [87654321, 7]
    assert generator_seed((2**64 - 1, -(2**63))) == [2**64 - 1, 2**63]


def test_a_missing_feed_error_prints_a_file_location_escaped():
    with sg.Graph().as_default() as g:
        x = sg.placeholder(sg.float32, [2], name="x")
        x.op.location = ("m.py\n\x1b[2J", 3)  # as a hostile graph file could set it
        y = x * 2.0
    with sg.Session(graph=g) as sess, pytest.raises(sg.errors.InvalidArgumentError) as info:
        sess.run(y)
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value)
    assert r"m.py\n\x1b[2J:3" in str(info.value)


# -- the variable-state API: read_variable, write_variable, variable_names ----------------------
def test_variable_values_are_read_and_written_by_variable_or_name(g):
    w = sg.Variable([[1.0, 2.0]], name="w")
    b = sg.Variable(0.5, name="b")
    line = lineno() - 2
    y = sg.matmul(w, [[1.0], [1.0]]) + b
    sess = sg.Session()
    assert sess.variable_names() == []
    with pytest.raises(sg.errors.FailedPreconditionError,
                       match=rf"uninitialized value w \(variable created at .*:{line}\)"):
        sess.read_variable(w)
    sess.run(w.initializer)
    assert sess.variable_names() == ["w"]
    got = sess.read_variable("w")
    np.testing.assert_array_equal(got, [[1.0, 2.0]])
    got[0, 0] = 99.0  # a copy: the session's value is its own
    np.testing.assert_array_equal(sess.read_variable(w), [[1.0, 2.0]])
    sess.write_variable("b:0", 2)  # converted to the variable's dtype, as Variable.load does
    sess.write_variable(w, np.array([[3.0, 4.0]]))
    assert sess.read_variable(b).dtype == np.float32
    assert sess.run(y)[0, 0] == 9.0
    with pytest.raises(ValueError, match=r"cannot load a value of shape \(3,\) into variable "
                                         r"w:0 of shape \(1, 2\)"):
        sess.write_variable(w, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="no variable named 'y'"):
        sess.read_variable("y")
    with pytest.raises(TypeError, match="takes a Variable or a variable's name"):
        sess.write_variable(3, 1.0)
    other = sg.Graph()
    with other.as_default():
        v = sg.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="from another graph"):
        sess.read_variable(v)
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.variable_names()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.write_variable(w, [[0.0, 0.0]])
