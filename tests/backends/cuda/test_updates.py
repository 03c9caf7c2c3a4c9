"""A variable's update on the GPU (an optimizer's step): written into the variable's own
array, and, where the kernel computing its delta is read by the update alone, computed and
applied by one kernel (render.py's `_fold_into_update`), where the update runs. Each case
against the NumPy backend's values, run by run."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from tests.backends.cuda import emulator_capture as capture
from tests.backends.cuda.test_traffic import _compiles_with_nvcc

N = 4096


def _runs(build, feeds: dict, steps: int = 3) -> dict:
    """backend -> the values of `build()`'s fetches at each of `steps` runs (a fresh graph
    and session for each backend), and the session's variable arrays before and after."""
    out = {}
    for backend in ("numpy", "cuda"):
        with sg.Graph().as_default():
            fetches, fed = build()
            with sg.Session(backend=backend) as sess:
                sess.run(sg.global_variables_initializer())
                before = dict(sess._vars)
                values = [sess.run(fetches, {fed[k]: v for k, v in feeds.items()})
                          for _ in range(steps)]
                values.append(sess.run(sg.global_variables()))
                out[backend] = (values, before, dict(sess._vars), sess)
    return out


def _agree(runs: dict, rtol=1e-6) -> None:
    for got, want in zip(runs["cuda"][0], runs["numpy"][0]):
        for a, b in zip(got, want):
            if a is None:
                assert b is None
                continue
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-6)


def _source(build, feeds: dict) -> str:
    with sg.Graph().as_default():
        fetches, fed = build()
        return sg.Session(backend="cuda").source(fetches, {fed[k]: v for k, v in feeds.items()})


X = np.linspace(-1.0, 1.0, N, dtype=np.float32)


def _sgd():
    w = sg.Variable(np.ones(N, np.float32), name="w")
    x = sg.placeholder(sg.float32, [N], name="x")
    loss = sg.reduce_sum(w * x)
    return [sg.train.GradientDescentOptimizer(0.5).minimize(loss), loss], {"x": x}


def test_an_sgd_step_applies_its_delta_to_the_variables_own_array_in_one_kernel(device):
    runs = _runs(_sgd, {"x": X})
    _agree(runs)
    _, before, after, _ = runs["cuda"]
    assert after["w"] is before["w"]  # written in place
    source = _source(_sgd, {"x": X})
    assert "V['w'] = GradientDescent_update_w_AssignSub = crt.updated(update_w, " in source
    assert "var[i] = (float)(var[i] - v0);" in source
    assert "GradientDescent_update_w_Mul =" not in source  # (no array for the delta)


def test_the_update_kernel_reads_the_gradient_once_and_writes_the_variable_once(device):
    if device == "gpu":
        pytest.skip("the launch log is the emulator's")
    import cupy as cp
    with sg.Graph().as_default():
        (train, _), fed = _sgd()
        with sg.Session(backend="cuda") as sess:
            sess.run(sg.global_variables_initializer())
            step = sess.make_callable(train, [fed["x"]])
            on_device = cp.asarray(X)
            step(on_device)
            capture.LAUNCHES.clear()
            step(on_device)
            launches = list(capture.LAUNCHES)
            w = cp.asnumpy(sess._vars["w"])
    updates = [launch for launch in launches if launch[0].startswith("update_w")]
    assert len(updates) == 1, launches
    (_, reads, writes), = updates
    assert writes == 4 * N and reads <= 4 * N, launches  # x (or the gradient) in, w out
    np.testing.assert_allclose(w, 1.0 - 2 * 0.5 * X, rtol=1e-6)


def test_a_read_of_the_variable_between_the_delta_and_the_update_sees_its_old_value(device):
    def build():
        w = sg.Variable(np.full(N, 2.0, np.float32), name="w")
        x = sg.placeholder(sg.float32, [N], name="x")
        delta = 0.5 * x
        with sg.control_dependencies([delta.op]):
            before = w.read_value() * 3.0
        with sg.control_dependencies([before.op]):
            update = sg.assign_sub(w, delta)
        with sg.control_dependencies([update.op]):
            after = w.read_value() + 0.0
        return [before, update, after], {"x": x}

    runs = _runs(build, {"x": X})
    _agree(runs)
    assert "crt.updated(update_w, " in _source(build, {"x": X})


@pytest.mark.parametrize("decay", ["same variable", "other variable"])
def test_a_delta_reading_a_variable_is_applied_correctly(device, decay):
    """Weight decay reads the variable it updates: the kernel would read and write one array
    through two pointers it declares apart, so the delta is computed first and the update
    made in place by CuPy. A delta reading another variable is still one kernel."""
    def build():
        w = sg.Variable(np.linspace(1.0, 2.0, N, dtype=np.float32), name="w")
        v = sg.Variable(np.linspace(-1.0, 1.0, N, dtype=np.float32), name="v")
        x = sg.placeholder(sg.float32, [N], name="x")
        read = w if decay == "same variable" else v
        return [sg.assign_sub(w, read.read_value() * x)], {"x": x}

    runs = _runs(build, {"x": X})
    _agree(runs)
    fused = "crt.updated(update_w, " in _source(build, {"x": X})
    assert fused == (decay == "other variable")
    _, before, after, _ = runs["cuda"]
    assert after["w"] is before["w"]


def test_a_state_write_between_the_delta_and_the_update_keeps_them_apart(device):
    """The delta's inputs would be read late, after a variable it reads was written."""
    def build():
        w = sg.Variable(np.ones(N, np.float32), name="w")
        v = sg.Variable(np.zeros(N, np.float32), name="v")
        x = sg.placeholder(sg.float32, [N], name="x")
        delta = v.read_value() * x
        with sg.control_dependencies([delta.op]):
            bump = sg.assign_add(v, x)
        with sg.control_dependencies([bump.op]):
            update = sg.assign_sub(w, delta)
        return [update, bump], {"x": x}

    runs = _runs(build, {"x": X})
    _agree(runs)
    assert "crt.updated(update_w, " not in _source(build, {"x": X})


@pytest.mark.parametrize("optimizer", ["momentum", "adam", "rmsprop"])
def test_optimizers_steps_agree_with_the_numpy_backend(device, optimizer):
    def build():
        w = sg.Variable(np.linspace(-1.0, 1.0, 64 * 32, dtype=np.float32).reshape(64, 32),
                        name="w")
        b = sg.Variable(np.zeros(32, np.float32), name="b")
        x = sg.placeholder(sg.float32, [16, 64], name="x")
        loss = sg.reduce_mean(sg.square(sg.tanh(sg.matmul(x, w) + b)))
        opt = {"momentum": sg.train.MomentumOptimizer(0.1, 0.9),
               "adam": sg.train.AdamOptimizer(0.01),
               "rmsprop": sg.train.RMSPropOptimizer(0.01)}[optimizer]
        return [opt.minimize(loss), loss], {"x": x}

    xs = np.random.default_rng(1).normal(size=(16, 64)).astype(np.float32)
    runs = _runs(build, {"x": xs}, steps=5)
    _agree(runs, rtol=2e-5)


def test_a_captured_sgd_step_updates_the_variable_in_place_at_each_replay(device):
    with sg.Graph().as_default():
        (train, loss), fed = _sgd()
        with sg.Session(backend="cuda") as sess:
            sess.run(sg.global_variables_initializer())
            array = sess._vars["w"]
            step = sess.make_callable([train, loss], [fed["x"]], cuda_graph=True)
            losses = [float(step(X)[1]) for _ in range(4)]
            assert sess._vars["w"] is array
            w = sess.run(sess.graph.get_tensor_by_name("w:0"))
    want_w, want = np.ones(N, np.float32), []
    for _ in range(4):
        want.append(float(np.sum(want_w * X)))
        want_w = want_w - 0.5 * X
    np.testing.assert_allclose(losses, want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(w, want_w, rtol=1e-6)


def test_the_update_kernels_compile_with_nvcc(tmp_path):
    """(skipped where nvcc is missing, unless STATICGRAD_REQUIRE_NVCC=1, as .ci/run sets)"""
    def build():
        w = sg.Variable(np.ones((64, 32), np.float32), name="w")
        v = sg.Variable(np.ones((64, 32), np.float64), name="v")
        x = sg.placeholder(sg.float32, [16, 64], name="x")
        loss = sg.reduce_mean(sg.square(sg.matmul(x, w)))
        step = sg.train.AdamOptimizer(0.01).minimize(loss)
        return [step, sg.assign_add(
            v, sg.cast(sg.matmul(x, x[:, :32], transpose_a=True), sg.float64) * 2.0)], {"x": x}

    source = _source(build, {"x": np.ones((16, 64), np.float32)})
    assert source.count("crt.updated(") >= 2 and "(double)(var[i] + v" in source
    _compiles_with_nvcc(source, tmp_path)


def test_a_value_the_delta_reads_lives_until_the_update_that_computes_it(device):
    """The delta's input `y` is last read by a node placed between the delta and the update:
    the fused kernel reads it at the update, after that node, so it is freed only then."""
    def build():
        w = sg.Variable(np.ones(N, np.float32), name="w")
        x = sg.placeholder(sg.float32, [N], name="x")
        y = sg.exp(x) + sg.sin(x)
        delta = y * 0.5
        with sg.control_dependencies([delta.op]):
            total = sg.reduce_sum(y)
        with sg.control_dependencies([total.op]):
            update = sg.assign_sub(w, delta)
        return [update, total], {"x": x}

    runs = _runs(build, {"x": X})
    _agree(runs, rtol=1e-5)
    assert "crt.updated(update_w, " in _source(build, {"x": X})


@pytest.mark.parametrize("earlier", ["AssignAdd", "Assign"])
def test_a_delta_reading_a_view_of_an_earlier_assignment_of_the_variable_is_correct(
        device, earlier):
    """The delta broadcasts the first row of what an earlier assignment of `w` gave back (the
    variable's own array): a kernel writing `w` while it reads that row would see rows it
    has already written, so the delta is computed first."""
    def build():
        w = sg.Variable(np.linspace(1.0, 2.0, 64 * 64, dtype=np.float32).reshape(64, 64),
                        name="w")
        x = sg.placeholder(sg.float32, [64, 64], name="x")
        first = sg.assign_add(w, x) if earlier == "AssignAdd" else sg.assign(w, x * 3.0)
        return [sg.assign_sub(w, first[:1] * x)], {"x": x}

    xs = np.linspace(-1.0, 1.0, 64 * 64, dtype=np.float32).reshape(64, 64)
    runs = _runs(build, {"x": xs})
    _agree(runs)
    assert "crt.updated(update_w, " not in _source(build, {"x": xs})


@pytest.mark.parametrize("when", ["same run", "earlier run"])
def test_an_update_of_a_variable_assigned_a_transposed_value_is_correct(device, when):
    """An Assign keeps the transposed value it is given, as it came (not dense): the update's
    kernel, which indexes the variable's array as dense, gets a dense copy of it."""
    xs = np.linspace(-1.0, 1.0, 64 * 64, dtype=np.float32).reshape(64, 64)
    with sg.Graph().as_default():
        w = sg.Variable(np.zeros((64, 64), np.float32), name="w")
        x = sg.placeholder(sg.float32, [64, 64], name="x")
        assign = sg.assign(w, sg.transpose(sg.matmul(x, x)))
        with sg.control_dependencies([assign.op] if when == "same run" else []):
            update = sg.assign_add(w, x * 2.0)
        with sg.Session(backend="cuda") as sess:
            sess.run(sg.global_variables_initializer())
            sess.run(assign.op if when == "earlier run" else [], {x: xs})
            sess.run(update.op, {x: xs})
            got = sess.run(w)
            assert "crt.updated(update_w, " in sess.source(update.op, {x: xs})
    np.testing.assert_allclose(got, (xs @ xs).T + 2.0 * xs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [2 * N, N // 2, 1])
def test_an_update_of_a_variable_given_another_shape_broadcasts_as_numpy_does(device, size):
    """An Assign with validate_shape=False gave `w` an array of another shape in an earlier
    run: the update's kernel, made for the declared shape, neither writes past that array
    nor updates part of it; it gives what the NumPy backend gives (a broadcast, or its
    error naming the update)."""
    got = {}
    for backend in ("numpy", "cuda"):
        with sg.Graph().as_default():
            w = sg.Variable(np.zeros(N, np.float32), name="w")
            reshape = sg.assign(w, sg.constant(np.full(size, 1.0, np.float32)),
                                validate_shape=False)
            x = sg.placeholder(sg.float32, [N], name="x")
            update = sg.assign_sub(w, x * 2.0)
            with sg.Session(backend=backend) as sess:
                sess.run(sg.global_variables_initializer())
                sess.run(reshape.op)
                try:
                    sess.run(update.op, {x: X})
                    got[backend] = sess.run(w)
                except sg.errors.InvalidArgumentError as e:
                    assert "AssignSub" in str(e) and "broadcast" in str(e), e
                    got[backend] = None
                if backend == "cuda":
                    assert "crt.updated(update_w, " in sess.source(update.op, {x: X})
    if size == 1:
        np.testing.assert_allclose(got["cuda"], 1.0 - 2.0 * X, rtol=1e-6)
    np.testing.assert_array_equal(got["cuda"], got["numpy"])
