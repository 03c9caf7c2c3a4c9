"""The CUDA backend's tests run on a GPU where CuPy sees one, else on the CPU emulator
(emulator.py: NumPy arrays, kernels compiled by g++)."""

from __future__ import annotations

import sys

import pytest

from tests.backends.cuda.emulator import CXX, fake_cupy

RUNTIME = "staticgrad.backends.cuda.runtime"


def gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device
        return False


@pytest.fixture
def device(monkeypatch):
    """'gpu' where CuPy sees a GPU; else 'emulator', with CuPy stood in for while the test
    runs (and the backend's runtime imported again over it, and forgotten after)."""
    if gpu_available():
        yield "gpu"
        return
    if CXX is None:
        pytest.skip("no GPU, and no C++ compiler for the emulator")
    import staticgrad.backends.cuda as package
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    monkeypatch.delitem(sys.modules, RUNTIME, raising=False)
    monkeypatch.delattr(package, "runtime", raising=False)
    yield "emulator"
    sys.modules.pop(RUNTIME, None)
    if hasattr(package, "runtime"):
        delattr(package, "runtime")
