"""The CUDA reductions and softmax kernels run on a GPU through CuPy's RawModule, as the CUDA
backend runs them, against the ops' NumPy reference kernels. Skipped without CuPy and a GPU.

    python -m pytest -s tests/backends/cuda/test_reduce_gpu.py   # -s: the bandwidth report
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from staticgrad import runtime
from staticgrad.backends.cuda.reduce import reduce_plan, softmax_plan, xent_plan

cp = pytest.importorskip("cupy")
try:
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no GPU", allow_module_level=True)
except cp.cuda.runtime.CUDARuntimeError:
    pytest.skip("no GPU", allow_module_level=True)

RNG = np.random.default_rng(0)


def run_plan(plan, inputs):
    """The plan's outputs, its launches run by CuPy on device copies of `inputs`."""
    module = cp.RawModule(code=plan.source)
    arrays = {f"in{i}": cp.asarray(x) for i, x in enumerate(inputs)}
    arrays |= {f"out{i}": cp.empty(shape, dtype) for i, (shape, dtype) in enumerate(plan.outputs)}
    arrays |= {f"scratch{i}": cp.empty(s.shape, s.dtype) for i, s in enumerate(plan.scratch)}
    for launch in plan.launches:
        module.get_function(launch.kernel)((launch.grid,), (launch.block,),
                                           tuple(arrays[a] for a in launch.args),
                                           shared_mem=launch.shared)
    return [cp.asnumpy(arrays[f"out{i}"]) for i in range(len(plan.outputs))]


def reference(op_type, x, axes, keepdims, out_dtype):
    """What the op's NumPy kernel (ops/reduction_ops.py) gives."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op_type in ("ArgMax", "ArgMin"):
            fn = np.argmax if op_type == "ArgMax" else np.argmin
            return fn(x, axis=axes[0]).astype(out_dtype)
        fn = {"Sum": np.sum, "Mean": np.mean, "Max": np.max, "Min": np.min, "Prod": np.prod,
              "All": np.all, "Any": np.any}[op_type]
        kwargs = {"dtype": out_dtype} if op_type in ("Sum", "Prod") and x.dtype.kind in "iu" \
            else {}
        return np.asarray(fn(x, axis=axes, keepdims=keepdims, **kwargs)).astype(out_dtype)


def sample(op_type, shape, dtype):
    """Inputs that test the op: values near 1 for Prod, ties and NaNs for the arg and
    extreme ops, large integers that wrap for Sum."""
    if dtype == "bool":
        return RNG.random(shape) < (0.97 if op_type == "All" else 0.03)
    if op_type == "Prod":
        x = RNG.uniform(0.9, 1.1, shape) if dtype.startswith("float") else \
            RNG.integers(-3, 4, shape)
    elif dtype.startswith("int"):
        high = 1 << (30 if op_type == "Sum" else 20)
        x = RNG.integers(-high, high, shape)
    elif op_type in ("Max", "Min", "ArgMax", "ArgMin"):
        x = RNG.integers(-5, 6, shape).astype(dtype)  # ties
        flat = x.reshape(-1)
        if flat.size > 10:
            flat[RNG.integers(0, flat.size, max(1, flat.size // 50))] = np.nan
    else:
        x = RNG.uniform(0.5, 1.5, shape)
    return np.asarray(x).astype(dtype)


CASES = [  # (op types, shape, axes, dtypes)
    (["Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin"], (7,), (0,), ["float32", "int32"]),
    (["Sum", "Mean", "Max", "Min", "Prod"], (), (), ["float64", "int64"]),
    (["Sum", "Mean", "Max", "Min", "ArgMax", "ArgMin"], (300, 500), (1,),
     ["float32", "float64", "int64"]),
    (["Sum", "Mean", "Max", "Min", "ArgMax", "ArgMin"], (300, 500), (0,),
     ["float32", "int32"]),
    (["Sum", "Max", "ArgMax"], (1 << 24,), (0,), ["float32"]),
    (["Sum", "Min", "ArgMin", "Mean"], (1 << 21, 2), (0,), ["float32", "int64"]),
    (["Sum", "Max", "ArgMax"], (4, 1 << 20), (1,), ["float64"]),
    (["Sum", "Max"], (1 << 20, 3), (1,), ["float32", "int32"]),
    (["Sum", "Mean", "Max", "Prod"], (5, 1, 7, 9), (0, 3), ["float32", "int32"]),
    (["Sum", "Min", "Prod"], (64, 33, 2, 3), (1, 3), ["float64", "int64"]),
    (["Sum", "Max", "ArgMax"], (64, 33, 2, 3), (1,), ["float32"]),
    (["Sum", "Mean", "Max"], (64, 33, 2, 3), (0, 1, 2, 3), ["float32"]),
    (["Sum", "Mean", "Prod"], (3, 0, 2), (1,), ["float32", "int32"]),
    (["Sum", "Mean", "Max"], (6, 5), (), ["float32"]),
    (["All", "Any"], (300, 500), (1,), ["bool"]),
    (["All", "Any"], (300, 500), (0,), ["bool"]),
    (["All", "Any"], (1 << 22,), (0,), ["bool"]),
    (["All", "Any"], (2, 3, 4), (0, 2), ["bool"]),
]


def _expand():
    for op_types, shape, axes, dtypes in CASES:
        for op_type in op_types:
            for dtype in dtypes:
                for keepdims in ((False,) if op_type.startswith("Arg") else (False, True)):
                    yield op_type, shape, axes, keepdims, dtype


@pytest.mark.parametrize("op_type,shape,axes,keepdims,dtype", list(_expand()))
def test_reduce_matches_numpy(op_type, shape, axes, keepdims, dtype):
    out_dtype = "int64" if op_type.startswith("Arg") else dtype
    x = sample(op_type, shape, dtype)
    plan = reduce_plan("k", op_type, shape, axes, keepdims, dtype, out_dtype)
    [got] = run_plan(plan, [x])
    want = reference(op_type, x, axes, keepdims, out_dtype)
    assert got.shape == want.shape and got.dtype == want.dtype
    rtol = {"float32": 2e-5, "float64": 1e-12}.get(dtype, 0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True,
                               err_msg=f"{op_type} of {dtype}{shape} over {axes}")


def test_load_fuses_a_product():
    x = RNG.uniform(0.5, 1.5, (64, 1000)).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, 1000).astype(np.float32)
    plan = reduce_plan("k", "Sum", x.shape, (1,), False, "float32", "float32",
                       load="in0[idx] * in1[idx % 1000]", extra_inputs=[("const float*", "in1")])
    [got] = run_plan(plan, [x, w])
    np.testing.assert_allclose(got, (x * w).sum(axis=1), rtol=2e-5)


def logits(shape, dtype):
    x = RNG.normal(0, 4, shape).astype(dtype)
    if x.size > 20:
        x.reshape(-1)[[3, 11]] = [-np.inf, 80]
    return x


SOFTMAX = [((7,), 0), ((5, 3), 0), ((64, 1000), 1), ((8, 1024), 1), ((4, 1025), 1),
           ((2, 16384), 1), ((2, 100000), 1), ((3, 4, 5), 1), ((1 << 16, 10), 1),
           ((200, 3), 1)]


@pytest.mark.parametrize("shape,axis", SOFTMAX)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_family_matches_numpy(shape, axis, dtype):
    tol = {"float32": 2e-5, "float64": 1e-12}[dtype]
    x = logits(shape, dtype)
    for op_type, fn in (("Softmax", runtime.softmax), ("LogSoftmax", runtime.log_softmax)):
        [got] = run_plan(softmax_plan("k", op_type, shape, axis, dtype), [x])
        np.testing.assert_allclose(got, fn(x, axis), rtol=tol, atol=tol, equal_nan=True,
                                   err_msg=f"{op_type} of {dtype}{shape} along {axis}")
    labels = RNG.dirichlet(np.ones(shape[axis]), shape[:axis] + shape[axis + 1:])
    labels = np.moveaxis(labels, -1, axis).astype(dtype)
    plan = xent_plan("k", "SoftmaxCrossEntropyWithLogits", shape, dtype, axis=axis,
                     backprop=True)
    loss, backprop = run_plan(plan, [labels, x])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(loss, runtime.softmax_xent(labels, x, axis), rtol=tol,
                                   atol=tol, equal_nan=True)
        np.testing.assert_allclose(backprop, runtime.softmax(x, axis) - labels, rtol=tol,
                                   atol=tol)
    if axis == len(shape) - 1:
        classes = RNG.integers(0, shape[-1], shape[:-1])
        if classes.size > 2:
            classes.reshape(-1)[1] = shape[-1]  # out of range: NaN
        plan = xent_plan("k", "SparseSoftmaxCrossEntropyWithLogits", shape, dtype,
                         labels_dtype="int64", backprop=True)
        loss, backprop = run_plan(plan, [classes, x])
        valid = classes < shape[-1]
        want = runtime.sparse_softmax_xent(np.where(valid, classes, 0), x)
        np.testing.assert_allclose(loss[valid], want[valid], rtol=tol, atol=tol)
        assert np.isnan(loss[~valid]).all() and np.isnan(backprop[~valid]).all()
        onehot = np.eye(shape[-1], dtype=dtype)[np.where(valid, classes, 0)]
        np.testing.assert_allclose(backprop[valid], (runtime.softmax(x) - onehot)[valid],
                                   rtol=tol, atol=tol)


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
