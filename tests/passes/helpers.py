"""What the tests of the compiler and its passes share: the lowered program of a run,
its node types, inputs of a size that the memory plan and fusion take, and results
with every pass on and with every pass off."""

from __future__ import annotations

import numpy as np

import staticgrad as sg
from staticgrad import compiler
from staticgrad.ir import Program, Value, constant_value, lower, make_node
from staticgrad.ops.table import OpDef, get_opdef
from staticgrad.passes.prune import prune
from staticgrad.passes.specialize import specialize


def program_for(fetches, feeds):
    """The lowered (not yet rewritten) Program of a session run with these feeds."""
    ops = prune(fetches, set(feeds))
    spec = specialize(ops, {t: (tuple(v.shape), t.dtype) for t, v in feeds.items()})
    return lower(ops, fetches, list(feeds), spec)


def reads_and_assignments():
    """w read; w += 1; then (after it) w read again and assigned; w fetched at the end."""
    w = sg.Variable([1.0, 2.0], name="w")
    before = w * 2.0
    step = sg.assign_add(w, [1.0, 1.0])
    with sg.control_dependencies([step]):
        after = sg.identity(w) * 3.0
    again = sg.assign(w, after)
    return program_for([before, after, again, w._tensor], {})


def types(program):
    return [n.type for n in program.nodes]


X = np.arange(6, dtype=np.float32).reshape(2, 3)


N = 200_003  # more than one block per thread, and not a multiple of the block


def _on_and_off(fetches, feed=None, init=()):
    out = []
    for options in (sg.CompileOptions(verify=True),
                    sg.CompileOptions(disable=set(compiler.PASS_NAMES), verify=True)):
        with sg.Session(options=options) as sess:
            for i in init:
                sess.run(i)
            out.append(sess.run(fetches, feed))
    return out


# -- programs with regions, built by hand (no op holds regions yet) ------------------------------
CALL = OpDef("Call", infer=lambda ctx: list(zip(ctx.in_shapes, ctx.in_dtypes)), numpy=None,
             differentiable=False, doc="tests only: runs its one region on its inputs")


class Body:
    """The nodes of a program or a region, made one by one:

        body = Body(x)                     # feeds like x
        e = body.op("Exp", body.feeds[0])
        inner = Body(x); inner.op(...)     # a region
        (y,) = body.call(inner.program(...), e)
        program = body.program(y)
    """

    def __init__(self, *like: Value):
        self.feeds = [Value(v.shape, v.dtype, name=f"p{i}") for i, v in enumerate(like)]
        self.nodes: list = []

    def op(self, op_type: str, *inputs, **attrs) -> Value:
        node = make_node(get_opdef(op_type), attrs, inputs, None)
        self.nodes.append(node)
        return node.outputs[0]

    def call(self, region: Program, *inputs) -> tuple:
        node = make_node(CALL, {}, inputs, None, regions=[region])
        self.nodes.append(node)
        return node.outputs

    def program(self, *results) -> Program:
        return Program(list(self.nodes), self.feeds, list(results))


def number(x, dtype=sg.float32) -> Value:
    return constant_value(np.asarray(x, dtype.np), dtype)


def vector(n: int = 4, dtype=sg.float32) -> Value:
    """A feed-like value of n elements (what Body(...) copies for its feeds)."""
    return Value(sg.TensorShape([n]), dtype)
