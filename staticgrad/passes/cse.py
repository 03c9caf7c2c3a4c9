"""Common-subexpression elimination: two nodes of the same op, attrs and inputs compute
the same values; the second reuses the first's. Equal small constants are merged first, so
`x * 2.0` written twice is found too. Nodes that touch state, draw random numbers or wait on
control dependencies are never merged, nor are nodes holding regions. A region's nodes are
merged among themselves: a region is closed (ir.py), so nothing is reused across its border."""

from __future__ import annotations

import math

import numpy as np

from ..ir import Program, Value
from .rewrite import assigns_variables, reads_variable, rewrite

CONST_KEY_LIMIT = 1024  # constants up to this many elements are compared by value


def cse(program: Program) -> Program:
    consts: dict = {}
    seen: dict = {}
    # (op, attrs, its first input or None if that is a constant) -> the first node with it:
    # a node can equal an earlier one only if they share this; most nodes share it with
    # none, and then their inputs are never keyed (a chain's 100,000 `y * 1.0001` hold
    # 100,000 distinct constants to key by value). Where many do (x * a, x * b...), the
    # rest goes as before: each node's full key in `seen`
    first_of_kind: dict = {}
    # two reads of a variable are equal only if no assignment can come between them
    assigns = assigns_variables(program)

    canonical_of: dict[Value, Value] = {}  # constant -> the first constant equal to it

    def canonical(v: Value) -> Value:
        c = v.const
        if c is None or c.size > CONST_KEY_LIMIT:
            return v
        first = canonical_of.get(v)
        if first is None:
            first = canonical_of[v] = consts.setdefault((v.dtype, c.shape, c.tobytes()), v)
        return first

    def key(node, attrs):
        # the key holds the (canonical) input values themselves, hashed and compared by
        # identity as their ids would be, without an int object and a tuple per node
        return (node.type, attrs, node.static_uses,
                *[v if v.const is None else canonical(v) for v in node.inputs])

    def visit(node):
        if (node.opdef.stateful or node.opdef.reads_state or node.controls or node.members
                or not node.opdef.computes
                or (assigns and any(reads_variable(v) for v in node.inputs))):
            return node
        attrs = _hashable(node.attrs) if node.attrs else ()
        ins = node.inputs
        kind = (node.type, attrs, node.static_uses,
                ins[0] if ins and ins[0].const is None else None)
        like = first_of_kind.setdefault(kind, node)
        if like is node:
            return node  # the first of its kind: nothing before it to equal
        # (two nodes with equal full keys are of one kind: the kind is the key's start and
        # its first input, a constant counted as None. So an earlier equal node is of this
        # kind, and every earlier node of this kind is in `seen`: the first one goes in
        # now, the others went in as they came)
        seen.setdefault(key(like, attrs), like)
        first = seen.setdefault(key(node, attrs), node)
        if first is node or node.regions or first.regions:  # (a region's work unseen)
            return node
        return list(first.outputs)

    return rewrite(program, visit, scoped=(seen, first_of_kind))


def _hashable(x):
    if not x and isinstance(x, dict):
        return ()
    if isinstance(x, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in x.items()))
    if isinstance(x, list | tuple):
        return tuple(_hashable(v) for v in x)
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, float):  # 0.0 and -0.0 are equal but not the same attribute
        return ("float", x, math.copysign(1.0, x))
    try:
        hash(x)
        return x
    except TypeError:
        return repr(x)
