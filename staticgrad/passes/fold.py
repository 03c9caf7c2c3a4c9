"""Constant folding: a node whose inputs are all known is computed now, with the op's own
NumPy kernel (the same code the generated module would run), and becomes a constant."""

from __future__ import annotations

import numpy as np

from ..ir import Program, constant_value
from ..ops.kernels import run_kernel
from .rewrite import rewrite

# Results larger than this many elements stay computed at run time (memory over speed).
FOLD_LIMIT = 1 << 16
SMALL = 1024  # results up to this size may be larger than their inputs


def fold_constants(program: Program) -> Program:
    def visit(node):
        uses = node.static_uses
        for i, v in enumerate(node.inputs):  # (a loop, not any(): once per node)
            if v.const is None and (not uses or i not in uses):
                return node  # an input known only when it runs (most nodes: the first test)
        if (node.opdef.stateful or not node.opdef.computes or node.members or node.controls
                or not node.outputs):
            return node
        if node.regions:
            return node  # (its regions' work is its op's to say, not a kernel's)
        # never grow a constant beyond the largest one it comes from (a broadcast of a scalar
        # stays a broadcast), unless it is small
        limit = max([SMALL] + [v.const.size for v in node.inputs if v.const is not None])
        if not all(v.shape.is_fully_defined() and v.shape.num_elements() <= min(limit,
                                                                                FOLD_LIMIT)
                   for v in node.outputs):
            return node
        arrays = [v.const if v.const is not None else np.zeros(v.shape.dims, v.dtype.np)
                  for v in node.inputs]
        try:
            with np.errstate(all="ignore"):
                values = run_kernel(node.opdef, node.ctx, arrays)
        except Exception:  # noqa: BLE001 - it will fail (and be reported) at run time instead
            return node
        return [constant_value(a, v.dtype, v.name, v.tensor)
                for a, v in zip(values, node.outputs)]
    return rewrite(program, visit)
