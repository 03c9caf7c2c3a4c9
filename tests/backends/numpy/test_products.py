"""backends/numpy/products.py and the runs that hold the BLAS to one thread: a plan with
convolutions runs inside `rt.one_blas_thread()`, its large 2-D products as `rt.matmul`,
split between staticgrad's threads."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.backends.numpy import conv_blocked, conv_fast, products

needs_blocks = pytest.mark.skipif(
    not (conv_fast.available() and conv_blocked.available()),
    reason="needs numba's loops and threadpoolctl with a BLAS it knows")


@pytest.fixture
def split_everything(monkeypatch):
    """Every product split between the threads, however small."""
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 0)


@needs_blocks
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n,transposed", [
    (7, 5, 3, ""), (1, 4, 6, ""), (2, 3, 9, "a"), (33, 17, 8, "b"), (64, 40, 24, "ab")])
def test_matmul_in_parts_agrees_with_one_product(split_everything, dtype, m, k,
                                                                n, transposed):
    rng = np.random.default_rng(m * k * n)
    a = rng.standard_normal((k, m) if "a" in transposed else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if "b" in transposed else (k, n)).astype(dtype)
    a, b = (a.T if "a" in transposed else a), (b.T if "b" in transposed else b)
    with conv_blocked.one_blas_thread():
        got = products.matmul(a, b)
        want = a @ b
    assert got.dtype == want.dtype and got.shape == (m, n) and got.flags.c_contiguous
    exact = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-13  # (the last bits: the BLAS's edge kernels)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, exact, rtol=tol, atol=tol)


@needs_blocks
def test_matmul_leaves_what_it_does_not_split_to_numpy(split_everything):
    ints = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(products.matmul(ints, ints.T), ints @ ints.T)
    mixed = products.matmul(np.ones((2, 3), np.float32), np.ones((3, 2)))
    assert mixed.dtype == np.float64 and (mixed == 3).all()
    assert products.matmul(np.ones((0, 3)), np.ones((3, 2))).shape == (0, 2)
    batched = np.ones((2, 3, 4))
    assert products.matmul(batched, np.ones((4, 5))).shape == (2, 3, 5)
    with pytest.raises(ValueError, match="matmul"):
        products.matmul(np.ones((2, 3)), np.ones((4, 2)))


@needs_blocks
def test_matmul_in_parts_reports_floating_point_errors_as_the_caller_asks(split_everything):
    """The rows a pool thread computes are under the caller's np.errstate too (threads do not
    inherit it): an overflow in the last row raises under over="raise", as `a @ b` does, and
    warns nothing under all="ignore"."""
    a = np.ones((4, 3), np.float32)
    a[-1] = 3e38  # (the last row's part runs on a pool thread where there are two or more)
    b = np.full((3, 2), 1e38, np.float32)
    with conv_blocked.one_blas_thread():
        with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
            products.matmul(a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(all="ignore"):
                got = products.matmul(a, b)
    assert np.isinf(got[-1]).all() and np.isfinite(got[:-1]).all()


@needs_blocks
def test_matmul_uses_no_more_threads_than_the_user_left_the_blas(split_everything,
                                                                  monkeypatch):
    """Under the user's own limit of one BLAS thread (threadpoolctl's threadpool_limits
    around sess.run, or OPENBLAS_NUM_THREADS=1), a @ b ran on one thread before products were
    split: rt.matmul then gives no part to conv_fast's pool either."""
    from threadpoolctl import threadpool_limits

    handed_out = []
    pool = conv_fast._pool

    def spied_pool():
        handed_out.append(True)
        return pool()

    monkeypatch.setattr(conv_fast, "_pool", spied_pool)
    a, b = np.ones((64, 32), np.float32), np.ones((32, 16), np.float32)
    with threadpool_limits(limits=1, user_api="blas"), conv_blocked.one_blas_thread():
        got = products.matmul(a, b)
    assert not handed_out and (got == 32).all()
    if conv_fast._state.get("threads", 1) > 1 and max(_blas_threads()) > 1:
        with conv_blocked.one_blas_thread():
            products.matmul(a, b)
        assert handed_out  # (as the user left it: split)


def test_worth_splitting_counts_multiply_adds():
    limit = conv_blocked.MIN_SPLIT_MACS
    assert products.worth_splitting(limit, 1, 1) and not products.worth_splitting(limit - 1, 1, 1)
    assert products.worth_splitting(None, 4, 4)  # a batch only a run knows


def _conv_net(batch=None):
    """A convolution, its ReLU, a dense layer of 2**22 multiply-adds a batch of 64, and the
    gradients of a sum (the BLAS threads seen inside the run, through a py_func)."""
    x = sg.placeholder(sg.float32, [batch, 16, 16, 1], name="x")
    w = sg.Variable(np.random.default_rng(0).standard_normal((3, 3, 1, 8)).astype(np.float32))
    d = sg.Variable(np.random.default_rng(1).standard_normal((2048, 32)).astype(np.float32)
                    / 40)
    h = sg.nn.relu(sg.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"))
    y = sg.matmul(sg.reshape(h, [-1, 2048]), d)
    loss = sg.reduce_sum(sg.tanh(y))
    return x, loss, sg.gradients(loss, [w, d])


def _blas_threads():
    return [lib["num_threads"] for lib in conv_blocked._blas_controller().info()]


@needs_blocks
@pytest.mark.usefixtures("g", "loops_at_every_size")
@pytest.mark.parametrize("batch", [64, None])
def test_a_plan_with_convolutions_holds_the_blas_to_one_thread_and_splits_products(
        batch, tmp_path):
    x, loss, grads = _conv_net(batch)
    seen = []

    def spy(v):
        seen.append(_blas_threads())
        return v

    watched = sg.py_func(spy, [loss], sg.float32)
    feed = {x: np.random.default_rng(2).standard_normal((64, 16, 16, 1)).astype(np.float32)}
    before = _blas_threads()
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        source = sess.source([watched, grads], feed)
        got = sess.run([watched, grads], feed)
        sg.export([loss, grads], [x], tmp_path / "net.py", feed_shapes=[(64, 16, 16, 1)])
        with sg.Session(options=sg.CompileOptions(vector_math=False)) as plain:
            plain.run(sg.global_variables_initializer())
            numpy_only = plain.source([loss, grads], feed)
            want = plain.run([loss, grads], feed)
    assert "with rt.one_blas_thread():" in source
    assert source.count("rt.matmul(") == 3  # the forward product and both its gradients
    assert seen == [[1] * len(before)] and _blas_threads() == before
    exported = (tmp_path / "net.py").read_text()
    for text in (exported, numpy_only):  # (NumPy's products, on its BLAS as the user set it)
        assert "one_blas_thread" not in text and "rt.matmul" not in text and " @ " in text
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g_got, g_want in zip(got[1], want[1]):
        np.testing.assert_allclose(g_got, g_want, rtol=1e-4, atol=1e-4)


@needs_blocks
@pytest.mark.usefixtures("g")
def test_a_plan_without_convolutions_leaves_the_blas_alone():
    a = sg.placeholder(sg.float32, [256, 256], name="a")
    loss = sg.reduce_sum(sg.matmul(a, a))
    with sg.Session() as sess:
        source = sess.source(sg.gradients(loss, [a]), {a: np.ones((256, 256), np.float32)})
    assert "one_blas_thread" not in source and "rt.matmul" not in source


@needs_blocks
@pytest.mark.usefixtures("g")
def test_a_plan_whose_convolutions_stay_with_runtime_conv_holds_nothing(monkeypatch):
    """Only a convolution large enough for the loops (conv_fast.LOOPS_MIN_MACS) makes the run
    hold the BLAS to one thread: under it, runtime_conv's whole-batch products keep the
    BLAS's threads. The net's largest convolutions, the forward one and its filter gradient,
    are 64 * 16 * 16 * 72 multiply-adds each."""
    x, loss, grads = _conv_net(64)
    feed = {x: np.zeros((64, 16, 16, 1), np.float32)}
    sources = []
    for least in (64 * 16 * 16 * 72 + 1, 64 * 16 * 16 * 72):
        monkeypatch.setattr(conv_fast, "LOOPS_MIN_MACS", least)
        with sg.Session() as sess:
            sources.append(sess.source([loss, grads], feed))
    assert "one_blas_thread" not in sources[0] and "rt.matmul" not in sources[0]
    assert "with rt.one_blas_thread():" in sources[1] and "rt.matmul(" in sources[1]


@pytest.mark.usefixtures("g")
@pytest.mark.parametrize("gradient", ["input", "filter"])
def test_a_convolution_gradient_alone_is_sized_by_its_out_backprop(gradient, monkeypatch):
    """The hold for a plan whose only convolution is one of the gradients: its multiply-adds
    are out_backprop's [N, OH, OW] (here 8x4x4, the input being 8x8x8 at stride 2) times the
    filter's size, whatever the op's other inputs are."""
    dy = sg.placeholder(sg.float32, [8, 4, 4, 16], name="dy")
    x = sg.placeholder(sg.float32, [8, 8, 8, 3], name="x")
    w = sg.constant(np.ones((3, 3, 3, 16), np.float32))
    if gradient == "input":
        out = sg.nn.conv2d_backprop_input([8, 8, 8, 3], w, dy, [1, 2, 2, 1], "SAME")
    else:
        out = sg.nn.conv2d_backprop_filter(x, [3, 3, 3, 16], dy, [1, 2, 2, 1], "SAME")
    feed = {dy: np.zeros((8, 4, 4, 16), np.float32), x: np.zeros((8, 8, 8, 3), np.float32)}
    macs = 8 * 4 * 4 * (3 * 3 * 3 * 16)
    held = []
    for least in (macs + 1, macs):
        monkeypatch.setattr(conv_fast, "LOOPS_MIN_MACS", least)
        with sg.Session() as sess:
            held.append("with rt.one_blas_thread():" in sess.source(out, feed))
    assert held == [False, True]


@pytest.mark.usefixtures("g", "loops_at_every_size")
def test_without_numbas_loops_the_same_source_runs_on_numpys_own_products(monkeypatch):
    """The source does not depend on the [fast] extra; without its loops (runtime_conv's
    convolutions, whose whole-batch products want OpenBLAS's threads) the run holds nothing
    and rt.matmul is NumPy's product."""
    monkeypatch.setattr(conv_fast, "_state", {"why": "switched off by this test"})
    assert not conv_blocked.blocked()
    assert isinstance(conv_blocked.one_blas_thread(), contextlib.nullcontext)
    a = np.random.default_rng(3).standard_normal((64, 40)).astype(np.float32)
    np.testing.assert_array_equal(products.matmul(a, a.T), a @ a.T)
    x, loss, grads = _conv_net(64)
    feed = {x: np.random.default_rng(4).standard_normal((64, 16, 16, 1)).astype(np.float32)}
    results = []
    for options in (sg.CompileOptions(), sg.CompileOptions(vector_math=False)):
        with sg.Session(options=options) as sess:
            sess.run(sg.global_variables_initializer())
            results.append((sess.source([loss, grads], feed), sess.run([loss, grads], feed)))
    (held, got), (plain, want) = results
    assert "with rt.one_blas_thread():" in held and "rt.matmul(" in held
    assert "one_blas_thread" not in plain
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g_got, g_want in zip(got[1], want[1]):
        np.testing.assert_allclose(g_got, g_want, rtol=1e-4, atol=1e-4)
