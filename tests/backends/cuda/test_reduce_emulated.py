"""The CUDA reductions and softmax kernels' own text, compiled as host C++ by g++ over a small
emulation of CUDA (a block's threads are std::threads, __syncthreads a std::barrier, warp
shuffles a barrier-fenced exchange), run on the CPU against the ops' NumPy kernels. It checks
the kernels' index arithmetic, their reductions across threads and the two-pass plans'
partials where no GPU is at hand; what only a GPU shows (timing, the memory model, real warp
divergence) is test_reduce_gpu.py's."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from . import emulator
from . import reduce_cases as cases
from .emulator import SHIM

EMULATION = SHIM  # (the emulator's: CUDA's names on the CPU, and sg_launch)


def _plans():
    """{case: (plan, check)} of every case, each kernel named apart for one library; a plan
    of None is checked with others' (the softmax family's)."""
    plans = {}
    for i, case in enumerate(cases.reduce_cases()):
        op_type, shape, axes, keepdims, dtype = case
        plan = cases.reduce_case_plan(f"r{i}", *case)
        plans[f"{op_type} {dtype}{list(shape)} axes{list(axes)} keepdims={keepdims}"] = (
            plan, lambda run, plan=plan, case=case: cases.check_reduce(run, plan, *case))
    load = cases.load_plan("load")
    plans["Sum with a load"] = (load, lambda run: cases.check_load(run, load))
    for i, (shape, axis) in enumerate(cases.SOFTMAX_CASES):
        # float64 on long rows too would add 20 s of 1024 threads meeting at barriers
        for dtype in ("float32", "float64") if shape[axis] <= 8192 else ("float32",):
            family = cases.softmax_family_plans(f"s{i}_{dtype}", shape, axis, dtype)
            for what, plan in family.items():
                plans[f"{what} {dtype}{list(shape)} axis {axis}"] = (plan, None)
            plans[f"softmax family {dtype}{list(shape)} axis {axis}"] = (
                None, lambda run, family=family, shape=shape, axis=axis, dtype=dtype:
                cases.check_softmax_family(run, family, shape, axis, dtype))
    return plans


PLANS = _plans()


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """The kernels of every plan and a launcher of each, built into one shared library."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    emulator.load_runtime()  # (the launches' threads, which these kernels' library uses)
    parts = [EMULATION]
    for plan, _ in PLANS.values():
        if plan is None:
            continue
        parts.append(plan.source)
        for launch in plan.launches:
            parts.append(f'extern "C" void launch_{launch.kernel}(int grid, int block, '
                         f'void** args) {{ sg_launch({launch.kernel}, grid, block, args); }}')
    folder = tmp_path_factory.mktemp("emulated")
    (folder / "kernels.cpp").write_text("\n".join(parts))
    done = subprocess.run([gxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w",
                           "-o", str(folder / "kernels.so"), str(folder / "kernels.cpp")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-5000:]
    return ctypes.CDLL(str(folder / "kernels.so"))


def _runner(library):
    def run_plan(plan, inputs):
        arrays = {f"in{i}": x for i, x in enumerate(cases.kernel_inputs(inputs))}
        arrays |= {f"out{i}": np.full(shape, 123, dtype)
                   for i, (shape, dtype) in enumerate(plan.outputs)}
        arrays |= {f"scratch{i}": np.full(s.shape, 77, s.dtype)  # uninitialised on a GPU
                   for i, s in enumerate(plan.scratch)}
        for launch in plan.launches:
            args = (ctypes.c_void_p * len(launch.args))(
                *[arrays[a].ctypes.data for a in launch.args])
            getattr(library, f"launch_{launch.kernel}")(launch.grid, launch.block, args)
        return [arrays[f"out{i}"] for i in range(len(plan.outputs))]
    return run_plan


@pytest.mark.parametrize("case", [c for c, (_, check) in PLANS.items() if check is not None])
def test_kernels_match_numpy(library, case):
    _, check = PLANS[case]
    check(_runner(library))


def test_an_input_not_in_c_order_is_refused(library):
    """As a GPU would misread it (the softmax family along axis 0 did, its labels F-ordered),
    the emulated runner does not make it dense."""
    cases.check_kernel_inputs_refused(_runner(library))


def test_the_reference_of_a_float32_column_sum_adds_in_double():
    """NumPy's own float32 sum over 4M rows was 4e-5 off the H200's (right) answer; over 2^15
    rows it is still off by more than check_reduce's two ulps, so a reference gone back to it
    fails here and in the emulated cases."""
    x = np.random.default_rng(0).uniform(0.5, 1.5, (1 << 15, 2)).astype(np.float32)
    exact = x.astype(np.float64).sum(axis=0).astype(np.float32)
    np.testing.assert_array_equal(cases.reference("Sum", x, (0,), False, "float32"), exact)
    assert np.abs(x.sum(axis=0) / exact - 1).max() > 2.4e-7
