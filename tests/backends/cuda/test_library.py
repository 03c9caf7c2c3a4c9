"""The CUDA host code's library against the NumPy reference: every op in LIBRARY_OPS, over the
gradient-check cases (tests/ops/test_gradients.py's CASES, their gradient graphs included) and
the cases below for ops those lack. Each node's emitter text, rendered as the NumPy backend
renders it, rewritten by `to_device_code`, run with `cp` = the array module and `crt` =
`make_library` of it, gives what the NumPy text gives with NumPy and `staticgrad.runtime`:
bit for bit with NumPy (convolutions within rounding), within rounding with CuPy where a GPU
is there (run this file there too), integers and booleans exactly.

Where CuPy imports, every `cp.<name>` the texts use must be one of CuPy's.
"""

from __future__ import annotations

import functools
import inspect
import io
import re
import tokenize

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import runtime
from staticgrad.backends.cuda.library import (
    HANDLED_ELSEWHERE,
    HOST_SIDE,
    LIBRARY_OPS,
    NOT_ON_DEVICE,
    make_library,
    to_device_code,
)
from staticgrad.ops.kernels import render_numpy
from staticgrad.ops.state_ops import Store
from staticgrad.ops.table import REGISTRY, NodeCtx
from staticgrad.shapes import TensorShape
from tests.backends.cuda.emulator import fake_cupy
from tests.conftest import dense_gradients
from tests.fuzz_reference import evaluate, topo_ops
from tests.ops.test_gradients import CASES, any_, distinct


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def _gpu():
    """CuPy, where it imports and sees a GPU."""
    cupy = _cupy()
    try:
        return cupy if cupy is not None and cupy.cuda.runtime.getDeviceCount() else None
    except Exception:  # noqa: BLE001 - no driver, no device: no GPU run
        return None


# NumPy, and CuPy on a GPU where there is one, else the emulator's stand-in (its device
# arrays refuse the host/device mix-ups that a GPU would)
ARRAY_MODULES = [pytest.param(np, id="numpy"),
                 pytest.param(_gpu(), id="cupy") if _gpu() is not None else
                 pytest.param(fake_cupy(), id="emulator")]

CONV_OPS = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"}
RANDOM_OPS = {t for t in LIBRARY_OPS if REGISTRY[t].draws_random}


def ints(lo, hi):
    return lambda shape: np.random.default_rng(3).integers(lo, hi, shape).astype(np.int32)


def with_nan(shape):  # ties and a NaN, for top_k's order
    return np.array([[1.0, np.nan, 3.0, 3.0], [2.0, 2.0, -1.0, 0.5]])


# (op type, function of input tensors, input makers with shapes): ops with no gradient row,
# and forms the gradient rows do not reach; evaluated without gradients
EXTRA_CASES = [
    ("CheckNumerics", lambda x: sg.check_numerics(x, "x"), [(any_, (2, 3))]),
    ("Eye", lambda x: sg.eye(3, 4, dtype=sg.float64) * x, [(any_, ())]),
    ("LinSpace", lambda x: sg.linspace(x, x + 1.0, 5), [(any_, ())]),
    ("OneHot", lambda i: sg.one_hot(i, 4, on_value=2.0, off_value=-1.0, axis=0),
     [(ints(0, 4), (2, 3))]),
    ("OnesLike", lambda x: sg.ones_like(x), [(any_, (2, 3))]),
    ("ZerosLike", lambda x: sg.zeros_like(x, dtype=sg.int32), [(any_, (2, 3))]),
    ("Rank", lambda x: sg.rank(x), [(any_, (2, 3))]),
    ("Shape", lambda x: sg.shape(x), [(any_, (2, 3))]),
    ("Size", lambda x: sg.size(x), [(any_, (2, 3))]),
    ("Unique", lambda x: sg.unique(x)[1] + sg.size(sg.unique(x)[0]), [(ints(0, 4), (9,))]),
    ("Where", lambda x: sg.where(x > 0.0), [(any_, (3, 4))]),
    ("FloorDiv", lambda x, y: sg.floordiv(x, y), [(ints(-9, 9), (2, 3)), (ints(1, 4), (3,))]),
    ("FloorMod", lambda x, y: sg.floormod(x, y), [(ints(-9, 9), (2, 3)), (ints(1, 4), (3,))]),
    ("Cast", lambda x: sg.cast(x * 3.0, sg.int32), [(any_, (2, 3))]),
    ("GatherV2", lambda x, i: sg.gather(x, i, axis=0), [(any_, (4, 2)), (ints(0, 4), (2, 3))]),
    ("TopKV2", lambda x: sg.nn.top_k(x, 3).indices, [(with_nan, (2, 4))]),
    ("Pad", lambda x: sg.pad(x, [[1, 1], [2, 0]], mode="REFLECT") +
     sg.pad(x, [[1, 1], [2, 0]], mode="SYMMETRIC") + sg.pad(x, [[1, 1], [2, 0]],
                                                          constant_values=2.5),
     [(any_, (3, 3))]),
    ("Cumsum", lambda x: sg.cumsum(x, axis=1, exclusive=True), [(ints(-5, 5), (2, 4))]),
    ("ScatterNd", lambda u: sg.scatter_nd([[0, 1], [2, 0], [0, 1]], u, [3, 2, 4]),
     [(any_, (3, 4))]),
    ("MaxPool", lambda x: sg.nn.max_pool(x, 2, 2, "VALID"), [(distinct, (1, 4, 4, 3))]),
    ("Conv2D", lambda x, w: sg.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"),
     [(any_, (1, 1, 1, 2)), (any_, (1, 1, 2, 3))]),
]


def _values(makers):
    return [np.asarray(make(shape)) for make, shape in makers]


def _graph(fn, values, gradients):
    """The graph of fn over placeholders for `values`, and the tensors to evaluate."""
    g = sg.Graph()
    with g.as_default():
        xs = [sg.placeholder(sg.as_dtype(v.dtype), v.shape, name=f"x{i}")
              for i, v in enumerate(values)]
        y = fn(*xs)
        fetches = [y]
        if gradients:
            loss = sg.reduce_sum(y * np.random.default_rng(1).uniform(0.5, 1.5, y.shape))
            fetches += [d for d in dense_gradients(loss, xs) if d is not None]
    return g, dict(zip(xs, values)), fetches


def _node_ctx(op, in_shapes) -> NodeCtx:
    """The node's context as the compiler has it once the graph is specialized to its feeds:
    concrete shapes, the values known while compiling."""
    ctx = NodeCtx(op.type, op.attrs, in_shapes, [t.dtype for t in op.inputs],
                  [t._static for t in op.inputs], op.name)
    inferred = op.opdef.infer(ctx)
    ctx.out_shapes = [shape for shape, _ in inferred]
    ctx.out_dtypes = [dtype for _, dtype in inferred]
    return ctx


def _text(op, in_shapes):
    """The node's emitter text over inputs a0, a1..., as the NumPy backend renders it."""
    return render_numpy(op.opdef, [f"a{i}" for i in range(len(op.inputs))],
                        _node_ctx(op, in_shapes))


def _run(text: str, arity: int, namespace: dict, arrays):
    fn = eval(f"lambda {', '.join(f'a{i}' for i in range(arity))}: {text}",  # noqa: S307
              dict(namespace))
    return fn(*arrays)


def _host(xp, value):
    return xp.asnumpy(value) if xp is not np else np.asarray(value)


def _outputs(op, value) -> list:
    return list(value) if len(op.outputs) > 1 else [value]


def _compare(op, xp, got, want, what):
    got, want = _host(xp, got), np.asarray(want)
    where = (f"{op.type} {op.name} ({what}, on {xp.__name__}): inputs "
             f"{[(tuple(t.shape.as_list()), t.dtype.name) for t in op.inputs]}")
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{where}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
    if want.dtype.kind == "f" and (op.type in CONV_OPS or xp is not np):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=where)
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


def _generator(xp, seed):
    return xp.random.default_rng(seed)


def _check_node(op, arrays, xp, state: dict):
    """Run one node's device text on xp and its NumPy text on NumPy; compare."""
    text = _text(op, [TensorShape(np.shape(a)) for a in arrays])
    crt = make_library(xp)
    ref_ns = {"np": np, "rt": runtime, "R": {op.name: _generator(np, 5)},
              "V": {k: v.copy() for k, v in state.items()}}
    dev_ns = {"cp": xp, "crt": crt, "R": {op.name: _generator(xp, 5)},
              "V": {k: xp.asarray(v) for k, v in state.items()}}
    # (strings stay on the host: an Assert's message among its data)
    dev_arrays = [a if a.dtype.kind in "OSU" else xp.asarray(a) for a in arrays]
    if isinstance(text, Store):  # a variable's new value, computed into a new array or its own
        want = _run(text.value, len(arrays), ref_ns, arrays)
        for form in filter(None, (text.value, text.in_place)):
            dev_ns["V"] = {k: xp.asarray(v).copy() for k, v in state.items()}
            got = _run(to_device_code(form), len(arrays), dev_ns, dev_arrays)
            _compare(op, xp, got, want, form)
        return
    want = _outputs(op, _run(text, len(arrays), ref_ns, arrays))
    got = _outputs(op, _run(to_device_code(text), len(arrays), dev_ns, dev_arrays))
    if not op.outputs:  # (an Assert that holds)
        assert got == want == [None], op.type
        return
    for i, (g, w) in enumerate(zip(got, want)):
        if op.type in RANDOM_OPS and xp is not np:  # another generator: its draws' kind only
            g = _host(xp, g)
            assert g.dtype == w.dtype and g.shape == w.shape, op.type
            assert np.all(g >= w.min() - 4) and np.all(g <= w.max() + 4), op.type
            continue
        _compare(op, xp, g, w, f"output {i}: {text}")


def _check_graph(fn, makers, gradients, xp):
    values = _values(makers)
    g, feeds, fetches = _graph(fn, values, gradients)
    known: dict = {}
    evaluate(fetches, feeds, values=known)
    checked = 0
    for op in topo_ops(fetches):
        if op.type in LIBRARY_OPS:
            _check_node(op, [known[t] for t in op.inputs], xp, {})
            checked += 1
    return checked


GRADIENT_CASES = [c for c in CASES if c[0] in LIBRARY_OPS]


@pytest.mark.parametrize("xp", ARRAY_MODULES)
@pytest.mark.parametrize("case", GRADIENT_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(GRADIENT_CASES)])
def test_gradient_cases_on_the_library(case, xp):
    op_type, fn, makers, _ = case
    assert _check_graph(fn, makers, True, xp), f"no library op in the {op_type} row"


@pytest.mark.parametrize("xp", ARRAY_MODULES)
@pytest.mark.parametrize("case", EXTRA_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(EXTRA_CASES)])
def test_extra_cases_on_the_library(case, xp):
    op_type, fn, makers = case
    values = _values(makers)
    g, _, fetches = _graph(fn, values, False)
    assert op_type in {op.type for op in topo_ops(fetches)}, f"the {op_type} case makes none"
    _check_graph(fn, makers, False, xp)


# -- session state: variables' updates (V) and random draws (R) ---------------------------------

def _state_ops():
    """(the op, its input values, the variables' values) for each stateful library op."""
    g = sg.Graph()
    start = np.arange(8.0).reshape(4, 2)
    with g.as_default():
        v = sg.Variable(start, name="v")
        made = [sg.assign(v, start * 2.0), sg.assign_add(v, np.ones((4, 2))),
                sg.assign_sub(v, np.full((4, 2), 0.5))]
        for fn in (sg.scatter_add, sg.scatter_sub, sg.scatter_update):
            made.append(fn(v, [3, 0, 3], np.arange(6.0).reshape(3, 2)))
        made += [sg.random_uniform([2, 3], seed=1, dtype=sg.float32),
                 sg.random_uniform([5], minval=-3, maxval=7, dtype=sg.int32, seed=1),
                 sg.random_normal([2, 3], seed=1), sg.truncated_normal([50], seed=1)]
        made.append(sg.Assert(sg.reduce_all(v.value() > -1.0), [v.value(), "text"]))
        for unique in (False, True):
            made += list(sg.nn.log_uniform_candidate_sampler(
                np.zeros((1, 1), np.int64), 1, 6, unique, 9, seed=2)[:1])
    ops = {t.op for t in made if not isinstance(t, sg.Operation)} | \
        {t for t in made if isinstance(t, sg.Operation)}
    ops = [op for op in g.get_operations() if op.type in LIBRARY_OPS and
           op.opdef.stateful and (op in ops or op in _producers(ops))]
    cases = []
    for op in ops:
        known: dict = {}
        evaluate(list(op.inputs), {}, frozen={v.value(): start}, values=known)
        cases.append((op, [known[t] for t in op.inputs], {"v": start}))
    return cases


def _producers(ops):
    """ops and every op they read, to the graph's sources."""
    return set(topo_ops([t for op in ops for t in op.outputs] or []))


STATE_CASES = _state_ops()


@pytest.mark.parametrize("xp", ARRAY_MODULES)
@pytest.mark.parametrize("case", STATE_CASES, ids=[f"{c[0].type}-{c[0].name}"
                                                   for c in STATE_CASES])
def test_state_and_random_ops_on_the_library(case, xp):
    op, arrays, state = case
    _check_node(op, arrays, xp, state)


def test_state_cases_cover_every_stateful_library_op():
    covered = {op.type for op, _, _ in STATE_CASES}
    stateful = {t for t in LIBRARY_OPS if REGISTRY[t].stateful}
    assert stateful <= covered, sorted(stateful - covered)


# -- scattered sums and assignments: NumPy's results, in every dtype ---------------------------

SCATTER_DTYPES = ["float16", "float32", "float64", "complex64", "complex128", "int8", "int16",
                  "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]


def _scatter_values(dtype):
    """A variable [4, 2], rows [3, 0, 3, 3] (row 3 three times), updates [4, 2] of `dtype`:
    integers that wrap around in the narrow types, fractions, negative values."""
    rng = np.random.default_rng(7)
    if dtype == "bool":
        return (rng.integers(0, 2, (4, 2)).astype(bool), np.array([3, 0, 3, 3], np.int32),
                rng.integers(0, 2, (4, 2)).astype(bool))
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        var = rng.integers(info.min, info.max, (4, 2), dtype=dtype, endpoint=True)
        return var, np.array([3, 0, 3, 3], np.int64), \
            rng.integers(info.min, info.max, (4, 2), dtype=dtype, endpoint=True)
    var, updates = rng.normal(size=(2, 4, 2)) * 3
    if np.dtype(dtype).kind == "c":
        var, updates = var + 1j * var[::-1], updates - 2j * updates[::-1]
    return var.astype(dtype), np.array([3, 0, 3, 3], np.int32), updates.astype(dtype)


def _assert_sums(got, want, dtype, xp, what):
    """Sums of NumPy's order bit for bit; a GPU's floating-point ones within rounding (its
    atomic adds take their own order)."""
    assert got.dtype == want.dtype, what
    if np.dtype(dtype).kind in "fc" and xp is not np:
        tol = 1e-2 if dtype == "float16" else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("xp", ARRAY_MODULES)
@pytest.mark.parametrize("kind", ["add", "subtract"])
@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
def test_scatter_combines_repeated_rows_as_numpy_in_every_dtype(dtype, kind, xp):
    """ScatterAdd and ScatterSub with a row named three times, in each dtype a variable can
    have: NumPy's sums (CuPy's add.at takes six dtypes, its subtract.at two)."""
    if kind == "subtract" and dtype == "bool":
        return  # (NumPy's TypeError: ERRORS checks that the device raises it too)
    var, indices, updates = _scatter_values(dtype)
    with np.errstate(over="ignore"):
        want = runtime.scatter(getattr(np, kind), var, indices, updates, False)
        for in_place in (False, True):
            got = make_library(xp).scatter(getattr(xp, kind), xp.asarray(var),
                                           xp.asarray(indices), xp.asarray(updates), in_place)
            _assert_sums(_host(xp, got), want, dtype, xp, f"{kind} of {dtype}")


@pytest.mark.parametrize("xp", ARRAY_MODULES)
@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
def test_scatter_update_sets_a_repeated_row_to_its_last_update(dtype, xp):
    """ScatterUpdate naming row 3 three times: NumPy sets its last update, and so must the
    device (CuPy's assignment keeps any one of them: on the H200, the first)."""
    var, indices, updates = _scatter_values(dtype)
    want = runtime.scatter(None, var, indices, updates, False)
    for in_place in (False, True):
        got = make_library(xp).scatter(None, xp.asarray(var), xp.asarray(indices),
                                       xp.asarray(updates), in_place)
        np.testing.assert_array_equal(_host(xp, got), want, err_msg=dtype)


@pytest.mark.parametrize("xp", ARRAY_MODULES)
@pytest.mark.parametrize("dtype", ["float32", "int64", "int8", "bool", "complex128"])
def test_gather_grad_and_scatter_nd_sum_repeated_places_in_every_dtype(dtype, xp):
    """The sums into zeros of GatherGrad and ScatterNd, where an index repeats, in dtypes
    CuPy's add.at refuses too."""
    _, _, updates = _scatter_values(dtype)
    crt = make_library(xp)
    indices = np.array([1, 2, 1, 1])
    want = runtime.gather_grad(updates.T, indices, (2, 3), 1)
    got = crt.gather_grad(xp.asarray(updates.T), xp.asarray(indices), (2, 3), 1)
    _assert_sums(_host(xp, got), want, dtype, xp, f"gather_grad of {dtype}")
    nd = np.array([[1], [2], [1], [1]])
    want = runtime.scatter_nd(nd, updates, (3, 2))
    got = crt.scatter_nd(xp.asarray(nd), xp.asarray(updates), (3, 2))
    _assert_sums(_host(xp, got), want, dtype, xp, f"scatter_nd of {dtype}")


# -- errors: the NumPy runtime's, raised from the device's values -------------------------------

ERRORS = [
    ("gather", (np.arange(6.0).reshape(3, 2), np.array([[0, 3]]), 0)),
    ("gather", (np.arange(6.0).reshape(3, 2), np.array([-1]), 1)),
    ("scatter", (np.add, np.zeros((3, 2)), np.array([1, 5]), np.ones((2, 2)), False)),
    ("gather_nd", (np.zeros((3, 2)), np.array([[0, 1], [1, 2]]))),
    ("scatter_nd", (np.array([[4]]), np.ones((1, 2)), (3, 2))),
    ("floordiv", (np.array([4, 5]), np.array([2, 0]))),
    ("floormod", (np.array([4, 5]), np.array([0, 1]))),
    ("check_numerics", (np.array([1.0, np.nan]), "m")),
    ("check_numerics", (np.array([1.0, np.inf]), "m")),
    ("assert_true", (np.array(False), "x > 0", 2, (np.array([-1.0, 2.0, 3.0]),))),
    ("top_k", (np.zeros((2, 3)), 4)),
    ("tensor_array_write", (np.zeros((2, 3)), np.int32(2), np.ones(3), False)),
    ("tensor_array_write", (np.zeros((2, 3)), np.int32(-1), np.ones(3), True)),
    ("scatter", (np.subtract, np.zeros((3, 2), bool), np.array([1]), np.ones((1, 2), bool),
                 False)),
]


@pytest.mark.parametrize("xp", ARRAY_MODULES)
@pytest.mark.parametrize("name, args", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_are_the_runtimes(name, args, xp):
    with pytest.raises(Exception) as want:
        getattr(runtime, name)(*args)
    device_args = [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    if name == "scatter":
        device_args[0] = getattr(xp, args[0].__name__)
    if name == "assert_true":
        device_args[3] = tuple(xp.asarray(d) for d in args[3])
    with pytest.raises(type(want.value), match=re.escape(str(want.value))):
        getattr(make_library(xp), name)(*device_args)


# -- the rewriting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("code, device", [
    ("rt.gather(np.abs(a0), a1, 0)", "crt.gather(cp.abs(a0), a1, 0)"),
    ("np.full((2,), 'np.x rt.y', dtype=np.float32)", "np.full((2,), 'np.x rt.y', "
     "dtype=np.float32)".replace("np.full", "cp.full").replace("=np.", "=cp.")),
    ("a0.np.T + rt .x", "a0.np.T + crt .x"),
    ("np_.x + xnp.y + np[0]", "np_.x + xnp.y + np[0]"),
    ("V['v'].astype(np.int32)", "V['v'].astype(cp.int32)"),
    ("rt.f(\n  np.e)", "crt.f(\n  cp.e)"),
])
def test_to_device_code_renames_modules_only(code, device):
    assert to_device_code(code) == device


@pytest.mark.parametrize("code", ["math.exp(a0)", "rt.f(numpy.abs(a0))",
                                  "np.full((2,), b'', dtype=np.object_)", "rt.f((a0"])
def test_to_device_code_refuses_what_the_host_has_not(code):
    with pytest.raises(ValueError):
        to_device_code(code)


# -- coverage and names ----------------------------------------------------------------------------

def test_every_numeric_op_is_classified():
    """Each numeric op that computes, is no elementwise kernel and is handled nowhere else is
    in exactly one of LIBRARY_OPS and NOT_ON_DEVICE (a new op must be put in one)."""
    wanted = {t for t, d in REGISTRY.items() if d.computes and not d.host_only and
              d.expr is None and t not in HANDLED_ELSEWHERE | HOST_SIDE}
    assert not LIBRARY_OPS & set(NOT_ON_DEVICE)
    assert not sorted(wanted - LIBRARY_OPS - set(NOT_ON_DEVICE)), "unclassified ops"
    assert not sorted((LIBRARY_OPS | set(NOT_ON_DEVICE)) - wanted), "ops classified wrongly"
    assert all(isinstance(why, str) and why for why in NOT_ON_DEVICE.values())


def test_every_library_op_is_checked():
    checked = {c[0] for c in GRADIENT_CASES} | {c[0] for c in EXTRA_CASES} | \
        {op.type for op, _, _ in STATE_CASES}
    assert not sorted(LIBRARY_OPS - checked)


@functools.cache
def _all_texts() -> tuple:
    """Every library node's emitter text in every case above (graph shapes, no values)."""
    texts = []
    graphs = [(fn, makers, True) for _, fn, makers, _ in GRADIENT_CASES] + \
        [(fn, makers, False) for _, fn, makers in EXTRA_CASES]
    for fn, makers, gradients in graphs:
        _, _, fetches = _graph(fn, _values(makers), gradients)
        for op in topo_ops(fetches):
            if op.type in LIBRARY_OPS:
                texts.append(_text(op, [t.shape for t in op.inputs]))
    for op, arrays, _ in STATE_CASES:
        texts.append(_text(op, [TensorShape(np.shape(a)) for a in arrays]))
    flat = []
    for text in texts:
        flat += [text.value, text.in_place] if isinstance(text, Store) else [text]
    return tuple(to_device_code(t) for t in flat if t)


def _used(module: str) -> set:
    names = set()
    for text in _all_texts():
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        for head, dot, name in zip(tokens, tokens[1:], tokens[2:]):
            if head.string == module and dot.string == ".":
                names.add(name.string)
    return names


def test_the_library_has_every_name_the_texts_call():
    crt = make_library(np)
    used = _used("crt")
    assert used and not sorted(n for n in used if not hasattr(crt, n))


def test_library_functions_take_the_runtimes_arguments():
    crt = make_library(np)
    for name in vars(crt):
        if callable(getattr(runtime, name, None)) and inspect.isfunction(getattr(runtime, name)):
            assert inspect.signature(getattr(crt, name)) == \
                inspect.signature(getattr(runtime, name)), name


@pytest.mark.skipif(_cupy() is None, reason="CuPy is not importable here")
def test_cupy_has_every_name_the_texts_call():
    cupy = _cupy()
    used = _used("cp")
    assert used and not sorted(n for n in used if not hasattr(cupy, n))
    assert not [n for n in _used("crt") if not hasattr(make_library(cupy), n)]
