"""runtime_fast: glibc's vector exp, log and sigmoid through numba (the [fast] extra).

Each kernel is checked against a long-double reference (its error in units in the last
place, next to NumPy's own), against NumPy's special values, warnings and np.errstate, in
place and between overlapping arrays, and inside fused groups. Without the extra (or on a
machine without libmvec) the tests that need the kernels skip, and the ones that check the
NumPy fallback still run.
"""

import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import runtime
from staticgrad.backends.numpy import fast as runtime_fast
from staticgrad.backends.numpy.policy import FUSE
from staticgrad.compiler import CompileOptions
from tests.passes.test_fuse import _w3 as w3_sum

ROOT = Path(__file__).resolve().parents[3]
needs_kernels = pytest.mark.skipif(not runtime_fast.available(),
                                   reason=f"runtime_fast unavailable: {runtime_fast.why_not()}")

KERNELS = {  # name: (fast function, NumPy's, long-double reference)
    "exp": (runtime_fast.exp, np.exp, np.exp),
    "log": (runtime_fast.log, np.log, np.log),
    "log1p": (runtime_fast.log1p, runtime.log1p, np.log1p),
    "sigmoid": (runtime_fast.sigmoid, runtime.sigmoid,
                lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (runtime_fast.tanh, np.tanh, np.tanh),
}


def _inputs(name, n=1_000_003, seed=0):
    rng = np.random.default_rng(seed)
    if name == "log":
        return np.exp(rng.uniform(-80, 80, n)).astype(np.float32)
    if name == "log1p":  # above -1: near it, near 0 (where log1p earns its keep), and large
        return np.concatenate([rng.uniform(-0.999, 3, n // 3), rng.standard_normal(n // 3)
                               * 1e-3, np.expm1(rng.uniform(0, 80, n - 2 * (n // 3)))]
                              ).astype(np.float32)
    return np.concatenate([rng.uniform(-87, 88, n // 2),
                           rng.standard_normal(n - n // 2)]).astype(np.float32)


def _ulps(got, x, reference):
    with np.errstate(all="ignore"):
        truth = reference(x.astype(np.longdouble))
    spacing = np.spacing(np.abs(truth.astype(np.float32)))
    return float(np.max(np.abs(got - truth) / spacing))


@needs_kernels
@pytest.mark.parametrize("name", KERNELS)
def test_vector_kernels_are_as_accurate_as_numpy(name):
    fast, numpy_fn, reference = KERNELS[name]
    x = _inputs(name)
    got = fast(x, np.empty_like(x))
    ours, numpys = _ulps(got, x, reference), _ulps(numpy_fn(x), x, reference)
    assert ours <= max(4.0, numpys + 1.0), (name, ours, numpys)
    # and within a few float32 ulps of NumPy's own results
    np.testing.assert_allclose(got, numpy_fn(x), rtol=5e-7, atol=0)


@needs_kernels
@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("n", [1, 7, 8, 9, 16, 1001])
def test_every_element_takes_the_same_code_wherever_it_falls(name, n):
    # the last few elements of a block go through a padded eight: the same results as in
    # the middle of a long block
    fast = KERNELS[name][0]
    long = _inputs(name, 4096, seed=n)
    whole = fast(long, np.empty_like(long))
    for start in (0, 3, 4096 - n):
        part = long[start:start + n].copy()
        np.testing.assert_array_equal(fast(part, np.empty_like(part)), whole[start:start + n])


@needs_kernels
@pytest.mark.parametrize("name", KERNELS)
def test_in_place_gives_what_a_separate_output_gets(name):
    fast = KERNELS[name][0]
    x = _inputs(name, 100_001)
    want = fast(x, np.empty_like(x))
    a = x.copy()
    assert fast(a, a) is a
    np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("name", KERNELS)
def test_overlapping_views_odd_layouts_and_other_dtypes_go_to_numpy(name):
    fast, numpy_fn, _ = KERNELS[name]
    x = _inputs(name, 4001)
    buf = np.concatenate([x, x[:1]])  # out one element on from x: they overlap
    want = numpy_fn(buf[:-1].copy())
    got = fast(buf[:-1], buf[1:])
    np.testing.assert_array_equal(got, want)
    strided = x[::2]
    np.testing.assert_array_equal(fast(strided, np.empty_like(strided)), numpy_fn(strided))
    x64 = x.astype(np.float64)
    np.testing.assert_array_equal(fast(x64, np.empty_like(x64)), numpy_fn(x64))
    x2d = x[:4000].reshape(40, 100)
    np.testing.assert_array_equal(fast(x2d, np.empty_like(x2d)), numpy_fn(x2d))


SNAN = np.array([0x7F800001], np.uint32).view(np.float32)[0]  # a signalling NaN
PAYLOAD_NAN = np.array([0x7FC12345], np.uint32).view(np.float32)[0]


@pytest.mark.parametrize("name, bad", [("exp", 100.0), ("exp", -100.0), ("exp", np.nan),
                                       ("exp", np.inf), ("exp", 1e-40), ("exp", -1e-45),
                                       ("log", 0.0), ("log", -1.0), ("log", np.nan),
                                       ("log", np.inf), ("log", 1e-40), ("exp", SNAN),
                                       ("log1p", -1.0), ("log1p", -2.0), ("log1p", np.nan),
                                       ("log1p", np.inf), ("log1p", 1e-40),
                                       ("sigmoid", SNAN), ("sigmoid", PAYLOAD_NAN),
                                       ("sigmoid", -np.nan), ("tanh", SNAN),
                                       ("tanh", PAYLOAD_NAN)])
def test_where_numpy_would_warn_or_raise_numpy_computes_the_block(name, bad):
    fast, numpy_fn, _ = KERNELS[name]
    x = np.full(4096, 0.5, np.float32)
    x[1234] = bad
    with warnings.catch_warnings(record=True) as theirs, np.errstate(all="warn"):
        warnings.simplefilter("always")
        want = numpy_fn(x)
    with warnings.catch_warnings(record=True) as ours, np.errstate(all="warn"):
        warnings.simplefilter("always")
        got = fast(x, np.empty_like(x))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))  # bit for bit
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    if theirs:
        with np.errstate(all="raise"), pytest.raises(FloatingPointError):
            fast(x, np.empty_like(x))
        a, b = x.copy(), x.copy()
        with np.errstate(all="raise"), pytest.raises(FloatingPointError):
            fast(a, a)
        with np.errstate(all="raise"), pytest.raises(FloatingPointError):
            numpy_fn(b, out=b)
        np.testing.assert_array_equal(a, b)  # in place, what NumPy's own call leaves


@needs_kernels
@pytest.mark.parametrize("name", KERNELS)
def test_a_read_only_input_is_read_by_the_kernels(name):
    fast, numpy_fn, _ = KERNELS[name]
    x = _inputs(name, 50_001)
    want = fast(x, np.empty_like(x))
    x.flags.writeable = False  # as a constant, a np.frombuffer feed or a read-only memmap
    np.testing.assert_array_equal(fast(x, np.empty_like(x)), want)
    frozen = np.frombuffer(x.tobytes(), np.float32)
    np.testing.assert_array_equal(fast(frozen, np.empty_like(frozen)), want)


@needs_kernels
def test_a_large_constant_and_a_read_only_feed_run_through_the_kernels():
    values = np.linspace(-3, 3, 2 * FUSE.min_elements, dtype=np.float32)
    g = sg.Graph()
    with g.as_default():
        c = sg.constant(values)
        x = sg.placeholder(sg.float32, [None], name="x")
        y = sg.exp(c, name="cexp") * 2.0 + sg.sigmoid(x, name="sx") * sg.tanh(x)
    feed = np.frombuffer(values.tobytes(), np.float32)
    assert not feed.flags.writeable
    with sg.Session(graph=g) as sess:
        assert "= fast.exp(" in sess.source(y, {x: feed})
        got = sess.run(y, {x: feed})
    with sg.Session(graph=g, options=CompileOptions(vector_math=False)) as sess:
        want = sess.run(y, {x: feed})
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("env, why", [({"STATICGRAD_FAST": "off"}, "STATICGRAD_FAST=off"),
                                      ({"STATICGRAD_FAST": "0"}, "STATICGRAD_FAST=0"),
                                      ({"NUMBA_DISABLE_JIT": "1"}, "NUMBA_DISABLE_JIT"),
                                      ({"NUMBA_CPU_NAME": "generic"}, "NUMBA_CPU_NAME")])
def test_settings_that_would_break_the_kernels_turn_them_off(env, why):
    pytest.importorskip("numba")
    code = ("from staticgrad.backends.numpy import fast as f; import numpy as np; "
            "x = np.linspace(-3, 3, 4096, dtype=np.float32); "
            "assert (f.exp(x, np.empty_like(x)) == np.exp(x)).all(); print(f.why_not())")
    root = str(ROOT)  # the checkout (this file is tests/backends/numpy/test_fast.py)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env, "PYTHONPATH": root}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert why in proc.stdout, proc.stdout


@needs_kernels
def test_compiling_the_kernels_says_so_in_one_line_and_loading_them_says_nothing(tmp_path):
    """The first compile (an empty numba cache here) takes seconds: a notice says why the
    pause; the next process loads them from the cache, in silence."""
    code = ("from staticgrad.backends.numpy import fast as f; assert f.available(), "
            "f.why_not()")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    from staticgrad.backends.numpy.fast import COMPILING_NOTICE
    assert runs[0].stderr == COMPILING_NOTICE + "\n"
    assert runs[1].stderr == ""


@needs_kernels
def test_tanh_reports_nothing_and_keeps_numpys_special_values():
    tiny = np.finfo(np.float32).smallest_subnormal
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, 1e-40, 1e-30, -20.0, 1e30],
                 np.float32)  # (near 9.5 NumPy's tanh is 1 ulp under 1, libmvec's exact)
    x = np.repeat(x, 3)
    with np.errstate(all="raise"):
        got = runtime_fast.tanh(x, np.empty_like(x))
        want = np.tanh(x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.0 stays -0.0


@needs_kernels
def test_sigmoid_reports_nothing_in_either_tail_as_rt_sigmoid():
    x = np.array([-1e4, -100, -88.8, -20, 0, 20, 104, 1e4, np.nan] * 8, np.float32)
    with np.errstate(all="raise"):
        got = runtime_fast.sigmoid(x, np.empty_like(x))
        want = runtime.sigmoid(x)
    np.testing.assert_allclose(got, want, rtol=5e-7, atol=0)
    assert np.isnan(got[8::9]).all()


@needs_kernels
def test_kernels_run_on_several_threads_at_once():
    x = _inputs("exp", 200_000)
    want = runtime_fast.exp(x, np.empty_like(x))
    outs = [np.empty_like(x) for _ in range(4)]
    threads = [threading.Thread(target=lambda o=o: [runtime_fast.exp(x, o) for _ in range(20)])
               for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in outs:
        np.testing.assert_array_equal(o, want)


def _w3(n):
    """The suite's W3 (its expression: tests/passes/test_fuse.py's _w3) and its gradient, and
    n values to feed."""
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [None], name="x")
        y = w3_sum(x)
        fetches = [y, *sg.gradients(y, [x])]
    xv = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    return g, x, fetches, xv


@needs_kernels
def test_large_float32_fused_groups_use_the_kernels_and_agree_with_numpy():
    g, x, fetches, xv = _w3(300_001)
    fast = sg.Session(graph=g)
    plain = sg.Session(graph=g, options=CompileOptions(vector_math=False))
    source = fast.source(fetches, {x: xv})
    assert all(f"fast.{f}(" in source for f in ("exp", "log1p", "sigmoid", "tanh"))
    assert "fast (staticgrad.runtime_fast" in source  # named in the module's docstring
    plain_source = plain.source(fetches, {x: xv})
    assert "= fast." not in plain_source
    # without vector math, log1p is its NumPy steps (expand.py), log among them
    assert "Log1p_u = np.add(" in plain_source and "np.log(" in plain_source
    (y1, g1), (y0, g0) = fast.run(fetches, {x: xv}), plain.run(fetches, {x: xv})
    np.testing.assert_allclose(y1, y0, rtol=1e-6)
    np.testing.assert_allclose(g1, g0, rtol=2e-6, atol=1e-6)
    # and against the derivative written out in float64
    d = xv.astype(np.float64)
    t, s, e = np.tanh(1.5 * d + 0.3), 1 / (1 + np.exp(-d)), np.exp(-d * d)
    want = 1.5 * (1 - t * t) * s + t * s * (1 - s) - d * e + 2 * d / (1 + d * d)
    np.testing.assert_allclose(g1, want, rtol=1e-5, atol=1e-6)


def test_float64_and_vector_math_off_keep_numpy_ufuncs():
    g, x, fetches, xv = _w3(FUSE.min_elements)
    off = sg.Session(graph=g, options=CompileOptions(vector_math=False))
    source = off.source(fetches, {x: xv})
    assert "rt.run_blocks(" in source and "np.exp(" in source and "= fast." not in source
    g = sg.Graph()
    with g.as_default():
        x64 = sg.placeholder(sg.float64, [None], name="x")
        y = sg.reduce_sum(sg.exp(x64) * sg.sigmoid(x64))
    src = sg.Session(graph=g).source(y, {x64: np.zeros(FUSE.min_elements)})
    assert "rt.run_blocks(" in src and "np.exp(" in src and "= fast." not in src


def test_errors_inside_a_fused_group_still_name_the_op_with_the_kernels():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [None], name="x")
        y = sg.reduce_sum(sg.exp(x * 2.0, name="grows") + 1.0)
    xv = np.zeros(FUSE.min_elements * 2, np.float32)
    xv[-3] = 60.0  # 2x = 120: exp overflows
    with sg.Session(graph=g) as sess, np.errstate(over="raise"):
        with pytest.raises(sg.errors.InvalidArgumentError, match="grows"):
            sess.run(y, {x: xv})


def test_why_not_says_why_when_the_kernels_are_off(monkeypatch):
    if runtime_fast.available():
        assert runtime_fast.why_not() is None
    else:
        assert runtime_fast.why_not()
    monkeypatch.setattr(runtime_fast, "_state", {})
    monkeypatch.setenv("STATICGRAD_FAST", "0")
    assert not runtime_fast.available()
    assert "STATICGRAD_FAST=0" in runtime_fast.why_not()
    x = np.linspace(-3, 3, 4096, dtype=np.float32)
    np.testing.assert_array_equal(runtime_fast.exp(x, np.empty_like(x)), np.exp(x))


@needs_kernels
def test_an_exported_module_uses_numpy_ufuncs_only(tmp_path):
    g, x, fetches, xv = _w3(200_003)
    with sg.Session(graph=g) as sess:
        assert "= fast." in sess.source(fetches, {x: xv})
        path = sg.export(fetches, [x], str(tmp_path / "w3mod.py"), session=sess,
                         feed_shapes=[xv.shape])
        want = sess.run(fetches, {x: xv})
    text = open(path).read()
    assert "= fast." not in text and "runtime_fast" not in text and "np.exp(" in text
    namespace = {"__name__": "w3mod", "__file__": path}
    exec(compile(text, path, "exec"), namespace)  # noqa: S102
    got = namespace["run"](xv)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=2e-6, atol=1e-6)
