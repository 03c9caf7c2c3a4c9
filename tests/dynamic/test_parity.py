"""One source of truth: every op of the registry run in both modes on the same inputs.

For each row of CASES in tests/ops/test_gradients.py (one per differentiable op), the very
same function of graph-API calls is run on placeholders in a Session and on dynamic tensors
(under dy.eager_mode()); the values, the dynamic gradients (by grad() and by backward()) and the
static `sg.gradients` must agree, and so must the second derivatives (create_graph=True
against gradients of gradients). Non-differentiable ops have rows below, random ops a check
of their draws, and state ops must refuse to run dynamically. A registry op with no row fails
`test_every_registry_op_has_a_parity_row`.
"""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy
from staticgrad.dynamic.tape import AccumulateGrad
from staticgrad.ops import vocabulary
from staticgrad.ops.table import REGISTRY
from tests.conftest import dense_gradients
from tests.ops.test_gradients import CASES, RNG, any_, pos

F = sg.float64
RTOL, ATOL = 1e-9, 1e-12  # the same kernels; the compiler may reassociate a little


def _case_id(case):
    op_type, _, makers, _ = case
    return f"{op_type}-" + "x".join(str(list(shape)) for _, shape in makers)


def _tape_types(tensors) -> set:
    """The op types of every node on the tape behind `tensors`."""
    seen, stack = set(), [t.grad_fn for t in tensors if t is not None and t.grad_fn]
    while stack:
        node = stack.pop()
        if node in seen or isinstance(node, AccumulateGrad):
            continue
        seen.add(node)
        stack.extend(fn for fn, _ in node.next_functions if fn is not None)
    return {node.type for node in seen}


def _static(fn, values, weights, vs):
    g = sg.Graph()
    with g.as_default():
        xs = [sg.placeholder(F, v.shape, name=f"x{i}") for i, v in enumerate(values)]
        y = fn(*xs)
        loss = sg.reduce_sum(y * weights)
        grads = dense_gradients(loss, xs)
        fetches = {"y": y, "grads": [gr for gr in grads if gr is not None]}
        if vs is not None:
            inner = sg.add_n([sg.reduce_sum(gr * v) for gr, v in zip(grads, vs)
                              if gr is not None])
            fetches["second"] = dense_gradients(inner, xs, unconnected_gradients="zero")
        out = sg.Session(graph=g).run(fetches, dict(zip(xs, values)))
    got = iter(out["grads"])
    out["grads"] = [None if gr is None else next(got) for gr in grads]
    return out


# Rows whose function itself calls sg.gradients (the WhileGrad row: a while_loop's gradient as
# a function), which the dynamic mode spells dy.grad: its while_loop rows compare the rest.
_CALL_GRADIENTS = {"WhileGrad"}
_PARITY = [c for c in CASES if c[0] not in _CALL_GRADIENTS]


@pytest.mark.parametrize("case", _PARITY, ids=[_case_id(c) for c in _PARITY])
def test_values_and_gradients_agree(case):
    op_type, fn, makers, second = case
    values = [make(shape).astype(np.float64) for make, shape in makers]
    xs = [dy.tensor(v, requires_grad=True) for v in values]
    with dy.eager_mode():
        y = fn(*xs)
    weights = RNG.uniform(0.5, 1.5, tuple(y.shape))
    vs = [RNG.uniform(0.5, 1.5, v.shape) for v in values] if second else None
    want = _static(fn, values, weights, vs)

    np.testing.assert_allclose(y.detach().numpy(), want["y"], RTOL, ATOL,
                               err_msg=f"{op_type}: values")
    loss = (y * weights).sum()
    loss.backward(retain_graph=True)
    grads = dy.grad(loss, xs, create_graph=second, allow_unused=True)
    types = _tape_types([y]) | _tape_types(grads)
    if op_type not in PYTHON_CONTROL_FLOW | PRINTS:  # (the dynamic mode runs Python's own if,
        #                                                and prints at once)
        assert op_type in types, f"row for {op_type} runs no {op_type} op dynamically: {types}"
    for i, (x, got, static) in enumerate(zip(xs, grads, want["grads"])):
        assert (got is None) == (static is None), f"{op_type}: gradient {i} is {got}"
        if got is None:
            continue
        assert got.dtype is sg.float64 and got.shape == x.shape
        np.testing.assert_allclose(got.detach().numpy(), static, RTOL, ATOL,
                                   err_msg=f"{op_type}: grad() wrt x{i} vs sg.gradients")
        np.testing.assert_allclose(x.grad.numpy(), static, RTOL, ATOL,
                                   err_msg=f"{op_type}: backward() wrt x{i} vs sg.gradients")
    if not second:
        return
    inner = sum((gr * dy.tensor(v)).sum() for gr, v in zip(grads, vs) if gr is not None)
    if isinstance(inner, dy.Tensor) and inner.requires_grad:
        second_grads = dy.grad(inner, xs, allow_unused=True)
    else:  # the gradient does not depend on the inputs (a linear op)
        second_grads = [None] * len(xs)
    for i, (x, got, static) in enumerate(zip(xs, second_grads, want["second"])):
        got = np.zeros(x.shape) if got is None else got.numpy()
        np.testing.assert_allclose(got, static, 1e-8, 1e-10,
                                   err_msg=f"{op_type}: second derivative wrt x{i}")


# Ops the dynamic mode has no node for: it runs Python's control flow itself (sg.cond calls
# the taken branch's function, sg.while_loop and sg.scan loop in Python, and the tape differentiates
# what ran), so its rows compare values and gradients with no such node.
PYTHON_CONTROL_FLOW = {"If", "While", "WhileGrad", "Scan"}


def ints(shape):
    return RNG.integers(0, 3, shape).astype(np.float64)


# Ops with no gradient: (op type, function of the inputs, input makers); values must agree,
# and gradients too where some flow (StopGradient stops them).
NONDIFF_CASES = [
    ("Unique", lambda x: sg.cast(sg.unique(sg.cast(x, sg.int32))[1], F) * x, [(ints, (6,))]),
    ("All", lambda x: sg.reduce_all(x > 0, axis=1), [(any_, (3, 4))]),
    ("Any", lambda x: sg.reduce_any(x > 1, axis=0, keepdims=True), [(any_, (3, 4))]),
    ("ArgMax", lambda x: sg.argmax(x, axis=1), [(any_, (3, 4))]),
    ("ArgMin", lambda x: sg.argmin(x, axis=0), [(any_, (3, 4))]),
    ("Const", lambda x: x * sg.constant([1.0, 2.0, 3.0], dtype=F), [(any_, (2, 3))]),
    ("Equal", lambda x, y: sg.equal(x, y), [(ints, (3, 4)), (ints, (4,))]),
    ("NotEqual", lambda x, y: sg.not_equal(x, y), [(ints, (3, 4)), (ints, (4,))]),
    ("Greater", lambda x, y: x > y, [(any_, (3, 4)), (any_, (4,))]),
    ("GreaterEqual", lambda x, y: x >= y, [(ints, (3, 4)), (ints, (3, 4))]),
    ("Less", lambda x, y: x < y, [(any_, (3, 4)), (any_, (3, 1))]),
    ("LessEqual", lambda x, y: x <= y, [(ints, (3, 4)), (ints, (4,))]),
    ("LogicalAnd", lambda x, y: sg.logical_and(x > 0, y > 0), [(any_, (3, 4)), (any_, (4,))]),
    ("LogicalOr", lambda x, y: sg.logical_or(x > 0, y > 0), [(any_, (3, 4)), (any_, (4,))]),
    ("LogicalNot", lambda x: sg.logical_not(x > 0), [(any_, (3, 4))]),
    ("FloorDiv", lambda x, y: sg.floordiv(x, y), [(any_, (3, 4)), (pos, (4,))]),
    ("Eye", lambda x: sg.eye(3, 4, dtype=F) * x, [(any_, (3, 4))]),
    ("LinSpace", lambda x: sg.cast(sg.linspace(-1.0, 2.0, 7), F) + x, [(any_, (7,))]),
    ("Range", lambda x: sg.cast(sg.range(1, 8, 2), F) * x, [(any_, (4,))]),
    ("OneHot", lambda x: sg.one_hot(sg.cast(x, sg.int32), 3, dtype=F), [(ints, (4,))]),
    ("OnesLike", lambda x: sg.ones_like(x) + x, [(any_, (2, 3))]),
    ("ZerosLike", lambda x: sg.zeros_like(x, dtype=sg.int32), [(any_, (2, 3))]),
    ("Shape", lambda x: sg.shape(x), [(any_, (2, 3, 1))]),
    ("Size", lambda x: sg.size(x, out_type=sg.int64), [(any_, (2, 3))]),
    ("Rank", lambda x: sg.rank(x), [(any_, (2, 3))]),
    ("StopGradient", lambda x: sg.stop_gradient(x * x) * x, [(any_, (2, 3))]),
    ("Where", lambda x: sg.where(x > 0), [(any_, (3, 4))]),
]


@pytest.mark.parametrize("case", NONDIFF_CASES, ids=[c[0] for c in NONDIFF_CASES])
def test_non_differentiable_ops_agree(case):
    op_type, fn, makers = case
    values = [make(shape).astype(np.float64) for make, shape in makers]
    g = sg.Graph()
    with g.as_default():
        phs = [sg.placeholder(F, v.shape) for v in values]
        y_static = fn(*phs)
        assert op_type in {op.type for op in g.get_operations()}
        floating = y_static.dtype.is_floating
        grads = dense_gradients(sg.reduce_sum(y_static), phs) if floating else []
        fetch = [y_static] + [gr for gr in grads if gr is not None]
        want = sg.Session(graph=g).run(fetch, dict(zip(phs, values)))
    xs = [dy.tensor(v, requires_grad=True) for v in values]
    with dy.eager_mode():
        y = fn(*xs)
    assert y.dtype is y_static.dtype, op_type
    np.testing.assert_allclose(y.detach().numpy(), want[0], RTOL, ATOL, err_msg=op_type)
    if floating:
        got = dy.grad(y.sum(), xs, allow_unused=True) if y.requires_grad else [None] * len(xs)
        assert [gr is None for gr in got] == [gr is None for gr in grads], op_type
        for gr, static in zip([gr for gr in got if gr is not None], want[1:]):
            np.testing.assert_allclose(gr.numpy(), static, RTOL, ATOL, err_msg=op_type)
    else:
        assert not y.requires_grad, f"{op_type}: a non-float result must not require grad"


# Random ops draw from the dynamic mode's generator: the draws' shape, dtype and range agree
# with the graph's (the values cannot), and manual_seed makes them reproducible.
RANDOM_CASES = [
    ("RandomUniform", lambda: sg.random_uniform([200, 3], -2.0, 3.0, dtype=F),
     lambda v: -2 <= v.min() and v.max() < 3),
    ("RandomUniform", lambda: sg.random_uniform([50], 0, 7, dtype=sg.int64),
     lambda v: 0 <= v.min() and v.max() < 7 and v.dtype == np.int64),
    ("RandomStandardNormal", lambda: sg.random_normal([2000], dtype=F),
     lambda v: abs(v.mean()) < 0.15 and abs(v.std() - 1) < 0.15),
    ("TruncatedNormal", lambda: sg.truncated_normal([500, 2], stddev=1.0),
     lambda v: np.abs(v).max() <= 2 and v.dtype == np.float32),
    ("LogUniformCandidates",
     lambda: sg.nn.log_uniform_candidate_sampler([[1]], 1, 20, True, 30)[0],
     lambda v: len(set(v.tolist())) == 20 and 0 <= v.min() and v.max() < 30),
]


@pytest.mark.parametrize("case", RANDOM_CASES, ids=[c[0] for c in RANDOM_CASES])
def test_random_ops_agree(case):
    op_type, fn, check = case
    g = sg.Graph()
    with g.as_default():
        y_static = fn()
        assert op_type in {op.type for op in g.get_operations()}
        want = sg.Session(graph=g).run(y_static)
    dy.manual_seed(7)
    with dy.eager_mode():
        y = fn()
        dy.manual_seed(7)
        again = fn()
    assert y.shape == want.shape and y.numpy().dtype == want.dtype
    assert check(want) and check(y.numpy()), op_type
    np.testing.assert_array_equal(y.numpy(), again.numpy())


# Ops that hold graph or session state: the dynamic mode has no place for them.
STATE_OPS = {
    "Placeholder": lambda: sg.placeholder(F, [2]),
    "VariableV2": lambda: sg.Variable([1.0, 2.0]),
    "Assign": lambda: sg.assign(dy.tensor([1.0]), [2.0]),
    "AssignAdd": lambda: sg.assign_add(dy.tensor([1.0]), [2.0]),
    "AssignSub": lambda: sg.assign_sub(dy.tensor([1.0]), [2.0]),
    "ScatterAdd": lambda: sg.scatter_add(dy.tensor([1.0]), [0], [2.0]),
    "ScatterSub": lambda: sg.scatter_sub(dy.tensor([1.0]), [0], [2.0]),
    "ScatterUpdate": lambda: sg.scatter_update(dy.tensor([1.0]), [0], [2.0]),
    "NoOp": lambda: sg.no_op(),
}


@pytest.mark.parametrize("op_type", sorted(STATE_OPS))
def test_state_ops_refuse_to_run_dynamically(op_type):
    with dy.eager_mode(), pytest.raises(TypeError, match="dynamic"):
        STATE_OPS[op_type]()


def test_assert_checks_at_once_in_the_dynamic_mode_with_the_sessions_words():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(F, [2])
        check = sg.Assert(sg.reduce_sum(x) > 5.0, ["x is small:", x])
        with pytest.raises(sg.errors.InvalidArgumentError) as static:
            sg.Session(graph=g).run(check, {x: [1.0, -2.0]})
    t = dy.tensor([1.0, -2.0])
    assert sg.Assert(t.sum() < 5.0, [t]) is None
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=r"^assertion failed: \[x is small:\] \[1.0 -2.0\] \(Assert at "
                             r"\S*test_parity.py:\d+\)") as dynamic:
        sg.Assert(t.sum() > 5.0, ["x is small:", t])
    assert str(static.value).split(" (")[0] == str(dynamic.value).split(" (")[0]


# Ops the dynamic mode runs as checks at once (their parity test is just above)
CHECK_OPS = {"Assert"}
# Ops the dynamic mode runs by printing at once (their parity test is just below)
PRINTS = {"Print", "PrintV2"}
# Ops calling a Python function, which the dynamic mode calls at once
# (tests/ops/test_py_func_ops.py)
PYTHON_CALLS = {"PyFunc"}


# Ops on strings, which the dynamic mode has no tensors for (as PyTorch has none): making a
# string, or an op that would give one, refuses with a clear error
STRING_OPS = {"AsString", "StringJoin", "ReduceJoin", "StringLength", "StringLower",
              "StringUpper", "StringStrip", "Substr", "StringToNumber", "RegexReplace",
              "RegexFullMatch", "ScalarSummary", "HistogramSummary", "ImageSummary",
              "TensorSummaryV2", "MergeSummary"}


def test_strings_refuse_in_the_dynamic_mode_naming_the_op():
    with dy.eager_mode():
        with pytest.raises(TypeError, match=r"^Const op at \S*test_parity.py:\d+: the dynamic "
                                            "mode has no string tensors"):
            sg.constant("Hello")
        with pytest.raises(TypeError, match=r"^AsString op at .*no string tensors"):
            sg.as_string(dy.tensor([1.5]))
    with pytest.raises(TypeError, match="no string tensors"):
        dy.tensor([1.0], dtype=sg.string)
    with pytest.raises(TypeError, match="dtype object"):
        dy.from_numpy(np.array([b"a"], dtype=object))


def test_prints_print_the_same_words_in_both_modes(capsys):
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(F, [3])
        y = sg.Print(x, [x, sg.shape(x)], "x is: ", summarize=2)
        show = sg.print("sum:", sg.reduce_sum(x), "last", x[-1], sep="|")
        sg.Session(graph=g).run([y, show], {x: [1.0, 2.0, 3.0]})
    static = capsys.readouterr().err
    t = dy.tensor([1.0, 2.0, 3.0])
    with dy.eager_mode():
        assert sg.Print(t, [t, sg.shape(t)], "x is: ", summarize=2) is t
        assert sg.print("sum:", t.sum(), "last", t[-1], sep="|") is None
    assert capsys.readouterr().err == static == "x is: [1.0 2.0...][3]\nsum:|6.0|last|3.0\n"


def test_every_registry_op_has_a_parity_row():
    # the op vocabulary's ops that the dynamic mode offers: tests/ops/test_vocabulary.py
    # checks each dynamic function and method against its graph builder
    offered = {t for t, api, _ in vocabulary.entries() if api.dynamic is not None}
    covered = ({c[0] for c in CASES} | {c[0] for c in NONDIFF_CASES}
               | {c[0] for c in RANDOM_CASES} | set(STATE_OPS) | offered
               | PYTHON_CONTROL_FLOW | CHECK_OPS | PRINTS | PYTHON_CALLS | STRING_OPS)
    internal = {t for t, d in REGISTRY.items() if d.internal}  # no builder: the compiler's
    missing = sorted(set(REGISTRY) - covered - internal)
    assert not missing, f"registry ops without a dynamic-mode parity row: {missing}"
