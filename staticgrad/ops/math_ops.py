"""Elementwise math, comparisons, `where`, `cast`, `add_n` and `matmul`.

Each op is one `register` call: type, shape rule, NumPy expression, gradient rule. Simple
gradient rules are one line; a broadcast input's gradient is summed back to its shape by the
reverse pass (`autodiff`), never here.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..shapes import broadcast_shapes
from . import vocabulary
from .attr_types import Bool, DType, Float
from .conversion import convert_operands, convert_to_tensor
from .creation import apply1, wants
from .expr import parse as E
from .table import register
from .vocabulary import Api

_KIND_NAMES = {"f": "a floating", "i": "an integer", "b": "a bool", "fi": "a numeric",
               "fib": "a numeric or bool", "fibs": "any", "ib": "an integer or bool"}


def check_kind(ctx, i: int, kinds: str) -> None:
    dt = ctx.in_dtypes[i]
    kind = "f" if dt.is_floating else "b" if dt.is_bool else "s" if dt.is_string else "i"
    if kind not in kinds:
        raise TypeError(f"input {i} has dtype {dt.name}, but {ctx.type} needs "
                        f"{_KIND_NAMES.get(kinds, kinds)} dtype")


def unary_infer(kinds: str, out_dtype=None):
    def infer(ctx):
        check_kind(ctx, 0, kinds)
        return [(ctx.in_shapes[0], out_dtype or ctx.in_dtypes[0])]
    return infer


def broadcast_infer(kinds: str, out_dtype=None):
    def infer(ctx):
        for i in range(len(ctx.in_dtypes)):
            check_kind(ctx, i, kinds)
        first = ctx.in_dtypes[0]
        for i, dt in enumerate(ctx.in_dtypes[1:], 1):
            if dt is not first:
                raise TypeError(f"input {i} has dtype {dt.name} that does not match dtype "
                                f"{first.name} of input 0")
        try:
            shape = broadcast_shapes(ctx.in_shapes)
        except ValueError:
            shapes = " and ".join(str(s) for s in ctx.in_shapes)
            raise ValueError(f"incompatible shapes {shapes} "
                             "(they cannot be broadcast together)") from None
        return [(shape, out_dtype or first)]
    return infer


def _unary(op_type, numpy, grad, kinds="f", api=None, out_dtype=None, **kw):
    """Register a one-input elementwise op (of `out_dtype`, else its input's); with `api`,
    make and return its graph builder, which the op vocabulary then offers
    (ops/vocabulary.py). Without a gradient rule it is not differentiable."""
    kw.setdefault("new_array", not kw.get("view", False))
    kw.setdefault("differentiable", grad is not None)
    register(op_type, unary_infer(kinds, out_dtype), numpy, grad, elementwise=True,
             broadcasts=False, arity=1, api=api, **kw)
    if api is None:
        return None
    builder = vocabulary.unary_builder(op_type, api, __name__)
    vocabulary.offer(op_type, builder)
    return builder


def _binary(op_type, numpy, grad, kinds="fi", out_dtype=None, api=None, **kw):
    """Register a two-input elementwise op that broadcasts; with `api`, make and return its
    graph builder, which the op vocabulary then offers (as `_unary` does)."""
    register(op_type, broadcast_infer(kinds, out_dtype), numpy, grad, elementwise=True, arity=2,
             differentiable=grad is not None, new_array=True, api=api, **kw)
    if api is None:
        return None
    builder = vocabulary.binary_builder(op_type, api, __name__)
    vocabulary.offer(op_type, builder)
    return builder


def _x(op):
    return op.inputs[0]


def _y(op):
    return op.outputs[0]


def _relu6_grad(op, g):
    x = _x(op)
    return [where(logical_and(greater(x, 0), less(x, 6)), g, zeros_like(g))]


# -- unary ops: type, expression, gradient, and how users reach it ---------------------------
# In the rules, x is the input, y the output, g the incoming gradient. An op's Api puts its
# builder in sg (and sg.math, sg.nn as named) and in the dynamic mode (ops/vocabulary.py).
_MATH, _NN = ("sg", "math"), ("sg", "nn", "math")
negative = _unary("Neg", E("-x0"), lambda op, g: [-g], saves=(), kinds="fi",
                  api=Api("negative", "-x", dynamic="neg", dynamic_aliases=("negative",)))
abs = _unary("Abs", E("abs(x0)"), lambda op, g: [g * sign(_x(op))], saves=("x0",), kinds="fi",  # noqa: A001
             api=Api("abs", "|x|", dynamic_aliases=("absolute",)))
sign = _unary("Sign", E("sign(x0)"), lambda op, g: [zeros_like(_x(op))], saves=(), kinds="fi",
              api=Api("sign", "-1, 0 or 1 by the sign of x"))
square = _unary("Square", E("square(x0)"), lambda op, g: [g * (2 * _x(op))], saves=("x0",),
                kinds="fi",
                api=Api("square", "x * x"))
sqrt = _unary("Sqrt", E("sqrt(x0)"), lambda op, g: [g * (0.5 / _y(op))], saves=("y0",),
              api=Api("sqrt", "the square root"))
rsqrt = _unary("Rsqrt", E("1 / sqrt(x0)"), lambda op, g: [g * (-0.5 * _y(op) * square(_y(op)))],
               saves=("y0",),
               api=Api("rsqrt", "1 / sqrt(x)"))
reciprocal = _unary("Reciprocal", E("1 / x0"), lambda op, g: [g * -square(_y(op))], saves=("y0",),
                    api=Api("reciprocal", "1 / x"))
exp = _unary("Exp", E("exp(x0)"), lambda op, g: [g * _y(op)], saves=("y0",),
             api=Api("exp", "e ** x"))
expm1 = _unary("Expm1", E("expm1(x0)"), lambda op, g: [g * exp(_x(op))], saves=("x0",),
               api=Api("expm1", "e ** x - 1, accurate near 0"))
log = _unary("Log", E("log(x0)"), lambda op, g: [g / _x(op)], saves=("x0",),
             api=Api("log", "the natural logarithm"))
log1p = _unary("Log1p", E("log1p(x0)"), lambda op, g: [g / (1 + _x(op))], saves=("x0",),
               api=Api("log1p", "log(1 + x), accurate near 0"))
sin = _unary("Sin", E("sin(x0)"), lambda op, g: [g * cos(_x(op))], saves=("x0",),
             api=Api("sin", "the sine"))
cos = _unary("Cos", E("cos(x0)"), lambda op, g: [-(g * sin(_x(op)))], saves=("x0",),
             api=Api("cos", "the cosine"))
tan = _unary("Tan", E("tan(x0)"), lambda op, g: [g * (1 + square(_y(op)))], saves=("y0",),
             api=Api("tan", "the tangent"))
# Tanh's and Sigmoid's gradients read their output, through one op each as TF1's do
tanh = _unary("Tanh", E("tanh(x0)"),
              lambda op, g: [apply1("TanhGrad", [_y(op), g], name="TanhGrad")], saves=("y0",),
              api=Api("tanh", "the hyperbolic tangent", namespaces=_NN))
sigmoid = _unary("Sigmoid", E("sigmoid(x0)"),
                 lambda op, g: [apply1("SigmoidGrad", [_y(op), g], name="SigmoidGrad")],
                 saves=("y0",),
                 api=Api("sigmoid", "1 / (1 + exp(-x))", namespaces=_NN))
softplus = _unary("Softplus", E("softplus(x0)"), lambda op, g: [g * sigmoid(_x(op))], saves=("x0",),
                  api=Api("softplus", "log(1 + exp(x)), computed stably", namespaces=_NN,
                          dynamic=None))
erf = _unary("Erf", E("erf(x0)"),
             lambda op, g: [g * ((2 / np.sqrt(np.pi)) * exp(-square(_x(op))))], saves=("x0",),
             api=Api("erf", "the error function"))
# Relu's gradient reads its output, as TF1's does (y > 0 exactly where x > 0, NaN included):
# the input is then free once y is computed, and y can take its buffer
relu = _unary("Relu", E("maximum(x0, 0)"),
              lambda op, g: [apply1("ReluGrad", [g, _y(op)], name="ReluGrad")], saves=("y0",),
              kinds="fi",
              api=Api("relu", "max(x, 0)", namespaces=("sg", "nn")))
relu6 = _unary("Relu6", E("clip(x0, 0, 6)"), _relu6_grad, saves=("x0",), kinds="fi",
               api=Api("relu6", "min(max(x, 0), 6)", namespaces=("sg", "nn"), dynamic=None))
elu = _unary("Elu", E("elu(x0)"),
             lambda op, g: [where(greater(_x(op), 0), g, g * (_y(op) + 1))], saves=("x0", "y0"),
             api=Api("elu", "x where x > 0, else exp(x) - 1", namespaces=("sg", "nn"),
                     dynamic=None))
floor = _unary("Floor", E("floor(x0)"), lambda op, g: [zeros_like(_x(op))], saves=(),
               api=Api("floor", "the largest integer not above x"))
ceil = _unary("Ceil", E("ceil(x0)"), lambda op, g: [zeros_like(_x(op))], saves=(),
              api=Api("ceil", "the smallest integer not below x"))
round = _unary("Round", E("round(x0)"), lambda op, g: [zeros_like(_x(op))], saves=(),  # noqa: A001
               api=Api("round", "the nearest integer, halves to the even one (banker's)"))
rint = _unary("Rint", E("rint(x0)"), lambda op, g: [zeros_like(_x(op))], saves=(),
              api=Api("rint", "the nearest integer, halves to the even one", dynamic=None))
_CHECKS = ("sg", "math", "debugging")
is_nan = _unary("IsNan", E("isnan(x0)"), None, out_dtype=_dt.bool_,
                api=Api("is_nan", "x is NaN (a bool)", namespaces=_CHECKS, dynamic="isnan"))
is_inf = _unary("IsInf", E("isinf(x0)"), None, out_dtype=_dt.bool_,
                api=Api("is_inf", "x is +inf or -inf (a bool)", namespaces=_CHECKS,
                        dynamic="isinf"))
is_finite = _unary("IsFinite", E("isfinite(x0)"), None, out_dtype=_dt.bool_,
                   api=Api("is_finite", "x is neither NaN nor infinite (a bool)",
                           namespaces=_CHECKS, dynamic="isfinite"))
erfc = _unary("Erfc", E("erfc(x0)"),
              lambda op, g: [g * ((-2 / np.sqrt(np.pi)) * exp(-square(_x(op))))], saves=("x0",),
              api=Api("erfc", "1 - erf(x), accurate where erf(x) is near 1"))
# SELU's scale and scale * alpha (Klambauer et al. 2017, as TF1 writes them); expm1 of
# min(x, 0): the branch a positive x does not take never overflows
selu = _unary("Selu", E("select(x0 > 0, 1.0507009873554805 * x0, "
                        "1.7580993408473766 * expm1(minimum(x0, 0)))"),
              lambda op, g: [where(greater(_x(op), 0), g * 1.0507009873554805,
                                   g * (_y(op) + 1.7580993408473766))], saves=("x0", "y0"),
              api=Api("selu", "the scaled exponential linear unit: 1.0507 x where x > 0, "
                      "else 1.7581 (exp(x) - 1)", namespaces=("nn",)))
softsign = _unary("Softsign", E("x0 / (1 + abs(x0))"),
                  lambda op, g: [g / square(1 + abs(_x(op)))], saves=("x0",),
                  api=Api("softsign", "x / (1 + |x|)", namespaces=("nn",)))
identity = _unary("Identity", E("x0"), lambda op, g: [g], saves=(), kinds="fibs", view=True,
                  api=Api("identity", "x itself", namespaces=("sg",), dynamic=None))
stop_gradient = _unary("StopGradient", E("x0"), None, kinds="fibs", view=True,
                       api=Api("stop_gradient", "x, through which no gradient flows",
                               namespaces=("sg",), dynamic=None))
logical_not = _unary("LogicalNot", E("logical_not(x0)"), None, kinds="b", new_array=False,
                     api=Api("logical_not", "not x (bools)"))


def _grad_infer(kinds, what):
    """The shape rule of an activation's gradient op (ReluGrad, TanhGrad...): two inputs of
    one shape and dtype, `what` naming them for the error."""
    def infer(ctx):
        check_kind(ctx, 0, kinds)
        if ctx.in_dtypes[0] is not ctx.in_dtypes[1] or \
                not ctx.in_shapes[0].is_compatible_with(ctx.in_shapes[1]):
            raise ValueError(f"{ctx.type} needs {what} of one shape and dtype, got "
                             f"{ctx.in_shapes[0]} {ctx.in_dtypes[0].name} and "
                             f"{ctx.in_shapes[1]} {ctx.in_dtypes[1].name}")
        return [(ctx.in_shapes[0].merge_with(ctx.in_shapes[1]), ctx.in_dtypes[0])]
    return infer


# Relu's gradient: g where the input was positive, else 0. TF1 multiplies by the mask too
# (a NaN gradient stays NaN); in NumPy `g * mask` is about ten times faster than np.where.
register("ReluGrad", _grad_infer("fi", "gradients and features"), E("x0 * (x1 > 0)"),
         lambda op, gg: [apply1("ReluGrad", [gg, op.inputs[1]], name="ReluGrad"),
                         zeros_like(op.inputs[1])], saves=("x1",),
         elementwise=True, broadcasts=False, new_array=True, arity=2)


# TanhGrad(y, dy) = dy * (1 - y^2), SigmoidGrad(y, dy) = dy * (y * (1 - y)): y is the
# activation's output, dy the gradient arriving at it; each computes in the order the three
# ops it replaces did. Their own gradients (for second derivatives), with gg arriving:
#   d/dy = gg * dy * (-2 y)         d/d(dy) = TanhGrad(y, gg)
#   d/dy = gg * dy * (1 - 2 y)      d/d(dy) = SigmoidGrad(y, gg)
register("TanhGrad", _grad_infer("f", "outputs and gradients"), E("x1 * (1 - square(x0))"),
         lambda op, gg: [gg * op.inputs[1] * (-2 * op.inputs[0]),
                         apply1("TanhGrad", [op.inputs[0], gg], name="TanhGrad")],
                         saves=("x0", "x1"),
         elementwise=True, broadcasts=False, new_array=True, arity=2)
register("SigmoidGrad", _grad_infer("f", "outputs and gradients"),
         E("x1 * (x0 * (1 - x0))"),
         lambda op, gg: [gg * op.inputs[1] * (1 - 2 * op.inputs[0]),
                         apply1("SigmoidGrad", [op.inputs[0], gg], name="SigmoidGrad")],
                         saves=("x0", "x1"),
         elementwise=True, broadcasts=False, new_array=True, arity=2)


def _leaky_relu_grad(op, g):
    x = _x(op)
    return [where(greater(x, 0), g, g * op.attrs["alpha"])]


def _leaky_relu_numpy(args, ctx):
    """max(alpha x, x) for 0 < alpha <= 1 (min for alpha > 1): the same bits as
    np.where(x > 0, x, alpha x) for every x (rounding keeps alpha x on the side of x that
    alpha puts it; alpha x first, so that a NaN comes out of the product, quieted, as it does
    from np.where's), and 7-10x faster than np.where, whose loop branches on every element
    (benchmarks/bench_select.py). Not for alpha = 0, where max(inf * 0, inf) would be NaN,
    nor a negative or NaN alpha: those select, as the Select op does (rt.select). alpha is
    judged as x * alpha reads it, in x's dtype (1e-30 is 0 in float16)."""
    x, alpha = args[0], ctx.attrs["alpha"]
    with np.errstate(over="ignore", under="ignore"):
        rounded = ctx.in_dtypes[0].np.type(alpha)
    scaled = f"{x} * {ctx.lit('alpha')}"
    if 0 < rounded <= 1:
        return f"np.maximum({scaled}, {x})"
    if rounded > 1:
        return f"np.minimum({scaled}, {x})"
    return f"rt.select({x} > 0, {x}, {scaled})"


register("LeakyRelu", unary_infer("f"), _leaky_relu_numpy, _leaky_relu_grad, saves=("x0",),
         elementwise=True,
         broadcasts=False, attrs={"alpha": Float()}, arity=1)


def _cast_infer(ctx):
    src, dst = ctx.in_dtypes[0], ctx.attrs["dtype"]
    if src.is_string != dst.is_string and src is not dst:
        raise TypeError(f"cannot cast {src.name} to {dst.name} (as TF1 cannot): use "
                        + ("sg.strings.to_number" if src.is_string else "sg.as_string"))
    return [(ctx.in_shapes[0], dst)]


def _cast_numpy(args, ctx):
    return f"{args[0]}.astype({ctx.lit('dtype')})"


def _cast_grad(op, g):
    src = op.inputs[0].dtype
    if src.is_floating and op.attrs["dtype"].is_floating:
        return [cast(g, src)]
    return [None]


register("Cast", _cast_infer, _cast_numpy, _cast_grad, saves=(), elementwise=True, broadcasts=False,
         attrs={"dtype": DType()}, arity=1)


# -- binary ops -----------------------------------------------------------------------------
def _div_grad(op, g):
    x, y = op.inputs
    gx = g / y
    return [gx, -(gx * op.outputs[0]) if wants(op, 1) else None]  # d(x/y)/dy = -(x/y)/y


def _pow_grad(op, g):
    x, y = op.inputs
    z = op.outputs[0]
    gx = g * y * pow(x, y - 1) if wants(op, 0) else None
    if not wants(op, 1):  # x ** 2: the exponent's gradient (five more nodes) is not needed
        return [gx, None]
    positive = greater(x, 0)
    safe_x = where(positive, x, ones_like(x))
    gy = g * z * where(positive, log(safe_x), zeros_like(x))
    return [gx, gy]


def _mod_grad(op, g):
    x, y = op.inputs
    return [g, -(g * floordiv(x, y)) if wants(op, 1) else None]


def _minmax_grad(op, g, select):
    x, y = op.inputs
    mask = select(x, y)
    zeros = zeros_like(g)
    return [where(mask, g, zeros) if wants(op, 0) else None,
            where(mask, zeros, g) if wants(op, 1) else None]


def _mul_grad(op, g):
    x, y = op.inputs
    return [g * y if wants(op, 0) else None, x * g if wants(op, 1) else None]


# In sg and sg.math (TF1's names); in the dynamic mode under PyTorch's, where its functions
# take more (add's alpha, div's rounding_mode) staticgrad.dynamic.functions says so by hand.
add = _binary("Add", E("x0 + x1"), lambda op, g: [g, g], saves=(), api=Api("add", "x + y"))
subtract = _binary("Sub", E("x0 - x1"), lambda op, g: [g, -g if wants(op, 1) else None], saves=(),
                   api=Api("subtract", "x - y", dynamic="sub", dynamic_aliases=("subtract",)))
multiply = _binary("Mul", E("x0 * x1"), _mul_grad, saves=("x0", "x1"),
                   api=Api("multiply", "x * y", dynamic="mul", dynamic_aliases=("multiply",)))
_binary("RealDiv", E("x0 / x1"), _div_grad, saves=("x1", "y0"),
        kinds="f")  # truediv, div: below (they cast ints)


def _div_no_nan_grad(op, g):  # TF1's: 0 wherever y is 0, for both
    x, y = op.inputs
    return [div_no_nan(g, y) if wants(op, 0) else None,
            g * div_no_nan(div_no_nan(-x, y), y) if wants(op, 1) else None]


# TF1's tf.div_no_nan: 0 where y is 0 (whatever x is, NaN and inf too); the divisor is made
# 1 there first, so that nothing divides by zero
div_no_nan = _binary("DivNoNan", E("select(x1 == 0, 0, x0 / select(x1 == 0, 1, x1))"),
                     _div_no_nan_grad, saves=("x0", "x1"), kinds="f",
                     api=Api("div_no_nan", "x / y, or 0 where y is 0",
                             aliases=("divide_no_nan",), dynamic=None))


def _integer_checked(operator, kernel):
    """`x // y` for floats; for integers rt's kernel, which refuses a zero divisor (TF1
    raises; NumPy gives 0 with a warning)."""
    def emit(args, ctx):
        if ctx.in_dtypes[0].is_integer:
            return f"rt.{kernel}({args[0]}, {args[1]})"
        return f"{args[0]} {operator} {args[1]}"
    return emit


floordiv = _binary("FloorDiv", _integer_checked("//", "floordiv"), None,
                   api=Api("floordiv", "x // y, rounded toward -inf", aliases=("floor_div",),
                           dynamic="floor_divide"))
mod = _binary("FloorMod", _integer_checked("%", "floormod"), _mod_grad,
              saves=("x0", "x1"),  # (% is np.remainder)
              api=Api("mod", "x % y, with the sign of y (Python's %)", aliases=("floormod",),
                      dynamic="remainder"))
pow = _binary("Pow", E("x0 ** x1"), _pow_grad, saves=("x0", "x1", "y0"),  # noqa: A001 - TF1's name
              api=Api("pow", "x ** y"))
maximum = _binary("Maximum", E("maximum(x0, x1)"),
                  lambda op, g: _minmax_grad(op, g, greater_equal), saves=("x0", "x1"),
                  api=Api("maximum", "the larger of x and y"))
minimum = _binary("Minimum", E("minimum(x0, x1)"), lambda op, g: _minmax_grad(op, g, less_equal),
                  saves=("x0", "x1"),
                  api=Api("minimum", "the smaller of x and y"))
# the comparisons: TF1's names in sg, PyTorch's (eq, lt...) in the dynamic mode
equal = _binary("Equal", E("x0 == x1"), None, kinds="fibs", out_dtype=_dt.bool_,
                api=Api("equal", "x == y (a bool)", dynamic="eq"))
not_equal = _binary("NotEqual", E("x0 != x1"), None, kinds="fibs", out_dtype=_dt.bool_,
                    api=Api("not_equal", "x != y (a bool)", dynamic="ne",
                            dynamic_aliases=("not_equal",)))
less = _binary("Less", E("x0 < x1"), None, kinds="fib", out_dtype=_dt.bool_,
               api=Api("less", "x < y (a bool)", dynamic="lt", dynamic_aliases=("less",)))
less_equal = _binary("LessEqual", E("x0 <= x1"), None, kinds="fib", out_dtype=_dt.bool_,
                     api=Api("less_equal", "x <= y (a bool)", dynamic="le",
                             dynamic_aliases=("less_equal",)))
greater = _binary("Greater", E("x0 > x1"), None, kinds="fib", out_dtype=_dt.bool_,
                  api=Api("greater", "x > y (a bool)", dynamic="gt",
                          dynamic_aliases=("greater",)))
greater_equal = _binary("GreaterEqual", E("x0 >= x1"), None, kinds="fib", out_dtype=_dt.bool_,
                        api=Api("greater_equal", "x >= y (a bool)", dynamic="ge",
                                dynamic_aliases=("greater_equal",)))
logical_and = _binary("LogicalAnd", E("logical_and(x0, x1)"), None, kinds="b",
                      api=Api("logical_and", "x and y (bools)"))
logical_or = _binary("LogicalOr", E("logical_or(x0, x1)"), None, kinds="b",
                     api=Api("logical_or", "x or y (bools)"))


def _select_infer(ctx):
    check_kind(ctx, 0, "b")
    if ctx.in_dtypes[1] is not ctx.in_dtypes[2]:
        raise TypeError(f"x has dtype {ctx.in_dtypes[1].name} but y has dtype "
                        f"{ctx.in_dtypes[2].name}; they must match")
    try:
        shape = broadcast_shapes(ctx.in_shapes)
    except ValueError:
        raise ValueError("condition, x and y have incompatible shapes "
                         + ", ".join(str(s) for s in ctx.in_shapes)) from None
    return [(shape, ctx.in_dtypes[1])]


def _select_grad(op, g):
    cond = op.inputs[0]
    zeros = zeros_like(g)
    return [None, where(cond, g, zeros) if wants(op, 1) else None,
            where(cond, zeros, g) if wants(op, 2) else None]


register("Select", _select_infer, E("select(x0, x1, x2)"), _select_grad, saves=("x0",),
         elementwise=True,
         new_array=True, arity=3)


def _clip_infer(ctx):
    if len(ctx.in_dtypes) != 3:
        raise ValueError(f"ClipByValue takes 3 inputs (t, clip_value_min, clip_value_max), "
                         f"got {len(ctx.in_dtypes)}")
    t = ctx.in_shapes[0]
    for i, bound in ((1, "clip_value_min"), (2, "clip_value_max")):
        s = ctx.in_shapes[i]
        if s.ndims != 0 and not s.is_compatible_with(t):
            raise ValueError(f"{bound} has shape {s}; it must be a scalar or t's shape {t}")
    broadcast_infer("fi")(ctx)  # numeric inputs of one dtype, as the binary ops check them
    return [(t, ctx.in_dtypes[0])]


def _clip_grad(op, g):  # TF1's rule: t's gradient where it was not clipped, a bound's where
    t, lo, hi = op.inputs  # it clipped (summed to the bound's shape)
    below = less(t, lo) if wants(op, 0) or wants(op, 1) else None
    above = greater(t, hi) if wants(op, 0) or wants(op, 2) else None
    zeros = zeros_like(g)
    return [where(logical_or(below, above), zeros, g) if wants(op, 0) else None,
            where(below, g, zeros) if wants(op, 1) else None,
            where(above, g, zeros) if wants(op, 2) else None]


# TF's raw ClipByValue op (`clip_by_value` is, as in TF1, a maximum then a minimum); the
# NumPy backend writes log1p with it (backends/numpy/expand.py): np.clip (rt.clip) is one
# pass over memory
register("ClipByValue", _clip_infer, E("clip(x0, x1, x2)"), _clip_grad, saves=("x0", "x1", "x2"),
         elementwise=True,
         new_array=True, arity=3)


def _add_n_infer(ctx):
    first = ctx.in_dtypes[0]
    for i, dt in enumerate(ctx.in_dtypes):
        check_kind(ctx, i, "fi")
        if dt is not first:
            raise TypeError(f"input {i} has dtype {dt.name}, input 0 has {first.name}")
    shape = ctx.in_shapes[0]
    for i, s in enumerate(ctx.in_shapes[1:], 1):
        if not shape.is_compatible_with(s):
            raise ValueError(f"input {i} has shape {s}, input 0 has {shape}; add_n needs "
                             "equal shapes")
        shape = shape.merge_with(s)
    return [(shape, first)]


# More terms than this are added by rt.add_n (left to right, as the written sum): Python's
# compiler recurses once per `+`, and a sum of 3,000 terms raised RecursionError.
ADD_N_WRITTEN = 100


def _add_n_numpy(args, ctx):
    if len(args) == 1:
        return f"np.copy({args[0]})"
    if len(args) > ADD_N_WRITTEN:
        return f"rt.add_n({', '.join(args)})"
    return " + ".join(args)


register("AddN", _add_n_infer, _add_n_numpy,
         lambda op, g: [g] * len(op.inputs), saves=(), elementwise=True, broadcasts=False,
         new_array=True, arity=(1, None))


# -- matmul -----------------------------------------------------------------------------------
def _matmul_infer(ctx):
    a, b = ctx.in_shapes
    ta, tb = ctx.attrs["transpose_a"], ctx.attrs["transpose_b"]
    for i in (0, 1):
        check_kind(ctx, i, "fi")
    if ctx.in_dtypes[0] is not ctx.in_dtypes[1]:
        raise TypeError(f"a has dtype {ctx.in_dtypes[0].name} but b has dtype "
                        f"{ctx.in_dtypes[1].name}")
    for name, s in (("a", a), ("b", b)):
        if s.dims is not None and len(s.dims) < 2:
            raise ValueError(f"{name} has shape {s}; matmul needs inputs of rank >= 2")
    if a.dims is None or b.dims is None:
        from ..shapes import TensorShape
        return [(TensorShape(None), ctx.in_dtypes[0])]
    m, ka = (a.dims[-1], a.dims[-2]) if ta else (a.dims[-2], a.dims[-1])
    kb, n = (b.dims[-1], b.dims[-2]) if tb else (b.dims[-2], b.dims[-1])
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(f"inner dimensions differ: a has shape {a}{' (transposed)' if ta else ''}"
                         f" and b has shape {b}{' (transposed)' if tb else ''}: {ka} != {kb}")
    from ..shapes import TensorShape
    try:
        batch = broadcast_shapes([TensorShape(a.dims[:-2]), TensorShape(b.dims[:-2])])
    except ValueError:
        raise ValueError(f"batch dimensions of {a} and {b} cannot be broadcast") from None
    return [(TensorShape(list(batch.dims) + [m, n]), ctx.in_dtypes[0])]


def _matmul_numpy(args, ctx):
    def side(arg, transposed, i):
        if not transposed:
            return arg
        return f"{arg}.T" if len(ctx.in_shapes[i].dims) == 2 else f"np.swapaxes({arg}, -1, -2)"
    a = side(args[0], ctx.attrs["transpose_a"], 0)
    b = side(args[1], ctx.attrs["transpose_b"], 1)
    return f"{a} @ {b}"


def _matmul_grad(op, g):
    a, b = op.inputs
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    ga = gb = None
    if wants(op, 0):  # d(a @ b)/da = g @ b.T, with a's and b's transposes undone
        ga = matmul(b, g, transpose_a=tb, transpose_b=True) if ta else \
            matmul(g, b, transpose_b=not tb)
    if wants(op, 1):
        gb = matmul(g, a, transpose_a=True, transpose_b=ta) if tb else \
            matmul(a, g, transpose_a=not ta)
    return [ga, gb]


register("MatMul", _matmul_infer, _matmul_numpy, _matmul_grad, saves=("x0", "x1"), broadcasts=True,
         core_dims=2,
         new_array=True, attrs={"transpose_a": Bool(), "transpose_b": Bool()}, arity=2)


# -- public functions -------------------------------------------------------------------------
def leaky_relu(features, alpha=0.2, name=None):
    """max(features, alpha * features), elementwise."""
    return apply1("LeakyRelu", [convert_to_tensor(features)], {"alpha": alpha}, name)


def truediv(x, y, name=None):
    """x / y; integer inputs are first cast to float (float64 for int32/int64, as TF1)."""
    x, y = convert_operands(x, y)
    if not x.dtype.is_floating:
        target = _dt.float32 if x.dtype in (_dt.int8, _dt.int16, _dt.uint8) else _dt.float64
        if x.dtype.is_bool:
            raise TypeError(f"cannot divide bool tensors {x.name} and {y.name}")
        x, y = cast(x, target), cast(y, target)
    return apply1("RealDiv", [x, y], name=name)


divide = truediv


def div(x, y, name=None):
    """x / y with Python 2 semantics (TF1's `tf.div`): floor division for integers."""
    x, y = convert_operands(x, y)
    if x.dtype.is_floating:
        return apply1("RealDiv", [x, y], name=name)
    return floordiv(x, y, name=name)


def cast(x, dtype, name=None):
    """x converted to `dtype` (floats to ints truncate toward zero, as in TF1)."""
    x = convert_to_tensor(x)
    dtype = _dt.as_dtype(dtype)
    if x.dtype is dtype:
        return x
    return apply1("Cast", [x], {"dtype": dtype}, name=name)


def to_float(x, name=None):
    """x cast to float32 (TF1's deprecated shorthand for cast(x, float32))."""
    return cast(x, _dt.float32, name)


def where(condition, x=None, y=None, name=None):
    """Elementwise choice between x and y by a bool condition; with x and y omitted, the
    coordinates of the True entries (an int64 matrix of shape [n, rank])."""
    if x is None and y is None:
        return apply1("Where", [convert_to_tensor(condition, dtype=_dt.bool_)], name=name)
    if x is None or y is None:
        raise ValueError("where(): give both x and y, or neither")
    cond = convert_to_tensor(condition, dtype=_dt.bool_)
    x, y = convert_operands(x, y)
    return apply1("Select", [cond, x, y], name=name)


def add_n(inputs, name=None):
    """The sum of a list of tensors of one shape and dtype."""
    if not inputs:
        raise ValueError("add_n needs at least one input")
    tensors = [convert_to_tensor(t) for t in inputs]
    if len(tensors) == 1:
        return tensors[0] if name is None else identity(tensors[0], name=name)
    return apply1("AddN", tensors, name=name)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """t clipped to [clip_value_min, clip_value_max]; the gradient passes where not clipped."""
    from ..graph import name_scope
    t = convert_to_tensor(t)
    with name_scope(name, "clip_by_value"):
        return minimum(maximum(t, clip_value_min), clip_value_max)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """Matrix product of the last two dims; leading (batch) dims broadcast as in np.matmul."""
    a, b = convert_operands(a, b)
    attrs = {"transpose_a": bool(transpose_a or adjoint_a),
             "transpose_b": bool(transpose_b or adjoint_b)}
    return apply1("MatMul", [a, b], attrs, name=name)


def zeros_like(x, dtype=None, name=None):
    from .array_ops import zeros_like as _zl
    return _zl(x, dtype=dtype, name=name)


def ones_like(x, dtype=None, name=None):
    from .array_ops import ones_like as _ol
    return _ol(x, dtype=dtype, name=name)
