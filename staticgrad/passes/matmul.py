"""Fold transposes into matmul: `matmul(transpose(a), b)` becomes
`matmul(a, b, transpose_a=True)` (and likewise for b), one node fewer and no transposed
copy; the transpose itself goes if nothing else reads it."""

from __future__ import annotations

from ..ir import Program, make_node, walk
from .rewrite import reads_variable, rewrite


def fold_transposes_into_matmul(program: Program) -> Program:
    if not any([n.type == "MatMul" for n in walk(program)]):
        return program  # no product: no rewriting walk

    def visit(node):
        if node.type != "MatMul" or node.controls:
            return node
        inputs, attrs, changed = list(node.inputs), dict(node.attrs), False
        for i, flag in ((0, "transpose_a"), (1, "transpose_b")):
            inner = inputs[i].producer
            if inner is not None and inner.type == "Transpose" and not inner.controls \
                    and _swaps_last_two(inner) and not reads_variable(inner.inputs[0]):
                inputs[i] = inner.inputs[0]
                attrs[flag] = not attrs[flag]
                changed = True
        if not changed:
            return node
        return make_node(node.opdef, attrs, inputs, node.origin,
                         names=[v.name for v in node.outputs])
    return rewrite(program, visit)


def _swaps_last_two(transpose) -> bool:
    rank = transpose.inputs[0].shape.ndims
    if rank is None or rank < 2:
        return False
    perm = transpose.attrs["perm"]
    perm = list(range(rank))[::-1] if perm is None else [p % rank for p in perm]
    return perm == list(range(rank - 2)) + [rank - 1, rank - 2]
