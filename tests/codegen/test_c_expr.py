"""Every elementwise op's expression (ops/expr.py), printed as C++ by codegen/c_expr.py,
compiled with the machine's C++ compiler and run on special and random values, gives what
the op's NumPy reference kernel gives: exactly for arithmetic, within a few ulps where the C
library and NumPy compute a function differently. The same source also compiles as CUDA
(nvcc), the preamble's functions as __device__ ones."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.codegen.c_expr import C_TYPES, C, preamble
from staticgrad.ops.expr import NUMPY, parse
from staticgrad.ops.kernels import run_kernel
from staticgrad.ops.table import REGISTRY, NodeCtx

CXX = shutil.which("g++") or shutil.which("c++")
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
OPS = sorted(k for k, d in REGISTRY.items() if d.expr is not None)
# functions the C library and NumPy (or staticgrad.runtime) compute each their own way
APPROXIMATE = {"Exp", "Expm1", "Log", "Log1p", "Sin", "Cos", "Tan", "Tanh", "Sigmoid",
               "Softplus", "Erf", "Erfc", "Elu", "Pow", "Sqrt", "Rsqrt", "TanhGrad",
               "SigmoidGrad", "Selu", "Softsign"}
# ops whose expression cancels (1 - y*y): their rounding is judged against their inputs' scale
CANCELLING = {"TanhGrad", "SigmoidGrad"}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 6.0, 7.5, 1e-7, -1e-30, 1e30, -1e30,
           np.inf, -np.inf, np.nan, 88.0, -90.0, 710.0, -745.0]


def _dtypes(op_type: str, real):
    """The input dtypes an op takes with floats of dtype `real` (bools where it wants them),
    and its output dtype."""
    opdef = REGISTRY[op_type]
    n = opdef.expr.arity
    for ins in ([real] * n, [sg.bool_] * n, [sg.bool_] + [real] * (n - 1)):
        ctx = NodeCtx(op_type, {}, [sg.TensorShape([4])] * n, ins, [None] * n)
        try:
            ((_, out),) = opdef.infer(ctx)
        except (TypeError, ValueError):
            continue
        return ins, out
    raise AssertionError(f"no dtypes for {op_type}")


def _values(dtype, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype is sg.bool_:
        return rng.integers(0, 2, count).astype(bool)
    special = np.array(SPECIAL, dtype=np.float64)
    pool = np.concatenate([special, rng.normal(0, 3, count)])
    return rng.permutation(pool)[:count].astype(dtype.np)


def _source(cases) -> str:
    """One extern "C" function per (op, dtype): out[i] = expression(x0[i], x1[i]...)."""
    lines = ["#include <cmath>", "using std::exp; using std::expm1; using std::log;",
             "using std::log1p; using std::sqrt; using std::sin; using std::cos;",
             "using std::tan; using std::tanh; using std::erf; using std::erfc;",
             "using std::floor; using std::ceil; using std::rint; using std::pow;",
             "using std::isnan; using std::isinf; using std::isfinite;", preamble()]
    for name, op_type, ins, out in cases:
        args = ", ".join(f"const {C_TYPES[d.name]}* x{i}" for i, d in enumerate(ins))
        expr = C.format(REGISTRY[op_type].expr).format(*[f"x{i}[i]" for i in range(len(ins))])
        lines += [f'extern "C" void {name}(long n, {args}, {C_TYPES[out.name]}* out) {{',
                  f"    for (long i = 0; i < n; i++) out[i] = {expr};", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    if CXX is None:
        pytest.skip("no C++ compiler here")
    cases = []
    for op_type in OPS:
        for real in (sg.float32, sg.float64):
            ins, out = _dtypes(op_type, real)
            cases.append((f"{op_type}_{real.name}", op_type, ins, out))
    folder = tmp_path_factory.mktemp("c_expr")
    src, lib = folder / "ops.cpp", folder / "ops.so"
    src.write_text(_source(cases))
    # no -ffast-math: NaN and the infinities must behave as IEEE says
    subprocess.run([CXX, "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return ctypes.CDLL(str(lib)), {c[0]: c for c in cases}, src.read_text()


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("real", ["float32", "float64"])
def test_c_expression_computes_what_the_reference_kernel_computes(compiled, op_type, real):
    lib, cases, _ = compiled
    name, _, ins, out = cases[f"{op_type}_{real}"]
    n = 400
    xs = [_values(d, n, seed) for seed, d in enumerate(ins)]
    got = np.empty(n, dtype=out.np)
    fn = getattr(lib, name)
    fn(ctypes.c_long(n), *[x.ctypes.data_as(ctypes.c_void_p) for x in xs],
       got.ctypes.data_as(ctypes.c_void_p))
    ctx = NodeCtx(op_type, {}, [sg.TensorShape([n])] * len(ins), list(ins), [None] * len(ins))
    ctx.out_shapes, ctx.out_dtypes = [sg.TensorShape([n])], [out]
    with np.errstate(all="ignore"):
        (want,) = run_kernel(REGISTRY[op_type], ctx, xs)
    if out.is_bool or op_type not in APPROXIMATE:
        np.testing.assert_array_equal(got, want, err_msg=f"{op_type} {real}")
        return
    assert (np.isnan(got) == np.isnan(want)).all(), op_type
    finite = np.isfinite(want)
    assert (got[~finite & ~np.isnan(want)] == want[~finite & ~np.isnan(want)]).all(), op_type
    ulps = np.abs(got[finite].astype(np.float64) - want[finite]) / \
        np.spacing(np.abs(want[finite])).astype(np.float64)
    ok = ulps <= 8
    if op_type in CANCELLING:
        # 1 - y*y near y = 1 turns a rounding of y*y into many ulps of the result: there the
        # error is measured against the inputs' scale, dy * (1 + y)^2, in ulps of that
        scale = np.abs(xs[1][finite].astype(np.float64)) * (1 + np.abs(xs[0][finite])) ** 2
        error = np.abs(got[finite].astype(np.float64) - want[finite])
        ok |= error <= 8 * np.finfo(out.np).eps * scale
    assert ok.all(), (op_type, real, float(ulps.max()))


def test_the_printers_agree_with_the_notation():
    e = parse("x1 * (1 - square(x0)) + x0 ** 2 / -x1")
    assert NUMPY.format(e) == "{1} * (1 - np.square({0})) + {0} ** 2 / -{1}"
    assert C.format(e) == "{1} * (1 - sg_square({0})) + pow({0}, 2) / -{1}"
    for bad in ("x0.real", "x0[1]", "__import__('os')", "x1 + 1", "tanh(x0, x0)", "x0 if x0 else 1",
                "lambda: 0", "f(x0)", "x0 < x0 < 1", "'a'", "exp(x=x0)",
                "x0 + exp", "1 / 2 * x0", "x0 * 1e400", "x0 * (2 ** 3)"):
        with pytest.raises(ValueError):
            parse(bad)


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_the_same_source_compiles_as_cuda(compiled, tmp_path):
    """Device functions and a kernel per op compile with nvcc (no GPU needed)."""
    _, cases, _ = compiled
    lines = [preamble("__device__ inline")]
    for name, op_type, ins, out in cases.values():
        args = ", ".join(f"const {C_TYPES[d.name]}* x{i}" for i, d in enumerate(ins))
        expr = C.format(REGISTRY[op_type].expr).format(*[f"x{i}[i]" for i in range(len(ins))])
        lines += [f"__global__ void {name}(long n, {args}, {C_TYPES[out.name]}* out) {{",
                  "    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;",
                  f"    if (i < n) out[i] = {expr};", "}"]
    src = tmp_path / "ops.cu"
    src.write_text("\n".join(lines) + "\n")
    done = subprocess.run([NVCC, "-c", "-o", str(tmp_path / "ops.o"), str(src)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


# sg_select(c, x, y) and the type it gives: a number of the notation takes the other branch's
SELECT_TYPES = [("0", "(signed char)1", "signed char"), ("(float)1", "0", "float"),
                ("1.5", "2.0f", "float"), ("true", "0", "bool"), ("0", "1", "int"),
                ("0", "1.0", "double"), ("1.0", "2.0", "double"), ("(float)1", "(float)2", "float"),
                ("(long long)1", "0", "long long")]


def test_select_takes_the_type_of_its_branch_that_is_not_a_number(tmp_path):
    if CXX is None:
        pytest.skip("no C++ compiler here")
    lines = ["#include <cmath>", "#include <type_traits>",
             "using std::exp; using std::expm1; using std::log1p;", preamble()]
    lines += [f"static_assert(std::is_same<decltype(sg_select(true, {x}, {y})), {t}>::value, "
              f'"sg_select({x}, {y}) is {t}");' for x, y, t in SELECT_TYPES]
    src = tmp_path / "select.cpp"
    src.write_text("\n".join(lines) + "\n")
    done = subprocess.run([CXX, "-fsyntax-only", str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_select_with_a_number_compiles_for_half_precision(tmp_path):
    """DivNoNan's form, select(y == 0, 0, x / select(y == 0, 1, y)), on __half values: the
    selects' 0 and 1 become __half. (`__half == 0` itself is ambiguous in CUDA's header, so
    the comparison is written against a __half zero here; a CUDA backend computes float16
    values in float32.)"""
    expr = C.format(REGISTRY["DivNoNan"].expr).format("x[i]", "y[i]")
    src = tmp_path / "half.cu"
    src.write_text("\n".join([
        "#include <cuda_fp16.h>", preamble("__device__ inline"),
        "__global__ void k(const __half* x, const __half* y, __half* out) {",
        "    int i = threadIdx.x;", f"    out[i] = {expr.replace('== 0', '== __half(0.0f)')};",
        "}"]) + "\n")
    done = subprocess.run([NVCC, "-c", "-o", str(tmp_path / "half.o"), str(src)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
