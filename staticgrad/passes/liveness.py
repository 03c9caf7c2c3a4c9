"""Liveness: where each value of a program is read, and after which node it is dead. Plan
data for any backend's buffer planning (the NumPy backend's `del` and `out=`: its
memory.py; a buffer plan for a device), kept as `program.plan["liveness"]`.

    a = exp(x)         a: read by [b], last by b
    b = a * 2.0        b: read by [c, d], last by d        dies_at[b's node] = [a]
    c = sin(b)         c: read by nobody: dead where made  dies_at[c's node] = [c]
    d = b + 1.0        d: fetched, never dies              dies_at[d's node] = [b]

Positions count in one node list: a region (ir.py) is a scope of its own, whose results
live to its end, and a node holding regions reads, in the list around it, only its inputs.
A node reads its runtime inputs (not those read only for a static value or shape); a fused
group reads its inputs, at its own position. Values that the program does not make (feeds,
constants) or does not own (a variable's value, read where it is used) never die here.

    >>> live = liveness(program)  # doctest: +SKIP
    >>> live.dies_at[id(node)]    # doctest: +SKIP
    [<Value a float32(1000,) Exp>]
"""

from __future__ import annotations

import dataclasses

from ..ir import Node, Program, Value, bodies


@dataclasses.dataclass
class Liveness:
    readers: dict    # id(Value) -> the nodes of its scope that read it when they run, in order
    last_use: dict   # id(Value) -> the last of them
    dies_at: dict    # id(Node) -> the values it made or read that are dead after it, in order


def liveness(program: Program) -> Liveness:
    """The liveness of `program` (and of its regions), made once: kept in its plan."""
    found = program.plan.get("liveness")
    if found is None:
        found = program.plan["liveness"] = _analyse(program)
    return found


def _analyse(program: Program) -> Liveness:
    readers: dict[int, list[Node]] = {}
    last_use: dict[int, Node] = {}
    dies_at: dict[int, list[Value]] = {}
    for body in bodies(program):
        for node in body.nodes:
            for v in node.runtime_inputs():
                last_use[id(v)] = node
                readers.setdefault(id(v), []).append(node)
        kept = {id(f) for f in body.fetches if isinstance(f, Value)}
        for node in body.nodes:
            if node.opdef.reads_state:
                continue  # the variable's value: the session's, not the program's
            for v in node.outputs:
                if id(v) not in kept:
                    dies_at.setdefault(id(last_use.get(id(v), node)), []).append(v)
    return Liveness(readers, last_use, dies_at)
