"""The memory traffic of the CUDA backend's plans: the kernels each launches and the bytes
they read and write (the emulator's launch log: a kernel's const pointer parameters are what
it reads, the others what it writes), against the least a computation needs."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import staticgrad as sg
from tests.backends.cuda import emulator_capture as capture
from tests.backends.cuda.test_render import NVCC

N = 1 << 16


def _compiles_with_nvcc(source: str, folder) -> None:
    """The CUDA C of a rendered host module compiles with nvcc for sm_80 and sm_90."""
    if NVCC is None and os.environ.get("STATICGRAD_REQUIRE_NVCC") != "1":
        return
    assert NVCC is not None, "STATICGRAD_REQUIRE_NVCC=1, and there is no nvcc"
    path = folder / "plan.cu"
    path.write_text(source.split('CUDA_SOURCE = r"""')[1].split('"""')[0])
    for arch in ("sm_80", "sm_90"):
        done = subprocess.run([NVCC, "-ptx", f"-arch={arch}", "--std=c++17", "-Werror",
                               "all-warnings", "-o", str(folder / f"{arch}.ptx"), str(path)],
                              capture_output=True, text=True)
        assert done.returncode == 0 and not done.stderr.strip(), done.stderr[-3000:]


def _launches(sess, fetches, feed, value):
    """The kernels a run of `fetches` launches, fed `value` already on the device (a copy
    in would count too), with its results on the host."""
    import cupy as cp
    fn = sess.make_callable(fetches, [feed], fetch_device=True)
    on_device = cp.asarray(value)
    fn(on_device)  # (compiles)
    capture.LAUNCHES.clear()
    results = fn(on_device)
    return list(capture.LAUNCHES), [cp.asnumpy(r) for r in results]


def test_w3_and_its_gradient_read_x_once_and_write_the_gradient_once(g, device):
    """sum(f(x)) and f'(x): one kernel reads x and writes the gradient (and a partial sum a
    block), a one-block kernel adds the partial sums: 8 bytes an element."""
    if device == "gpu":
        pytest.skip("the launch log is the emulator's")
    x = sg.placeholder(sg.float32, [N], name="x")
    y = sg.reduce_sum(sg.tanh(1.5 * x + 0.3) * sg.sigmoid(x) + 0.5 * sg.exp(-x ** 2)
                      + sg.log1p(x ** 2))
    (dx,) = sg.gradients(y, [x])
    xs = np.random.default_rng(0).normal(size=N).astype(np.float32)
    with sg.Session(backend="cuda") as sess:
        launches, (value, grad) = _launches(sess, [y, dx], x, xs)
    (main, main_reads, main_writes), (_, sums_reads, sums_writes) = launches
    assert main_reads == 4 * N and 4 * N <= main_writes <= 4 * N + 2048 * 8, launches
    assert sums_reads <= 2048 * 8 and sums_writes == 4, launches
    x64 = xs.astype(np.float64)
    t, s = np.tanh(1.5 * x64 + 0.3), 1 / (1 + np.exp(-x64))
    want = np.sum(t * s + 0.5 * np.exp(-x64 ** 2) + np.log1p(x64 ** 2))
    want_grad = 1.5 * (1 - t * t) * s + t * s * (1 - s) - x64 * np.exp(-x64 ** 2) \
        + 2 * x64 / (1 + x64 ** 2)
    np.testing.assert_allclose(value, want, rtol=1e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=2e-5, atol=1e-5)


def test_a_reduction_computes_its_elementwise_input_where_it_reads_it(g, device):
    """max(exp(x) * 2, axis=1): x is read once, by the reduction's kernel; exp(x) * 2 is
    never written."""
    if device == "gpu":
        pytest.skip("the launch log is the emulator's")
    x = sg.placeholder(sg.float32, [256, 64], name="x")
    y = sg.reduce_max(sg.exp(x) * 2.0, axis=1)
    xs = np.random.default_rng(1).normal(size=(256, 64)).astype(np.float32)
    with sg.Session(backend="cuda") as sess:
        launches, (value,) = _launches(sess, [y], x, xs)
    assert sum(r for _, r, _ in launches) == xs.nbytes, launches
    assert launches[-1][2] == 256 * 4 and sum(w for _, _, w in launches[:-1]) <= 256 * 64
    np.testing.assert_allclose(value, np.max(np.exp(xs.astype(np.float64)) * 2, axis=1),
                               rtol=1e-6)


def test_a_reduction_computes_an_input_whose_first_array_is_of_another_type(g, device,
                                                                          tmp_path):
    """max(where(m, 2, -1) * x, axis=1) of a bool m: the function computing the element
    reads a bool array first, which the reduction's kernel takes as its first parameter."""
    import cupy as cp
    m = sg.placeholder(sg.bool, [256, 64], name="m")
    x = sg.placeholder(sg.float32, [256, 64], name="x")
    y = sg.reduce_max(sg.where(m, sg.fill([256, 64], 2.0), sg.fill([256, 64], -1.0)) * x,
                      axis=1)
    rng = np.random.default_rng(2)
    m_host = rng.random(size=(256, 64)) < 0.5
    x_host = rng.normal(size=(256, 64)).astype(np.float32)
    with sg.Session(backend="cuda") as sess:
        source = sess.source(y, {m: m_host, x: x_host})
        assert "computed inside the kernel of" in source and "const bool* __restrict__ in0" \
            in source, source
        _compiles_with_nvcc(source, tmp_path)
        fn = sess.make_callable(y, [m, x], fetch_device=True)
        m_dev, x_dev = cp.asarray(m_host), cp.asarray(x_host)
        fn(m_dev, x_dev)
        capture.LAUNCHES.clear()
        got = cp.asnumpy(fn(m_dev, x_dev))
    if device == "emulator":  # one kernel, writing the maxima alone (the fills are arrays)
        assert [w for _, _, w in capture.LAUNCHES] == [256 * 4], capture.LAUNCHES
    want = np.max(np.where(m_host, 2.0, -1.0).astype(np.float32) * x_host, axis=1)
    np.testing.assert_array_equal(got, want)
