"""Fusion: group chains of elementwise nodes over one large shape, so that the generated
code evaluates each group block by block (a few thousand elements at a time, in cache, on
several threads) instead of one full-size pass over memory per node.

A group is a set of elementwise nodes (forward and gradient alike) whose results all have
the group's shape, reading values of that shape or (where the policy allows) one-element
values, or any values that broadcast to it; it may hold reductions (of the types the
policy allows) of all the elements of its values to one number (each block reduces its
part; the result is known after the last block, so no member reads it). Only the group's
outputs, the values that something outside reads, or that are fetched, are written out in
full; the rest live in one block.

Groups are made in one pass in program order. A node joins (and merges) the open groups of
its inputs; a group closes once something outside it reads one of its values, so that the
group can run as one step, after everything it reads and before everything that reads it.
It closes too where a variable one of its members reads is written (an assignment, an
optimizer's update): it runs where its last member is, and must read the variable's value
from before the write, as the program says.
Each region of a node is fused on its own; to the program around it, the node is one that
no group takes.

The backend says what its fused groups can hold (`FusePolicy`, `Backend.fuse_policy`); the
NumPy backend's is in backends/numpy/policy.py.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

from ..ir import Node, Program, Value, assigned_by, variable_of
from ..ops.table import OpDef
from .rewrite import assigns_variables, map_regions, output_kinds, reads_variable, waited_on

FUSED = OpDef("Fused", infer=None, numpy=None, differentiable=False,
              doc="a group of elementwise nodes evaluated block by block")


@dataclasses.dataclass
class FusePolicy:
    """What a backend's fused groups may hold, e.g. the NumPy backend's
    `FusePolicy(min_elements=1 << 16, scalar_broadcasts=True, reductions={"Sum"})`.
    (Not frozen: tests lower the thresholds.)"""

    min_elements: int          # groups over fewer elements gain nothing: not made
    scalar_broadcasts: bool    # a member may read one-element values (else only the group's
    #                            shape: a block reads the same slice of each input)
    reductions: frozenset      # reduction op types a group may end in, reducing a whole value
    #                            (every axis, no keepdims) to one number: {"Sum"}
    integers: bool = False     # integer groups too (the NumPy backend: no, as blockwise and
    #                            whole-array integer results could differ)
    broadcasts: bool = False   # a member may read any value that broadcasts to the group's
    #                            shape (a CUDA kernel indexes each input by its own strides)
    admits: Callable[[Node], bool] | None = None  # the backend's say on each node (None: yes):
    #                            one its generated kernels can write, on its device
    max_inputs: int | None = None  # the most values a group may read from outside (a CUDA
    #                            kernel's parameters have a size limit)

    def __post_init__(self):
        self.reductions = frozenset(self.reductions)

    def large(self, v: Value) -> bool:
        """Is v of a size worth fusing (and of known shape, not 0-d)?"""
        return v.shape.is_fully_defined() and v.shape.ndims > 0 and \
            v.shape.num_elements() >= self.min_elements


def fuse_elementwise(program: Program, policy: FusePolicy) -> Program:
    """The program with its fusable groups (under `policy`) as Fused nodes."""
    program = map_regions(program, lambda region: fuse_elementwise(region, policy))
    large, reductions = policy.large, policy.reductions
    if not any(large(v) for v in output_kinds(program)):
        return program  # nothing large enough to gain from blocks
    waited = waited_on(program)
    assigns = assigns_variables(program)
    group_of: dict[int, int] = {}        # id(node) -> group number (before merges)
    merged_into: dict[int, int] = {}     # group number -> the group it was merged into
    members: dict[int, list[Node]] = {}
    domain_of: dict[int, tuple] = {}
    reads: dict[int, set] = {}           # group number -> id(Value) of what it reads from outside
    var_reads: dict[int, set] = {}       # group number -> the variables its members read
    closed: set[int] = set()
    numbers = itertools.count()

    def find(g):
        while g in merged_into:
            g = merged_into[g]
        return g

    for node in program.nodes:
        if assigns and var_reads:
            written = _writes(node)
            if written is not None:  # (a group runs where its last member is: none may come
                #                        after a write of a variable the group reads)
                closed.update(g for g, names in var_reads.items()
                              if names and (written is _ANY or written in names))
        read = {find(group_of[id(v.producer)]) for v in node.runtime_inputs()
                if v.producer is not None and id(v.producer) in group_of}
        # a group's sum is known only once all its blocks ran: reading it is reading from
        # outside the group
        read_sums = {find(group_of[id(v.producer)]) for v in node.runtime_inputs()
                     if v.producer is not None and v.producer.type in reductions
                     and id(v.producer) in group_of}
        closed.update(read_sums)
        domain = None if id(node) in waited else _domain(node, policy)
        joinable = [g for g in read if g not in closed and domain_of[g] == domain]
        outside = _read_from_outside(node, joinable, group_of, find)
        if policy.max_inputs is not None and joinable and \
                len(outside.union(*[reads[g] for g in joinable])) > policy.max_inputs:
            joinable = []  # one kernel would take too many arrays: the node starts anew
            outside = _read_from_outside(node, joinable, group_of, find)
        if domain is None or (not joinable and node.type in reductions):
            closed.update(read)  # an outside reader closes the groups it reads
            continue
        closed.update(g for g in read if g not in joinable)
        if joinable:
            g = joinable[0]
            for other in joinable[1:]:
                merged_into[other] = g
                members[g].extend(members.pop(other))
                reads[g] |= reads.pop(other)
                var_reads[g] |= var_reads.pop(other)
        else:
            g = next(numbers)
            members[g], domain_of[g], reads[g], var_reads[g] = [], domain, set(), set()
        reads[g] |= outside
        var_reads[g] |= {variable_of(v.producer) for v in node.runtime_inputs()
                         if reads_variable(v)}
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
        nodes.append(_group_node(group, outputs, not assigns))
    # a broadcast of a scalar that groups read as the scalar itself may be read no more
    absorbed = {b for n in nodes if n.members for b in n.attrs["scalars"]}
    if absorbed:
        read = {id(v) for n in nodes for v in n.runtime_inputs()} | fetched
        nodes = [n for n in nodes if id(n) in waited or not n.outputs
                 or any(id(v) not in absorbed or id(v) in read for v in n.outputs)]
    return Program(nodes, program.feeds, program.fetches, nested=program.nested)


_ANY = object()  # (what _writes says of a node that may write any variable)


def _writes(node: Node):
    """The variable `node` writes (an assignment's), `_ANY` where it may write some (a node
    holding regions, an unknown stateful op), or None (it writes none)."""
    var = assigned_by(node)
    if var is not None:
        return var
    opdef = node.opdef
    if node.regions or (opdef.stateful and not opdef.reads_state and not opdef.draws_random):
        return _ANY
    return None


def _domain(node: Node, policy: FusePolicy):
    """The shape the node computes over, if it can be part of a group; else None."""
    if node.controls or node.members or node.opdef.stateful or node.opdef.view:
        return None
    if policy.admits is not None and not policy.admits(node):
        return None
    if node.type in policy.reductions:  # only a reduction of everything to a number
        x = node.inputs[0]
        axis = node.attrs["axis"]
        if node.attrs.get("keepdims") or not policy.large(x) or not x.dtype.is_floating or \
                (axis is not None and sorted(a % x.shape.ndims for a in axis)
                 != list(range(x.shape.ndims))):
            return None
        return x.shape.dims
    if not node.opdef.elementwise or len(node.outputs) != 1:
        return None
    out = node.outputs[0]
    if not policy.large(out) or not (out.dtype.is_floating or out.dtype.is_bool
                                     or (policy.integers and out.dtype.is_integer)):
        return None
    for v in node.runtime_inputs():
        if v.dtype.is_string:  # (compared one Python object at a time: nothing to block)
            return None
        if v.shape.dims != out.shape.dims and not (
                v.shape.num_elements() == 1 and policy.scalar_broadcasts
                or policy.broadcasts and _broadcasts_to(v.shape.dims, out.shape.dims)):
            return None  # broadcasting other than of a scalar: not blockwise
    return out.shape.dims


def _read_from_outside(node: Node, joinable: list, group_of: dict, find) -> set[int]:
    """id(Value) of what `node` reads that the groups it joins do not make: arrays its
    group's kernel takes (a value of another group, closed or not, is one too)."""
    return {id(v) for v in node.runtime_inputs()
            if v.producer is None or id(v.producer) not in group_of
            or find(group_of[id(v.producer)]) not in joinable}


def _broadcasts_to(dims, target) -> bool:
    """Does a value of shape `dims` (known) broadcast to `target` without growing it?"""
    if dims is None or len(dims) > len(target) or any(d is None for d in dims):
        return False
    return all(d == t or d == 1 for d, t in zip(dims[::-1], target[::-1]))


def _group_node(members: list[Node], outputs: list[Value], variables: bool) -> Node:
    """The group as one node. Its inputs are what members read from outside, except that a
    scalar broadcast to the group's shape is read as the scalar itself (`scalars` maps the
    broadcast value to it): a block then needs one number, not a slice of a full array. Not
    a variable's read unless `variables` (the plan assigns none): a read is evaluated where
    the group runs, which may be after an assignment that the broadcast came before."""
    inside = {id(v) for m in members for v in m.outputs}
    inputs, seen, scalars = [], set(), {}
    for m in members:
        for v in m.runtime_inputs():
            if id(v) in inside:
                continue
            source = scalar_source(v)
            if not variables and reads_variable(source):
                source = v
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
