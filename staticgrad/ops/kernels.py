"""The ops' reference kernels: each op's NumPy expression compiled once per distinct text
(constant folding, the dynamic mode, the fuzzing tests' interpreter), the values known
while a graph is built (`fold_static`), and the NumPy literals expressions are written with."""

from __future__ import annotations

import functools
import math
import operator
import re
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from .. import dtypes as _dt
from .. import runtime
from .attr_types import DType
from .table import NodeCtx, OpDef

# A static value is computed at build time only if its result is at most this many elements.
STATIC_FOLD_LIMIT = 1024


# -- kernels and static values ------------------------------------------------------------------

# (expression, arity) -> compiled function, least recently used first. Bounded: an op whose
# attributes change at each call (x[i] in a loop over i) renders a new expression each time.
_KERNELS: OrderedDict[tuple, Callable] = OrderedDict()
KERNEL_CACHE_SIZE = 4096
KERNEL_NAMESPACE = {"np": np, "rt": runtime}


def render_numpy(opdef: OpDef, args: list[str], ctx: NodeCtx) -> str:
    """The NumPy expression of one node, from its emitter."""
    if isinstance(opdef.numpy, str):
        return render_format(opdef, args, ctx.attrs)
    return opdef.numpy(args, ctx)


def render_format(opdef: OpDef, args: list[str], attrs: dict) -> str:
    """A format-string expression with its inputs, and its attrs as literals of their types."""
    if not opdef.format_attrs:
        return opdef.numpy.format(*args)
    return opdef.numpy.format(*args, **{k: opdef.attrs[k].literal(attrs[k])
                                        for k in opdef.format_attrs})


def kernel(opdef: OpDef, ctx: NodeCtx) -> Callable:
    """The op's NumPy expression compiled into a function of its inputs (cached by its text)."""
    args = [f"a{i}" for i in range(len(ctx.in_shapes))]
    expr = render_numpy(opdef, args, ctx)
    key = (expr, len(args))
    # popped and put back, to be the most recently used: unlike get and move_to_end, this
    # cannot raise when another thread evicts the entry in between
    fn = _KERNELS.pop(key, None)
    if fn is None:
        fn = _direct(expr, len(args)) or eval(f"lambda {', '.join(args)}: {expr}",  # noqa: S307
                                              KERNEL_NAMESPACE)
    _KERNELS[key] = fn
    while len(_KERNELS) > KERNEL_CACHE_SIZE:
        try:
            _KERNELS.popitem(last=False)
        except KeyError:  # (another thread emptied it meanwhile)
            break
    return fn


_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
              "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<": operator.lt,
              "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
              "!=": operator.ne, "&": operator.and_, "|": operator.or_, "^": operator.xor}
_OPERATOR_EXPR = re.compile(r"a0 (\S+) a1")
_UFUNC_EXPR = re.compile(r"np\.(\w+)\(a0(, a1)?\)")


def _direct(expr: str, arity: int) -> Callable | None:
    """The C function an expression of `arity` inputs is a call of, if it is one: `a0 * a1`
    is operator.mul, `np.exp(a0)` is np.exp. The same call without a Python frame around it
    (the dynamic mode runs one kernel per op). Only where the call takes every input."""
    match = _OPERATOR_EXPR.fullmatch(expr)
    if match:
        return _OPERATORS.get(match.group(1)) if arity == 2 else None
    match = _UFUNC_EXPR.fullmatch(expr)
    if match and arity == (2 if match.group(2) else 1):
        ufunc = getattr(np, match.group(1), None)
        return ufunc if isinstance(ufunc, np.ufunc) else None
    return None


def run_kernel(opdef: OpDef, ctx: NodeCtx, arrays, fn: Callable | None = None) -> list:
    """Evaluate one node on NumPy values; returns one array per output, with the right dtypes.
    `fn`: the node's kernel, when the caller has it already."""
    out = (fn or kernel(opdef, ctx))(*arrays)
    outs = list(out) if len(ctx.out_dtypes) > 1 else [out]
    return [np.asarray(v, dtype=dt.np) for v, dt in zip(outs, ctx.out_dtypes)]


def fold_static(opdef: OpDef, ctx: NodeCtx):
    """Values of the node's outputs if they can be known without running, else None.

    Known: constants, the shape/size/rank of a tensor whose shape is known, and small
    stateless computations whose inputs are all known (shape arithmetic, mostly).
    """
    source = STATIC_SOURCES.get(opdef.type)
    if source is not None:
        return source(ctx)
    if opdef.stateful or not opdef.computes:
        return None
    if opdef.static_inputs or opdef.shape_inputs:
        if any(v is None for i, v in enumerate(ctx.in_values) if i not in opdef.static_inputs
               and i not in opdef.shape_inputs):
            return None
    else:  # most ops: every input must be known (a loop: this runs once per op created)
        for v in ctx.in_values:
            if v is None:
                return None
    if any(ctx.in_values[i] is None and not ctx.in_shapes[i].is_fully_defined()
           for i in opdef.shape_inputs):
        return None
    if not all(s.is_fully_defined() and s.num_elements() <= STATIC_FOLD_LIMIT
               for s in ctx.out_shapes):
        return None
    arrays = [v if v is not None else np.zeros(ctx.in_shapes[i].dims, ctx.in_dtypes[i].np)
              for i, v in enumerate(ctx.in_values)]
    try:
        with np.errstate(all="ignore"):
            return run_kernel(opdef, ctx, arrays)
    except Exception:  # noqa: BLE001 - a fold that fails just leaves the value unknown
        return None


def _shape_value(ctx):
    s = ctx.in_shapes[0]
    if not s.is_fully_defined() or not _fits(max(s.dims, default=0), ctx.out_dtypes[0]):
        return None
    return [np.array(s.dims, dtype=ctx.out_dtypes[0].np)]


def _size_value(ctx):
    n = ctx.in_shapes[0].num_elements()
    fits = n is not None and _fits(n, ctx.out_dtypes[0])
    return [np.array(n, dtype=ctx.out_dtypes[0].np)] if fits else None


def _fits(n: int, dtype: _dt.DType) -> bool:
    """Does n fit dtype? (else the value is left to run time, which reports the overflow)"""
    return n <= np.iinfo(dtype.np).max


def _rank_value(ctx):
    r = ctx.in_shapes[0].ndims
    return None if r is None else [np.array(r, dtype=np.int32)]


def _const_value(ctx):
    return [ctx.attrs["value"]]


def _fed_value(ctx):
    # a placeholder_with_default holds its default only until it is fed: what reads it is
    # never folded to a constant when the graph is built (as TF1's constant_value gives None)
    return None


STATIC_SOURCES = {"Shape": _shape_value, "Size": _size_value, "Rank": _rank_value,
                  "Const": _const_value, "PlaceholderWithDefault": _fed_value}


def scalar_literal(value) -> str | None:
    """Python source for a scalar that keeps NumPy's weak typing (`2.0`, `(-3.0)`), or None.
    A negative number is parenthesized: `-2.0 ** x` would be `-(2.0 ** x)`."""
    text = _scalar_literal(value)
    return f"({text})" if text is not None and text.startswith("-") else text


def _scalar_literal(value) -> str | None:
    if isinstance(value, bool | np.bool_):
        return repr(bool(value))
    if isinstance(value, int | np.integer):
        return repr(int(value))
    if isinstance(value, float | np.floating):
        v = float(value)
        if math.isnan(v):
            return "np.nan"
        if math.isinf(v):
            return "np.inf" if v > 0 else "(-np.inf)"
        if isinstance(value, np.floating) and value.dtype != np.float64:
            return _shortest(v, math.copysign(1.0, v), value.dtype.type)
        return repr(v)
    return None


@functools.lru_cache(maxsize=1024)
def _shortest(v: float, sign: float, kind) -> str:
    """The shortest text of v that reads back as the same `kind` (float32 0.1 reads "0.1",
    not "0.10000000149011612"). `sign` keeps -0.0 and 0.0 apart in the cache."""
    short = str(kind(v))
    return short if kind(float(short)) == kind(v) else repr(v)


def np_dtype(dtype: _dt.DType) -> str:
    """`np.float32`, for generated source (`np.object_` for strings)."""
    return DType().literal(dtype)
