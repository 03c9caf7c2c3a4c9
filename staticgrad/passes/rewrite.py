"""The one walk every rewriting pass uses: visit nodes in order, substituting values.

`rewrite(program, visit)` calls `visit(node)` on each node (its inputs already replaced by
what earlier visits substituted) and builds a new Program from the answers:

- the node itself: keep it;
- a new Node: use it instead (its outputs replace the old node's, index by index);
- a list of Values: drop the node; these values replace its outputs;
- a list of new Nodes: put them in its place, in order; the last one's outputs replace the
  old node's (the others compute what the last one reads);
- a tuple (a list of new Nodes, a list of Values): put the nodes in its place, in order;
  the values (some of what they compute) replace its outputs.

A node's regions (ir.py) are rewritten first, each as a program of its own with the same
`visit`; the node is visited holding the new ones. What a visit remembers from node to node
about values (CSE's table of the computations seen) must not cross a region's border: a
region is closed, it may not read what the program around it computed, nor may the program
read what a region computed. Give such tables as `scoped`: a region starts with them empty,
and they are put back as they were when it ends.

The old Program is left as it was (passes are pure functions).
"""

from __future__ import annotations

from ..ir import Node, Program, Value, assigned_by, walk


def rewrite(program: Program, visit, scoped: tuple = (), region=None) -> Program:
    """The program made of visit's answers (above); `region(program)` makes the new version
    of each region (by default: rewrite(region, visit, scoped))."""
    subst: dict[int, Value] = {}     # id(old value) -> new value
    replaced: dict[int, Node] = {}   # id(old node) -> new node (for control deps, fetches)
    # a node that others wait on, or that is fetched as an op, stays a node: found when a
    # visit first drops one (most passes over most programs drop none)
    kept = None
    nodes = []
    append = nodes.append
    untouched = subst.keys().isdisjoint  # (the loop runs once per node: its tests are inline)
    owned = program.owned  # copies may take the outputs of the nodes they replace
    nested = program.nested
    for original in program.nodes:
        node = original
        if (subst and not untouched(map(id, original.inputs))) or \
                (replaced and original.controls
                 and any([id(c) in replaced for c in original.controls])):
            node = original.with_inputs(tuple([subst.get(id(v), v) for v in original.inputs]),
                                        tuple([replaced.get(id(c), c)
                                               for c in original.controls]), owned)
        if nested and original.regions:
            node = _in_new_regions(node, visit, scoped, region, owned)
        result = visit(node)
        if result is node:  # kept as it is (perhaps with new inputs): most nodes
            append(node)
            if node is not original:
                replaced[id(original)] = node
                if node.outputs is not original.outputs:
                    for a, b in zip(original.outputs, node.outputs):
                        subst[id(a)] = b
            continue
        if isinstance(result, tuple):  # (new nodes, the values replacing its outputs)
            placed, outputs = result
            nodes.extend(placed)
            nested = nested or any([n.regions for n in placed])
            replaced[id(original)] = placed[-1]  # (what waited on it waits on them)
            for a, b in zip(original.outputs, outputs):
                subst[id(a)] = b
            continue
        if isinstance(result, list) and result and isinstance(result[0], Node):
            nodes.extend(result[:-1])
            nested = nested or any([n.regions for n in result])
            result = result[-1]
        if not isinstance(result, Node):
            if kept is None:
                kept = waited_on(program)
            if id(original) in kept:
                result = node
        if isinstance(result, Node):
            nested = nested or bool(result.regions)
            append(result)
            outputs = result.outputs
            if result is not original:
                replaced[id(original)] = result
        else:
            outputs = result
        if outputs is not original.outputs:
            for a, b in zip(original.outputs, outputs):
                subst[id(a)] = b
    fetches = [subst.get(id(f), f) if isinstance(f, Value) else
               replaced.get(id(f), f) if isinstance(f, Node) else f
               for f in program.fetches]
    return Program(nodes, program.feeds, fetches, owned=owned, nested=nested)


def _in_new_regions(node: Node, visit, scoped: tuple, region, owned: bool) -> Node:
    """node holding its regions rewritten (itself if none changed)."""
    new = []
    for old in node.regions:
        saved = [dict(table) for table in scoped]
        for table in scoped:
            table.clear()
        new.append(region(old) if region is not None else rewrite(old, visit, scoped))
        for table, before in zip(scoped, saved):
            table.clear()
            table.update(before)
    if all(_same(a, b) for a, b in zip(node.regions, new)):
        return node
    return node.with_inputs(node.inputs, node.controls, owned, regions=new)


def _same(a: Program, b: Program) -> bool:
    return len(a.nodes) == len(b.nodes) and all(x is y for x, y in zip(a.nodes, b.nodes)) \
        and all(x is y for x, y in zip(a.fetches, b.fetches))


def map_regions(program: Program, change) -> Program:
    """`program` with each region of its nodes replaced by change(region) (a node copied
    where one of its regions changed, the rest as they were): how a pass that works on one
    node list at a time (dce, fuse) treats the regions."""
    if not program.nested:
        return program
    return rewrite(program, _keep, region=change)


def _keep(node: Node) -> Node:
    return node


def waited_on(program: Program) -> set[int]:
    """The ids of the nodes that others wait on (control dependencies) or that are fetched as
    operations: they must stay nodes of their own."""
    ids = {id(c) for n in walk(program) for c in n.controls}
    ids.update(id(f) for f in program.fetches if isinstance(f, Node))
    return ids


def same_type(a: Value, b: Value) -> bool:
    """Can b stand in for a: same dtype and the same (known) shape, and b is not a read of a
    variable (a read happens where it is used: moving it could cross an assignment)?"""
    return (a.dtype is b.dtype and a.shape.dims is not None and a.shape.dims == b.shape.dims
            and not reads_variable(b))


def reads_variable(v: Value) -> bool:
    return v.producer is not None and v.producer.opdef.reads_state


def assigns_variables(program: Program) -> bool:
    """Does the program write a variable (so that reads of it must not move or merge)?"""
    for n in walk(program):  # (a loop: no list of 250,000 answers, and it stops at the first)
        if n.opdef.stateful and assigned_by(n) is not None:
            return True
    return False


def output_kinds(program: Program) -> list[Value]:
    """One output value for each distinct (shape object, dtype) that the program's nodes
    make: enough for a pass to know whether any value is large, or holds one element,
    without testing each of 250,000 values (most share a few shape objects). (Keyed by the
    dtype's id: dtypes are one object each, and a DType hashes in Python.) Made once per
    program, kept in its plan: fuse, scalars and memory each ask, and the first two pass the
    same nodes on (values never change shape or dtype, so the list holds while they stay)."""
    found = program.plan.get("output_kinds")
    if found is None:
        found = program.plan["output_kinds"] = list(_kinds(program).values())
    return found


def stale_output_kinds(program: Program) -> bool:
    """Does the program's plan hold an output_kinds list its nodes no longer make (a pass
    that changed the nodes but kept the plan: dataclasses.replace(program, nodes=...))? The
    verifier asks."""
    found = program.plan.get("output_kinds")
    return found is not None and \
        {(id(v.shape), id(v.dtype)) for v in found} != _kinds(program).keys()


def _kinds(program: Program) -> dict:
    return {(id(v.shape), id(v.dtype)): v for n in walk(program) for v in n.outputs}
