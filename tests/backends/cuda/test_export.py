"""sg.export(..., backend="cuda") (staticgrad/export.py, backends/cuda/export.py): the export
needs no GPU; the module it writes runs on a GPU where CuPy sees one, else on the emulator's
CuPy (the `device` fixture), imported with staticgrad hidden, and gives what a NumPy session
gives."""

from __future__ import annotations

import ast
import contextlib
import importlib.abc
import importlib.util
import os
import sys

import numpy as np
import pytest

import staticgrad as sg

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 3)).astype(np.float32)
LABELS = np.array([0, 1, 2, 1, 0, 2, 2, 1], np.int32)


class _HideStaticgrad(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] == "staticgrad":
            raise ImportError("staticgrad is not available to an exported module")


@contextlib.contextmanager
def staticgrad_hidden():
    """No staticgrad module can be imported (nor found already imported) meanwhile."""
    saved = {k: m for k, m in sys.modules.items() if k.split(".")[0] == "staticgrad"}
    for key in saved:
        del sys.modules[key]
    finder = _HideStaticgrad()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        sys.modules.update(saved)


def load(path):
    """The exported module at `path`, imported afresh (under a name of its own)."""
    path = os.fspath(path)
    spec = importlib.util.spec_from_file_location(f"exported_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    with staticgrad_hidden():
        spec.loader.exec_module(module)
    return module


def imported_modules(path) -> set[str]:
    """The top-level names of the modules the source at `path` imports, anywhere in it."""
    tree = ast.parse(open(path).read())
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            found |= {a.name.split(".")[0] for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            found.add((n.module or "").split(".")[0])
    return found


def training_graph():
    """A dense layer with softmax cross-entropy, its gradients and an Adam step; a fused
    elementwise chain; a matmul; a gather; a string made on the host."""
    x = sg.placeholder(sg.float32, [8, 3], name="x")
    labels = sg.placeholder(sg.int32, [8], name="labels")
    w = sg.Variable(RNG.standard_normal((3, 3)).astype(np.float32), name="w")
    b = sg.Variable(np.zeros(3, np.float32), name="b")
    logits = sg.matmul(x, w) + b
    loss = sg.reduce_mean(sg.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    chain = sg.reduce_sum(sg.tanh(x * 2.0 - 1.0) * sg.exp(-x) + sg.sigmoid(x), axis=1)
    picked = sg.gather(x, labels)
    grads = sg.gradients(loss, [w, b])
    step = sg.train.AdamOptimizer(0.1).minimize(loss)
    text = sg.as_string(sg.reduce_sum(x))  # (a host-only op: strings live on the host)
    return [x, labels], [loss, chain, picked, *grads, text, step], [w, b]


def export_trained(folder, name="model"):
    """Export the training graph for cuda; return (path, the session's 3 steps' results, the
    session's variable values after them)."""
    with sg.Graph().as_default():
        feeds, fetches, variables = training_graph()
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            path = sg.export(fetches, feeds, folder / f"{name}.py", backend="cuda", session=sess)
            want = [sess.run(fetches, dict(zip(feeds, [X, LABELS]))) for _ in range(3)]
            final = {v.op.name: sess.run(v) for v in variables}
    return path, want, final


def assert_same(got, want, what):
    if isinstance(want, np.ndarray) and want.dtype == object or isinstance(want, bytes):
        assert np.asarray(got).tolist() == np.asarray(want).tolist(), what
    elif want is None:
        assert got is None, what
    else:
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=what)


def test_the_export_writes_three_files_without_a_gpu(tmp_path):
    path, _, _ = export_trained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.cu", "model.npz", "model.py"]
    source = open(path).read()
    assert imported_modules(path) <= {"__future__", "cupy", "numpy", "hashlib", "math", "os",
                                      "re", "threading", "types"}
    assert "staticgrad" not in imported_modules(path)
    cuda = (tmp_path / "model.cu").read_text()
    assert 'extern "C" __global__' in cuda and cuda not in source  # (the kernels: apart)
    compile(source, path, "exec")
    with np.load(tmp_path / "model.npz", allow_pickle=False) as data:
        assert "export_id" in data.files


def test_the_module_computes_what_a_numpy_session_does(tmp_path, device):
    path, want, final = export_trained(tmp_path)
    module = load(path)
    assert module.FEEDS == ["x:0", "labels:0"]
    for r in range(3):
        got = module.run(X, LABELS)
        assert len(got) == len(want[r])
        for i, (g, w) in enumerate(zip(got, want[r])):
            assert_same(g, w, f"run {r}, fetch {i} ({module.FETCHES[i]})")
    import cupy  # (the emulator's, without a GPU)
    for name, value in final.items():
        assert isinstance(module.V[name], cupy.ndarray), name
        assert_same(module.crt.to_host(module.V[name]), value, f"variable {name}")


def test_a_training_step_updates_v_and_reset_restores_it(tmp_path, device):
    module = load(export_trained(tmp_path)[0])
    start = {k: module.crt.to_host(v) for k, v in module.V.items()}
    assert {"w", "b"} <= set(start) and len(start) > 2  # (and Adam's slots)
    module.run(X, LABELS)
    assert not np.array_equal(module.crt.to_host(module.V["w"]), start["w"])
    module.reset()
    for k, v in start.items():
        np.testing.assert_array_equal(module.crt.to_host(module.V[k]), v, err_msg=k)


def test_a_tampered_cuda_source_is_refused(tmp_path, device):
    path, _, _ = export_trained(tmp_path)
    cu = tmp_path / "model.cu"
    text = cu.read_text()
    cu.write_text(text.replace("__global__", "__global__ /* edited */", 1))
    with pytest.raises(RuntimeError, match=r"model\.cu is not the CUDA source exported with "
                                           r"this module \(model\.py\).*export again"):
        load(path)
    cu.write_text(text)
    load(path)  # (the file of the export again)


def test_another_exports_data_file_is_refused(tmp_path, device):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    path, _, _ = export_trained(tmp_path / "two")
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [3], name="x")
        with sg.Session() as sess:
            sg.export(x * 3.0, [x], tmp_path / "one" / "model.py", backend="cuda", session=sess)
    os.replace(tmp_path / "one" / "model.npz", tmp_path / "two" / "model.npz")
    with pytest.raises(RuntimeError, match=r"model\.npz is not the data file exported"):
        load(path)


def test_a_failed_write_leaves_the_previous_files(tmp_path, monkeypatch):
    export_trained(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(np, "savez", full_disk)
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [3], name="x")
        with sg.Session() as sess, pytest.raises(OSError, match="No space"):
            sg.export(x * 3.0, [x], tmp_path / "model.py", backend="cuda", session=sess)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_the_renames_put_the_module_first(tmp_path, monkeypatch):
    real_replace, renamed = os.replace, []

    def replace(src, dst):
        renamed.append(os.path.basename(dst))
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    export_trained(tmp_path)
    assert renamed == ["model.py", "model.cu", "model.npz"]


def test_a_free_dimension_names_the_feed_and_feed_shapes(tmp_path, device):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [None, 3], name="x")
        y = sg.reduce_sum(sg.tanh(x), axis=1)
        with sg.Session() as sess:
            with pytest.raises(ValueError, match=r"x:0 dimension 0 free .*feed_shapes"):
                sg.export(y, [x], tmp_path / "m.py", backend="cuda", session=sess)
            assert not list(tmp_path.iterdir())
            path = sg.export(y, [x], tmp_path / "m.py", backend="cuda", session=sess,
                             feed_shapes=[(8, 3)])
            want = sess.run(y, {x: X})
    module = load(path)
    assert_same(module.run(X)[0], want, "y")
    with pytest.raises(ValueError, match=r"x:0 must have shape \(8, 3\)"):
        module.run(X[:2])


def test_a_convolution_and_a_bad_index_as_the_session_computes_them(tmp_path, device):
    """Library ops (library.py's methods, copied): conv2d and pooling with their gradients,
    and gather's error, raised by the copied NumPy runtime."""
    images = RNG.standard_normal((2, 5, 5, 2)).astype(np.float32)
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [2, 5, 5, 2], name="x")
        i = sg.placeholder(sg.int32, [2], name="i")
        k = sg.Variable(RNG.standard_normal((3, 3, 2, 4)).astype(np.float32), name="k")
        y = sg.nn.max_pool(sg.nn.conv2d(x, k, [1, 1, 1, 1], "SAME"), [1, 2, 2, 1],
                           [1, 2, 2, 1], "VALID")
        loss = sg.reduce_sum(y * y) + sg.reduce_sum(sg.gather(x, i))
        step = sg.train.GradientDescentOptimizer(0.01).minimize(loss)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            path = sg.export([loss, step], [x, i], tmp_path / "conv.py", backend="cuda",
                             session=sess)
            want = [sess.run([loss, step], {x: images, i: [1, 0]})[0] for _ in range(2)]
    module = load(path)
    for r in range(2):
        assert_same(module.run(images, np.array([1, 0], np.int32))[0], want[r], f"run {r}")
    with pytest.raises(IndexError, match="7"):
        module.run(images, np.array([0, 7], np.int32))


def test_a_tensor_array_writes_gradient_as_the_session_computes_it(tmp_path, device):
    """TensorArrayWriteGrad: in library.py the NumPy runtime's function bound in the class
    (not a method of its own), copied all the same."""
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [2], name="x")
        written = sg.TensorArray(sg.float32, size=3, element_shape=[2])
        stacked = written.write(0, x * 2.0).write(2, sg.sin(x)).stack()
        (grad,) = sg.gradients(sg.reduce_sum(stacked * stacked), [x])
        with sg.Session() as sess:
            path = sg.export([grad], [x], tmp_path / "ta.py", backend="cuda", session=sess)
            want = sess.run(grad, {x: np.array([0.5, -1.0], np.float32)})
    assert "crt.tensor_array_write_grad(" in open(path).read()
    assert_same(load(path).run(np.array([0.5, -1.0], np.float32))[0], want, "the gradient")
