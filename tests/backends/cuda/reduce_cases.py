"""The cases and checks of the CUDA reductions and softmax kernels' answers, shared by the run
on a GPU (test_reduce_gpu.py) and the run of the same kernel text on the CPU
(test_reduce_emulated.py). A check takes `run_plan(plan, inputs) -> outputs`; each runner
hands its inputs to `kernel_inputs` first, so that both take the same arrays."""

from __future__ import annotations

import warnings

import numpy as np

from staticgrad import runtime
from staticgrad.backends.cuda.reduce import reduce_plan, softmax_plan, xent_plan

RNG = np.random.default_rng(0)

REDUCE_CASES = [  # (op types, shape, axes, dtypes)
    (["Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin"], (7,), (0,), ["float32", "int32"]),
    (["Sum", "Mean", "Max", "Min", "Prod"], (), (), ["float64", "int64"]),
    (["Sum", "Mean", "Max", "Min", "ArgMax", "ArgMin"], (30, 500), (1,),
     ["float32", "float64", "int64"]),
    (["Sum", "Mean", "Max", "Min", "ArgMax", "ArgMin"], (300, 50), (0,), ["float32", "int32"]),
    (["Sum", "Max", "ArgMax", "Mean"], (1 << 16,), (0,), ["float32", "int32"]),
    (["Sum", "Min", "ArgMin", "Mean"], (1 << 15, 2), (0,), ["float32", "int64"]),
    (["Sum", "Max", "ArgMax"], (3, 1 << 15), (1,), ["float64"]),
    (["Sum", "Max"], (5000, 3), (1,), ["float32", "int32"]),
    (["Sum", "Mean", "Max", "Prod"], (5, 1, 7, 9), (0, 3), ["float32", "int32"]),
    (["Sum", "Min", "Prod"], (16, 33, 2, 3), (1, 3), ["float64", "int64"]),
    (["Sum", "Max", "ArgMax"], (16, 33, 2, 3), (1,), ["float32"]),
    (["Sum", "Mean", "Max"], (16, 33, 2, 3), (0, 1, 2, 3), ["float32"]),
    (["Sum", "Mean", "Prod"], (3, 0, 2), (1,), ["float32", "int32"]),
    (["Sum", "Mean", "Max"], (6, 5), (), ["float32"]),
    (["ArgMax", "ArgMin", "Sum", "Max"], (200, 40), (1,), ["float32", "int32"]),  # 8 a row
    (["ArgMax", "ArgMin", "Min"], (3, 500), (0,), ["float64"]),  # a thread a column
    (["All", "Any"], (30, 500), (1,), ["bool"]),
    (["All", "Any"], (300, 50), (0,), ["bool"]),
    (["All", "Any"], (1 << 16,), (0,), ["bool"]),
    (["All", "Any"], (2, 3, 4), (0, 2), ["bool"]),
]

SOFTMAX_CASES = [((7,), 0), ((5, 3), 0), ((16, 1000), 1), ((4, 1024), 1), ((2, 1025), 1),
                 ((1, 16384), 1), ((1, 20000), 1), ((3, 4, 5), 1), ((1000, 10), 1),
                 ((200, 3), 1), ((4, 0), 1), ((3, 0, 2), 2), ((1000, 3), 0),
                 ((2, 300, 40), 1)]


def kernel_inputs(inputs):
    """`inputs`, each checked to be in C order, the order in which a kernel reads the memory
    it is given. Refused rather than made dense: on a GPU, cupy.asarray keeps an F-ordered
    array F-ordered (np.moveaxis's view of a 2-D array is one), and the kernel reads its
    columns as rows; a CPU runner that made it dense would pass where the GPU fails."""
    for i, x in enumerate(inputs):
        assert x.flags.c_contiguous, \
            f"in{i} of shape {x.shape} has strides {x.strides}: not in C order"
    return inputs


def check_kernel_inputs_refused(run_plan):
    """A runner refuses an array in another order than C (it would be misread)."""
    plan = softmax_plan("k", "Softmax", (5, 3), 0, "float32")
    x = np.asfortranarray(logits((5, 3), "float32"))
    try:
        run_plan(plan, [x])
    except AssertionError as e:
        assert "not in C order" in str(e)
    else:
        raise AssertionError("an F-ordered input was run")


def reduce_cases(cases=REDUCE_CASES):
    """(op_type, shape, axes, keepdims, dtype) for each case."""
    for op_types, shape, axes, dtypes in cases:
        for op_type in op_types:
            for dtype in dtypes:
                for keepdims in ((False,) if op_type.startswith("Arg") else (False, True)):
                    yield op_type, shape, axes, keepdims, dtype


def reference(op_type, x, axes, keepdims, out_dtype):
    """What the op's NumPy kernel (ops/reduction_ops.py) gives, but with sums, means and
    products of floats made in float64 and rounded once, as the kernels make them: NumPy adds
    float32 in float32, and along an axis that is not the innermost one a row at a time
    (pairwise only along the innermost), 4e-5 off for 4M rows of values near 1."""
    if op_type in ("Sum", "Mean", "Prod") and x.dtype.kind == "f":
        x = x.astype(np.float64)
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


def reduce_case_plan(name, op_type, shape, axes, keepdims, dtype):
    out_dtype = "int64" if op_type.startswith("Arg") else dtype
    return reduce_plan(name, op_type, shape, axes, keepdims, dtype, out_dtype)


def check_reduce(run_plan, plan, op_type, shape, axes, keepdims, dtype):
    out_dtype = plan.outputs[0][1]
    x = sample(op_type, shape, dtype)
    [got] = run_plan(plan, [x])
    want = reference(op_type, x, axes, keepdims, out_dtype)
    assert got.shape == want.shape and got.dtype == want.dtype
    # float32: two ulps (the double, rounded once, may round the other way); a float32 sum
    # of NumPy's is off by far more from 10^4 elements
    rtol = {"float32": 2.4e-7, "float64": 1e-12}.get(dtype, 0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True,
                               err_msg=f"{op_type} of {dtype}{shape} over {axes}")


def load_plan(name):
    return reduce_plan(name, "Sum", (64, 1000), (1,), False, "float32", "float32",
                       load="in0[idx] * in1[idx % 1000]",
                       arrays=[("const float*", "in0"), ("const float*", "in1")])


def check_load(run_plan, plan):
    x = RNG.uniform(0.5, 1.5, (64, 1000)).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, 1000).astype(np.float32)
    [got] = run_plan(plan, [x, w])
    np.testing.assert_allclose(got, (x * w).sum(axis=1), rtol=2e-5)


def logits(shape, dtype):
    """Normal logits with a -inf, a large one and a NaN (its row is all NaN)."""
    x = RNG.normal(0, 4, shape).astype(dtype)
    if x.size > 40:
        x.reshape(-1)[[3, 11, 37]] = [-np.inf, 80, np.nan]
    return x


def softmax_family_plans(name, shape, axis, dtype):
    """{what: plan} of Softmax, LogSoftmax and both cross-entropies (with backprop)."""
    plans = {op_type: softmax_plan(f"{name}_{op_type}", op_type, shape, axis, dtype)
             for op_type in ("Softmax", "LogSoftmax")}
    plans["xent"] = xent_plan(f"{name}_xent", "SoftmaxCrossEntropyWithLogits", shape, dtype,
                              axis=axis, backprop=True)
    if axis == len(shape) - 1 and shape[-1]:  # (no label is valid among 0 classes)
        plans["sparse"] = xent_plan(f"{name}_sparse", "SparseSoftmaxCrossEntropyWithLogits",
                                    shape, dtype, labels_dtype="int64", backprop=True)
    return plans


def check_softmax_family(run_plan, plans, shape, axis, dtype):
    tol = {"float32": 2e-5, "float64": 1e-12}[dtype]
    where = f"{dtype}{shape} along {axis}"
    x = logits(shape, dtype)
    for op_type, fn in (("Softmax", runtime.softmax), ("LogSoftmax", runtime.log_softmax)):
        [got] = run_plan(plans[op_type], [x])
        np.testing.assert_allclose(got, fn(x, axis), rtol=tol, atol=tol, equal_nan=True,
                                   err_msg=f"{op_type} of {where}")
    labels = RNG.dirichlet(np.ones(shape[axis]), shape[:axis] + shape[axis + 1:])
    # in C order: with the axis of a 2-D array moved, the view is F-ordered (kernel_inputs)
    labels = np.ascontiguousarray(np.moveaxis(labels, -1, axis), dtype)
    loss, backprop = run_plan(plans["xent"], [labels, x])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(loss, runtime.softmax_xent(labels, x, axis), rtol=tol,
                                   atol=tol, equal_nan=True, err_msg=f"xent of {where}")
        np.testing.assert_allclose(backprop, runtime.softmax(x, axis) - labels, rtol=tol,
                                   atol=tol, equal_nan=True, err_msg=f"xent backprop of {where}")
    if "sparse" in plans:
        classes = RNG.integers(0, shape[-1], shape[:-1])
        if classes.size > 2:
            classes.reshape(-1)[1] = shape[-1]  # out of range: NaN
        loss, backprop = run_plan(plans["sparse"], [classes, x])
        valid = classes < shape[-1]
        want = runtime.sparse_softmax_xent(np.where(valid, classes, 0), x)
        np.testing.assert_allclose(loss[valid], want[valid], rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=f"sparse xent of {where}")
        assert np.isnan(loss[~valid]).all() and np.isnan(backprop[~valid]).all()
        onehot = np.zeros(shape, dtype)
        np.put_along_axis(onehot, np.where(valid, classes, 0)[..., None], 1, axis=-1)
        np.testing.assert_allclose(backprop[valid], (runtime.softmax(x) - onehot)[valid],
                                   rtol=tol, atol=tol, equal_nan=True,
                                   err_msg=f"sparse backprop of {where}")
