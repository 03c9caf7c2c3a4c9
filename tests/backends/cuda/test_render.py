"""Rendering for the CUDA backend needs neither CuPy nor a GPU, and what it renders compiles:
every kernel of the parity suite's plans (test_parity.py's rows), put into one translation
unit, goes through `nvcc -ptx` for sm_80 and sm_90 without an error or a warning. Where nvcc
is missing these tests skip, unless STATICGRAD_REQUIRE_NVCC=1 (.ci/run sets it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.backends.cuda.render import _CudaWalk
from staticgrad.codegen.c_expr import preamble
from staticgrad.codegen.templates import render_template
from tests.backends.cuda.test_parity import ROWS
from tests.conftest import dense_gradients
from tests.ops.test_gradients import _build

NVCC = shutil.which("nvcc") or next((p for p in ["/usr/local/cuda/bin/nvcc"]
                                     if os.path.exists(p)), None)
# a kernel's name, or an element function's (a reduction's folded input)
_KERNEL_NAME = re.compile(r"__launch_bounds__\(\d+\)\s+(\w+)\("
                          r"|__device__ inline [\w ]+ (\w+)\(long long i")


def test_source_needs_neither_cupy_nor_a_gpu(g):
    x = sg.placeholder(sg.float32, [None, 3], name="x")
    y = sg.reduce_sum(sg.tanh(x) * 2.0)
    source = sg.Session(backend="cuda").source(y, {x: np.zeros((4, 3), np.float32)})
    assert 'CUDA_SOURCE = r"""' in source and "__global__ void" in source
    assert "# Sum 'Sum' at test_render.py:" in source        # the host code's comments
    assert "// Tanh 'Tanh' at test_render.py:" in source     # and the kernels'
    assert "crt.to_device(x)" in source and "crt.to_host(" in source


def test_running_without_a_gpu_says_why(g):
    import staticgrad.backends.cuda as cuda
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount():
            pytest.skip("a GPU is here")
    except Exception:  # noqa: BLE001 - no CuPy or no device: the case under test
        pass
    x = sg.placeholder(sg.float32, [3], name="x")
    with sg.Session(backend="cuda") as sess:
        with pytest.raises(cuda.BackendUnavailableError,
                           match="cuda backend cannot run here.*staticgrad\\[cuda\\]"):
            sess.run(x * 2.0, {x: np.ones(3, np.float32)})


def _kernels(case) -> list[str]:
    """The C text of each kernel of the plan of a parity row's value and gradients, renamed
    apart (`p3_fused`)."""
    g, xs, values, loss, _ = _build(case)
    captured = []
    original = _CudaWalk.module_values

    def keep(walk):
        captured.extend(walk.cu)
        return original(walk)
    with g.as_default():
        fetches = [loss] + list(dense_gradients(loss, xs))
        _CudaWalk.module_values = keep
        try:
            sg.Session(graph=g, backend="cuda").source(fetches, dict(zip(xs, values)))
        finally:
            _CudaWalk.module_values = original
    return captured


@pytest.mark.skipif(NVCC is None and os.environ.get("STATICGRAD_REQUIRE_NVCC") != "1",
                    reason="nvcc is not installed")
def test_every_kernel_of_the_parity_plans_compiles_with_nvcc(tmp_path):
    assert NVCC is not None, "STATICGRAD_REQUIRE_NVCC=1, and there is no nvcc"
    texts = []
    for k, case in enumerate(ROWS):
        text = "\n\n".join(_kernels(case))  # (a function one kernel defines, another calls)
        for name in {a or b for a, b in _KERNEL_NAME.findall(text)}:
            text = re.sub(rf"\b{name}\b", f"p{k}_{name}", text)
        texts.append(text)
    assert sum(text.count('extern "C"') for text in texts) > len(ROWS)
    unit = render_template("cuda/kernels.cu.j2", preamble=preamble("__device__ inline"),
                           kernels=texts)
    path = tmp_path / "corpus.cu"
    path.write_text(unit)
    for arch in ("sm_80", "sm_90"):
        done = subprocess.run([NVCC, "-ptx", f"-arch={arch}", "--std=c++17", "-Werror",
                               "all-warnings", "-o", str(tmp_path / f"{arch}.ptx"), str(path)],
                              capture_output=True, text=True)
        assert done.returncode == 0 and not done.stderr.strip(), done.stderr[-3000:]


def test_a_value_a_folded_input_reads_lives_until_the_reduction_that_computes_it(device):
    """`half` is computed inside the Sum's kernel, where it is read; its input `y` is last
    read by a node placed between the two (the Max), so it is freed after the Sum, not there."""
    x_value = np.linspace(-1.0, 1.0, 4096, dtype=np.float32)
    results = {}
    for backend in ("numpy", "cuda"):
        with sg.Graph().as_default():
            x = sg.placeholder(sg.float32, [4096], name="x")
            y = sg.exp(x) + sg.sin(x)
            half = y * 0.5
            with sg.control_dependencies([half.op]):
                top = sg.reduce_max(y)
            with sg.control_dependencies([top.op]):
                total = sg.reduce_sum(half)
            with sg.Session(backend=backend) as sess:
                results[backend] = sess.run([total, top], {x: x_value})
                source = sess.source([total, top], {x: x_value})
    assert "(computed inside the kernel of Sum, where it is read" in source
    np.testing.assert_allclose(results["cuda"], results["numpy"], rtol=1e-5)
