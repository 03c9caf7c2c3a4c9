"""The shared elementwise notation (ops/expr.py) printed as C++, for C-family backends (CUDA).

    C.format(get_opdef("TanhGrad").expr)  ->  "{1} * (1 - sg_square({0}))"

Operators print as C's, with Python's `**` as a call of pow. The notation's functions are
the C library's where those compute what NumPy computes (sqrt, exp, tanh...), called
unqualified so that each dtype gets its overload (`tanh(float)`); the others are small
function templates of the preamble `codegen_templates/c/elementwise.h.j2` (`preamble()`),
written to give NumPy's answers for NaN and the infinities: sg_maximum propagates NaN as
np.maximum does, where C's fmax drops it.
"""

from __future__ import annotations

import ast
import math

import numpy as np

from ..ops.expr import Printer
from .templates import render_template

# dtype name -> its C++ type
C_TYPES = {"float16": "__half", "float32": "float", "float64": "double", "int8": "signed char",
           "int16": "short", "int32": "int", "int64": "long long", "uint8": "unsigned char",
           "bool": "bool"}


class CPrinter(Printer):
    def rewrite(self, tree: ast.AST) -> ast.AST:
        return _PowToCall().visit(tree)


class _PowToCall(ast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            return ast.Call(ast.Name("pow", ast.Load()), [node.left, node.right], [])
        return node


C = CPrinter({
    "abs": "sg_abs", "sign": "sg_sign", "square": "sg_square", "sqrt": "sqrt", "exp": "exp",
    "expm1": "expm1", "log": "log", "log1p": "log1p", "sin": "sin", "cos": "cos",
    "tan": "tan", "tanh": "tanh", "sigmoid": "sg_sigmoid", "softplus": "sg_softplus",
    "erf": "erf", "erfc": "erfc", "elu": "sg_elu", "floor": "floor", "ceil": "ceil",
    # C's round() takes halves away from zero: rint rounds them to even, as NumPy's does
    "round": "rint", "rint": "rint", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
    "logical_not": "sg_logical_not",
    "maximum": "sg_maximum", "minimum": "sg_minimum", "logical_and": "sg_logical_and",
    "logical_or": "sg_logical_or", "select": "sg_select", "clip": "sg_clip",
})


def preamble(qualifier: str = "static inline") -> str:
    """The functions C's expressions call, each declared with `qualifier` ("static inline"
    for host C++, "__device__ inline" for CUDA)."""
    return render_template("c/elementwise.h.j2", qualifier=qualifier)


# the IEEE bit patterns of the special values, for C code with no header to name them
_SPECIAL = {("float32", "inf"): "__uint_as_float(0x7f800000u)",
            ("float32", "-inf"): "__uint_as_float(0xff800000u)",
            ("float32", "nan"): "__uint_as_float(0x7fc00000u)",
            ("float64", "inf"): "__longlong_as_double(0x7ff0000000000000LL)",
            ("float64", "-inf"): "__longlong_as_double(0xfff0000000000000LL)",
            ("float64", "nan"): "__longlong_as_double(0x7ff8000000000000LL)"}


def c_literal(value, dtype: str) -> str:
    """A C++ literal of the number `value` as C type C_TYPES[dtype], for CUDA device code:
    `1.5f`, `(-2.0)`, `7LL`, `true`, the infinities and NaN by their bits. The text is made
    from the number alone (never from text it was given): `float(value)` or `int(value)`."""
    if dtype == "bool":
        return "true" if bool(value) else "false"
    if dtype in ("float32", "float64"):
        v = float(np.dtype(dtype).type(value))
        if math.isnan(v) or math.isinf(v):
            return _SPECIAL[(dtype, "nan" if math.isnan(v) else "inf" if v > 0 else "-inf")]
        text = repr(v) + ("f" if dtype == "float32" else "")
        return f"({text})" if text.startswith("-") else text
    if dtype in C_TYPES and dtype != "float16":
        v = int(value)
        if np.dtype(dtype).kind == "u":
            text = f"{v}ULL"
        else:
            # the most negative int64 has no literal: it is (-max - 1)
            text = f"({v + 1}LL - 1)" if v == -(1 << 63) else f"{v}LL"
        return f"(({C_TYPES[dtype]}){text})" if v < 0 or dtype != "int64" else text
    raise TypeError(f"no C literal for a number of dtype {dtype}")
