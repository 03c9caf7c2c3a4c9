"""Fusion: group chains of elementwise nodes over one large shape, so that the generated
code evaluates each group block by block (a few thousand elements at a time, in cache, on
several threads) instead of one full-size pass over memory per node.

A group is a set of elementwise nodes (forward and gradient alike) whose results all have
the group's shape, reading values of that shape or scalars; it may hold sums over all the
elements of its values (each block adds its part; the sum is known after the last block, so
no member reads it). Only the group's outputs, the values that something
outside reads, or that are fetched, are written out in full; the rest live in one block.

Groups are made in one pass in program order. A node joins (and merges) the open groups of
its inputs; a group closes once something outside it reads one of its values, so that the
group can run as one step, after everything it reads and before everything that reads it.
Each region of a node is fused on its own; to the program around it, the node is one that
no group takes.
"""

from __future__ import annotations

import itertools

from ..ir import Node, Program, Value
from ..ops.registry import OpDef
from .rewrite import assigns_variables, map_regions, output_kinds, reads_variable, waited_on

# Below this many elements a group gains nothing from blocks and threads.
FUSE_MIN_ELEMENTS = 1 << 16

FUSED = OpDef("Fused", infer=None, numpy=None, differentiable=False,
              doc="a group of elementwise nodes evaluated block by block")


def fuse_elementwise(program: Program) -> Program:
    program = map_regions(program, fuse_elementwise)
    if not any(large(v) for v in output_kinds(program)):
        return program  # nothing large enough to gain from blocks
    waited = waited_on(program)
    assigns = assigns_variables(program)
    group_of: dict[int, int] = {}        # id(node) -> group number (before merges)
    merged_into: dict[int, int] = {}     # group number -> the group it was merged into
    members: dict[int, list[Node]] = {}
    domain_of: dict[int, tuple] = {}
    closed: set[int] = set()
    numbers = itertools.count()

    def find(g):
        while g in merged_into:
            g = merged_into[g]
        return g

    for node in program.nodes:
        read = {find(group_of[id(v.producer)]) for v in node.runtime_inputs()
                if v.producer is not None and id(v.producer) in group_of}
        # a group's sum is known only once all its blocks ran: reading it is reading from
        # outside the group
        read_sums = {find(group_of[id(v.producer)]) for v in node.runtime_inputs()
                     if v.producer is not None and v.producer.type == "Sum"
                     and id(v.producer) in group_of}
        closed.update(read_sums)
        domain = None if id(node) in waited else _domain(node)
        if assigns and any(reads_variable(v) for v in node.runtime_inputs()):
            domain = None  # a group runs late: its variable reads could cross an assignment
        joinable = [g for g in read if g not in closed and domain_of[g] == domain]
        if domain is None or (not joinable and node.type == "Sum"):
            closed.update(read)  # an outside reader closes the groups it reads
            continue
        closed.update(g for g in read if g not in joinable)
        if joinable:
            g = joinable[0]
            for other in joinable[1:]:
                merged_into[other] = g
                members[g].extend(members.pop(other))
        else:
            g = next(numbers)
            members[g], domain_of[g] = [], domain
        members[g].append(node)
        group_of[id(node)] = g

    fetched = {id(f) for f in program.fetches if isinstance(f, Value)}
    readers: dict[int, set] = {}
    for node in program.nodes:
        who = find(group_of[id(node)]) if id(node) in group_of else ("node", id(node))
        for v in node.runtime_inputs():
            readers.setdefault(id(v), set()).add(who)
    # A group runs where its last member was: after everything its members read, and
    # before anything outside reads it (that closed it, so no member comes later).
    last = {find(group_of[id(n)]): n for n in program.nodes if id(n) in group_of}
    position = {id(n): i for i, n in enumerate(program.nodes)}
    nodes = []
    for node in program.nodes:
        if id(node) not in group_of:
            nodes.append(node)
            continue
        g = find(group_of[id(node)])
        if last[g] is not node:
            continue
        group = sorted(members[g], key=lambda n: position[id(n)])
        if len(group) < 2:
            nodes.extend(group)
            continue
        outputs = [v for m in group for v in m.outputs
                   if id(v) in fetched or readers.get(id(v), set()) - {g}]
        nodes.append(_group_node(group, outputs))
    # a broadcast of a scalar that groups read as the scalar itself may be read no more
    absorbed = {b for n in nodes if n.members for b in n.attrs["scalars"]}
    if absorbed:
        read = {id(v) for n in nodes for v in n.runtime_inputs()} | fetched
        nodes = [n for n in nodes if id(n) in waited or not n.outputs
                 or any(id(v) not in absorbed or id(v) in read for v in n.outputs)]
    return Program(nodes, program.feeds, program.fetches, nested=program.nested)


def _domain(node: Node):
    """The shape the node computes over, if it can be part of a group; else None."""
    if node.controls or node.members or node.opdef.stateful or node.opdef.view:
        return None
    if node.type == "Sum":  # only a sum of everything, to a scalar, ends a group
        x = node.inputs[0]
        axis = node.attrs["axis"]
        if node.attrs.get("keepdims") or not large(x) or not x.dtype.is_floating or \
                (axis is not None and sorted(a % x.shape.ndims for a in axis)
                 != list(range(x.shape.ndims))):
            return None
        return x.shape.dims
    if not node.opdef.elementwise or len(node.outputs) != 1:
        return None
    out = node.outputs[0]
    if not large(out) or not (out.dtype.is_floating or out.dtype.is_bool):
        return None  # integers: NumPy's blockwise and whole-array results could differ
    for v in node.runtime_inputs():
        if v.shape.dims != out.shape.dims and v.shape.num_elements() != 1:
            return None  # broadcasting other than of a scalar: not blockwise
    return out.shape.dims


def large(v: Value) -> bool:
    return v.shape.is_fully_defined() and v.shape.ndims > 0 and \
        v.shape.num_elements() >= FUSE_MIN_ELEMENTS


def _group_node(members: list[Node], outputs: list[Value]) -> Node:
    """The group as one node. Its inputs are what members read from outside, except that a
    scalar broadcast to the group's shape is read as the scalar itself (`scalars` maps the
    broadcast value to it): a block then needs one number, not a slice of a full array."""
    inside = {id(v) for m in members for v in m.outputs}
    inputs, seen, scalars = [], set(), {}
    for m in members:
        for v in m.runtime_inputs():
            if id(v) in inside:
                continue
            source = scalar_source(v)
            if source is not v:
                scalars[id(v)] = source
            if id(source) not in seen:
                seen.add(id(source))
                inputs.append(source)
    node = Node(FUSED, {"scalars": scalars}, tuple(inputs), (), members[-1].origin, None,
                frozenset(), tuple(members))
    node.outputs = tuple(outputs)
    return node


def scalar_source(v: Value) -> Value:
    """The one-element value that v is a broadcast of (or v itself)."""
    m = v.producer
    if m is not None and m.type == "BroadcastTo" and m.inputs[0].shape.num_elements() == 1 \
            and v.shape.num_elements() != 1:
        return m.inputs[0]
    return v
