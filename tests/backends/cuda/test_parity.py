"""The CUDA backend computes what the NumPy backend computes: every op of the registry's
gradient-check rows (tests/ops/test_gradients.py, one row an op type), its value and its
first derivatives, in float64, on a GPU where CuPy sees one, else on the CPU emulator
(emulator.py); and a training loop reaches the same losses. Run on a GPU, this file is the
backend's parity suite."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from tests.conftest import dense_gradients
from tests.ops.test_gradients import CASES, _build

ROWS = list({case[0]: case for case in reversed(CASES)}.values())[::-1]  # an op's first row


@pytest.mark.parametrize("case", ROWS, ids=[c[0] for c in ROWS])
def test_each_op_and_its_gradients_agree_with_the_numpy_backend(case, device):
    g, xs, values, loss, _ = _build(case)
    with g.as_default():
        grads = [gr for gr in dense_gradients(loss, xs)]
        fetches = [loss] + grads
        feed = dict(zip(xs, values))
        with sg.Session(graph=g) as host, sg.Session(graph=g, backend="cuda") as gpu:
            want = host.run(fetches, feed)
            got = gpu.run(fetches, feed)
    for name, a, b in zip(["loss"] + [f"d loss / d x{i}" for i in range(len(xs))], got, want):
        assert isinstance(a, np.ndarray | np.generic) and a.dtype == b.dtype and \
            np.shape(a) == np.shape(b), f"{case[0]}: {name}"
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=f"{case[0]}: {name}")


def test_fused_kernels_broadcast_and_sum_as_numpy_does(g, device):
    rng = np.random.default_rng(1)
    x = sg.placeholder(sg.float32, [None, 7], name="x")
    b = sg.placeholder(sg.float32, [7], name="b")
    c = sg.placeholder(sg.float32, [None, 1], name="c")
    y = sg.tanh(x * 1.5 + b) * sg.sigmoid(c) - sg.exp(-b * b)
    s = sg.reduce_sum(sg.square(y) + sg.log1p(sg.abs(x)))
    grads = sg.gradients(s, [x, b, c])
    feed = {x: rng.normal(size=(300, 7)).astype(np.float32),
            b: rng.normal(size=7).astype(np.float32),
            c: rng.normal(size=(300, 1)).astype(np.float32)}
    with sg.Session() as host, sg.Session(backend="cuda") as gpu:
        want = host.run([y, s, *grads], feed)
        got = gpu.run([y, s, *grads], feed)
        assert "fused" in gpu.source([y, s, *grads], feed)
    for a, w in zip(got, want):
        np.testing.assert_allclose(a, w, rtol=2e-5, atol=1e-5)


def test_a_training_loop_reaches_the_numpy_backends_losses(device):
    """A 2-layer MLP with softmax cross-entropy and SGD, 20 steps: variables live on the
    device between runs, and the Saver's values come back through the backend."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 10)).astype(np.float32)
    Y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 64)]
    losses = {}
    for backend in ("numpy", "cuda"):
        g = sg.Graph()
        with g.as_default():
            x = sg.placeholder(sg.float32, [None, 10], name="x")
            y = sg.placeholder(sg.float32, [None, 3], name="y")
            w1 = sg.Variable(np.random.default_rng(1).normal(0, .3, (10, 16)).astype(np.float32))
            b1 = sg.Variable(np.zeros(16, np.float32))
            w2 = sg.Variable(np.random.default_rng(2).normal(0, .3, (16, 3)).astype(np.float32))
            h = sg.nn.relu(sg.matmul(x, w1) + b1)
            loss = sg.reduce_mean(sg.nn.softmax_cross_entropy_with_logits(
                labels=y, logits=sg.matmul(h, w2)))
            train = sg.train.GradientDescentOptimizer(0.5).minimize(loss)
            with sg.Session(backend=backend) as sess:
                sess.run(sg.global_variables_initializer())
                step = sess.make_callable([train, loss], [x, y])
                losses[backend] = [float(step(X, Y)[1]) for _ in range(20)]
                losses[backend + "_w2"] = sess.run(w2)
    np.testing.assert_allclose(losses["cuda"], losses["numpy"], rtol=1e-4)
    assert losses["cuda"][-1] < losses["cuda"][0] * 0.7
    np.testing.assert_allclose(losses["cuda_w2"], losses["numpy_w2"], rtol=1e-4, atol=1e-5)


def test_fetch_device_keeps_fetches_in_the_devices_memory(g, device):
    x = sg.placeholder(sg.float32, [3], name="x")
    y = sg.reduce_sum(x * 2.0)
    with sg.Session(backend="cuda") as sess:
        import cupy
        on_host = sess.make_callable(y, [x])(np.ones(3, np.float32))
        on_device = sess.make_callable(y, [x], fetch_device=True)(np.ones(3, np.float32))
        assert isinstance(on_host, np.ndarray | np.generic) and float(on_host) == 6.0
        assert float(on_device) == 6.0 and isinstance(on_device, cupy.ndarray)
    feed = {x: np.ones(3, np.float32)}
    kept = sg.Session(backend="cuda", options=sg.CompileOptions(fetch_device=True))
    assert "crt.to_host" in sg.Session(backend="cuda").source(y, feed)
    assert "crt.to_host" not in kept.source(y, feed)


@pytest.mark.parametrize("cuda_graph", [False, True])
def test_fetch_device_hands_back_constants_and_static_shapes_on_the_device(g, device,
                                                                           cuda_graph):
    """A fetch the compiler folds to a constant (a constant, a static shape, zeros, a 0-d
    number) comes back in the GPU's memory like the others, a new array at each call; it once
    came back as a NumPy array (and the verifier raised KeyError on it)."""
    import cupy
    x = sg.placeholder(sg.float32, [3], name="x")
    fetches = [sg.constant([1.0, 2.0]), sg.shape(x), sg.zeros([2]), sg.constant(7.0), x * 2.0]
    want = [np.array([1.0, 2.0], np.float32), np.array([3], np.int32),
            np.zeros(2, np.float32), np.float32(7.0), np.full(3, 2.0, np.float32)]
    with sg.Session(backend="cuda") as sess:
        fn = sess.make_callable(fetches, [x], fetch_device=True, cuda_graph=cuda_graph)
        calls = [fn(np.ones(3, np.float32)) for _ in range(3)]  # (a graph: captured, replayed)
    for got in calls:
        for value, expected in zip(got, want):
            assert isinstance(value, cupy.ndarray)
            np.testing.assert_array_equal(cupy.asnumpy(value), expected)
            assert cupy.asnumpy(value).dtype == expected.dtype
    calls[0][0][0] = 99.0  # each call's arrays are its own
    assert float(calls[1][0][0]) == 1.0


def test_a_nan_constant_reaches_a_kernel_as_a_literal_of_its_dtype(device):
    """A 0-d NaN is not equal to itself: it once went to the kernel as `crt.dense(np.nan)`, a
    float64 array that a float* parameter reads as 0.0 on a GPU."""
    x = sg.placeholder(sg.float32, [3], name="x")
    fetches = [x * sg.constant(np.nan, sg.float32), sg.exp(x) + np.float32(np.nan),
               sg.maximum(x, sg.constant(np.full((2, 3), np.nan, np.float32)))]
    feed = {x: np.array([1, -2, 0], np.float32)}
    with sg.Session() as host, sg.Session(backend="cuda") as gpu:
        source = gpu.source(fetches, feed)
        want = host.run(fetches, feed)
        got = gpu.run(fetches, feed)
    assert "crt.dense(np.nan)" not in source and "__uint_as_float(0x7fc00000u)" in source
    for a, w in zip(got, want):
        assert a.dtype == w.dtype and a.shape == w.shape and np.isnan(a).all()


def test_a_strided_feed_reaches_kernels_dense(device):
    """A fed view (a transpose, a step) is taken on the device as it is: it must be made
    C-contiguous before a kernel indexes it as dense memory."""
    x = sg.placeholder(sg.float32, [3, 2], name="x")
    fetches = [sg.tanh(x) * 2.0, sg.reduce_sum(x * x)]
    base = np.arange(12, dtype=np.float32).reshape(2, 6) / 10
    import cupy  # (the emulator's, without a GPU)
    with sg.Session() as host, sg.Session(backend="cuda") as gpu:
        want = host.run(fetches, {x: base[:, ::2].T})
        for feed in (base[:, ::2].T, cupy.asarray(base)[:, ::2].T):
            for a, w in zip(gpu.run(fetches, {x: feed}), want):
                np.testing.assert_allclose(a, w, rtol=1e-6)


def test_a_scalar_constant_stays_a_scalar_on_the_device(device):
    """A 0-d constant that a device op reads is copied to the GPU as a 0-d array. It was
    copied through np.ascontiguousarray, which makes it 1-d: on the H200, TensorArrayWrite's
    int() of its index failed; the emulator, once its arrays were CuPy's, showed a gather by
    a scalar index keeping an axis too."""
    x = sg.placeholder(sg.float64, [3, 2], name="x")
    index = sg.constant(np.int64(1))
    fetches = [sg.gather(x, index), sg.gather(x, index, axis=1), sg.reshape(x, [6])[index],
               sg.gather(x, sg.constant(np.int32(2)))]
    feed = {x: np.arange(6.0).reshape(3, 2)}
    with sg.Session() as host, sg.Session(backend="cuda") as gpu:
        want, got = host.run(fetches, feed), gpu.run(fetches, feed)
    for a, w in zip(got, want):
        assert np.shape(a) == np.shape(w)
        np.testing.assert_array_equal(a, w)


def test_integer_kernels_wrap_on_overflow_as_numpy_does(device):
    """Signed overflow is undefined in C: `x + 1 > x` compiled as it reads folds to true.
    NumPy's integers wrap, and so must a kernel's (computing on the unsigned type)."""
    fetches, feed = [], {}
    for dtype in (sg.int32, sg.int64):
        info = np.iinfo(dtype.np)
        x = sg.placeholder(dtype, [4], name="x")
        feed[x] = np.array([info.max, 0, info.min, -7], dtype.np)
        fetches += [sg.greater(x + 1, x), sg.less(x - 1, x), sg.greater(x * 2, x),
                    sg.greater_equal(sg.abs(x), 0), sg.less(-x, 0), sg.greater(sg.square(x), -1),
                    x * 3 + info.max]
    with np.errstate(over="ignore"), sg.Session() as host, \
            sg.Session(backend="cuda") as gpu:
        want = host.run(fetches, feed)
        got = gpu.run(fetches, feed)
    for a, w in zip(got, want):
        assert a.dtype == w.dtype
        np.testing.assert_array_equal(a, w)


@pytest.mark.parametrize("first", ["node", "kernel"])
def test_a_node_named_as_a_sums_kernel_does_not_shadow_it(device, first):
    """A sum's second kernel (`fused_sums`) is a module global: its name is made fresh, as
    every name is, so a node called `fused_sums` (before or after it) is a local of its own."""
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [3], name="x")
        xv = {x: np.array([1, 2, 3], np.float32)}
        mm = lambda: sg.matmul(sg.reshape(x, [1, 3]), sg.reshape(x, [3, 1]),  # noqa: E731
                               name="fused_sums")
        y = mm() if first == "node" else None
        s = sg.reduce_sum(sg.tanh(x) * 2.0)
        y = y if y is not None else mm()
        with sg.Session() as host, sg.Session(backend="cuda") as gpu:
            want = host.run([s, y], xv)
            got = gpu.run([s, y], xv)
    for a, w in zip(got, want):
        np.testing.assert_allclose(a, w, rtol=1e-6)


def test_ops_placed_on_the_cpu_run_on_the_host_within_the_plan(g, device):
    x = sg.placeholder(sg.float32, [3], name="x")
    with sg.device("/cpu:0"):
        a = sg.exp(x, name="on_cpu")
    with sg.device("/gpu:0"):
        b = sg.tanh(a, name="on_gpu")
    feed = {x: np.array([0.5, -1.0, 2.0], np.float32)}
    with sg.Session(backend="cuda") as sess:
        source = sess.source(b, feed)
        np.testing.assert_allclose(sess.run(b, feed), np.tanh(np.exp(feed[x])), rtol=1e-6)
    assert "on_cpu = np.exp(x)" in source
    assert "on_cpu_to_cuda = crt.to_device(on_cpu)" in source
    assert "k_tanh(" in source


def test_a_kernel_reads_at_most_max_kernel_inputs_arrays(g, device):
    """A chain over many fed arrays is cut into several kernels, each within the parameter
    space CUDA allows (found by an attack: 700 inputs made one kernel of 701 pointers)."""
    from staticgrad.backends.cuda import MAX_KERNEL_INPUTS
    xs = [sg.placeholder(sg.float32, [4], name=f"x{i}") for i in range(MAX_KERNEL_INPUTS + 50)]
    y = xs[0]
    for v in xs[1:]:
        y = y * 0.5 + v
    feed = {v: np.full(4, i % 7, np.float32) for i, v in enumerate(xs)}
    with sg.Session(backend="cuda") as gpu, sg.Session() as host:
        source = gpu.source(y, feed)
        np.testing.assert_allclose(gpu.run(y, feed), host.run(y, feed), rtol=1e-5)
    kernels = source.split('extern "C"')[1:]
    assert len(kernels) >= 2
    assert max(k.count("__restrict__ in") for k in kernels) <= MAX_KERNEL_INPUTS


def test_a_reduction_computes_its_elementwise_input_where_it_reads_it(g, device):
    """mean(square(x - y), axis=1): the square of the difference is never written out; the
    reduction's kernel calls a function of x and y for each element it reads."""
    rng = np.random.default_rng(3)
    x = sg.placeholder(sg.float32, [50, 7], name="x")
    y = sg.placeholder(sg.float32, [7], name="y")
    fetches = [sg.reduce_mean(sg.square(x - y), axis=1), sg.reduce_max(sg.tanh(x) * 2.0, 0)]
    feed = {x: rng.normal(size=(50, 7)).astype(np.float32),
            y: rng.normal(size=7).astype(np.float32)}
    with sg.Session(backend="cuda") as gpu, sg.Session() as host:
        source = gpu.source(fetches, feed)
        for a, b in zip(gpu.run(fetches, feed), host.run(fetches, feed)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert "__device__ inline float Square_at(long long i" in source
    assert "Square = cp.empty" not in source and "Mul = cp.empty" not in source


def test_the_digits_lenet_trains_to_the_numpy_backends_losses(g, device, monkeypatch):
    """examples/digits_lenet.py's network (convolutions, pooling, dense layers, Adam and the
    sparse cross-entropy), five steps from the same start on both backends."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[3] / "examples" / "digits_lenet.py"
    monkeypatch.syspath_prepend(str(path.parent))  # (its _digits helper, as a script has it)
    spec = importlib.util.spec_from_file_location("digits_lenet_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (16, 8, 8, 1)).astype(np.float32)
    Y = rng.integers(0, 10, 16)
    sg.set_random_seed(0)
    images = sg.placeholder(sg.float32, [None, 8, 8, 1], name="images")
    labels = sg.placeholder(sg.int64, [None], name="labels")
    logits = example.lenet(images)
    loss = sg.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    train = sg.train.AdamOptimizer(0.01).minimize(loss)
    with sg.Session() as host:
        host.run(sg.global_variables_initializer())
        start = {v.op.name: host.run(v) for v in sg.global_variables()}
        want = [host.run([train, loss], {images: X, labels: Y})[1] for _ in range(5)]
    with sg.Session(backend="cuda") as gpu:
        for v in sg.global_variables():
            v.load(start[v.op.name], gpu)
        got = [gpu.run([train, loss], {images: X, labels: Y})[1] for _ in range(5)]
    np.testing.assert_allclose(got, want, rtol=1e-4)
    assert got[-1] < got[0]


def test_closing_frees_the_pools_memory_and_oom_names_the_op(g, device, monkeypatch):
    import cupy
    x = sg.placeholder(sg.float32, [4], name="x")
    y = sg.tanh(x, name="squash")
    sess = sg.Session(backend="cuda")
    sess.run(y, {x: np.ones(4, np.float32)})

    def exhausted(*args, **kwargs):
        raise MemoryError("Out of memory allocating 16 bytes")  # (CuPy's is a MemoryError)
    monkeypatch.setattr(cupy, "empty", exhausted)
    with pytest.raises(sg.errors.ResourceExhaustedError,
                       match="squash.*test_parity.py.*out of memory on the cuda backend"):
        sess.run(y, {x: np.ones(4, np.float32)})
    monkeypatch.undo()
    sess.close()
    if device == "emulator":
        assert cupy.get_default_memory_pool().freed


def test_random_ops_draw_on_the_device_by_their_distribution(g, device):
    """Random ops draw from CuPy's generator (not NumPy's stream): checked by moments, and
    a seeded op draws alike in two sessions."""
    u = sg.random.uniform([20000], -1.0, 3.0, seed=1)
    n = sg.random.normal([20000], 2.0, 0.5, seed=2)
    t = sg.random.truncated_normal([20000], 0.0, 1.0, seed=3)
    with sg.Session(backend="cuda") as one, sg.Session(backend="cuda") as two:
        a, b, c = one.run([u, n, t])
        assert np.array_equal(a, two.run(u))
    assert a.min() >= -1 and a.max() < 3 and abs(a.mean() - 1.0) < 0.05
    assert abs(b.mean() - 2.0) < 0.02 and abs(b.std() - 0.5) < 0.02
    assert np.abs(c).max() <= 2 and abs(c.std() - 0.88) < 0.03


def test_a_saver_round_trips_variables_that_live_on_the_device(g, device, tmp_path):
    w = sg.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    step = w.assign_add(sg.ones_like(w))
    saver = sg.train.Saver()
    with sg.Session(backend="cuda") as sess:
        sess.run(sg.global_variables_initializer())
        sess.run(step)
        path = saver.save(sess, str(tmp_path / "model"))
        sess.run(step)
    with sg.Session(backend="cuda") as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(2, 3) + 1)


def test_a_reduction_does_not_read_a_variable_after_an_assignment_it_should_precede(g, device):
    """The elementwise input of a reduction is computed inside the reduction's kernel only
    where no assignment can come between: here y = v * 2 is read before v += 1."""
    v = sg.Variable(np.full(4, 1.0, np.float32), name="v")
    y = v * 2.0
    with sg.control_dependencies([y]):
        update = v.assign_add(np.ones(4, np.float32))
    with sg.control_dependencies([update]):
        total = sg.reduce_sum(y, axis=0)
    for backend in ("numpy", "cuda"):
        with sg.Session(backend=backend) as sess:
            sess.run(sg.global_variables_initializer())
            assert float(sess.run(total)) == 8.0, backend


def test_an_elementwise_input_of_a_reduction_with_no_template_is_computed_first(g, device):
    """A reduction its templates leave to CuPy (an empty axis: the reference's error) reads
    its input from memory, so that input is computed as usual."""
    x = sg.placeholder(sg.float32, [3, 0], name="x")
    y = sg.reduce_sum(x * 2.0, axis=1)
    feed = {x: np.zeros((3, 0), np.float32)}
    with sg.Session(backend="cuda") as sess:
        np.testing.assert_array_equal(sess.run(y, feed), np.zeros(3, np.float32))


def test_a_kernel_counts_the_values_of_other_groups_among_its_inputs(g, device):
    """Values made by other groups are arrays the kernel takes too (a review found a group
    of 451 pointers: each input's producer was in some group, so none counted)."""
    from staticgrad.backends.cuda import MAX_KERNEL_INPUTS
    xs = [sg.placeholder(sg.float32, [2, 3], name=f"x{i}") for i in range(MAX_KERNEL_INPUTS + 50)]
    made = [x * 2.0 for x in xs]
    sums = [sg.reduce_sum(m, axis=0) for m in made]  # (each made value read outside)
    total = made[0]
    for m in made[1:]:
        total = total + m
    feed = {x: np.full((2, 3), i % 5, np.float32) for i, x in enumerate(xs)}
    with sg.Session(backend="cuda") as gpu, sg.Session() as host:
        source = gpu.source([total, sums[0]], feed)
        np.testing.assert_allclose(gpu.run(total, feed), host.run(total, feed))
    kernels = source.split('extern "C"')[1:]
    assert max(k.count("__restrict__ in") for k in kernels) <= MAX_KERNEL_INPUTS


def test_a_string_variable_stays_on_the_host(g, device, tmp_path):
    s = sg.Variable(np.array([b"a", b"bc"], dtype=object), dtype=sg.string, name="s")
    n = sg.Variable(np.array([1, 2], np.int32), name="n")
    saver = sg.train.Saver()
    with sg.Session(backend="cuda") as sess:
        sess.run(sg.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
    with sg.Session(backend="cuda") as sess:
        saver.restore(sess, path)
        assert list(sess.run(s)) == [b"a", b"bc"] and list(sess.run(n)) == [1, 2]


def test_a_kernel_that_fails_to_compile_is_an_internal_error(g, device, monkeypatch):
    import sys
    render = sys.modules["staticgrad.backends.cuda.render"]  # (the package's `render` is
    x = sg.placeholder(sg.float32, [3], name="x")            # that module's function)
    monkeypatch.setattr(render, "preamble", lambda qualifier: "this is not C++;")
    with sg.Session(backend="cuda") as sess:
        with pytest.raises(sg.errors.InternalError, match="CUDA kernels of this plan failed"):
            sess.run(sg.tanh(x), {x: np.ones(3, np.float32)})


KERNEL_ROWS = [case for case in ROWS if sg.ops.table.REGISTRY[case[0]].expr is not None]


def test_every_elementwise_kernel_agrees_in_float32_within_its_rounding(g, device):
    """The generated kernels in float32 (C's float functions against NumPy's), every
    elementwise op of the gradient rows with its gradients, in one plan: within 2e-6 where
    the arithmetic is exact, and a few ulps (5e-5) for the transcendental functions."""
    fetches, feed = [], {}
    for op_type, fn, makers, _ in KERNEL_ROWS:
        values = [make(shape).astype(np.float32) for make, shape in makers]
        xs = [sg.placeholder(sg.float32, v.shape, name=f"{op_type}_x{i}")
              for i, v in enumerate(values)]
        y = fn(*xs)
        fetches.append([y] + list(dense_gradients(sg.reduce_sum(y * 0.75), xs)))
        feed.update(zip(xs, values))
    with sg.Session() as host, sg.Session(backend="cuda") as gpu:
        want, got = host.run(fetches, feed), gpu.run(fetches, feed)
    assert len(KERNEL_ROWS) > 30
    for (op_type, *_), w, o in zip(KERNEL_ROWS, want, got):
        for a, b in zip(o, w):
            assert a.dtype == b.dtype == np.float32, op_type
            np.testing.assert_allclose(a, b, rtol=5e-5, atol=2e-6, err_msg=op_type)


def test_fetch_device_hands_back_strings_on_the_host(g, device):
    x = sg.placeholder(sg.float32, [2], name="x")
    y = x * 3.0
    text = sg.strings.as_string(y)
    with sg.Session(backend="cuda") as sess:
        got_y, got_text = sess.make_callable([y, text], [x], fetch_device=True)(
            np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(np.asarray(got_y.tolist()), [3.0, 6.0])
    assert isinstance(got_text, np.ndarray) and list(got_text) == [b"3.000000", b"6.000000"]
