"""One table over the op registry: every differentiable op's first and second derivatives
against central finite differences, in float64, over shapes with broadcasting.

Adding a differentiable op without a row here fails `test_every_differentiable_op_has_a_row`.
"""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.ops.creation import apply, apply1
from staticgrad.ops.table import REGISTRY
from tests.conftest import dense_gradients
from tests.ops.test_vocabulary import gradient_rows

F = sg.float64
RNG = np.random.default_rng(0)


def pos(shape):
    return RNG.uniform(0.5, 2.0, shape)


def any_(shape):
    return RNG.uniform(-2.0, 2.0, shape)


def away0(shape):  # values away from kinks at 0 (relu, abs, max...)
    v = RNG.uniform(0.3, 2.0, shape)
    return v * RNG.choice([-1.0, 1.0], shape)


def off_bounds(shape):  # below -0.6, between, above 0.9: away from ClipByValue's kinks
    return RNG.choice([-1.5, -1.0, -0.3, 0.2, 0.5, 1.4], shape) + RNG.uniform(-0.05, 0.05, shape)


def unit(shape):
    return RNG.uniform(-0.8, 0.8, shape)


def distinct(shape):  # no ties (max/min/sort-like rules)
    n = int(np.prod(shape))
    return (RNG.permutation(n).reshape(shape) * 0.37 + 0.1).astype(np.float64)


# (op type, function of input tensors, input makers with shapes, second order?)
CASES = [
    ("Neg", lambda x: -x, [(any_, (2, 3))], True),
    ("Abs", sg.abs, [(away0, (2, 3))], True),
    ("Sign", sg.sign, [(away0, (3,))], True),
    ("Square", sg.square, [(any_, (2, 3))], True),
    ("Sqrt", sg.sqrt, [(pos, (2, 3))], True),
    ("Rsqrt", sg.rsqrt, [(pos, (2, 3))], True),
    ("Reciprocal", sg.reciprocal, [(pos, (4,))], True),
    ("Exp", sg.exp, [(any_, (2, 3))], True),
    ("Expm1", sg.expm1, [(any_, (2, 3))], True),
    ("Log", sg.log, [(pos, (2, 3))], True),
    ("Log1p", sg.log1p, [(pos, (2, 3))], True),
    ("Sin", sg.sin, [(any_, (2, 3))], True),
    ("Cos", sg.cos, [(any_, (2, 3))], True),
    ("Tan", sg.tan, [(unit, (2, 3))], True),
    ("Tanh", sg.tanh, [(any_, (2, 3))], True),
    ("Sigmoid", sg.sigmoid, [(any_, (2, 3))], True),
    ("Softplus", sg.nn.softplus, [(any_, (2, 3))], True),
    ("Erf", sg.erf, [(any_, (2, 3))], True),
    ("Relu", sg.nn.relu, [(away0, (2, 3))], True),
    ("ReluGrad", lambda x: sg.square(sg.nn.relu(x)), [(away0, (2, 3))], True),
    # the activation gradients of two free inputs (y, dy), and as tanh's and sigmoid's
    # gradients: their own rules give the second and third derivatives
    ("TanhGrad", lambda y, dy: apply1("TanhGrad", [y, dy]), [(unit, (2, 3)), (any_, (2, 3))],
     True),
    ("TanhGrad", lambda x: sg.square(sg.tanh(x)), [(any_, (2, 3))], True),
    ("SigmoidGrad", lambda y, dy: apply1("SigmoidGrad", [y, dy]),
     [(unit, (2, 3)), (any_, (2, 3))], True),
    ("SigmoidGrad", lambda x: sg.square(sg.sigmoid(x)), [(any_, (2, 3))], True),
    ("Relu6", sg.nn.relu6, [(lambda s: away0(s) * 4, (3, 4))], True),
    ("Elu", sg.nn.elu, [(away0, (2, 3))], True),
    ("LeakyRelu", lambda x: sg.nn.leaky_relu(x, 0.1), [(away0, (2, 3))], True),
    ("Floor", sg.floor, [(lambda s: any_(s) + 0.01, (3,))], True),
    ("Identity", sg.identity, [(any_, (2, 3))], True),
    ("CheckNumerics", lambda x: sg.check_numerics(x * x, "m"), [(any_, (2, 3))], True),
    # float32 rounding needs a wider finite-difference step (see TOLERANCES)
    ("Cast", lambda x: sg.cast(sg.cast(x, sg.float32), sg.float64), [(any_, (3,))], False),
    ("Add", sg.add, [(any_, (2, 3)), (any_, (3,))], True),
    ("Sub", sg.subtract, [(any_, (2, 1)), (any_, (1, 3))], True),
    ("Mul", sg.multiply, [(any_, (2, 3)), (any_, (2, 1))], True),
    ("RealDiv", sg.truediv, [(any_, (2, 3)), (pos, (3,))], True),
    ("FloorMod", sg.mod, [(lambda s: pos(s) * 3 + 0.05, (2, 3)), (lambda s: np.full(s, 0.7),
                                                                    (3,))], True),
    ("Pow", sg.pow, [(pos, (2, 3)), (any_, (3,))], True),
    ("Maximum", sg.maximum, [(distinct, (2, 3)), (lambda s: distinct(s) + 0.05, (2, 3))], True),
    ("Minimum", sg.minimum, [(distinct, (2, 3)), (lambda s: distinct(s) + 0.05, (3,))], True),
    ("Select", lambda x, y: sg.where(x > y, x * y, y - x), [(any_, (2, 3)), (any_, (3,))], True),
    ("AddN", lambda x, y, z: sg.add_n([x, y, z]), [(any_, (2, 3))] * 3, True),
    ("ClipByValue", lambda t, lo, hi: apply1("ClipByValue", [t, lo, hi]),
     [(off_bounds, (3, 4)), (lambda s: np.full(s, -0.6), ()), (lambda s: np.full(s, 0.9), ())],
     True),
    ("MatMul", sg.matmul, [(any_, (2, 3)), (any_, (3, 4))], True),
    ("MatMul", lambda a, b: sg.matmul(a, b, transpose_a=True), [(any_, (3, 2)), (any_, (3, 4))],
     True),
    ("MatMul", lambda a, b: sg.matmul(a, b, transpose_b=True), [(any_, (2, 3)), (any_, (4, 3))],
     True),
    ("MatMul", lambda a, b: sg.matmul(a, b, transpose_a=True, transpose_b=True),
     [(any_, (3, 2)), (any_, (4, 3))], True),
    ("MatMul", sg.matmul, [(any_, (2, 2, 3)), (any_, (3, 2))], True),
    ("Sum", lambda x: sg.reduce_sum(x, axis=1), [(any_, (2, 3, 2))], True),
    ("Sum", lambda x: sg.reduce_sum(x, axis=[0, 2], keepdims=True), [(any_, (2, 3, 2))], True),
    ("Sum", sg.reduce_sum, [(any_, (2, 3))], True),
    ("Mean", lambda x: sg.reduce_mean(x, axis=-1), [(any_, (2, 3))], True),
    ("Mean", sg.reduce_mean, [(any_, (2, 3))], True),
    ("Max", lambda x: sg.reduce_max(x, axis=1), [(distinct, (3, 4))], True),
    ("Min", lambda x: sg.reduce_min(x, axis=0, keepdims=True), [(distinct, (3, 4))], True),
    ("Prod", lambda x: sg.reduce_prod(x, axis=1), [(pos, (2, 3))], True),
    ("Prod", sg.reduce_prod, [(away0, (2, 2))], True),
    ("Reshape", lambda x: sg.reshape(x, [3, -1]), [(any_, (2, 3))], True),
    ("Transpose", lambda x: sg.transpose(x, [2, 0, 1]), [(any_, (2, 3, 2))], True),
    ("Transpose", sg.transpose, [(any_, (2, 3))], True),
    ("ExpandDims", lambda x: sg.expand_dims(x, 1), [(any_, (2, 3))], True),
    ("Squeeze", lambda x: sg.squeeze(x, [1]), [(any_, (2, 1, 3))], True),
    ("BroadcastTo", lambda x: sg.broadcast_to(x, [2, 3, 3]), [(any_, (3, 1))], True),
    ("SumTo", lambda x: sg.ops.array_ops.sum_to(x, [1, 3]), [(any_, (2, 2, 3))], True),
    ("Fill", lambda x: sg.fill([2, 3], x), [(any_, ())], True),
    ("ConcatV2", lambda x, y: sg.concat([x, y], axis=1), [(any_, (2, 3)), (any_, (2, 2))], True),
    ("Pack", lambda x, y: sg.stack([x, y], axis=1), [(any_, (2, 3)), (any_, (2, 3))], True),
    ("Unpack", lambda x: sg.unstack(x, axis=1)[0] * sg.unstack(x, axis=1)[2],
     [(any_, (2, 3))], True),
    ("Split", lambda x: sg.split(x, [1, 2], axis=1)[1], [(any_, (2, 3))], True),
    ("Tile", lambda x: sg.tile(x, [2, 3]), [(any_, (2, 2))], True),
    ("Pad", lambda x: sg.pad(x, [[1, 0], [0, 2]]), [(any_, (2, 3))], True),
    ("Slice", lambda x: sg.slice(x, [0, 1], [2, -1]), [(any_, (3, 3))], True),
    ("StridedSlice", lambda x: x[::-1, 1:, None], [(any_, (3, 4))], True),
    ("StridedSlice", lambda x: x[1, ..., ::2], [(any_, (3, 2, 4))], True),
    ("StridedSliceGrad", lambda x: sg.square(x[1:]), [(any_, (3, 2))], True),
    ("GatherV2", lambda x: sg.gather(x, [2, 0, 2], axis=1), [(any_, (2, 3))], True),
    ("GatherGrad", lambda x: sg.square(sg.gather(x, [1, 1, 0])), [(any_, (3, 2))], True),
    ("Softmax", sg.nn.softmax, [(any_, (2, 4))], True),
    ("LogSoftmax", lambda x: sg.nn.log_softmax(x, axis=0), [(any_, (3, 2))], True),
    ("SoftmaxCrossEntropyWithLogits",
     lambda lab, x: sg.nn.softmax_cross_entropy_with_logits_v2(labels=lab, logits=x),
     [(lambda s: RNG.dirichlet(np.ones(s[-1]), s[0]), (2, 4)), (any_, (2, 4))], True),
    ("SparseSoftmaxCrossEntropyWithLogits",
     lambda x: sg.nn.sparse_softmax_cross_entropy_with_logits(labels=[2, 0, 3], logits=x),
     [(any_, (3, 4))], True),
    ("PlaceholderWithDefault", lambda x: sg.placeholder_with_default(x, [2, 3]) * 2.0,
     [(any_, (2, 3))], True),
    ("CustomGradient", lambda x: _clipped_identity(x), [(any_, (3,))], False),
    ("Conv2D", lambda x, w: sg.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
     [(any_, (2, 4, 4, 2)), (any_, (3, 3, 2, 2))], True),
    ("Conv2D", lambda x, w: sg.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"),
     [(any_, (1, 5, 5, 2)), (any_, (2, 2, 2, 3))], True),
    ("Conv2D", lambda x, w: sg.nn.conv2d(x, w, 1, "VALID", dilations=2),
     [(any_, (1, 5, 6, 1)), (any_, (2, 2, 1, 2))], True),
    ("Conv2D", lambda x, w: sg.nn.conv2d(x, w, [2, 1], "SAME", dilations=[1, 2]),
     [(any_, (2, 5, 4, 1)), (any_, (3, 2, 1, 2))], True),
    ("Conv2DBackpropInput",
     lambda w, dy: sg.nn.conv2d_backprop_input([1, 5, 5, 2], w, dy, [1, 2, 2, 1], "SAME"),
     [(any_, (3, 3, 2, 3)), (any_, (1, 3, 3, 3))], True),
    ("Conv2DBackpropFilter",
     lambda x, dy: sg.nn.conv2d_backprop_filter(x, [3, 3, 2, 3], dy, [1, 2, 2, 1], "SAME"),
     [(any_, (1, 5, 5, 2)), (any_, (1, 3, 3, 3))], True),
    ("MaxPool", lambda x: sg.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"),
     [(distinct, (1, 5, 5, 2))], True),
    ("MaxPool", lambda x: sg.nn.max_pool(x, 3, 1, "VALID"), [(distinct, (2, 4, 4, 1))], True),
    ("MaxPoolGrad",  # its incoming gradient depends on x, so MaxPoolGrad's own rule is checked
     lambda x: sg.ops.conv_ops.max_pool_grad(x, sg.nn.max_pool(x, 3, 2, "SAME"),
                                             sg.square(x[:, ::2, ::2]), 3, 2, "SAME"),
     [(distinct, (1, 5, 5, 2))], True),
    ("MaxPoolGradGrad",
     lambda x: sg.ops.conv_ops.max_pool_grad_grad(x, sg.nn.max_pool(x, 3, 2, "SAME"),
                                                  sg.square(x), 3, 2, "SAME"),
     [(distinct, (1, 5, 5, 2))], True),
    ("AvgPool", lambda x: sg.nn.avg_pool(x, 3, 2, "SAME"), [(any_, (1, 5, 5, 2))], True),
    ("AvgPool", lambda x: sg.nn.avg_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
     [(any_, (2, 4, 4, 1))], True),
    ("AvgPoolGrad",
     lambda g: sg.ops.conv_ops.avg_pool_grad([1, 5, 5, 2], sg.square(g), 3, 2, "SAME"),
     [(any_, (1, 3, 3, 2))], True),
]

# cond: the taken branch's gradient, each branch taken by one row (x . x is positive); the
# captured y reaches both branches, x a nested cond in the first
CASES += [
    ("If", lambda x, y: sg.cond(sg.reduce_sum(x * x) > 0,
                                lambda: sg.sin(x) * y + sg.cond(sg.reduce_sum(y) > 100.0,
                                                                lambda: x, lambda: x * x),
                                lambda: x * y), [(any_, (2, 3)), (any_, (3,))], True),
    ("If", lambda x, y: sg.cond(sg.reduce_sum(x * x) < 0, lambda: x + y,
                                lambda: {"a": sg.exp(x) * y, "b": x}["a"]),
     [(any_, (2, 3)), (any_, (3,))], True),
]

# while_loop: gradients through every iteration run, of the loop variables' first values and
# of captured tensors (summed over iterations); a fixed count, a count the values decide, and
# nested structures with maximum_iterations and a cond in the body: second order there (the
# WhileGrad's own gradient, through the loop written as a Scan of maximum_iterations steps),
# refused without it (test_second_derivatives_need_maximum_iterations). The WhileGrad row
# checks that gradient as a function's first derivative, and its own (third order) second.
CASES += [
    ("While", lambda x, y: sg.while_loop(lambda i, s: i < 3,
                                         lambda i, s: (i + 1, sg.sin(s) * y + x),
                                         (0, x))[1], [(any_, (2, 3)), (any_, (3,))], False),
    ("While", lambda x: sg.while_loop(lambda s: sg.reduce_sum(s * s) < 40.0,
                                      lambda s: s * 1.3 + 0.1, [x]), [(unit, (4,))], False),
    ("While", lambda x, y: sg.while_loop(
        lambda st: sg.reduce_sum(st["a"]) < 1e9,
        lambda st: {"a": sg.cond(sg.reduce_sum(st["a"]) > 0, lambda: st["a"] * y,
                                 lambda: st["a"] - y),
                    "b": (st["b"][0] + sg.tanh(st["a"]),)},
        {"a": x, "b": (x * 0.5,)}, maximum_iterations=4)["b"][0],
     [(any_, (2, 2)), (pos, (2,))], True),
    ("WhileGrad", lambda x, y: sg.gradients(sg.reduce_sum(sg.while_loop(
        lambda s: sg.reduce_sum(s * s) < 20.0, lambda s: sg.sin(s) * y + s * 1.2, [x],
        maximum_iterations=5) ** 2), [x])[0], [(unit, (3,)), (any_, (3,))], True),
]

# scan and its kin: the Scan op's gradient is a Scan over the rows in reverse, so second
# derivatives come from the same rule; a carried value with a captured tensor, a fold from
# the right, and map_fn's outputs with no carried value
CASES += [
    ("Scan", lambda x, y: sg.scan(lambda a, r: sg.sin(a) * y + r, x),
     [(any_, (4, 3)), (any_, (3,))], True),
    ("Scan", lambda x, y: sg.foldr(lambda a, r: a * r + sg.tanh(r) * y, x,
                                   initializer=y * 0.5), [(any_, (3, 2)), (any_, (2,))], True),
    ("Scan", lambda x: sg.map_fn(lambda r: {"s": sg.exp(r["a"]) * r["b"]},
                                 {"a": x, "b": x * x})["s"], [(any_, (3, 2))], True),
]


def _write_grads(x, y):
    """TensorArrayWriteGrad with an incoming gradient that depends on x (so that its own rule
    is checked), y the buffer written into (read for its rows), index 1."""
    d_flow, d_value = apply("TensorArrayWriteGrad",
                            [sg.square(x) * y, y, sg.constant(1, dtype=sg.int32)],
                            {"grow": False})
    return d_flow * x + sg.reduce_sum(d_value * d_value)


# running sums and products, each way
CASES += [
    ("Cumsum", lambda x: sg.cumsum(x, axis=1), [(any_, (3, 4))], True),
    ("Cumsum", lambda x: sg.cumsum(x * x, axis=0, exclusive=True, reverse=True),
     [(any_, (3, 4))], True),
    ("Cumprod", lambda x: sg.cumprod(x, axis=-1), [(away0, (2, 4))], True),
    ("Cumprod", lambda x: sg.cumprod(x, exclusive=True, reverse=True), [(away0, (4, 2))], True),
]

# Print passes its input (and its gradient) through
CASES += [
    ("Print", lambda x: sg.Print(x * x, [x], "x: ", summarize=1) * 3.0, [(any_, (2, 3))], True),
]

# einsum: a matmul, a batched dot, a sum (a letter only one operand has), three operands
CASES += [
    ("Einsum", lambda x, y: sg.einsum("ij,jk->ik", x, y), [(any_, (2, 3)), (any_, (3, 4))],
     True),
    ("Einsum", lambda x, y: sg.einsum("bi,bi->b", x * x, y), [(any_, (3, 2)), (any_, (3, 2))],
     True),
    ("Einsum", lambda x: sg.einsum("ijk->j", sg.sin(x)), [(any_, (2, 3, 2))], True),
    ("Einsum", lambda x, y: sg.einsum("ab,bc,ca", x, y, x[:, :2] * 2.0),
     [(any_, (2, 3)), (any_, (3, 2))], True),
]

# slices picked and placed by index vectors (each the other's gradient)
CASES += [
    ("GatherNd", lambda x: sg.gather_nd(x, [[0, 1], [2, 0], [0, 1]]), [(any_, (3, 2, 2))], True),
    ("ScatterNd", lambda x: sg.scatter_nd([[1], [3], [1]], x * x, [5, 2]),
     [(any_, (3, 2))], True),
]

# the k largest values (their gradient goes back to where they came from)
CASES += [
    ("TopKV2", lambda x: sg.nn.top_k(x, 2).values * x[:, :2], [(distinct, (3, 4))], True),
    ("TopKV2", lambda x: sg.sort(x * x, axis=0), [(distinct, (3, 2))], True),
]

# a TensorArray's write, into an array of a size and into one that grows (dynamic_size)
CASES += [
    ("TensorArrayWrite", lambda x, y: sg.TensorArray(F, size=3).unstack(x).write(
        1, sg.sin(y) * x[0]).stack(), [(any_, (3, 2)), (any_, (2,))], True),
    ("TensorArrayWrite", lambda x, y: sg.TensorArray(F, size=1, dynamic_size=True).unstack(
        x).write(3, y * x[0]).stack(), [(any_, (1, 2)), (any_, (2,))], True),
    ("TensorArrayWriteGrad", _write_grads, [(any_, (3, 2)), (any_, (3, 2))], True),
]


@sg.custom_gradient
def _clipped_identity(x):
    return sg.identity(x) * 2.0, lambda dy: [dy * 2.0]


# Differentiable op types reached only through other rows' gradient graphs (never built
# directly by users) are still listed in CASES above; none is exempt.
EXEMPT: set[str] = set()


# and a row for each op that the op vocabulary offers with gradient inputs in its one test
# row (tests/ops/test_vocabulary.py's REFERENCES)
CASES += gradient_rows()

TOLERANCES = {"Cast": dict(eps=1e-2, rtol=1e-4, atol=1e-5)}


def _case_id(case):
    op_type, _, makers, _ = case
    return f"{op_type}-" + "x".join(str(list(shape)) for _, shape in makers)


def _build(case):
    op_type, fn, makers, _ = case
    g = sg.Graph()
    with g.as_default():
        values = [make(shape).astype(np.float64) for make, shape in makers]
        xs = [sg.placeholder(F, v.shape, name=f"x{i}") for i, v in enumerate(values)]
        y = fn(*xs)
        weights = RNG.uniform(0.5, 1.5, y.shape.as_list())
        loss = sg.reduce_sum(y * weights)
        types = {op.type for op in g.get_operations()}
    return g, xs, values, loss, types


def _numeric_grad(f, values, i, eps=1e-6):
    v = values[i]
    grad = np.zeros_like(v)
    for idx in np.ndindex(*v.shape):
        plus = [a.copy() for a in values]
        minus = [a.copy() for a in values]
        plus[i][idx] += eps
        minus[i][idx] -= eps
        grad[idx] = (f(plus) - f(minus)) / (2 * eps)
    return grad


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_first_and_second_derivatives(case):
    op_type, _, _, second = case
    g, xs, values, loss, types = _build(case)
    with g.as_default():
        assert op_type in types or op_type in _grad_only_types(g), \
            f"row for {op_type} does not build a {op_type} op"
        grads = dense_gradients(loss, xs)
        sess = sg.Session(graph=g)
        run_loss = sess.make_callable(loss, xs)
        run_grads = sess.make_callable(grads, xs)
        got = run_grads(*values)
        tol = TOLERANCES.get(op_type, dict(eps=1e-6, rtol=1e-5, atol=1e-6))
        for i in range(len(xs)):
            want = _numeric_grad(lambda v: float(run_loss(*v)), values, i, tol["eps"])
            np.testing.assert_allclose(got[i], want, rtol=tol["rtol"], atol=tol["atol"],
                                       err_msg=f"{op_type}: d loss / d x{i}")
            assert got[i].shape == values[i].shape and got[i].dtype == np.float64
        if not second:
            return
        # Second order: d/dx (sum of v_i * grad_i) against differences of the first gradient.
        vs = [RNG.uniform(0.5, 1.5, v.shape) for v in values]
        inner = sg.add_n([sg.reduce_sum(gr * v) for gr, v in zip(grads, vs)])
        second_grads = dense_gradients(inner, xs, unconnected_gradients="zero")
        run_inner = sess.make_callable(inner, xs)
        got2 = sess.make_callable(second_grads, xs)(*values)
        for i in range(len(xs)):
            want = _numeric_grad(lambda v: float(run_inner(*v)), values, i)
            np.testing.assert_allclose(got2[i], want, rtol=1e-4, atol=1e-5,
                                       err_msg=f"{op_type}: second derivative wrt x{i}")


def _grad_only_types(g):
    """Op types that appear once gradients are taken (e.g. StridedSliceGrad)."""
    xs = [op.outputs[0] for op in g.get_operations() if op.type == "Placeholder"]
    loss = g.get_operations()[-1].outputs[0]
    with g.as_default():
        dense_gradients(loss, xs)
    return {op.type for op in g.get_operations()}


def test_every_differentiable_op_has_a_row():
    covered = {c[0] for c in CASES} | EXEMPT
    differentiable = {name for name, d in REGISTRY.items() if d.differentiable and d.grad}
    missing = sorted(differentiable - covered)
    assert not missing, f"differentiable ops without a finite-difference row: {missing}"


def test_second_derivatives_need_maximum_iterations():
    x = sg.placeholder(F, [3])
    y = sg.while_loop(lambda s: sg.reduce_sum(s) < 10.0, lambda s: s * 1.5, [x])
    (dx,) = sg.gradients(sg.reduce_sum(y * y), [x])
    with pytest.raises(LookupError, match=r"second derivatives through a while_loop need "
                                          r"maximum_iterations given as a number: WhileGrad op "
                                          r".* created at \S*test_gradients.py:\d+"):
        sg.gradients(sg.reduce_sum(dx), [x])


def test_non_differentiable_ops_give_none():
    x = sg.placeholder(F, [3])
    for y in (sg.cast(sg.argmax(x), F), sg.cast(x > 0, F), sg.cast(sg.cast(x, sg.int32), F),
              sg.stop_gradient(x) * 2.0,
              sg.reduce_sum(sg.one_hot(sg.cast(x, sg.int32), 3, dtype=F))):
        assert sg.gradients(y, x) == [None]


def test_gradient_graph_grows_linearly():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(F, [4])
        y = x
        n = 200
        for i in range(n):
            y = sg.sin(y) * 1.01 if i % 2 else sg.tanh(y) + 0.5
        before = len(g.get_operations())
        sg.gradients(y, x)
        added = len(g.get_operations()) - before
    assert added <= 6 * (before - 1), (added, before)


def test_sigmoid_cross_entropy_gradient_at_zero_logits():
    """At logits == 0 (zero-initialised weights) the gradient is sigmoid(0) - labels."""
    x = sg.placeholder(F, [4])
    z = sg.constant([0.0, 1.0, 0.25, 1.0], dtype=F)
    loss = sg.reduce_sum(sg.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x))
    dx, = sg.gradients(loss, x)
    got = sg.Session().run(dx, {x: np.zeros(4)})
    np.testing.assert_allclose(got, 0.5 - np.array([0.0, 1.0, 0.25, 1.0]))


def test_sparse_cross_entropy_rejects_out_of_range_labels():
    logits = sg.placeholder(F, [2, 3])
    labels = sg.placeholder(sg.int32, [2])
    loss = sg.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    with pytest.raises(sg.errors.InvalidArgumentError, match="label value of 7"):
        sg.Session().run(loss, {logits: np.zeros((2, 3)), labels: [0, 7]})


@pytest.mark.parametrize("disable", [(), ("fuse",), ("fuse", "memory"), ("simplify",)])
def test_tanh_and_sigmoid_gradients_are_bit_for_bit_the_three_step_products(disable):
    """TanhGrad and SigmoidGrad compute dy * (1 - y*y) and dy * (y * (1 - y)) in NumPy's own
    float32 steps, in every plan: fused blocks and out= buffers (their out= forms compute in
    out, never the buffer of an input read after it: the NumPy backend's READS_AFTER_OUT),
    plain lines, and the sum's seed simplified away or multiplied in."""
    n = 200_003  # large: fused in blocks, buffers reused
    x = sg.placeholder(sg.float32, [n], name="x")
    t = sg.tanh(x * 0.75)
    s = sg.sigmoid(t * 1.5)
    loss = sg.reduce_sum(s * t)
    (dx,) = sg.gradients(loss, [x])
    (dt,) = sg.gradients(sg.reduce_sum(sg.tanh(t)), [t])  # a seed of ones into TanhGrad
    xv = np.random.default_rng(1).normal(size=n).astype(np.float32)
    f32 = np.float32
    tv = np.tanh(xv * f32(0.75))
    sv = f32(1) / (f32(1) + np.exp(-(tv * f32(1.5))))
    # (NumPy's ufuncs: runtime_fast's tanh, where the [fast] extra works, agrees to ulps only)
    options = sg.CompileOptions(disable=frozenset(disable), vector_math=False)
    with sg.Session(options=options) as sess:
        got_s, got_dx, got_dt = sess.run([s, dx, dt], {x: xv})
    np.testing.assert_allclose(got_s, sv, rtol=1e-6)
    sv = got_s  # (rt.sigmoid's own float32 steps)
    ds = tv * (sv * (1 - sv))              # d loss / d (t * 1.5), through s
    want_dt = (sv + ds * f32(1.5)) * (1 - np.square(tv))
    np.testing.assert_array_equal(got_dx, want_dt * f32(0.75))
    np.testing.assert_array_equal(got_dt, 1 - np.square(np.tanh(tv)))
