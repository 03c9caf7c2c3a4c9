"""The memory plan: free every intermediate after its last use, and let an elementwise node
write its result into the buffer of an input that dies there (NumPy's `out=`). Which values
die where is the shared liveness analysis (passes/liveness.py); what to do about it is this
backend's policy, kept as `program.plan["memory"]`.

    a = np.exp(x)                      a = np.exp(x)
    b = a * 2.0              ->        b = np.multiply(a, 2.0, out=a)
    return (b,)                        del a
                                       return (b,)

Only buffers of MIN_BYTES or more are planned. A buffer is reused only when that is
invisible: it was made by this program (never a fed array, a variable's value or a
constant), nothing else refers to it (every consumer is an op whose result is a new array,
`OpDef.new_array`: no view, no assignment into a variable, not a fetch), it dies at this
node, and it has the result's exact shape and dtype. Which ops can write into `out=` is
their own out= form (lowering.OUT_FORMS).

A variable's update (AssignAdd, AssignSub: an optimizer's step; ScatterAdd, ScatterSub,
ScatterUpdate: a sparse one, which writes only its rows) writes into the variable's own
array, as `w -= lr * g` does by hand, when no value of this program that may be that array
(an earlier assignment's result or value, a view of a read: a transpose, a reshape...) is
read after the update or fetched: then no value of the run can see the difference.
Between runs nobody else holds a variable's array: the session copies what it is given
(`Variable.load`) and what it hands out (fetches), and an Assign stores a copy unless its
value is a new array that nothing else reads (backends/numpy/render.py). What can see it: a
run on another thread reading the variable meanwhile, which may find it half updated, as in
TF1 (`use_locking=False`). `rt.update_in_place` writes into a new array instead where a
floating-point error could raise: an update that fails leaves the variable as it was.
"""

from __future__ import annotations

import dataclasses

from ...ir import Node, Program, Value, bodies, variable_of, walk
from ...passes.liveness import liveness
from ...passes.rewrite import output_kinds
from .lowering import OUT_FORMS, READS_AFTER_OUT

# Buffers smaller than this are left to NumPy: for them `del` and `out=` cost more than they
# save (a ufunc call with out= takes about a microsecond longer).
MIN_BYTES = 1 << 14


@dataclasses.dataclass
class MemoryPlan:
    free_after: dict   # id(node) -> [values whose last use is that node]
    write_into: dict   # id(node) -> the input Value whose buffer the node's result reuses
    in_place: frozenset = frozenset()  # id(node) of the updates written into the variable


def plan_memory(program: Program) -> Program:
    if not any(_large(v) for v in output_kinds(program)):
        return _with_plan(program, MemoryPlan({}, {}, frozenset()))
    live = liveness(program)
    last_use, consumers = live.last_use, live.readers
    fetched = {id(f) for body in bodies(program) for f in body.fetches if isinstance(f, Value)}
    free_after: dict[int, list[Value]] = {}
    for node, dead in live.dies_at.items():
        dead = [v for v in dead if _large(v)]
        if dead:
            free_after[node] = dead
    write_into: dict[int, Value] = {}
    for node in walk(program):
        # (an op of several results writes its first into out=: ReluGradBiasSum)
        if node.type in OUT_FORMS and node.outputs and not node.members:
            out = node.outputs[0]
            late = [node.inputs[i] for i in READS_AFTER_OUT.get(node.type, ())]
            for v in node.runtime_inputs():
                if _reusable(v, out, node, last_use, consumers, fetched) and \
                        not any(v is x for x in late):
                    write_into[id(node)] = v
                    break
    in_place = frozenset().union(*[updates_in_place(body, last_use, fetched)
                                   for body in bodies(program)])
    return _with_plan(program, MemoryPlan(free_after, write_into, in_place))


def _with_plan(program: Program, memory: MemoryPlan) -> Program:
    return dataclasses.replace(program, plan={**program.plan, "memory": memory})


_UPDATES = ("AssignAdd", "AssignSub", "ScatterAdd", "ScatterSub", "ScatterUpdate")


def updates_in_place(program: Program, last_use: dict, fetched: set,
                     min_bytes: int | None = None) -> frozenset:
    """The updates that may write into their variable's array: no value that may be that
    array (`holders`) is read after the update or fetched. Only those of `min_bytes` or more
    (MIN_BYTES by default: a GPU's backend takes every size)."""
    min_bytes = MIN_BYTES if min_bytes is None else min_bytes
    if not any(n.type in _UPDATES for n in program.nodes):
        return frozenset()
    position = {id(n): i for i, n in enumerate(program.nodes)}
    reads: dict[int, str] = {}             # id(read Value) -> its variable (V['w'] inline)
    aliases: dict[int, set] = {}           # id(Value) -> the variables it may be the array of
    holders: dict[str, list[Value]] = {}   # variable -> values that may be its array now
    chosen = set()
    for node in program.nodes:
        if node.opdef.reads_state:
            reads[id(node.outputs[0])] = variable_of(node)
            continue
        if node.type in ("Assign", *_UPDATES):
            var = node.attrs["var"]
            out = node.outputs[0]
            if node.type == "Assign":  # V[var] is now the value itself, or a copy of it
                holders[var] = [out, node.inputs[1]]
                aliases[id(node.inputs[1])] = {var}
            elif _large(out, min_bytes) and out.shape.is_fully_defined() and all(
                    id(h) not in fetched and position[id(last_use.get(id(h), h.producer))]
                    <= position[id(node)] for h in holders.get(var, ())):
                chosen.add(id(node))
                holders.setdefault(var, []).append(out)
            else:  # a new array
                holders[var] = [out]
            aliases[id(out)] = {var}
            continue
        if (node.opdef.view or node.regions) and not node.members:
            # may be (part of) an input's array: a view, or what a region gives back (a
            # cond's branch or a loop that returns its input as it came)
            found = set()
            for v in node.runtime_inputs():
                found |= aliases.get(id(v), set())
                if id(v) in reads:
                    found.add(reads[id(v)])
            for out in node.outputs:
                aliases[id(out)] = found
                for var in found:
                    holders.setdefault(var, []).append(out)
    return frozenset(chosen)


def _large(v: Value, min_bytes: int | None = None) -> bool:
    n = v.shape.num_elements()
    return n is not None and n * v.dtype.np.itemsize >= (
        MIN_BYTES if min_bytes is None else min_bytes)


def _reusable(v: Value, out: Value, node: Node, last_use, consumers, fetched) -> bool:
    return (_large(v) and v.producer is not None and v.producer.opdef.new_array
            and id(v) not in fetched and last_use.get(id(v)) is node and v.dtype is out.dtype
            and v.shape.is_fully_defined() and v.shape.ndims > 0  # 0-d results are scalars
            and v.shape.dims == out.shape.dims
            # every reader makes a new array of its own: none keeps a reference to v
            and all(c.opdef.new_array for c in consumers[id(v)]))
