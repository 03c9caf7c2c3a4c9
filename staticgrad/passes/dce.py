"""Dead-code elimination: drop the nodes that no fetch needs after the rewrites (a node that
writes state, draws random numbers, or is waited on by a kept node always stays). In a
region, what its results need stays; a node holding regions stays if something needs its
outputs or its regions have effects."""

from __future__ import annotations

from ..ir import Node, Program, Value, has_effects
from .rewrite import map_regions


def eliminate_dead_code(program: Program) -> Program:
    program = map_regions(program, eliminate_dead_code)
    live: set[int] = set()
    for f in program.fetches:
        if isinstance(f, Value) and f.producer is not None:
            live.add(id(f.producer))
        elif isinstance(f, Node):
            live.add(id(f))
    add = live.add
    for node in reversed(program.nodes):  # (once per node: its tests inline)
        if id(node) not in live and not node.opdef.stateful and \
                not (node.regions and has_effects(node)):
            continue
        add(id(node))
        for v in node.runtime_inputs() if node.static_uses else node.inputs:
            if v.producer is not None:
                add(id(v.producer))
        if node.controls:
            live.update([id(c) for c in node.controls])
    return Program([n for n in program.nodes if id(n) in live], program.feeds,
                   program.fetches, owned=program.owned, nested=program.nested)
