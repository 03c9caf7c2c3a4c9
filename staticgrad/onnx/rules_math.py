"""The rules of the math ops: elementwise ops (one ONNX node each, or a few where ONNX has no
operator of their own: expm1, log1p, floor division...), the activations' gradient kernels,
casts and matrix products."""

from __future__ import annotations

import numpy as np

from .builder import OnnxExportError


# -- elementwise ops that are one ONNX node --------------------------------------------------------
def _simple(onnx_type: str, **attrs):
    """An op that is one ONNX node with the same inputs."""
    def rule(b, op):
        b.node(onnx_type, [b.x(t) for t in op.inputs], [b.y(op)], op.name, **attrs)
    return rule


# our op type -> the ONNX operator that computes it from the same inputs
_ONE_NODE = {
    "Add": "Add", "AddN": "Sum", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div",
    "Neg": "Neg", "Abs": "Abs", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Pow": "Pow",
    "Tanh": "Tanh", "Sigmoid": "Sigmoid", "Relu": "Relu", "Sign": "Sign", "Floor": "Floor",
    "Ceil": "Ceil", "Round": "Round", "Rint": "Round", "IsNan": "IsNaN", "IsInf": "IsInf",
    "Selu": "Selu", "Softsign": "Softsign",
    "Sin": "Sin", "Cos": "Cos", "Tan": "Tan", "Erf": "Erf", "Reciprocal": "Reciprocal",
    "Softplus": "Softplus", "Elu": "Elu", "Maximum": "Max", "Minimum": "Min", "Select": "Where",
    "Identity": "Identity", "StopGradient": "Identity", "PlaceholderWithDefault": "Identity",
    "Equal": "Equal", "Greater": "Greater", "GreaterEqual": "GreaterOrEqual",
    "Less": "Less", "LessEqual": "LessOrEqual", "LogicalAnd": "And", "LogicalOr": "Or",
    "LogicalNot": "Not"}


# -- elementwise ops that take a few ONNX nodes ----------------------------------------------------
def _clip(b, op):
    """ClipByValue as np.clip computes it, min(max(t, lo), hi): bounds may be tensors of t's
    shape, where ONNX's Clip takes only scalars."""
    t, lo, hi = (b.x(v) for v in op.inputs)
    low = b.tmp(op, "max")
    b.node("Max", [t, lo], [low], low)
    b.node("Min", [low, hi], [b.y(op)], op.name)


def _square(b, op):
    x = b.x(op.inputs[0])
    b.node("Mul", [x, x], [b.y(op)], op.name)


def _is_finite(b, op):
    """not (isnan(x) or isinf(x)): ONNX has no IsFinite."""
    x = b.x(op.inputs[0])
    nan, inf, either = b.tmp(op, "nan"), b.tmp(op, "inf"), b.tmp(op, "nan_or_inf")
    b.node("IsNaN", [x], [nan], nan)
    b.node("IsInf", [x], [inf], inf)
    b.node("Or", [nan, inf], [either], either)
    b.node("Not", [either], [b.y(op)], op.name)


def _erfc(b, op):
    """1 - Erf(x): ONNX has no Erfc (the tail, where erfc is tiny, keeps only absolute
    accuracy)."""
    erf = b.tmp(op, "erf")
    b.node("Erf", [b.x(op.inputs[0])], [erf], erf)
    one = b.const(f"{op.name}/one", np.ones((), op.outputs[0].dtype.np))
    b.node("Sub", [one, erf], [b.y(op)], op.name)


def _not_equal(b, op):
    equal = b.step(op, "equal", "Equal", [b.x(t) for t in op.inputs])
    b.node("Not", [equal], [b.y(op)], op.name)


def _rsqrt(b, op):
    root = b.step(op, "sqrt", "Sqrt", [b.x(op.inputs[0])])
    b.node("Reciprocal", [root], [b.y(op)], op.name)


def _relu6(b, op):
    b.node("Clip", [b.x(op.inputs[0]), b.number(op, "zero", 0), b.number(op, "six", 6)],
           [b.y(op)], op.name)


def _leaky_relu(b, op):
    b.node("LeakyRelu", [b.x(op.inputs[0])], [b.y(op)], op.name, alpha=float(op.attrs["alpha"]))


def _expm1(b, op):
    """Kahan's expm1 from exp and log (ONNX has no expm1, and exp(x) - 1 loses the digits of
    a small x): (u - 1) * x / log(u) with u = exp(x); x itself where u rounds to 1; u - 1
    where that is exact, at -1 (x very negative) or infinite."""
    x = b.x(op.inputs[0])
    one = b.number(op, "one", 1)
    u = b.step(op, "exp", "Exp", [x])
    u1 = b.step(op, "exp_minus_one", "Sub", [u, one])
    ratio = b.step(op, "ratio", "Div", [b.step(op, "mul", "Mul", [u1, x]),
                                         b.step(op, "log", "Log", [u])])
    exact = b.step(op, "exact", "Or", [b.step(op, "at_minus_one", "Equal",
                                              [u1, b.number(op, "minus_one", -1)]),
                                       b.step(op, "infinite", "IsInf", [u])])
    far = b.step(op, "far", "Where", [exact, u1, ratio])
    b.node("Where", [b.step(op, "at_one", "Equal", [u, one]), x, far], [b.y(op)], op.name)


def _log1p(b, op):
    """rt.log1p's steps (passes/expand.py writes the same ones): log(u) + (x - (w - 1)) / w
    with u = 1 + x and w = u clipped to [tiny, max]; the correction restores what rounding
    1 + x lost, so a small x is not lost (ONNX has no log1p)."""
    x = b.x(op.inputs[0])
    info = np.finfo(op.outputs[0].dtype.np)
    one = b.number(op, "one", 1)
    u = b.step(op, "u", "Add", [one, x])
    w = b.step(op, "w", "Clip", [u, b.number(op, "tiny", info.tiny), b.number(op, "max", info.max)])
    lost = b.step(op, "lost", "Sub", [x, b.step(op, "w1", "Sub", [w, one])])
    correction = b.step(op, "correction", "Div", [lost, w])
    b.node("Add", [b.step(op, "log", "Log", [u]), correction], [b.y(op)], op.name)


def _floor_div(b, op):
    """Floats: floor(x / y). Integers: (x - x mod y) / y, exact (ONNX's Div of integers rounds
    toward zero, floor division down). An integer division by zero, an error here, is not
    defined in ONNX."""
    x, y = (b.x(t) for t in op.inputs)
    if op.inputs[0].dtype.is_integer:
        multiple = b.step(op, "multiple", "Sub", [x, b.step(op, "mod", "Mod", [x, y], fmod=0)])
        b.node("Div", [multiple, y], [b.y(op)], op.name)
    else:
        b.node("Floor", [b.step(op, "quotient", "Div", [x, y])], [b.y(op)], op.name)


def _div_no_nan(b, op):
    """where(y == 0, 0, x / where(y == 0, 1, y)): nothing divides by zero."""
    x, y = (b.x(t) for t in op.inputs)
    zero = b.number(op, "zero", 0)
    y_is_zero = b.step(op, "y_is_zero", "Equal", [y, zero])
    safe = b.step(op, "safe_y", "Where", [y_is_zero, b.number(op, "one", 1), y])
    quotient = b.step(op, "quotient", "Div", [x, safe])
    b.node("Where", [y_is_zero, zero, quotient], [b.y(op)], op.name)


def _floor_mod(b, op):
    """x mod y with the sign of y, as NumPy's remainder. Integers: ONNX's Mod. Floats: ONNX's
    Mod is C's fmod (the sign of x); as NumPy does, y is added to a nonzero remainder whose
    sign is not y's."""
    x, y = (b.x(t) for t in op.inputs)
    if op.inputs[0].dtype.is_integer:
        b.node("Mod", [x, y], [b.y(op)], op.name, fmod=0)
        return
    zero = b.number(op, "zero", 0)
    r = b.step(op, "fmod", "Mod", [x, y], fmod=1)
    nonzero = b.step(op, "nonzero", "Not", [b.step(op, "is_zero", "Equal", [r, zero])])
    signs_differ = b.step(op, "signs_differ", "Xor", [b.step(op, "r_negative", "Less", [r, zero]),
                                                      b.step(op, "y_negative", "Less", [y, zero])])
    shift = b.step(op, "shift", "And", [nonzero, signs_differ])
    b.node("Where", [shift, b.step(op, "shifted", "Add", [r, y]), r], [b.y(op)], op.name)


# -- the activations' gradient kernels -------------------------------------------------------------
def _activation_grad(b, op):
    """ReluGrad(dy, y) = dy * (y > 0); TanhGrad(y, dy) = dy * (1 - y*y);
    SigmoidGrad(y, dy) = dy * (y * (1 - y)): in the order the generated code computes them."""
    dtype = op.outputs[0].dtype.np
    if op.type == "ReluGrad":
        dy, y = (b.x(v) for v in op.inputs)
        positive, mask = b.tmp(op, "positive"), b.tmp(op, "mask")
        b.node("Greater", [y, b.const(f"{op.name}/zero", np.zeros((), dtype))], [positive],
               positive)
        b.node("Cast", [positive], [mask], mask, to=b.elem_type(op.outputs[0].dtype))
        b.node("Mul", [dy, mask], [b.y(op)], op.name)
        return
    y, dy = (b.x(v) for v in op.inputs)
    one = b.const(f"{op.name}/one", np.ones((), dtype))
    factor = b.tmp(op, "factor")
    if op.type == "TanhGrad":
        square = b.tmp(op, "square")
        b.node("Mul", [y, y], [square], square)
        b.node("Sub", [one, square], [factor], factor)
    else:
        rest = b.tmp(op, "one_minus")
        b.node("Sub", [one, y], [rest], rest)
        b.node("Mul", [y, rest], [factor], factor)
    b.node("Mul", [dy, factor], [b.y(op)], op.name)


# -- casts and matrix products ---------------------------------------------------------------------
def _cast(b, op):
    b.node("Cast", [b.x(op.inputs[0])], [b.y(op)], op.name, to=b.elem_type(op.attrs["dtype"]))


def _swap_last(b, op, i):
    """Input i of a MatMul, transposed in its last two axes (a helper Transpose node)."""
    rank = op.inputs[i].shape.ndims
    if rank is None:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} transposes an input of "
                              "unknown rank")
    out = b.tmp(op, f"transpose_{'ab'[i]}")
    b.node("Transpose", [b.x(op.inputs[i])], [out], out,
           perm=[*range(rank - 2), rank - 1, rank - 2])
    return out


def _matmul(b, op):
    a = _swap_last(b, op, 0) if op.attrs["transpose_a"] else b.x(op.inputs[0])
    c = _swap_last(b, op, 1) if op.attrs["transpose_b"] else b.x(op.inputs[1])
    b.node("MatMul", [a, c], [b.y(op)], op.name)


def _cumsum(b, op):
    """ONNX's CumSum, whose exclusive and reverse are TF1's."""
    axis = b.const(f"{op.name}/axis", np.asarray(int(op.attrs["axis"]), np.int64))
    b.node("CumSum", [b.x(op.inputs[0]), axis], [b.y(op)], op.name,
           exclusive=int(op.attrs["exclusive"]), reverse=int(op.attrs["reverse"]))


def _einsum(b, op):
    """ONNX's Einsum (opset 12 and later), with the equation in its explicit form."""
    b.node("Einsum", [b.x(t) for t in op.inputs], [b.y(op)], op.name,
           equation=str(op.attrs["equation"]))


RULES = {ours: _simple(theirs) for ours, theirs in _ONE_NODE.items()} | {
    "ClipByValue": _clip, "Square": _square, "IsFinite": _is_finite, "Erfc": _erfc,
    "NotEqual": _not_equal, "Rsqrt": _rsqrt, "Relu6": _relu6, "LeakyRelu": _leaky_relu,
    "Expm1": _expm1, "Log1p": _log1p, "FloorDiv": _floor_div, "FloorMod": _floor_mod,
    "DivNoNan": _div_no_nan,
    "ReluGrad": _activation_grad, "TanhGrad": _activation_grad, "SigmoidGrad": _activation_grad,
    "Cast": _cast, "MatMul": _matmul, "Cumsum": _cumsum, "Einsum": _einsum,
}
