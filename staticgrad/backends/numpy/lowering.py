"""How the NumPy backend writes an op beyond its reference kernel (the op's `numpy`, which
it prints as it is): into a buffer it chooses (`out=`), and with the [fast] extra's vector
math. Tables keyed by op type, read by the memory plan (memory.py) and the fused kernels
(fused.py).

- OUT_FORMS: the op as one expression writing its result into `out`, which may be the
  buffer of one of its inputs (except those of READS_AFTER_OUT): a format string of {0},
  {1}... and {out}, or f(args, out, ctx) -> that text. Only ops with a form here take a
  dying input's buffer, and only they compute in a fused block's scratch rows.
- READS_AFTER_OUT: inputs an out form reads after it has written into out (it computes in
  out, making no temporary): out is never their buffer.
- VECTOR: runtime_fast's function computing the op in float32 fused kernels ("exp":
  fast.exp(x, out=row)), where the [fast] extra works.
- SCALAR_FORMS: the op on one float32 element each of its inputs ({0}, {1}...), as Python
  numba compiles with NumPy's float32 result bit for bit: what a float32 group's one-pass
  kernel (one_pass_render.py) computes. A group whose every member has a form here or in
  VECTOR (whose functions the kernel calls eight elements at a time) gets one; an op without
  one keeps its group on the NumPy block kernel. Beside each form, what the kernel needs to
  know where NumPy would report: whether the result is finite where the inputs are, and
  which inputs pass a non-finite value on (so that only some values need checking).
- NO_WEAK_LITERALS: elementwise ops whose NumPy form does not combine each input with an
  array of its own dtype, so that a scalar constant input is never written as a Python
  number (which NumPy would read as float64 there).
- REGION_FORMS: ops holding regions (cond's, loops', scans'), which regions.py writes as
  Python control flow (its FORMS), with no reference kernel to print.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from . import regions


def _integer_checked(kernel: str, ufunc: str):
    """x // y (x % y) into out: for integers rt's kernel, which refuses a zero divisor as
    TF1 does (the reference kernel does the same); for floats NumPy's ufunc."""
    def into(args, out, ctx):
        fn = f"rt.{kernel}" if ctx.in_dtypes[0].is_integer else ufunc
        return f"{fn}({args[0]}, {args[1]}, out={out})"
    return into


OUT_FORMS = {
    "Neg": "np.negative({0}, out={out})",
    "Abs": "np.absolute({0}, out={out})",
    "Sign": "np.sign({0}, out={out})",
    "Square": "np.square({0}, out={out})",
    "Sqrt": "np.sqrt({0}, out={out})",
    "Rsqrt": "np.divide(1, np.sqrt({0}, out={out}), out={out})",
    "Reciprocal": "np.reciprocal({0}, out={out})",
    "Exp": "np.exp({0}, out={out})",
    "Expm1": "np.expm1({0}, out={out})",
    "Log": "np.log({0}, out={out})",
    "Log1p": "rt.log1p({0}, out={out})",
    "Sin": "np.sin({0}, out={out})",
    "Cos": "np.cos({0}, out={out})",
    "Tan": "np.tan({0}, out={out})",
    "Tanh": "np.tanh({0}, out={out})",
    "Sigmoid": "rt.sigmoid({0}, out={out})",
    "Softplus": "rt.softplus({0}, out={out})",
    "Relu": "np.maximum({0}, 0, out={out})",
    "Relu6": "rt.clip({0}, 0, 6, out={out})",
    "Floor": "np.floor({0}, out={out})",
    # the mask is made before anything is written: out may be either input's buffer
    "ReluGrad": "np.multiply({0}, np.greater({1}, 0), out={out})",
    # a layer's epilogue (epilogues.py); the second's out= is its first result's buffer
    "BiasRelu": "rt.bias_relu({0}, {1}, out={out})",
    "ReluGradBiasSum": "rt.relu_grad_bias_sum({0}, {1}, out={out})",
    "TanhGrad": "np.multiply({1}, np.subtract(1, np.square({0}, out={out}), out={out}), "
                "out={out})",
    # dy * (y * (1 - y)), in those float32 steps, all in out (no temporary)
    "SigmoidGrad": "np.multiply({1}, np.multiply({0}, np.subtract(1, {0}, out={out}), "
                   "out={out}), out={out})",
    "Add": "np.add({0}, {1}, out={out})",
    "Sub": "np.subtract({0}, {1}, out={out})",
    "Mul": "np.multiply({0}, {1}, out={out})",
    "RealDiv": "np.divide({0}, {1}, out={out})",
    "FloorDiv": _integer_checked("floordiv", "np.floor_divide"),
    "FloorMod": _integer_checked("floormod", "np.remainder"),
    "Maximum": "np.maximum({0}, {1}, out={out})",
    "Minimum": "np.minimum({0}, {1}, out={out})",
    "ClipByValue": "rt.clip({0}, {1}, {2}, out={out})",
    "AddN": lambda args, out, ctx: f"rt.add_n({', '.join(args)}, out={out})",
}

READS_AFTER_OUT: dict[str, tuple] = {
    "TanhGrad": (1,),  # dy * (1 - y^2): 1 - y^2 in out, then dy read
    "SigmoidGrad": (0, 1),  # dy * (y * (1 - y)): 1 - y in out, then y and dy read
}

VECTOR = {"Exp": "exp", "Log": "log", "Log1p": "log1p", "Tanh": "tanh", "Sigmoid": "sigmoid"}

class ScalarForm(NamedTuple):
    """An op on one element of each input, and what a non-finite input does to its result."""

    text: str | Callable  # "{0} + {1}", or f(args) -> that text
    keeps_finite: bool    # a finite result wherever the inputs are finite
    passes: tuple         # the inputs a non-finite value of which makes the result non-finite


_ONE, _ZERO = "np.float32(1)", "np.float32(0)"  # (a Python number would make it float64)
_ALL = tuple(range(8))  # every input (AddN's as many as it has)
SCALAR_FORMS = {
    "Neg": ScalarForm("-{0}", True, _ALL),
    "Abs": ScalarForm("abs({0})", True, _ALL),
    "Square": ScalarForm("{0} * {0}", False, _ALL),
    "Sqrt": ScalarForm("np.sqrt({0})", False, _ALL),
    "Rsqrt": ScalarForm(f"{_ONE} / np.sqrt({{0}})", False, ()),
    "Reciprocal": ScalarForm(f"{_ONE} / {{0}}", False, ()),
    # NumPy's maximum(a, b) of equal a and b is b (which of 0.0 and -0.0 it keeps: its SIMD
    # loops', measured); a NaN never reaches the kernel's results (such a block is NumPy's)
    "Relu": ScalarForm(f"({{0}} if {{0}} > {_ZERO} else {_ZERO})", True, ()),
    "Maximum": ScalarForm("({0} if {0} > {1} else {1})", True, ()),
    "Minimum": ScalarForm("({0} if {0} < {1} else {1})", True, ()),
    "ReluGrad": ScalarForm(f"{{0}} * ({_ONE} if {{1}} > {_ZERO} else {_ZERO})", True, (0,)),
    "TanhGrad": ScalarForm(f"{{1}} * ({_ONE} - {{0}} * {{0}})", False, _ALL),
    "SigmoidGrad": ScalarForm(f"{{1}} * ({{0}} * ({_ONE} - {{0}}))", False, _ALL),
    "Add": ScalarForm("{0} + {1}", False, _ALL),
    "Sub": ScalarForm("{0} - {1}", False, _ALL),
    "Mul": ScalarForm("{0} * {1}", False, _ALL),
    "RealDiv": ScalarForm("{0} / {1}", False, (0,)),  # (x / inf is 0)
    "AddN": ScalarForm(lambda args: " + ".join(args), False, _ALL),  # left to right: rt.add_n
}


def scalar_form(op_type: str, args: list[str]) -> str:
    """The op on one element of each of `args` (names), from SCALAR_FORMS."""
    form = SCALAR_FORMS[op_type].text
    return form.format(*args) if isinstance(form, str) else form(args)


# ReluGrad's g * (y > 0) multiplies g by a bool array; TanhGrad's and SigmoidGrad's y goes
# through NumPy alone (np.square(0.5) is a float64)
NO_WEAK_LITERALS = frozenset({"ReluGrad", "TanhGrad", "SigmoidGrad"})


def out_form(op_type: str, args: list[str], out: str, ctx) -> str:
    """The op written into `out` (which may be one of `args`), from OUT_FORMS."""
    form = OUT_FORMS[op_type]
    if isinstance(form, str):
        return form.format(*args, out=out)
    return form(args, out, ctx)


REGION_FORMS = frozenset(regions.FORMS)
