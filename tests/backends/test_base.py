"""The backend registry and interface (staticgrad/backends/): choosing a backend by name
everywhere one can be named, errors that list what is available and why the others are not,
a backend added with one registration, and the policies it gives the shared passes."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import backends, cli
from staticgrad.backends import BackendUnavailableError, get_backend
from staticgrad.backends.numpy import NumpyBackend
from staticgrad.backends.numpy.policy import FUSE
from staticgrad.passes.fuse import FusePolicy


def test_the_numpy_backend_is_the_default_everywhere(g):
    assert isinstance(get_backend("numpy"), NumpyBackend)
    assert sg.available_backends()["numpy"] is None
    assert sg.Session().backend == "numpy"
    numpy_passes = tuple(name for name, _ in sg.compiler.pipeline("numpy"))
    assert sg.compiler.PASS_NAMES[:len(numpy_passes)] == numpy_passes


@pytest.mark.parametrize("name", ["tpu", "", None, 3])
def test_an_unknown_backend_is_refused_with_the_available_ones(g, name):
    with pytest.raises(ValueError, match=r"unknown backend .*available: 'numpy'"):
        sg.Session(backend=name)


@pytest.fixture
def registered(monkeypatch):
    """register(name, module object): a backend module known to the registry for one test."""
    def register(name, module):
        monkeypatch.setitem(sys.modules, module.__name__, module)
        monkeypatch.setitem(backends.BACKENDS, name, module.__name__)
        monkeypatch.setattr(backends, "_loaded", dict(backends._loaded))
    return register


def test_a_backend_whose_library_is_missing_says_so_and_lists_the_others(g, monkeypatch):
    monkeypatch.setitem(backends.BACKENDS, "gpu", "staticgrad_no_such_module_for_tests")
    with pytest.raises(BackendUnavailableError) as info:
        sg.Session(backend="gpu")
    text = str(info.value)
    assert "backend 'gpu' is not available here" in text
    assert "No module named 'staticgrad_no_such_module_for_tests'" in text
    assert "available: 'numpy'" in text
    assert sg.available_backends()["gpu"].startswith("importing")
    # the pass names still come from the backends that can run: the NumPy one's, in order
    assert sg.compiler.pass_names() == sg.compiler.PASS_NAMES


def test_a_backend_without_its_device_gives_its_own_reason(g, registered):
    class NoDevice(NumpyBackend):
        name = "device"

        def unavailable(self):
            return "no device found (driver 0.0)"

    registered("device", types.SimpleNamespace(__name__="tests_device_backend",
                                               BACKEND=NoDevice()))
    with pytest.raises(BackendUnavailableError, match=r"no device found \(driver 0.0\)"):
        sg.Session(backend="device")
    x = sg.placeholder(sg.float32, [2], name="x")
    with pytest.raises(BackendUnavailableError, match="no device found"):
        sg.export(x * 2.0, [x], "never.py", backend="device")


def test_a_new_backend_is_one_registration(g, registered):
    """A backend (here: the NumPy one, counting its renders) registered by name runs
    sessions through the interface alone: its passes, its renderer, its loader, its store."""
    renders = []

    class Counting(NumpyBackend):
        name = "counting"

        def render(self, program, title, options):
            renders.append(len(program.nodes))
            return super().render(program, title, options)

    registered("counting", types.SimpleNamespace(__name__="tests_counting_backend",
                                                 BACKEND=Counting()))
    x = sg.placeholder(sg.float32, [3], name="x")
    w = sg.Variable([1.0, 2.0, 3.0], name="w")
    y = sg.reduce_sum(sg.tanh(x * w))
    (dw,) = sg.gradients(y, [w])
    with sg.Session(backend="counting") as sess:
        assert sess.backend == "counting"
        sess.run(w.initializer)
        got = sess.run([y, dw], {x: [0.5, -1.0, 2.0]})
        assert renders and type(sess._vars) is dict  # (exactly: V['w'] reads stay fast)
    t = np.tanh(np.float32([0.5, -2.0, 6.0]))
    np.testing.assert_allclose(got[0], t.sum(), rtol=1e-6)
    np.testing.assert_allclose(got[1], np.float32([0.5, -1.0, 2.0]) * (1 - t * t), rtol=1e-6)


def test_export_and_the_cli_choose_the_backend_by_name(g, tmp_path, capsys):
    x = sg.placeholder(sg.float32, [2], name="x")
    y = sg.identity(x * 2.0, name="y")
    with pytest.raises(ValueError, match="unknown backend 'tpu'.*available: 'numpy'"):
        sg.export(y, [x], str(tmp_path / "m.py"), backend="tpu")
    assert not list(tmp_path.iterdir())  # nothing written
    path = tmp_path / "g.json"
    sg.train.export_meta_graph(str(path))
    assert cli.main(["source", str(path), "--fetch", "y", "--feed", "x:2",
                     "--backend", "numpy"]) == 0
    assert "def run(x)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as code:
        cli.main(["source", str(path), "--fetch", "y", "--feed", "x:2", "--backend", "tpu"])
    assert code.value.code == 1
    assert "unknown backend 'tpu'" in capsys.readouterr().err


def test_fusion_takes_its_policy_from_the_backend(g, registered):
    class Unfused(NumpyBackend):
        name = "unfused"
        fuse_policy = FusePolicy(min_elements=1 << 40, scalar_broadcasts=True,
                                 reductions={"Sum"})

    registered("unfused", types.SimpleNamespace(__name__="tests_unfused_backend",
                                                BACKEND=Unfused()))
    x = sg.placeholder(sg.float32, [None], name="x")
    y = sg.reduce_sum(sg.tanh(x * 1.5) + sg.exp(x))
    feed = {x: np.zeros(FUSE.min_elements, np.float32)}
    assert "rt.run_blocks(" in sg.Session().source(y, feed)
    assert "rt.run_blocks(" not in sg.Session(backend="unfused").source(y, feed)
    assert dict(sg.compiler.pipeline("unfused"))["fuse"].__self__.fuse_policy.min_elements \
        == 1 << 40


def test_a_backend_module_that_fails_to_import_is_reported_not_raised(g, tmp_path, monkeypatch):
    """A GPU library may raise its own error on import (CuPy: a driver too old): that
    backend is unavailable, with the error as its reason; the others and the errors about
    them are as before."""
    (tmp_path / "tests_broken_backend.py").write_text(
        'raise RuntimeError("CUDA driver version is insufficient")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(backends, "BACKENDS", dict(backends.BACKENDS))  # (undone after)
    backends.register_backend("broken", "tests_broken_backend")
    reason = sg.available_backends()["broken"]
    assert "RuntimeError: CUDA driver version is insufficient" in reason
    with pytest.raises(ValueError, match="unknown backend 'numpyy'.*'broken' \\(importing"):
        sg.Session(backend="numpyy")
    with pytest.raises(BackendUnavailableError, match="driver version is insufficient"):
        sg.Session(backend="broken")


def test_register_backend_checks_what_it_is_given():
    with pytest.raises(ValueError, match="identifier"):
        backends.register_backend("no good", "x")
    with pytest.raises(TypeError, match="a module's name"):
        backends.register_backend("bad", 5)
    with pytest.raises(ValueError, match="already registered"):
        backends.register_backend("numpy", "somewhere.else")


def test_a_backend_object_is_checked_as_a_name_is():
    class Gone(NumpyBackend):
        name = "gone"

        def unavailable(self):
            return "its device was unplugged"

    with pytest.raises(BackendUnavailableError, match="unplugged"):
        get_backend(Gone())


def test_a_backend_whose_host_cannot_run_here_is_unavailable_saying_why(g, registered):
    class Device(NumpyBackend):
        name = "device"
        host = "cpu_host"

    class DeadHost(NumpyBackend):
        name = "cpu_host"

        def unavailable(self):
            return "the host library is missing"

    registered("device", types.SimpleNamespace(__name__="tests_device_backend",
                                               BACKEND=Device()))
    with pytest.raises(BackendUnavailableError, match="its host 'cpu_host' is not a backend"):
        sg.Session(backend="device")
    registered("cpu_host", types.SimpleNamespace(__name__="tests_host_backend",
                                                 BACKEND=DeadHost()))
    with pytest.raises(BackendUnavailableError, match=r"its host 'cpu_host' is not available: "
                                                      r"the host library is missing"):
        sg.Session(backend="device")
    assert sg.available_backends()["device"].startswith("its host 'cpu_host'")
