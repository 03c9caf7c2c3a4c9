"""Dead-code elimination: drop the nodes that no fetch needs after the rewrites (a node that
writes state, draws random numbers, or is waited on by a kept node always stays). In a
region, what its results need stays; a node holding regions stays if something needs its
outputs or its regions have effects."""

from __future__ import annotations

from ..ir import Node, Program, Value, has_effects
from .rewrite import map_regions


def eliminate_dead_code(program: Program) -> Program:
    program = map_regions(program, eliminate_dead_code)
    # the live nodes themselves, hashed by identity (not their ids: no int object per node);
    # None, the producer of feeds and constants, goes in too rather than being tested for
    live: set = set()
    for f in program.fetches:
        if isinstance(f, Value):
            live.add(f.producer)
        elif isinstance(f, Node):
            live.add(f)
    add, update = live.add, live.update
    for node in reversed(program.nodes):  # (once per node: its tests inline)
        if node not in live and not node.opdef.stateful and \
                not (node.regions and has_effects(node)):
            continue
        add(node)
        update([v.producer for v in
                (node.runtime_inputs() if node.static_uses else node.inputs)])
        if node.controls:
            update(node.controls)
    return Program([n for n in program.nodes if n in live], program.feeds,
                   program.fetches, owned=program.owned, nested=program.nested)
