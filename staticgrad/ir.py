"""The compiler's IR: what one compiled `Session.run` computes, as values and nodes.

`lower` turns the pruned, specialized graph operations into a `Program`; the rewriting
passes (`passes/`) map a Program to a new Program; the code generator renders the last one.
The user's graph is never changed.

- A `Value` is one tensor: its concrete shape and dtype, and either the node that computes
  it, or a constant (`const`), or nothing (a feed: an argument of the generated function).
- A `Node` is one op application: type, attrs, input and output Values, the nodes that must
  run before it (control dependencies), and `origin`, the graph operation it comes from
  (its name and the user's line go into the generated code's comments and error messages).
- A node may hold regions (`Node.regions`): Programs it runs as sub-programs (an If's
  branches, a While's condition and body), whose feeds are the parameters it hands in each
  time and whose fetches are the results it gets back. A region is closed: its nodes read
  only its feeds, constants and what its own nodes compute, and wait only on its own nodes;
  the node holding it passes in what it needs from outside as inputs (as TF's functional
  If and While do). To the program around it, the node is then a node like any other: its
  liveness, fusion and memory plan need no look inside, and each region is planned alone.
- `walk(program)` lists every node at every depth; `bodies(program)` every node list (the
  program's and each region's). The passes (`passes/rewrite.py`'s `rewrite` for most), the
  verifier (verify.py) and the liveness analysis go through these two.
- Variable state is explicit. A variable read is a node whose value is the variable's value
  (rendered where each reader runs: `V['w']`), and an assignment is a node that writes it.
  Each assignment waits on the previous one of the same variable (a control edge), and a
  read of a variable after an assignment to it is a read node of its own that waits on that
  assignment (`lower`): `written_by(read)` and `previous_write(write)` follow these edges,
  and the verifier (verify.py) checks that every value read from a variable is used while
  it is the variable's current value (after the write it follows, before the next one).
- Values and nodes are never changed once made: a pass that rewrites a node makes a new one.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .dtypes import DType
from .graph import Operation, Tensor
from .ops.attr_types import check_attrs
from .ops.table import NodeCtx, OpDef, check_arity
from .shapes import TensorShape


class Value:
    __slots__ = ("producer", "index", "shape", "dtype", "const", "name", "tensor")

    def __init__(self, shape: TensorShape, dtype: DType, producer=None, index=0, const=None,
                 name="t", tensor=None):
        self.producer = producer   # the Node computing it; None for feeds and constants
        self.index = index
        self.shape = shape
        self.dtype = dtype
        self.const = const         # the value, when known at compile time
        self.name = name           # a name for the generated code (made unique there)
        self.tensor = tensor       # the graph tensor it stands for, if any

    def __repr__(self):
        what = "const" if self.const is not None else ("feed" if self.producer is None
                                                       else self.producer.type)
        return f"<Value {self.name} {self.dtype.name}{self.shape} {what}>"


class Node:
    __slots__ = ("type", "opdef", "attrs", "inputs", "outputs", "controls", "origin", "_ctx",
                 "static_uses", "members")

    def __init__(self, opdef: OpDef, attrs: dict, inputs: tuple, controls: tuple,
                 origin: Operation, ctx: NodeCtx, static_uses=frozenset(), members=()):
        self.type = opdef.type
        self.opdef = opdef
        self.attrs = attrs
        self.inputs = tuple(inputs)
        self.outputs = ()
        self.controls = tuple(controls)
        self.origin = origin            # the graph op it comes from (name, user's line)
        self._ctx = ctx                 # concrete shapes/dtypes/values for its emitter
        self.static_uses = static_uses  # inputs read only for a value/shape known now
        self.members = members          # for a fused group: the nodes it evaluates

    regions: tuple = ()  # the Programs it runs as sub-programs (see RegionNode)

    @property
    def ctx(self) -> NodeCtx:
        """What the op's emitter and kernel see: made from the inputs when first asked."""
        if self._ctx is None:
            ctx = NodeCtx(self.type, self.attrs, [v.shape for v in self.inputs],
                          [v.dtype for v in self.inputs], [v.const for v in self.inputs],
                          self.origin.name if self.origin is not None else "")
            ctx.out_shapes = [v.shape for v in self.outputs]
            ctx.out_dtypes = [v.dtype for v in self.outputs]
            self._ctx = ctx
        return self._ctx

    def with_inputs(self, inputs, controls, take_outputs: bool = False,
                    regions=None) -> Node:
        """A copy reading `inputs` (of the same shapes and dtypes as its own: substitutions
        never change them, so the shape rule need not run again) and waiting on `controls`,
        holding `regions` (by default its own). With `take_outputs` (for an owned program:
        see Program.owned), the copy takes this node's output values, which then point at
        it, instead of making new ones: the nodes that read them need no copies of their
        own, nor do theirs, down a whole chain."""
        inputs = tuple(inputs)
        opdef = self.opdef
        node = Node(opdef, self.attrs, inputs, controls, self.origin, None,
                    static_input_uses(opdef, inputs)
                    if opdef.static_inputs or opdef.shape_inputs else _NONE, self.members) \
            if regions is None and not self.regions else \
            RegionNode(opdef, self.attrs, inputs, controls, self.origin, None,
                       static_input_uses(opdef, inputs), self.members,
                       regions=self.regions if regions is None else regions)
        if take_outputs:
            node.outputs = self.outputs
            for v in self.outputs:
                v.producer = node
        else:
            node.outputs = tuple([Value(v.shape, v.dtype, node, v.index, None, v.name,
                                        v.tensor) for v in self.outputs])
        return node

    def runtime_inputs(self):
        """The inputs whose values are read when the node runs."""
        if not self.static_uses:
            return self.inputs
        return [v for i, v in enumerate(self.inputs) if i not in self.static_uses]

    def __repr__(self):
        return f"<Node {self.type} {self.origin.name if self.origin else ''}>"


class RegionNode(Node):
    """A node holding regions: a Node but for this one slot. (`Node.regions` is a class
    attribute, (), so that the nodes that hold none, all of them but a few, take no memory
    for it: a slot more would make each node 16 bytes larger, 4 MB for the 250,000 nodes of
    the 100,000-op chain.) `make_node(..., regions=...)` and `Node.with_inputs` make these."""

    __slots__ = ("regions",)

    def __init__(self, *args, regions=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.regions = tuple(regions)


@dataclasses.dataclass
class Program:
    """A list of nodes in the order they run, what it is fed and what it hands back; the
    whole computation of a run, or a region of a node (its feeds then are the region's
    parameters, its fetches the region's results: Values only)."""

    nodes: list[Node]
    feeds: list[Value]
    fetches: list  # Values; Nodes or None for fetched operations (which return None)
    # plan data by the name of the pass or analysis that made it: "liveness"
    # (passes/liveness.py), a backend's ("memory", "scalars" of the NumPy backend). It
    # describes this program's nodes: a pass that changes them makes a Program with a new,
    # empty plan, so that no plan outlives the nodes it was made for
    plan: dict = dataclasses.field(default_factory=dict)
    # its nodes may be changed in place by the pass that replaces it: the program is
    # compile_plan's, and nothing else sees it (passes given a program of their own caller,
    # as in the tests, leave it as it was)
    owned: bool = False
    # does some node hold regions? (the walkers' fast path: when not, `walk` is the node list
    # itself.) Found from the nodes when not given; a pass that knows passes it on, and the
    # verifier checks that no region is missed
    nested: bool | None = None

    def __post_init__(self):
        if self.nested is None:
            self.nested = any([n.regions for n in self.nodes])


def walk(program: Program) -> list[Node]:
    """Every node of `program` and of the regions its nodes hold, at any depth, in order: a
    node, then its regions' nodes (region by region, each walked the same way), then the
    nodes after it. When no node holds a region, the program's own list (not a copy)."""
    if not program.nested:
        return program.nodes
    found: list[Node] = []
    _walk_into(program.nodes, found)
    return found


def _walk_into(nodes: list[Node], found: list[Node]) -> None:
    for node in nodes:
        found.append(node)
        for region in node.regions:
            _walk_into(region.nodes, found)


def bodies(program: Program) -> list[Program]:
    """`program` and every region of its nodes, at any depth (outermost first): each one a
    scope of its own, for the analyses that go by position (liveness, the verifier)."""
    if not program.nested:
        return [program]
    found = [program]
    for node in program.nodes:
        for region in node.regions:
            found += bodies(region)
    return found


def variable_of(node: Node) -> str | None:
    """The variable that `node` reads (a variable read) or assigns (Assign, AssignAdd...)."""
    return node.origin.name if node.opdef.reads_state else assigned_by(node)


def assigned_by(node: Node) -> str | None:
    """The variable that `node` assigns, if it is an assignment."""
    if node.opdef.stateful and not node.opdef.reads_state and isinstance(node.attrs, dict):
        return node.attrs.get("var")
    return None


def written_by(read: Node) -> Node | None:
    """The assignment whose value the variable read `read` sees (its ordering edge), or None:
    the value the variable had when the program (or the region) began."""
    return _write_of(read.controls, read.origin.name)


def previous_write(write: Node) -> Node | None:
    """The assignment of the same variable that the assignment `write` comes after, if any."""
    return _write_of(write.controls, write.attrs["var"])


def _write_of(controls: tuple, var: str) -> Node | None:
    for c in controls:
        if _writes(c, var):
            return c
    return None


def _writes(node: Node, var: str) -> bool:
    return assigned_by(node) == var


def has_effects(node: Node) -> bool:
    """Does running the node change state or draw random numbers (so that it must run even
    when nothing reads its outputs)? Its op's `stateful`, or that of a node in its regions."""
    return node.opdef.stateful or any([has_effects(n) for r in node.regions for n in r.nodes])


def make_node(opdef: OpDef, attrs: dict, inputs, origin, controls=(), static_uses=None,
              names=None, regions=()) -> Node:
    """A new node: its output shapes and dtypes come from the op's own shape rule, run on the
    inputs' concrete shapes (so a pass cannot make a node its op would not make); with
    `regions`, a node holding those Programs (a RegionNode)."""
    inputs = tuple(inputs)
    check_arity(opdef, len(inputs))  # a pass's node is checked as a user's op is
    if attrs or opdef.attrs:
        attrs = check_attrs(opdef.type, opdef.attrs, attrs)
    ctx = NodeCtx(opdef.type, attrs, [v.shape for v in inputs], [v.dtype for v in inputs],
                  [v.const for v in inputs], origin.name if origin is not None else "")
    outs = opdef.infer(ctx)
    ctx.out_shapes = [s for s, _ in outs]
    ctx.out_dtypes = [d for _, d in outs]
    if static_uses is None:
        static_uses = static_input_uses(opdef, inputs)
    node = Node(opdef, attrs, inputs, controls, origin, ctx, frozenset(static_uses)) \
        if not regions else RegionNode(opdef, attrs, inputs, controls, origin, ctx,
                                       frozenset(static_uses), regions=regions)
    base = names or [origin.name if origin is not None else opdef.type]
    node.outputs = tuple(Value(s, d, node, i, name=base[i] if i < len(base) else
                               f"{base[0]}_{i}")
                         for i, (s, d) in enumerate(outs))
    return node


_NONE = frozenset()


def release(program: Program, keep: Program | None = None) -> None:
    """Break the node <-> value reference cycles (`node.outputs`, `value.producer`) of a
    program that nobody will use again, except for the nodes that `keep` (the program that
    superseded it) still has, so that its nodes are freed as soon as the last reference to
    them goes. The compiler runs with the cycle collector paused: without this, every
    program a pass replaced, and the last one, stayed in memory until the next collection,
    which then had them all to walk (0.5 s for the 100,000-op chain). (The nodes kept are
    a set of the nodes themselves, hashed by identity, not of their ids: no int object per
    node, a seventh of the time for 200,000 nodes.)"""
    kept = set()
    if keep is not None:
        nodes = walk(keep)
        kept = set(nodes)
        for node in nodes:
            if node.members:
                kept.update(node.members)
    for node in walk(program):
        if node not in kept:
            for m in node.members:
                if m not in kept:
                    m.outputs = ()
            node.outputs = ()


def static_input_uses(opdef: OpDef, inputs) -> frozenset[int]:
    """Inputs read only for a value or a shape known at compile time."""
    if not opdef.static_inputs and not opdef.shape_inputs:
        return _NONE  # most ops read all their inputs
    uses = set()
    for i, v in enumerate(inputs):
        if i in opdef.static_inputs and v.const is not None:
            uses.add(i)
        elif i in opdef.shape_inputs and v.shape.is_fully_defined():
            uses.add(i)
    return frozenset(uses)


def constant_value(array: np.ndarray, dtype: DType, name: str = "const", tensor=None) -> Value:
    return Value(TensorShape(np.shape(array)), dtype, const=array, name=name, tensor=tensor)


# -- from the graph ------------------------------------------------------------------------------

def lower(ops: list[Operation], fetches: list, feeds: list[Tensor], spec) -> Program:
    """The Program computing `fetches` from `feeds` with the pruned, specialized `ops`."""
    values: dict[Tensor, Value] = {}
    nodes_of: dict[Operation, Node] = {}
    feed_values = []
    for t in feeds:
        v = Value(spec.shapes[t], t.dtype, name=t.op.name if t.value_index == 0 else t.name,
                  tensor=t)
        values[t] = v
        feed_values.append(v)

    shapes, static, ctxs = spec.shapes, spec.values, spec.ctxs
    last_write: dict[str, Node] = {}          # variable -> its last assignment so far
    stale: dict[Tensor, tuple] = {}           # variable -> (a read node, the write since)

    def value_of(t: Tensor, shape_only: bool = False) -> Value:
        v = values.get(t)
        if v is None and stale and t in stale:  # read after an assignment: a node of its own
            read, write = stale.pop(t)
            again = Node(read.opdef, read.attrs, (), (write,), read.origin, None)
            out = read.outputs[0]
            again.outputs = (Value(out.shape, out.dtype, again, 0, None, out.name, t),)
            nodes.append(again)
            v = values[t] = again.outputs[0]
        if v is None:  # computed before the session ran: a constant
            const = static.get(t) if t in shapes else t._static
            if const is not None:
                array = np.asarray(const, dtype=t.dtype.np)
                shape = t._shape if t._shape.dims == array.shape else TensorShape(array.shape)
                v = Value(shape, t.dtype, const=array, name=_name(t), tensor=t)
            elif shape_only:  # read only for its shape, which is known: never computed
                v = Value(shapes.get(t, t._shape), t.dtype, name=_name(t), tensor=t)
            else:
                raise AssertionError(f"tensor {t.name} is used before it is computed")
            values[t] = v
        return v

    # (the loop runs once per graph op: list comprehensions, not generators; one output, the
    # common case, without a loop)
    nodes = []
    nested = False  # does a node hold regions
    # a value folded to a constant whose op waited on others (control dependencies), itself
    # or through its inputs -> the nodes it waited on: each node reading it waits on them
    waits: dict[Tensor, tuple] = {}

    def fold(op: Operation) -> None:  # (op's outputs are constants: keep what it waited on)
        wait = [nodes_of[c] for c in op.control_inputs if c in nodes_of]
        if waits:
            wait += [n for t in op.inputs for n in waits.get(t, ())]
        if wait:
            for t in op.outputs:
                waits[t] = tuple(dict.fromkeys(wait))

    for op in ops:
        opdef, outputs = op.opdef, op.outputs
        if not opdef.computes and outputs:
            if op.control_inputs:
                fold(op)
            continue  # feeds and constants: Values, not nodes (a NoOp, with none, stays)
        if len(outputs) == 1:
            out = outputs[0]
            if out in values:
                continue  # fed
            if not opdef.stateful and (static.get(out) if out in shapes else out._static) \
                    is not None:
                if op.control_inputs or waits:
                    fold(op)
                continue  # folded when specialized: a constant
        elif outputs and all([t in values for t in outputs]):
            continue  # every output fed
        elif not opdef.stateful and outputs and all([_is_static(t, spec) for t in outputs]):
            if op.control_inputs or waits:
                fold(op)
            continue  # folded when specialized: its outputs are constants
        if opdef.shape_inputs:
            inputs = tuple([value_of(t, i in opdef.shape_inputs)
                            for i, t in enumerate(op.inputs)])
        else:
            inputs = tuple([values[t] if t in values else value_of(t) for t in op.inputs])
        controls = tuple([nodes_of[c] for c in op.control_inputs if c in nodes_of]) \
            if op.control_inputs else ()
        if waits:
            waited = [n for t in op.inputs for n in waits.get(t, ())]
            if waited:
                controls = tuple(dict.fromkeys([*controls, *waited]))
        uses = static_input_uses(opdef, inputs) \
            if opdef.static_inputs or opdef.shape_inputs else _NONE
        if opdef.region_attrs:  # its sub-graphs (If's branches), lowered as its regions
            regions = [lower(sub_ops, list(op.attrs[attr].outputs),
                             list(op.attrs[attr].inputs), sub_spec)
                       for attr, (sub_ops, sub_spec) in zip(opdef.region_attrs,
                                                            spec.regions[op])]
            node = RegionNode(opdef, op.attrs, inputs, controls, op, ctxs.get(op), uses,
                              regions=regions)
            nested = True
        else:
            node = Node(opdef, op.attrs, inputs, controls, op, ctxs.get(op), uses)
        if len(outputs) == 1:
            out = outputs[0]
            v = Value(shapes.get(out, out._shape) if shapes else out._shape, out.dtype, node, 0,
                      None, op.name, out)
            node.outputs = (v,)
            values[out] = v
        else:
            node.outputs = tuple([Value(shapes.get(t, t._shape), t.dtype, node, i,
                                        name=_name(t), tensor=t)
                                  for i, t in enumerate(outputs)])
            for t, v in zip(outputs, node.outputs):
                values.setdefault(t, v)
        nodes_of[op] = node
        nodes.append(node)
        if opdef.stateful and "var" in op.attrs:  # an assignment (ref, value)
            _order_write(node, op.inputs[0], last_write, values, stale)
    fetch_items = [nodes_of.get(f) if isinstance(f, Operation) else value_of(f)
                   for f in fetches]
    return Program(nodes, feed_values, fetch_items, nested=nested)


def _order_write(node: Node, ref: Tensor, last_write: dict, values: dict, stale: dict) -> None:
    """Order the assignment `node` after the last one of its variable, and make the next read
    of the variable (`ref`) a read node of its own, after it (see `value_of` in `lower`)."""
    var = node.attrs["var"]
    before = last_write.get(var)
    if before is not None:  # its one edge to a write of the variable: the one just before
        node.controls = (*[c for c in node.controls if not _writes(c, var)], before)
    last_write[var] = node
    read = values.get(ref)
    if read is not None and read.producer is not None and read.producer.opdef.reads_state:
        del values[ref]  # (a fed variable stays fed)
        stale[ref] = (read.producer, node)


def _name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else t.name


def _is_static(t, spec) -> bool:
    return (spec.values.get(t) if t in spec.shapes else t._static) is not None
