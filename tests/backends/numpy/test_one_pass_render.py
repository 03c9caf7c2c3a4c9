"""One-pass kernels of float32 fused groups (one_pass_render.py, one_pass.py): what they
compute, against hand-written NumPy and float64 references; every op with a scalar form
(one test over lowering.SCALAR_FORMS and VECTOR, so an op given one later is covered); and
NumPy's reports kept: a block NumPy would warn on, or any block under an errstate that does
not ignore underflow, is NumPy's. Skipped where runtime_fast (the [fast] extra) is not
working; without it every group keeps its NumPy kernel (the last test)."""

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.backends.numpy import fast as runtime_fast
from staticgrad.backends.numpy import one_pass
from staticgrad.backends.numpy.blocks import BLOCK
from staticgrad.backends.numpy.lowering import SCALAR_FORMS, VECTOR
from staticgrad.compiler import CompileOptions
from staticgrad.ops.creation import apply1
from tests.backends.numpy.helpers import on_threads, w3

needs_kernels = pytest.mark.skipif(not runtime_fast.available(),
                                   reason=f"runtime_fast unavailable: {runtime_fast.why_not()}")
N = 2 * BLOCK + 4099  # three blocks or more, the last one short and not a multiple of 8
KERNEL = "@nb.kernel("


def _numpy_blocks():
    return one_pass.report()["numpy_blocks"]


def _w3_by_hand(x):
    """W3 and its derivative in float64 NumPy."""
    d = x.astype(np.float64)
    t, s, e = np.tanh(1.5 * d + 0.3), 1 / (1 + np.exp(-d)), np.exp(-d * d)
    y = np.sum(t * s + 0.5 * e + np.log1p(d * d))
    return y, 1.5 * (1 - t * t) * s + t * s * (1 - s) - d * e + 2 * d / (1 + d * d)


@needs_kernels
def test_w3_and_its_gradient_are_one_kernel_and_agree_with_float64():
    g, x, fetches, xv = w3(N)
    with sg.Session(graph=g) as sess:
        source = sess.source(fetches, {x: xv})
        before = _numpy_blocks()
        y, dx = sess.run(fetches, {x: xv})
        assert _numpy_blocks() == before  # every block the kernel's
    assert source.count(KERNEL) == 1 and "rt.run_blocks(fused_one_pass," in source
    # the kernel reads as the module does: the ops and the user's lines named
    assert "vk.tanh8(" in source and "# Tanh 'Tanh' at helpers.py:" in source  # (w3's line)
    want_y, want_dx = _w3_by_hand(xv)
    # y: a million terms summed in eight float32 lanes a sub-block, float64 across them
    np.testing.assert_allclose(y, want_y, rtol=1e-6)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-5, atol=1e-6)
    with sg.Session(graph=g, options=CompileOptions(vector_math=False)) as plain:
        y0, dx0 = plain.run(fetches, {x: xv})
    np.testing.assert_allclose(y, y0, rtol=1e-6)
    np.testing.assert_allclose(dx, dx0, rtol=2e-6, atol=1e-6)


@needs_kernels
def test_broadcast_numbers_several_outputs_and_several_sums():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [None, 1000], name="x")
        b = sg.placeholder(sg.float32, [1000], name="b")  # broadcast along the rows: no group
        s = sg.placeholder(sg.float32, [], name="s")      # one number, read by every block
        u = sg.exp(x * s - 1.0)
        v = sg.maximum(u, 0.5) * x
        w = v - x / (1.0 + u)
        fetches = [u, w, sg.reduce_sum(u), sg.reduce_sum(w * w), sg.reduce_sum(v)]
        cross = sg.reduce_sum((x + b) * s)
    rng = np.random.default_rng(1)
    xv = rng.uniform(-2, 2, (300, 1000)).astype(np.float32)
    sv = np.float32(0.7)
    with sg.Session(graph=g) as sess:
        source = sess.source(fetches, {x: xv, s: sv})
        before = _numpy_blocks()
        got = sess.run(fetches, {x: xv, s: sv})
        assert _numpy_blocks() == before
        np.testing.assert_allclose(sess.run(cross, {x: xv, b: np.ones(1000, np.float32),
                                                    s: sv}),
                                   np.sum((xv + 1.0) * sv, dtype=np.float64), rtol=1e-5)
    assert source.count(KERNEL) == 1
    u0 = np.exp(xv * sv - np.float32(1.0))  # hand NumPy, float32: the same steps
    v0 = np.maximum(u0, np.float32(0.5)) * xv
    w0 = v0 - xv / (np.float32(1.0) + u0)
    np.testing.assert_allclose(got[0], u0, rtol=4e-7)  # libmvec's expf: a few ulps
    np.testing.assert_allclose(got[1], w0, rtol=1e-6, atol=1e-6)
    d = xv.astype(np.float64)
    u64 = np.exp(d * 0.7 - 1)
    v64 = np.maximum(u64, 0.5) * d
    w64 = v64 - d / (1 + u64)
    for got_sum, want in zip(got[2:], (u64.sum(), (w64 * w64).sum(), v64.sum())):
        np.testing.assert_allclose(got_sum, want, rtol=2e-6)


def _inputs(op, arity, rng):
    """Values each op's NumPy form reports nothing on; signed zeros where it keeps them."""
    if op in ("Sqrt", "Rsqrt", "Log", "Reciprocal"):
        return [rng.uniform(0.05, 3, N).astype(np.float32) for _ in range(arity)]
    low = -0.9 if op == "Log1p" else -3.0
    values = [rng.uniform(low, 3, N).astype(np.float32) for _ in range(arity)]
    if op != "RealDiv":
        for v in values:
            v[::97], v[1::97] = 0.0, -0.0
    return values


FORMS = sorted(set(SCALAR_FORMS) | set(VECTOR))
ARITY = {"Neg": 1, "Abs": 1, "Square": 1, "Sqrt": 1, "Rsqrt": 1, "Reciprocal": 1, "Relu": 1,
         "Exp": 1, "Log": 1, "Log1p": 1, "Tanh": 1, "Sigmoid": 1, "AddN": 3}


@needs_kernels
@pytest.mark.parametrize("op", FORMS)
def test_every_op_with_a_scalar_form_computes_what_numpy_does(op):
    """Bit for bit for the scalar forms; within libmvec's few ulps for the vector functions
    (fast.py)."""
    arity = ARITY.get(op, 2)
    rng = np.random.default_rng(len(op))
    values = _inputs(op, arity, rng)
    g = sg.Graph()
    with g.as_default():
        xs = [sg.placeholder(sg.float32, [N], name=f"x{i}") for i in range(arity)]
        # a product first (a group of more than one op, whose argument is computed in it)
        out = apply1(op, [x * 1.0 for x in xs])
        fetches = [out, sg.reduce_sum(out)]
    feed = dict(zip(xs, values))
    with sg.Session(graph=g) as sess:
        assert KERNEL in sess.source(fetches, feed), f"{op} is not one kernel"
        before = _numpy_blocks()
        got, total = sess.run(fetches, feed)
        assert _numpy_blocks() == before, f"{op}: a block went to NumPy"
    with sg.Session(graph=g, options=CompileOptions(vector_math=False)) as plain:
        want, want_total = plain.run(fetches, feed)
    if op in VECTOR:
        np.testing.assert_allclose(got, want, rtol=5e-7, atol=1e-30, err_msg=op)
    else:
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=op)
    np.testing.assert_allclose(total, np.sum(want, dtype=np.float64), rtol=1e-5, atol=1e-3,
                               err_msg=op)


@needs_kernels
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("chain", ["Relu(Neg)", "Relu(Abs)", "Maximum(Neg)", "ReluGrad(Neg)"])
def test_a_non_finite_input_read_through_ops_that_keep_finite_values_finite_is_numpys(chain,
                                                                                    bad):
    """Relu(-x) of a NaN x is 0 in the kernel, NaN in NumPy: -x (finite where x is) is not
    checked, so x must be, not taken as covered by the unchecked -x."""
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [N], name="x")
        inner = sg.abs(x) if chain == "Relu(Abs)" else -x
        out = {"Maximum(Neg)": lambda: sg.maximum(inner, sg.constant(np.float32(0.5))),
               "ReluGrad(Neg)": lambda: apply1("ReluGrad", [inner, x * 1.0])}.get(
                   chain, lambda: sg.nn.relu(inner))() * 2.0
    xv = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    xv[BLOCK + 5] = bad
    results = []
    for options in (CompileOptions(), CompileOptions(vector_math=False)):
        with sg.Session(graph=g, options=options) as sess, \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert (KERNEL in sess.source(out, {x: xv})) == options.vector_math
            results.append((sess.run(out, {x: xv}), [str(w.message) for w in caught]))
    (got, got_warned), (want, want_warned) = results
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=chain)
    assert got_warned == want_warned  # (ReluGrad(-x, y) of an infinite x: inf * 0)


def _group(n=N):
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [n], name="x")
        y = sg.exp(x * 2.0, name="grows")
        fetches = [y, sg.reduce_sum(sg.log(y + x + 1.5))]
    return g, x, fetches


@needs_kernels
@pytest.mark.parametrize("bad", [np.nan, np.inf, 60.0, -np.inf, -30.0])
def test_a_block_numpy_would_warn_on_gives_numpys_warnings_and_values(bad):
    """60: exp(120) overflows; -30 and -inf: the log of a negative number; NaN and +inf go
    through quietly (NumPy reports nothing), but not through the kernel."""
    g, x, fetches = _group()
    xv = np.random.default_rng(2).uniform(-1, 1, N).astype(np.float32)
    xv[BLOCK + 17] = bad  # in the second block
    results = []
    before = _numpy_blocks()
    for options in (CompileOptions(), CompileOptions(vector_math=False)):
        with sg.Session(graph=g, options=options) as sess, \
                warnings.catch_warnings(record=True) as caught, \
                np.errstate(all="warn", under="ignore"):  # (NumPy's default)
            warnings.simplefilter("always")
            results.append((sess.run(fetches, {x: xv}), sorted({str(w.message)
                                                                for w in caught})))
    assert _numpy_blocks() == before + 1  # that block alone
    (got, got_warned), (want, want_warned) = results
    assert got_warned == want_warned
    assert bool(want_warned) == (bad in (60.0, -30.0, -np.inf))
    np.testing.assert_allclose(got[0], want[0], rtol=4e-7)
    np.testing.assert_array_equal(np.isnan(got[0]), np.isnan(want[0]))
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


@needs_kernels
def test_errstate_raise_raises_as_numpy_does_and_names_the_op():
    g, x, fetches = _group()
    xv = np.random.default_rng(2).uniform(-1, 1, N).astype(np.float32)
    with sg.Session(graph=g) as sess:
        before = _numpy_blocks()
        sess.run(fetches, {x: xv})
        assert _numpy_blocks() == before
        with np.errstate(all="raise"):  # nothing to report: NumPy's kernel, every block
            sess.run(fetches, {x: xv})
        assert _numpy_blocks() > before
        xv[-5] = 60.0
        with np.errstate(all="raise"), pytest.raises(sg.errors.InvalidArgumentError,
                                                     match="grows"):
            sess.run(fetches, {x: xv})
        with np.errstate(over="raise"), pytest.raises(sg.errors.InvalidArgumentError,
                                                      match="grows"):
            sess.run(fetches, {x: xv})  # (underflow ignored: the kernel first, then NumPy)


@needs_kernels
def test_a_recomputed_block_reads_inputs_the_kernel_never_wrote():
    """The group's outputs are new arrays; a block the kernel gives up on (here the last)
    is computed again from the inputs alone, over outputs it partly wrote. An output read
    again inside the group, a feed given twice, and an assignment of the result back into
    the variable the group reads."""
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [N], name="x")
        v = sg.Variable(np.zeros(N, np.float32), name="v")
        t = sg.tanh(x + v)
        u = sg.exp(t * x)   # reads the output t again
        y = sg.reduce_sum(u * x)
        step = sg.assign(v, t * 2.0 + u)
    xv = np.random.default_rng(4).uniform(-1, 1, N).astype(np.float32)
    xv[-3] = 100.0  # exp(t * 100) overflows in the last block only
    with sg.Session(graph=g) as sess, np.errstate(over="ignore"):
        sess.run(sg.global_variables_initializer())
        before = _numpy_blocks()
        got_t, got_u, got_y, _ = sess.run([t, u, y, step], {x: xv})
        assert _numpy_blocks() > before
        got_v = sess.run(v)
    t0 = np.tanh(xv)
    with np.errstate(over="ignore"):
        u0 = np.exp(t0 * xv)
    np.testing.assert_allclose(got_t, t0, rtol=3e-7)
    np.testing.assert_allclose(got_u, u0, rtol=2e-6)
    np.testing.assert_allclose(got_y, np.sum(u0.astype(np.float64) * xv), rtol=1e-5)
    np.testing.assert_allclose(got_v, t0 * 2 + u0, rtol=2e-6)


@needs_kernels
def test_float64_groups_and_groups_with_an_op_without_a_form_keep_the_numpy_kernel():
    g = sg.Graph()
    with g.as_default():
        x64 = sg.placeholder(sg.float64, [N], name="x64")
        x = sg.placeholder(sg.float32, [N], name="x")
        y64 = sg.reduce_sum(sg.exp(x64) * 2.0)
        y = sg.reduce_sum(sg.sin(x) * 2.0 + 1.0)  # Sin: no scalar form
    with sg.Session(graph=g) as sess:
        assert KERNEL not in sess.source(y64, {x64: np.zeros(N)})
        source = sess.source(y, {x: np.zeros(N, np.float32)})
        assert "rt.run_blocks(" in source and KERNEL not in source


def test_without_vector_math_or_the_extra_groups_keep_the_numpy_kernel(monkeypatch):
    g, x, fetches, xv = w3(70_000)
    with sg.Session(graph=g, options=CompileOptions(vector_math=False)) as sess:
        assert KERNEL not in sess.source(fetches, {x: xv})
    monkeypatch.setattr(runtime_fast, "_state", {"why": "switched off for a test"})
    with sg.Session(graph=g) as sess:
        source = sess.source(fetches, {x: xv})
        y, dx = sess.run(fetches, {x: xv})
    assert KERNEL not in source and "rt.run_blocks(" in source
    want_y, want_dx = _w3_by_hand(xv)
    np.testing.assert_allclose(y, want_y, rtol=1e-5)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-5, atol=1e-6)


@needs_kernels
def test_sessions_on_several_threads_agree():
    g, x, fetches, xv = w3(N)
    want = None
    results, errors = [], []
    with sg.Session(graph=g) as sess:
        want = sess.run(fetches, {x: xv})

        def work():
            try:
                results.append(sess.run(fetches, {x: xv}))
            except BaseException as e:  # noqa: BLE001 -- reported below
                errors.append(e)
        on_threads(work, 4)
    assert not errors
    for y, dx in results:  # the same blocks, whichever thread: the same bits
        assert y == want[0]
        np.testing.assert_array_equal(dx, want[1])


_WITHOUT_NUMBA = """
import sys
sys.modules["numba"] = None  # import numba fails, as where it is not installed
import numpy as np
sys.path.insert(0, sys.argv[1])
import w3mod
x = np.load(sys.argv[2])
y, dx = w3mod.run(x)
np.save(sys.argv[3], dx)
print(repr(float(y)))
"""


@needs_kernels
def test_an_exported_module_holds_no_one_pass_kernel_and_runs_without_numba(tmp_path):
    g, x, fetches, xv = w3(200_003)
    with sg.Session(graph=g) as sess:
        assert KERNEL in sess.source(fetches, {x: xv})
        path = sg.export(fetches, [x], str(tmp_path / "w3mod.py"), session=sess,
                         feed_shapes=[xv.shape])
        want = sess.run(fetches, {x: xv})
    text = open(path).read()
    assert KERNEL not in text and "nb." not in text and "numba" not in text
    np.save(tmp_path / "x.npy", xv)
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", _WITHOUT_NUMBA, str(tmp_path),
                          str(tmp_path / "x.npy"), str(tmp_path / "dx.npy")],
                         capture_output=True, text=True, timeout=300, cwd=root,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    np.testing.assert_allclose(float(out.stdout), want[0], rtol=1e-6)
    np.testing.assert_allclose(np.load(tmp_path / "dx.npy"), want[1], rtol=2e-6, atol=1e-6)
