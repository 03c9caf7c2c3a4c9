"""Composite ops over large arrays written as their NumPy steps, so that common-subexpression
elimination shares a step with whatever else computes it, and a fused block runs every step
in its scratch rows (a runtime helper allocates its own temporaries, block after block).

    log1p(v) -> log(u) + (v - (w - 1)) / w     u = 1 + v,  w = clip(u, tiny, max)

is what `rt.log1p` computes, step for step and in the same order, so the values are the same
bit for bit, and so are NumPy's warnings (or errors, under np.errstate): np.log1p's for
v <= -1. The gradient of log1p(v) divides by the same 1 + v, which is then computed once for
both. (With w, v = -1 and v = +inf give -inf and +inf: see `rt.log1p`.)

Only values of at least `policy.FUSE.min_elements` floats are expanded: those are the ones
fused; on small arrays one helper call costs less than seven lines, and reads better. Nor is
a float32 log1p where a fused group computes it with runtime_fast (the [fast] extra's
libmvec log1pf, in one pass and more accurate: `fast.py`), when the plan may use it
(`CompileOptions.vector_math`, which the backend passes as `vector_math`).
"""

from __future__ import annotations

import numpy as np

from ...ir import Node, Program, constant_value, make_node, walk
from ...ops.table import get_opdef
from ...passes.rewrite import rewrite, same_type
from . import fast
from .policy import FUSE


def expand_composites(program: Program, vector_math: bool = True) -> Program:
    if not any([n.type == "Log1p" for n in walk(program)]):
        return program  # nothing to expand: no walk
    vector = vector_math and fast.available()

    def visit(node):
        if node.type != "Log1p" or node.controls or not FUSE.large(node.outputs[0]):
            return node  # (Log1p's shape rule takes floats only)
        if vector and node.outputs[0].dtype.name == "float32":
            return node  # fast.log1p, in its fused group
        return _log1p(node)
    return rewrite(program, visit)


def _log1p(node: Node):
    (v,), (out,) = node.inputs, node.outputs
    info = np.finfo(out.dtype.np)

    def number(x, what):
        return constant_value(np.asarray(x, out.dtype.np), out.dtype, f"{out.name}_{what}")

    made = []

    def step(op, *inputs, name):
        new = make_node(get_opdef(op), {}, inputs, node.origin,
                        names=[out.name if name is None else f"{out.name}_{name}"])
        made.append(new)
        return new.outputs[0]

    one = number(1, "one")
    u = step("Add", one, v, name="u")  # as the gradient writes 1 + v
    w = step("ClipByValue", u, number(info.tiny, "tiny"), number(info.max, "max"), name="w")
    c = step("Sub", w, one, name="w1")
    c = step("Sub", v, c, name="lost")
    c = step("RealDiv", c, w, name="correction")  # w is free now: one row fewer at once
    result = step("Add", step("Log", u, name="log"), c, name=None)
    return made if same_type(out, result) else node
