"""The reverse pass's semantics (TF1's `gradients`), checked against hand-derived values."""

from __future__ import annotations

import time

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.ops.creation import apply1

F = sg.float64


@pytest.fixture(autouse=True)
def fresh_graph():
    g = sg.Graph()
    with g.as_default():
        yield g


def run(fetches, feed=None):
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        return sess.run(fetches, feed)


def test_list_of_ys_sums_their_gradients():
    x = sg.placeholder(F, [3])
    dx, = sg.gradients([sg.reduce_sum(x * x), sg.reduce_sum(3.0 * x)], [x])
    xv = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(run(dx, {x: xv}), 2 * xv + 3)


def test_default_grad_ys_is_ones_of_a_run_time_shape():
    x = sg.placeholder(F, None)  # unknown rank: y's shape is known only when fed
    y = sg.sin(x)
    dx, = sg.gradients(y, x)
    xv = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(run(dx, {x: xv}), np.cos(xv))


def test_grad_ys_is_a_vector_jacobian_product():
    x = sg.placeholder(F, [3])
    y = x * x
    dx, = sg.gradients(y, x, grad_ys=[0.1, 1.0, 0.0001])
    np.testing.assert_allclose(run(dx, {x: [1.0, 2.0, 3.0]}), [0.2, 4.0, 0.0006])


def test_grad_ys_of_the_wrong_shape_is_rejected():
    x = sg.placeholder(F, [3])
    with pytest.raises(ValueError, match="grad_ys"):
        sg.gradients(x * 2.0, x, grad_ys=[1.0, 2.0])


def test_unconnected_gives_none_or_zeros():
    x = sg.placeholder(F, [2])
    z = sg.placeholder(F, [2, 2])
    y = sg.reduce_sum(x * 2.0)
    assert sg.gradients(y, [x, z])[1] is None
    dz = sg.gradients(y, [x, z], unconnected_gradients="zero")[1]
    np.testing.assert_array_equal(run(dz, {z: np.ones((2, 2))}), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="unconnected_gradients"):
        sg.gradients(y, x, unconnected_gradients="bogus")


def test_integer_and_bool_tensors_carry_no_gradient():
    i = sg.placeholder(sg.int32, [3])
    x = sg.placeholder(F, [3])
    y = sg.reduce_sum(sg.cast(i, F) * x)
    di, dx = sg.gradients(y, [i, x])
    assert di is None and dx is not None
    b = sg.placeholder(sg.bool_, [3])
    assert sg.gradients(sg.reduce_sum(sg.where(b, x, -x)), b) == [None]


def test_fan_in_is_summed_once_with_add_n(fresh_graph):
    x = sg.placeholder(F, [2])
    y = sg.sin(x) + sg.cos(x) + sg.exp(x) + x * x  # five paths into x (x * x is two)
    dx, = sg.gradients(y, x)
    assert dx.op.type == "AddN" and len(dx.op.inputs) == 5
    grad_ops = [op for op in fresh_graph.get_operations() if op.name.startswith("gradients")]
    assert sum(op.type == "AddN" for op in grad_ops) == 1
    xv = np.array([0.3, -1.2])
    np.testing.assert_allclose(run(dx, {x: xv}), np.cos(xv) - np.sin(xv) + np.exp(xv) + 2 * xv)


def test_intermediate_tensors_can_be_xs():
    """The static counterpart of PyTorch's retain_grad (seed 000)."""
    x = sg.constant([1.0, 1, 1, 1], dtype=F)
    y = 2 * x
    z = sg.reduce_mean(y)
    dx, dy, dz = run(sg.gradients(z, [x, y, z]))
    np.testing.assert_allclose(dx, [0.5] * 4)
    np.testing.assert_allclose(dy, [0.25] * 4)
    assert dz == 1.0


def test_stop_gradient_and_stop_gradients():
    x = sg.placeholder(F, [])
    y = x * x
    assert run(sg.gradients(sg.stop_gradient(y) * x, x)[0], {x: 3.0}) == 9.0
    # TF1's documented example: a = 0, b = 2a; d(a + b)/d[a, b] with both stopped is [1, 1]
    a = sg.constant(0.0, dtype=F)
    b = 2 * a
    ga, gb = sg.gradients(a + b, [a, b], stop_gradients=[a, b])
    assert run([ga, gb]) == [1.0, 1.0]
    ga, = sg.gradients(a + b, [a])
    assert run(ga) == 3.0


def test_custom_gradient_replaces_the_body():
    @sg.custom_gradient
    def clip_grad_identity(x):
        return sg.identity(x), lambda dy: [sg.clip_by_value(dy, -1.0, 1.0)]

    x = sg.placeholder(F, [3])
    y = clip_grad_identity(x) * 10.0
    dx, = sg.gradients(y, x)
    np.testing.assert_allclose(run([y, dx], {x: [1.0, 2.0, 3.0]})[1], [1.0, 1.0, 1.0])


def test_register_gradient_with_override_map(fresh_graph):
    @sg.RegisterGradient("TimesThreeSquareGrad")
    def _grad(op, g):
        return [g * 3.0]

    x = sg.placeholder(F, [2])
    with fresh_graph.gradient_override_map({"Square": "TimesThreeSquareGrad"}):
        y = sg.square(x)
    plain = sg.square(x)
    dy, = sg.gradients(y, x)
    dp, = sg.gradients(plain, x)
    got = run([dy, dp], {x: [1.0, 2.0]})
    np.testing.assert_allclose(got[0], [3.0, 3.0])
    np.testing.assert_allclose(got[1], [2.0, 4.0])


def test_gradient_nodes_point_at_the_users_line(fresh_graph):
    """Nodes of the built-in rules point at the gradients() call; those a rule of the user's
    own makes point at the rule's lines."""
    import inspect
    here = inspect.currentframe()

    @sg.RegisterGradient("UsersExpGrad")
    def _grad(op, g):
        return [g * op.outputs[0] * 1.0]  # rule_line

    rule_line = here.f_lineno - 2
    x = sg.placeholder(F, [2])
    with fresh_graph.gradient_override_map({"Exp": "UsersExpGrad"}):
        y = sg.reduce_sum(sg.exp(sg.sin(x)))
    before = set(fresh_graph.get_operations())
    dx, = sg.gradients(y, x); grad_line = here.f_lineno  # noqa: E702
    made = [op for op in fresh_graph.get_operations() if op not in before]
    lines = {op.name: op.location for op in made}
    assert {loc[0] for loc in lines.values()} == {__file__}
    users = [n for n in lines if "Exp_grad/" in n]
    assert users and all(lines[n][1] == rule_line for n in users)
    assert all(loc[1] == grad_line for n, loc in lines.items() if n not in users)
    assert any("Sin_grad/" in n for n in lines)
    np.testing.assert_allclose(run(dx, {x: [0.5, -1.0]}),
                               np.exp(np.sin([0.5, -1.0])) * np.cos([0.5, -1.0]), rtol=1e-6)

    @sg.custom_gradient  # its grad_fn is the user's too (found by review)
    def triple(t):
        def grad_fn(dy):
            return dy * 3.0  # fn_line
        return t * 1.0, grad_fn

    fn_line = here.f_lineno - 3
    before = set(fresh_graph.get_operations())
    dt, = sg.gradients(sg.reduce_sum(triple(x)), x)
    made = [op for op in fresh_graph.get_operations() if op not in before]
    assert dt.op.type == "Mul" and dt.op.location == (__file__, fn_line)
    assert any(op.location[1] != fn_line for op in made)  # the built-in rules' nodes


def test_not_differentiable_and_missing_rules(fresh_graph):
    sg.NotDifferentiable("SquareIsFlat")

    @sg.RegisterGradient("WrongArity")
    def _wrong(op, g):
        return [g, g]

    @sg.RegisterGradient("WrongShape")
    def _wrong_shape(op, g):
        return [sg.reduce_sum(g)]

    x = sg.placeholder(F, [2, 3])
    with fresh_graph.gradient_override_map({"Square": "SquareIsFlat"}):
        flat = sg.square(x)
    assert sg.gradients(flat, x) == [None]
    with fresh_graph.gradient_override_map({"Exp": "WrongArity"}):
        bad = sg.exp(x)
    with pytest.raises(ValueError, match=r"Exp op .* returned 2 gradients for 1 inputs"):
        sg.gradients(bad, x)
    with fresh_graph.gradient_override_map({"Exp": "WrongShape"}):
        bad2 = sg.exp(x)
    with pytest.raises(ValueError, match=r"shape \(\) for input 0 of shape \(2, 3\)"):
        sg.gradients(bad2, x)
    with fresh_graph.gradient_override_map({"Exp": "NoSuchGradient"}):
        bad3 = sg.exp(x)
    with pytest.raises(LookupError, match="NoSuchGradient"):
        sg.gradients(bad3, x)


def test_unsupported_gradient_names_the_op():
    x = sg.placeholder(F, [3])
    y = sg.pad(x, [[1, 1]], mode="REFLECT")
    with pytest.raises(NotImplementedError, match=r"Pad .*REFLECT"):
        sg.gradients(y, x)


def test_hessians_and_jacobian_against_hand_derivatives():
    x = sg.placeholder(F, [3])
    y = sg.reduce_sum(x * x * x) + x[0] * x[1]
    h, = sg.hessians(y, x)
    xv = np.array([1.0, 2.0, -0.5])
    want = np.diag(6 * xv)
    want[0, 1] = want[1, 0] = 1.0
    np.testing.assert_allclose(run(h, {x: xv}), want)
    j = sg.jacobian(sg.sin(x) * 2.0, x)
    np.testing.assert_allclose(run(j, {x: xv}), np.diag(2 * np.cos(xv)))


def test_higher_order_derivatives():
    x = sg.placeholder(F, [])
    d = sg.sin(x)
    values = []
    for _ in range(4):
        d = sg.gradients(d, x)[0]
        values.append(d)
    got = run(values, {x: 0.7})
    np.testing.assert_allclose(got, [np.cos(0.7), -np.sin(0.7), -np.cos(0.7), np.sin(0.7)])


def test_gradients_of_a_variable_and_a_training_step():
    w = sg.Variable(np.array([0.0, 0.0]), name="w")
    x = sg.placeholder(F, [None, 2])
    t = sg.placeholder(F, [None])
    loss = sg.reduce_mean(sg.square(sg.reduce_sum(x * w, axis=1) - t))
    dw, = sg.gradients(loss, [w])
    step = sg.assign_sub(w, 0.1 * dw)
    xs = np.random.default_rng(1).normal(size=(64, 2))
    ts = xs @ np.array([2.0, -3.0])
    with sg.Session() as sess:
        sess.run(w.initializer)
        for _ in range(300):
            sess.run(step, {x: xs, t: ts})
        np.testing.assert_allclose(sess.run(w), [2.0, -3.0], atol=1e-6)


def test_twenty_thousand_op_chain_differentiates_without_recursion_limit():
    x = sg.placeholder(F, [4])
    y = x
    for i in range(20000):
        y = sg.sin(y) if i % 2 else y * 1.0001
    start = time.perf_counter()
    dx, = sg.gradients(y, x)
    assert time.perf_counter() - start < 60  # seconds (a generous bound: this is a CI box)
    assert dx.shape.as_list() == [4]


def test_gradient_nodes_are_named_under_the_gradients_scope():
    x = sg.placeholder(F, [2], name="x")
    with sg.name_scope("layer"):
        y = sg.exp(x)
    dx, = sg.gradients(y, x)
    assert dx.name.startswith("gradients/layer/Exp_grad/")
    dx2, = sg.gradients(y, x)
    assert dx2.name.startswith("gradients_1/")


def test_custom_gradient_with_a_variable_needs_the_variables_protocol():
    w = sg.Variable(np.array([2.0, 3.0]), name="w")

    @sg.custom_gradient
    def scale(t):
        def grad_fn(dy, variables=None):
            return [dy * w], [sg.reduce_sum(dy * t, axis=0)]
        return t * w, grad_fn

    x = sg.placeholder(F, [None, 2])
    loss = sg.reduce_sum(scale(x))
    dx, dw = sg.gradients(loss, [x, w])
    xv = np.array([[1.0, 1.0], [0.5, 2.0]])
    got = run([dx, dw], {x: xv})
    np.testing.assert_allclose(got[0], np.broadcast_to([2.0, 3.0], (2, 2)))
    np.testing.assert_allclose(got[1], xv.sum(axis=0))

    @sg.custom_gradient
    def forgets(t):
        return t * w, lambda dy: [dy * w]

    with pytest.raises(TypeError, match=r"uses the variables w:0.*`variables` keyword"):
        forgets(x)


def test_builtin_gradients_cannot_be_silently_replaced():
    with pytest.raises(KeyError, match="already registered"):
        sg.RegisterGradient("Sin")(lambda op, g: [g * 100.0])
    with pytest.raises(KeyError, match="already registered"):
        sg.NotDifferentiable("MatMul")
    x = sg.placeholder(F, [])
    assert run(sg.gradients(sg.sin(x), x)[0], {x: 0.0}) == 1.0


def test_assign_add_on_an_uninitialized_variable_is_a_failed_precondition():
    w = sg.Variable(1.0, name="counter")
    with pytest.raises(sg.errors.FailedPreconditionError, match="uninitialized value counter"):
        sg.Session().run(sg.assign_add(w, 1.0))


def test_pad_constant_values_may_be_a_constant_tensor():
    got = run(sg.pad(sg.ones([2]), [[1, 1]], constant_values=sg.constant(5.0)))
    np.testing.assert_array_equal(got, [5.0, 1.0, 1.0, 5.0])
    with pytest.raises(TypeError, match="constant_values"):
        sg.pad(sg.ones([2]), [[1, 1]], constant_values=sg.placeholder(sg.float32, []))


@pytest.mark.parametrize("make, want_sum_to", [
    (lambda x, b: x * b, False),                  # (?, 3) * (3,): x's ? is the output's ?
    (lambda x, b: sg.matmul(x, sg.ones([3, 2], F)), False),   # no batch dims to broadcast
    (lambda x, b: x * sg.placeholder(F, [None, 3]), True),    # either ? could be 1
    (lambda x, b: x + sg.reshape(b, [1, 3]), False),          # the other's dim is known 1
])
def test_sum_to_only_where_broadcasting_is_possible(fresh_graph, make, want_sum_to):
    x = sg.placeholder(F, [None, 3], name="x")
    b = sg.constant([1.0, 2.0, 3.0], dtype=F)
    dx, = sg.gradients(sg.reduce_sum(make(x, b)), x)
    assert dx.shape.as_list() == [None, 3]  # the static shape is kept
    assert (dx.op.type == "SumTo") == want_sum_to
    xv = np.arange(6.0).reshape(2, 3)
    with sg.Session() as sess:
        other = [op.outputs[0] for op in fresh_graph.get_operations()
                 if op.type == "Placeholder" and op.name != "x"]
        feed = {x: xv, **{p: np.ones((1, 3)) for p in other}}
        got = sess.run(dx, feed)
    assert got.shape == (2, 3)


def test_tile_gradient_with_an_unknown_dim():
    """The rule reshapes by (m0, d0, m1, d1); with d0 known only at run time it mixes ints
    and a shape tensor."""
    x = sg.placeholder(F, [None, 2])
    w = np.arange(1.0, 1.0 + 3 * 2 * 2 * 2).reshape(6, 4)  # weights on the (3*2, 2*2) tile
    dx, = sg.gradients(sg.reduce_sum(sg.tile(x, [3, 2]) * w), x)
    got = run(dx, {x: np.zeros((2, 2))})
    want = w.reshape(3, 2, 2, 2).sum(axis=(0, 2))  # each x[i, j] appears at (a*2+i, b*2+j)
    np.testing.assert_allclose(got, want)


def test_relu_gradient_reads_the_output_so_relu_can_overwrite_its_input():
    """TF1's rule: relu's gradient is g where relu(x) > 0, which is exactly where x > 0 (NaN
    and -0.0 give 0 either way). Reading the output frees the input once relu has run."""
    x = sg.placeholder(sg.float32, [None, 4], name="x")
    w = sg.Variable(np.ones((4, 3), np.float32), name="w")
    h = sg.nn.relu(sg.matmul(x, w) - 1.0)
    loss = sg.reduce_sum(h * h)
    train = sg.train.GradientDescentOptimizer(0.1).minimize(loss)
    (dx,) = sg.gradients(sg.reduce_sum(sg.nn.relu(x) * 3.0), [x])
    xv = np.random.default_rng(0).normal(size=(2048, 4)).astype(np.float32)  # 32 KB: planned
    xv[:2] = [[np.nan, -0.0, 0.0, 2.0], [-1.0, 1e-30, -1e-30, 5.0]]
    with sg.Session() as sess:
        sess.run(w.initializer)
        src = sess.source([loss, train], {x: xv})
        got = sess.run(dx, {x: xv})
    assert "np.maximum(Sub, 0, out=Sub)" in src, src
    np.testing.assert_array_equal(got, np.where(xv > 0, 3.0, 0.0).astype(np.float32))


def _needed_by(tensor) -> set:
    """The ops `tensor` is computed from (inputs and control inputs, transitively)."""
    seen, stack = set(), [tensor.op]
    while stack:
        op = stack.pop()
        if op not in seen:
            seen.add(op)
            stack.extend([t.op for t in op.inputs] + list(op.control_inputs))
    return seen


@pytest.mark.parametrize("make", [
    lambda x, c: x * c, lambda x, c: c * x, lambda x, c: x - c, lambda x, c: c - x,
    lambda x, c: x / c, lambda x, c: c / x, lambda x, c: x ** c, lambda x, c: x ** 2,
    lambda x, c: x % c, lambda x, c: sg.maximum(x, c), lambda x, c: sg.minimum(c, x),
    lambda x, c: sg.where(x > 1.0, x, c), lambda x, c: sg.where(x > 1.0, c, x),
    lambda x, c: sg.matmul(sg.reshape(c, [1, 3]), sg.reshape(x, [3, 1])),
    lambda x, c: sg.matmul(sg.reshape(x, [3, 1]), sg.reshape(c, [3, 1]), transpose_a=True),
    lambda x, c: sg.matmul(sg.reshape(c, [3, 1]), sg.reshape(x, [1, 3]), transpose_a=True,
                           transpose_b=True),
    lambda x, c: apply1("ClipByValue", [x, c, c + 1.0]),  # the raw op (the expand pass makes it)
    lambda x, c: apply1("ClipByValue", [c, x, c + 1.0]),  # x as a bound: the other bound's
    lambda x, c: apply1("ClipByValue", [c, c - 1.0, x]),  # comparison is not built either
])
def test_gradients_build_only_the_gradients_asked_for(make):
    """The rule of an op with a constant (or fed, not differentiated) operand makes no node
    for that operand's gradient: nodes the compiler would only prune. Values are checked
    against finite differences in tests/ops/test_gradients.py; here, that the graph has no
    dead ends."""
    graph = sg.Graph()
    with graph.as_default():
        x = sg.placeholder(sg.float32, [3], name="x")
        c = sg.constant([1.5, 2.0, 3.0], name="c")
        y = make(x, c)
        before = set(graph.get_operations())
        dx, = sg.gradients(y, [x])
    needed = _needed_by(dx)
    dead = [op.name for op in graph.get_operations() if op not in before and op not in needed]
    assert dead == []
    with sg.Session(graph=graph) as sess:  # and dx is still right: against a central difference
        xv = np.array([0.7, 1.3, 2.2], np.float32)
        got = sess.run(dx, {x: xv})
        eps = 1e-3
        want = [(sess.run(sg.reduce_sum(y), {x: xv + eps * e}) -
                 sess.run(sg.reduce_sum(y), {x: xv - eps * e})) / (2 * eps)
                for e in np.eye(3, dtype=np.float32)]
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


def test_a_users_rule_wrapping_a_builtin_one_gets_every_gradient(fresh_graph):
    """Built-in rules skip gradients nobody needs, but a user's rule is told nothing: one that
    calls the op's own rule and transforms each gradient it returns still gets them all."""
    x = sg.placeholder(F, [3], name="x")
    w = sg.constant([0.5, 2.0, -3.0], dtype=F)

    @sg.RegisterGradient("ClippedMulForTest")
    def _clipped(op, g):
        return [sg.clip_by_value(t, -1.0, 1.0) for t in op.opdef.grad(op, g)]

    with fresh_graph.gradient_override_map({"Mul": "ClippedMulForTest"}):
        y = x * w
    dx, = sg.gradients(y, [x])
    np.testing.assert_array_equal(sg.Session().run(dx, {x: np.ones(3, np.float32)}),
                                  [0.5, 1.0, -1.0])
