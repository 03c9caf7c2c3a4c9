"""Algebraic simplification: rewrites that give the same values, bit for bit, NaN and Inf
included (the sign of a zero aside: `-0.0 + 0` is `+0.0`).

    x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0  -> x     (1 and 0: constants or ones_like/zeros_like)
    x * -1, -1 * x                            -> -x
    x ** 1 -> x;  x ** 2 -> square(x)
    -(-x)                                     -> x
    transpose(transpose(x, p), q)             -> transpose(x, p then q), or x
    identity, stop_gradient, add_n of one, a cast to the same dtype, a reshape, broadcast,
    sum_to or transpose that changes nothing  -> x
    f(broadcast_to(s, shape), y), f elementwise, when f(s, y) has that shape already
                                              -> f(s, y)   (a gradient seed's broadcast)
    f(numbers, broadcast_to(n, shape))        -> broadcast_to(f(numbers, n), shape)
    -(x * c), (-x) * c                        -> x * -c
    (x * a) * b                               -> x * (a*b)  (numbers a, b, one a power of two)
    (a / x) * b                               -> (a*b) / x  (b a power of two)
    TanhGrad(y, 1), SigmoidGrad(y, 1)         -> 1 - square(y), y * (1 - y)  (a loss's seed)

Multiplying by a power of two is exact, so `(x * a) * b` and `x * (a*b)` round the same
(when a*b is a normal number) except where an intermediate is subnormal, where the folded
form is the more accurate; a fold that could lose an overflow (x * 4 is inf, x * 4 * 0.25
would be finite) is not made. These folds turn a gradient chain such as
`-(0.5 * g * e) * 2 * x` into `-(g * e) * x`. `x * 0 -> 0` is not done: it would turn NaN
and Inf into 0. A node with control dependencies is never removed (they must still run
first).
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import Node, Program, Value, constant_value, make_node
from ..ops.kernels import run_kernel
from ..ops.table import get_opdef
from .rewrite import reads_variable, rewrite, same_type

PASS_THROUGH = {"Identity", "StopGradient", "PlaceholderWithDefault"}
UNIFORM_LIMIT = 1024  # constants up to this size are checked for holding one number
SAME_SHAPE_NOOPS = {"Reshape", "BroadcastTo", "SumTo", "Squeeze", "ExpandDims"}
# the producers of a value that `_is` may find holds one number everywhere (not a constant)
SPREADS = {"BroadcastTo", "Fill", "OnesLike", "ZerosLike"}


def simplify(program: Program) -> Program:
    def visit(node):
        if node.controls or node.members or node.opdef.stateful:
            return node
        out = node.outputs[0] if len(node.outputs) == 1 else None
        if out is None:
            return node
        x = _simplified(node, out)
        if x is None:
            return node  # (most nodes)
        for _ in range(4):  # a new node may simplify again (a factor folded to -1: a Neg)
            if not isinstance(x, Node):
                break
            again = _simplified(x, x.outputs[0])
            if again is None:
                break
            x = again
        return [x] if isinstance(x, Value) else x
    return rewrite(program, visit)


# the op types that a rule below may simplify (other than by _unspread)
RULE_TYPES = PASS_THROUGH | SAME_SHAPE_NOOPS | {
    "AddN", "Cast", "Transpose", "Neg", "Mul", "RealDiv", "Pow", "Add", "Sub", "TanhGrad",
    "SigmoidGrad"}


def _simplified(node, out):
    """A Value equal to `out`, or a simpler Node computing it, or None."""
    t, ins = node.type, node.inputs
    if node.opdef.elementwise and node.opdef.broadcasts:
        for v in ins:  # (a loop, not any([...]): once per elementwise node)
            if v.producer is not None and v.producer.type == "BroadcastTo":
                unspread = _unspread(node, out)
                if unspread is not None:
                    return unspread
                break
    if t not in RULE_TYPES:
        return None  # (most nodes: sin, exp, matmul...)
    if t in PASS_THROUGH or (t == "AddN" and len(ins) == 1):
        return _if_same(out, ins[0])
    if t == "Cast" and ins[0].dtype is out.dtype:
        return _if_same(out, ins[0])
    if t in SAME_SHAPE_NOOPS:
        return _if_same(out, ins[0])
    if t == "Transpose":
        return _transpose(node, out)
    if t == "Neg" and _producer_type(ins[0]) == "Neg" and not ins[0].producer.controls:
        return _if_same(out, ins[0].producer.inputs[0])
    if t == "Neg" and _producer_type(ins[0]) == "Mul":
        return _scaled(node, out, ins[0].producer, np.asarray(-1, out.dtype.np))
    if t == "Mul":
        a, b = ins
        for x, c in ((a, b), (b, a)):
            if c.const is None and _producer_type(c) not in SPREADS:
                continue  # (most products: c cannot be a known number)
            if _is(c, 1):
                return _if_same(out, x)
            if _is(c, -1) and same_type(out, x):  # x * -1 -> -x
                return make_node(get_opdef("Neg"), {}, (x,), node.origin, names=[out.name])
        for x, c in ((a, b), (b, a)):
            if _producer_type(x) in ("Mul", "Neg", "RealDiv") and c.const is not None:
                factor = _number(c)
                if factor is not None:
                    return _scaled(node, out, x.producer, factor)
        return None
    if t == "RealDiv" and _is(ins[1], 1):
        return _if_same(out, ins[0])
    if t == "Pow" and _is(ins[1], 1):  # x ** 1 is x exactly (IEEE pow), NaN and Inf too
        return _if_same(out, ins[0])
    if t == "Pow" and _is(ins[1], 2) and same_type(out, ins[0]):  # NumPy computes both as x*x
        return make_node(get_opdef("Square"), {}, (ins[0],), node.origin, names=[out.name])
    if t == "Add":
        a, b = ins
        return _if_same(out, a) if _is(b, 0) else (_if_same(out, b) if _is(a, 0) else None)
    if t == "Sub" and _is(ins[1], 0):
        return _if_same(out, ins[0])
    if t in ("TanhGrad", "SigmoidGrad") and _is(ins[1], 1):
        return _seeded_activation_grad(node, out)
    return None


def _seeded_activation_grad(node, out):
    """TanhGrad(y, dy) or SigmoidGrad(y, dy) where dy is all ones (the gradient of a sum
    arriving at its tanh or sigmoid): the same factor without multiplying it by one, as the
    nodes [square(y), 1 - that] or [1 - y, y * that]; None unless y has out's shape."""
    y = node.inputs[0]
    if y.dtype is not out.dtype or y.shape.dims is None or y.shape.dims != out.shape.dims:
        return None
    one = constant_value(np.asarray(1, out.dtype.np), out.dtype, f"{out.name}_one")
    if node.type == "TanhGrad":
        first = make_node(get_opdef("Square"), {}, (y,), node.origin,
                          names=[f"{out.name}_square"])
        last = make_node(get_opdef("Sub"), {}, (one, first.outputs[0]), node.origin,
                         names=[out.name])
    else:
        first = make_node(get_opdef("Sub"), {}, (one, y), node.origin,
                          names=[f"{out.name}_one_minus"])
        last = make_node(get_opdef("Mul"), {}, (y, first.outputs[0]), node.origin,
                         names=[out.name])
    return [first, last]


def _unspread(node, out):
    """node with its broadcast_to(s) inputs read as s, where the op's own broadcasting gives
    the same shape (f(broadcast_to(1, [n]), y) is f(1, y) when y has n elements); or, when
    every input is a number, spread or not, the op of the numbers, spread."""
    ins, spread = list(node.inputs), None
    for i, v in enumerate(ins):
        p = v.producer
        if p is not None and p.type == "BroadcastTo" and not p.controls \
                and p.inputs[0].dtype is v.dtype and not reads_variable(p.inputs[0]):
            ins[i], spread = p.inputs[0], p
    dims = [v.shape.dims for v in ins]
    if spread is None or out.shape.dims is None or any(d is None or None in d for d in dims):
        return None
    if all(_number(v) is not None for v in ins):  # 0.5 * broadcast_to(1, [n])
        if not same_type(out, spread.outputs[0]):  # the numbers' ranks add to the spread's
            return None
        try:
            small = make_node(node.opdef, node.attrs, ins, node.origin)
            if len(small.outputs) != 1 or small.outputs[0].shape.num_elements() != 1:
                return None
            with np.errstate(all="ignore"):
                (value,) = run_kernel(node.opdef, small.ctx, [v.const for v in ins])
        except (ValueError, TypeError, ArithmeticError):  # left for run time to report
            return None
        return _smallest(out, np.asarray(value, out.dtype.np), lambda c: make_node(
            spread.opdef, spread.attrs, (c, *spread.inputs[1:]), node.origin,
            names=[out.name]))
    try:
        if np.broadcast_shapes(*dims) != tuple(out.shape.dims):
            return None
        new = make_node(node.opdef, node.attrs, ins, node.origin, names=[out.name])
    except (ValueError, TypeError):  # the op's own shape rule may want more than broadcasting
        return None
    return new if same_type(out, new.outputs[0]) else None


def _number(v: Value):
    """The constant v holds if it is one finite number: one element (of any rank), or a small
    constant with every element equal (folding makes those of small broadcasts); else None."""
    c = v.const
    if c is None or c.dtype.kind not in "fiu" or not 0 < c.size <= UNIFORM_LIMIT:
        return None
    if c.size == 1:
        return c if math.isfinite(c.item()) else None
    first = c.reshape(-1)[:1]
    if not (c == first).all():
        return None
    return first.reshape(()) if math.isfinite(first.item()) else None


def _power_of_two(c: np.ndarray) -> bool:
    number = float(c.reshape(()))
    return number != 0 and abs(math.frexp(number)[0]) == 0.5


def _scaled(node, out, inner, factor):
    """`inner` (x * a, a / x or -x) times the number `factor`: x * (a*factor),
    (a*factor) / x or x * -factor, where that rounds as the two steps do (below) and
    overflows where they do: the inner product cannot overflow (|a| <= 1) or the factor
    cannot shrink it back (|factor| >= 1); and a*factor is a normal number.

    Exact: (x * a) * f with a or f a power of two (one of the two steps is exact, so both
    forms round x*a*f once); (a / x) * f only with f a power of two (a / x rounds)."""
    if inner.controls or out.dtype.np.kind != "f":
        return None
    if inner.type == "Neg":
        x, a = inner.inputs[0], np.asarray(-1, out.dtype.np)
    else:
        first, second = inner.inputs
        if inner.type == "RealDiv":
            x, a = second, _number(first)
        else:
            a = _number(second)
            x, a = (first, a) if a is not None else (second, _number(first))
    if a is None or reads_variable(x):
        return None
    exact = _power_of_two(factor) or (inner.type != "RealDiv" and _power_of_two(a))
    may_overflow = inner.type == "RealDiv" or abs(float(a.reshape(()))) > 1
    if not exact or (may_overflow and abs(float(factor.reshape(()))) < 1):
        return None
    with np.errstate(all="ignore"):
        product = np.multiply(a, factor, dtype=out.dtype.np)
    if not (np.isfinite(product).all() and np.abs(product).min() >= np.finfo(product.dtype).tiny):
        return None
    opdef = get_opdef("RealDiv" if inner.type == "RealDiv" else "Mul")
    return _smallest(out, product, lambda c: make_node(
        opdef, {}, (c, x) if inner.type == "RealDiv" else (x, c), node.origin,
        names=[out.name]))


def _smallest(out, number: np.ndarray, make):
    """make(constant) for the number as a 0-d constant (the generated code then writes it as
    a literal), or with its own rank if the result's shape needs it; None if neither gives
    out's shape and dtype."""
    for c in (number.reshape(()), number):
        try:
            new = make(constant_value(c, out.dtype, f"{out.name}_number"))
        except (ValueError, TypeError):
            continue
        if same_type(out, new.outputs[0]):
            return new
    return None


def _if_same(out: Value, x: Value):
    return x if same_type(out, x) else None


def _producer_type(v: Value):
    return v.producer.type if v.producer is not None else None


def _is(v: Value, number) -> bool:
    """Is v known to hold `number` everywhere (a constant, or ones_like/zeros_like)?"""
    while True:  # (through any chain of spreads: a loop, not a recursion)
        c = v.const
        if c is not None:
            if c.size == 1:  # most constants: compared as one Python number (NaN is none)
                return c.item() == number
            return c.size > 0 and bool(np.all(c == number))
        kind = _producer_type(v)
        if kind not in ("BroadcastTo", "Fill"):
            return (kind == "OnesLike" and number == 1) or (kind == "ZerosLike" and number == 0)
        v = v.producer.inputs[0 if kind == "BroadcastTo" else 1]  # a number spread over a shape


def _perm(node, rank):
    perm = node.attrs["perm"]
    return list(range(rank))[::-1] if perm is None else [p % rank for p in perm]


def _transpose(node, out):
    x = node.inputs[0]
    rank = x.shape.ndims
    if rank is None:
        return None
    perm = _perm(node, rank)
    if perm == list(range(rank)):
        return _if_same(out, x)
    inner = x.producer
    if inner is not None and inner.type == "Transpose" and not inner.controls \
            and not reads_variable(inner.inputs[0]):
        first = _perm(inner, rank)
        combined = [first[p] for p in perm]
        source = inner.inputs[0]
        if combined == list(range(rank)):
            return _if_same(out, source)
        return make_node(node.opdef, {**node.attrs, "perm": combined}, (source,), node.origin,
                         names=[out.name])
    return None
