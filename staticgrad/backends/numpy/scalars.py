"""The scalar fast path: chains of elementwise nodes on one-element values run on NumPy
scalars, not arrays.

An operation on two one-element arrays costs about 0.5 us in NumPy, the same operation on
two NumPy scalars under 0.1 us, with the same dtype and IEEE result (NumPy's scalar math
follows the array rules under NEP 50). The code generator reads a one-element input as a
scalar (`a[0]`), computes the chain on scalars, and turns a result back into an array only
where something needs one (another op, a variable, a fetch): `L[None]` has shape (1,).

Only groups of two or more connected nodes are held as scalars: for one node alone the
conversions would cost more than they save.
"""

from __future__ import annotations

import dataclasses

from ...ir import Program, walk
from ...passes.rewrite import output_kinds


def hold_scalars(program: Program) -> Program:
    ones = {id(v.shape) for v in output_kinds(program) if v.shape.num_elements() == 1}
    if not ones:  # no one-element value anywhere: nothing to hold
        return _with_plan(program, frozenset())
    candidates = {id(n): n for n in walk(program)
                  if len(n.outputs) == 1 and id(n.outputs[0].shape) in ones and _scalar_node(n)}
    parent = {k: k for k in candidates}

    def find(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for node in candidates.values():
        for v in node.runtime_inputs():
            if v.producer is not None and id(v.producer) in candidates:
                parent[find(id(node))] = find(id(v.producer))
    sizes: dict[int, int] = {}
    for k in candidates:
        sizes[find(k)] = sizes.get(find(k), 0) + 1
    held = frozenset(k for k in candidates if sizes[find(k)] >= 2)
    return _with_plan(program, held)


def _with_plan(program: Program, held: frozenset) -> Program:
    """program with plan["scalars"]: the ids of the nodes computed on NumPy scalars."""
    return dataclasses.replace(program, plan={**program.plan, "scalars": held})


def _scalar_node(node) -> bool:
    if (node.members or not node.opdef.elementwise or node.opdef.view or node.opdef.stateful
            or node.controls or len(node.outputs) != 1):
        return False
    out = node.outputs[0]
    if out.shape.num_elements() != 1:  # most nodes: the one test they need
        return False
    inputs = node.runtime_inputs()
    if out.dtype.is_integer or any(v.dtype.is_integer for v in inputs):
        return False  # NumPy integer scalars warn on overflow where arrays wrap silently
    return all(v.shape.num_elements() == 1 for v in inputs)
