"""Algebraic simplification: rewrites that give the same values, bit for bit, NaN and Inf
included (the sign of a zero aside: `-0.0 + 0` is `+0.0`).

    x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0  -> x     (1 and 0: constants or ones_like/zeros_like)
    x * -1, -1 * x                            -> -x
    x ** 1 -> x;  x ** 2 -> square(x)
    -(-x)                                     -> x
    transpose(transpose(x, p), q)             -> transpose(x, p then q), or x
    identity, stop_gradient, add_n of one, a cast to the same dtype, a reshape, broadcast,
    sum_to or transpose that changes nothing  -> x

`x * 0 -> 0` is not done: it would turn NaN and Inf into 0. A node with control
dependencies is never removed (they must still run first).
"""

from __future__ import annotations

import numpy as np

from ..ir import Program, Value, make_node
from ..ops.registry import get_opdef
from .rewrite import reads_variable, rewrite, same_type

PASS_THROUGH = {"Identity", "StopGradient", "PlaceholderWithDefault"}
SAME_SHAPE_NOOPS = {"Reshape", "BroadcastTo", "SumTo", "Squeeze", "ExpandDims"}


def simplify(program: Program) -> Program:
    def visit(node):
        if node.controls or node.members or node.opdef.stateful:
            return node
        out = node.outputs[0] if len(node.outputs) == 1 else None
        if out is None:
            return node
        x = _simplified(node, out)
        if x is None:
            return node
        return [x] if isinstance(x, Value) else x
    return rewrite(program, visit)


def _simplified(node, out):
    """A Value equal to `out`, or a simpler Node computing it, or None."""
    t, ins = node.type, node.inputs
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
    if t == "Mul":
        a, b = ins
        for x, c in ((a, b), (b, a)):
            if _is(c, 1):
                return _if_same(out, x)
            if _is(c, -1) and same_type(out, x):  # x * -1 -> -x
                return make_node(get_opdef("Neg"), {}, (x,), node.origin, names=[out.name])
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
    return None


def _if_same(out: Value, x: Value):
    return x if same_type(out, x) else None


def _producer_type(v: Value):
    return v.producer.type if v.producer is not None else None


def _is(v: Value, number) -> bool:
    """Is v known to hold `number` everywhere (a constant, or ones_like/zeros_like)?"""
    c = v.const
    if c is not None:
        if c.size == 1:  # most constants: compared as one Python number (NaN is no number)
            return c.item() == number
        return c.size > 0 and bool(np.all(c == number))
    kind = _producer_type(v)
    if kind in ("BroadcastTo", "Fill"):  # a known number spread over a shape
        source = v.producer.inputs[0 if kind == "BroadcastTo" else 1]
        return _is(source, number)
    return (kind == "OnesLike" and number == 1) or (kind == "ZerosLike" and number == 0)


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
