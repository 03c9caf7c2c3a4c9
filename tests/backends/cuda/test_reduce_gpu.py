"""The CUDA reductions and softmax kernels run on a GPU through CuPy's RawModule, as the CUDA
backend runs them, against the ops' NumPy reference kernels. Skipped without CuPy and a GPU.

    python -m pytest -s tests/backends/cuda/test_reduce_gpu.py   # -s: the bandwidth report
"""

from __future__ import annotations

import numpy as np
import pytest

from staticgrad.backends.cuda.reduce import reduce_plan, softmax_plan

from . import reduce_cases as cases

cp = pytest.importorskip("cupy")
try:
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no GPU", allow_module_level=True)
except cp.cuda.runtime.CUDARuntimeError:
    pytest.skip("no GPU", allow_module_level=True)

RNG = np.random.default_rng(1)
# beside the shared cases, sizes that take the two-pass plans at full scale
LARGE_CASES = [
    (["Sum", "Max", "ArgMax", "Mean"], (1 << 24,), (0,), ["float32"]),
    (["Sum", "Min", "ArgMin"], (1 << 22, 2), (0,), ["float32", "int64"]),
    (["Sum", "Max", "ArgMax"], (4, 1 << 20), (1,), ["float64"]),
    (["Sum", "Max"], (1 << 20, 3), (1,), ["float32", "int32"]),
    (["All", "Any"], (1 << 22,), (0,), ["bool"]),
]


def run_plan(plan, inputs):
    """The plan's outputs, its launches run by CuPy on device copies of `inputs`."""
    module = cp.RawModule(code=plan.source)
    arrays = {f"in{i}": cp.asarray(x) for i, x in enumerate(cases.kernel_inputs(inputs))}
    arrays |= {f"out{i}": cp.empty(shape, dtype) for i, (shape, dtype) in enumerate(plan.outputs)}
    arrays |= {f"scratch{i}": cp.empty(s.shape, s.dtype) for i, s in enumerate(plan.scratch)}
    for launch in plan.launches:
        module.get_function(launch.kernel)((launch.grid,), (launch.block,),
                                           tuple(arrays[a] for a in launch.args),
                                           shared_mem=launch.shared)
    return [cp.asnumpy(arrays[f"out{i}"]) for i in range(len(plan.outputs))]


ALL_CASES = list(cases.reduce_cases()) + list(cases.reduce_cases(LARGE_CASES))


@pytest.mark.parametrize("op_type,shape,axes,keepdims,dtype", ALL_CASES, ids=[
    f"{op} {dtype}{list(shape)} axes{list(axes)} keepdims={keep}"
    for op, shape, axes, keep, dtype in ALL_CASES])
def test_reduce_matches_numpy(op_type, shape, axes, keepdims, dtype):
    plan = cases.reduce_case_plan("k", op_type, shape, axes, keepdims, dtype)
    cases.check_reduce(run_plan, plan, op_type, shape, axes, keepdims, dtype)


def test_load_fuses_a_product():
    cases.check_load(run_plan, cases.load_plan("k"))


def test_an_input_not_in_c_order_is_refused():
    cases.check_kernel_inputs_refused(run_plan)


SOFTMAX_CASES = cases.SOFTMAX_CASES + [((2, 100000), 1), ((1 << 16, 10), 1)]


@pytest.mark.parametrize("shape,axis", SOFTMAX_CASES,
                         ids=[f"{list(shape)} axis {axis}" for shape, axis in SOFTMAX_CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_family_matches_numpy(shape, axis, dtype):
    plans = cases.softmax_family_plans("k", shape, axis, dtype)
    cases.check_softmax_family(run_plan, plans, shape, axis, dtype)


def _time(plan, inputs, repeat=20):
    module = cp.RawModule(code=plan.source)
    arrays = {f"in{i}": cp.asarray(x) for i, x in enumerate(inputs)}
    arrays |= {f"out{i}": cp.empty(shape, dtype) for i, (shape, dtype) in enumerate(plan.outputs)}
    arrays |= {f"scratch{i}": cp.empty(s.shape, s.dtype) for i, s in enumerate(plan.scratch)}
    calls = [(module.get_function(launch.kernel), launch) for launch in plan.launches]

    def once():
        for fn, launch in calls:
            fn((launch.grid,), (launch.block,), tuple(arrays[a] for a in launch.args))
    once()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeat):
        once()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / repeat / 1e3


def test_bandwidth_report():
    """Not a check: the GB/s each path reads, beside CuPy's own reduction of the same."""
    rows = []
    for what, plan, shape, cupy_fn in [
        ("full sum", reduce_plan("k", "Sum", (1 << 26,), (0,), False, "float32", "float32"),
         (1 << 26,), lambda a: a.sum()),
        ("row sums", reduce_plan("k", "Sum", (8192, 8192), (1,), False, "float32", "float32"),
         (8192, 8192), lambda a: a.sum(axis=1)),
        ("column sums", reduce_plan("k", "Sum", (8192, 8192), (0,), False, "float32",
                                    "float32"), (8192, 8192), lambda a: a.sum(axis=0)),
        ("sums of 3", reduce_plan("k", "Sum", (1 << 24, 3), (1,), False, "float32", "float32"),
         (1 << 24, 3), lambda a: a.sum(axis=1)),
        ("columns of [2^25, 2]", reduce_plan("k", "Sum", (1 << 25, 2), (0,), False, "float32",
                                             "float32"), (1 << 25, 2), lambda a: a.sum(axis=0)),
        ("argmax rows", reduce_plan("k", "ArgMax", (8192, 8192), (1,), False, "float32",
                                    "int64"), (8192, 8192), lambda a: a.argmax(axis=1)),
        ("softmax [65536, 1000]", softmax_plan("k", "Softmax", (65536, 1000), 1, "float32"),
         (65536, 1000), None),
        ("softmax [64, 2^17]", softmax_plan("k", "Softmax", (64, 1 << 17), 1, "float32"),
         (64, 1 << 17), None),
    ]:
        x = RNG.uniform(0, 1, shape).astype(np.float32)
        seconds = _time(plan, [x])
        line = f"{what:24s} {x.nbytes / seconds / 1e9:8.0f} GB/s"
        if cupy_fn is not None:
            a = cp.asarray(x)
            cupy_fn(a)
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(20):
                cupy_fn(a)
            stop.record()
            stop.synchronize()
            cupy_s = cp.cuda.get_elapsed_time(start, stop) / 20 / 1e3
            line += f"   cupy {x.nbytes / cupy_s / 1e9:8.0f} GB/s"
        rows.append(line)
    print("\n" + "\n".join(rows))
