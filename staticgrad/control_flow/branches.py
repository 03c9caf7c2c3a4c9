"""Sub-graphs held by control-flow ops: a cond's branches, a while_loop's condition and body.

A static graph cannot use Python's `if` or `while` on a value it has not computed yet, so
`sg.cond` and `sg.while_loop` call the user's functions once, while the graph is built, each
into a `BranchGraph` of its own: a closed sub-graph. A tensor of an enclosing graph that such
a function reads is *captured*: it becomes a placeholder of the sub-graph (and an input of
the op holding it), so a sub-graph reads nothing but its inputs. A `Branch` is one built
sub-graph, its placeholders and its results: an attribute of the If or While op, which the
compiler lowers into a region of the op's node (ir.py).
"""

from __future__ import annotations

import contextlib
import threading

from ..errors import format_location, user_location
from ..graph import Graph, Operation, Tensor, get_default_graph
from ..ops.attr_types import AttrType, show
from ..ops.conversion import convert_to_tensor
from ..ops.creation import BRANCHES_OPEN, apply, create_operation
from ..shapes import TensorShape
from .tensor_array import TensorArray

_OPENING = threading.Lock()  # (threads may build conds at once: the count stays exact)


class BranchGraph(Graph):
    """The graph of one branch: ops its function builds; a tensor of an enclosing graph it
    reads is captured as a placeholder here (and an input of the If op)."""

    def __init__(self, outer: Graph, label: str, where: str = ""):
        self.outer, self.label, self.where = outer, label, where
        super().__init__()
        self.seed = outer.seed
        self.captures: dict[Tensor, Tensor] = {}  # outer tensor -> its placeholder here
        self._further: dict[Tensor, Tensor] = {}  # a tensor from further out -> the same
        self.outer_controls: list[Operation] = []  # ops around it that its ops wait on
        # the device scopes around the cond reach the ops of its branches, as in TF1, and so
        # does the variable scope (get_variable in an RNN cell's loop body names as outside)
        self._thread.device_stack = list(outer._thread.device_stack)
        self._thread.var_scope = outer._thread.var_scope

    @property
    def variable_home(self) -> Graph:
        """Variables created while the sub-graph is built live in the graph around it all
        (as TF1 creates them outside loops and branches): the sub-graph captures their
        values, read once before the loop or branch runs."""
        return self.outer.variable_home

    @property
    def _devices_used(self) -> bool:
        return self._branch_devices

    @_devices_used.setter
    def _devices_used(self, used: bool) -> None:
        self._branch_devices = used
        if used:  # (a session checks the graph it runs: the one around the cond)
            self.outer._devices_used = True

    def _control_from_outside(self, op: Operation) -> bool:
        """An op of a graph around this one, which an op here waits on: the If op waits on
        it instead (it then runs before the branch, taken or not)."""
        if op.graph is self.outer:
            if op not in self.outer_controls:
                self.outer_controls.append(op)
            return True
        return self.outer._control_from_outside(op)

    def _check_not_finalized(self, what: str) -> None:
        # (`what` names the op being made, which may be one made for the user's, such as the
        # placeholder capturing another input: the user's line says more)
        raise ValueError(f"at {format_location(user_location())}: this uses a tensor made "
                         f"inside {self.label} of the {self.where}, which exists only there; "
                         "return it from the function to use it outside")

    @contextlib.contextmanager
    def as_default(self):
        """The default graph within (ops made from tensors of enclosing graphs come here)."""
        with _OPENING:
            BRANCHES_OPEN[0] += 1
        try:
            with super().as_default() as g:
                yield g
        finally:
            with _OPENING:
                BRANCHES_OPEN[0] -= 1

    def capture(self, t: Tensor) -> Tensor | None:
        """The placeholder standing for `t` here (made once); None if `t` is of no graph
        enclosing this one. A tensor of a graph further out is captured by each graph on
        the way in."""
        found = self.captures.get(t)
        if found is None:
            found = self._further.get(t)
        if found is not None:
            return found
        if t.graph is not self.outer:  # (its capture by the graph around this one is what
            outer_capture = getattr(self.outer, "capture", None)  # this one's If reads)
            if outer_capture is None:
                return None
            inner = outer_capture(t)
            if inner is None:
                return None
            placeholder = self._further[t] = self.capture(inner)
            return placeholder
        with self.as_default(), self.control_dependencies(None), self.device(None):
            placeholder = apply("Placeholder", [], {"dtype": t.dtype, "shape": t.shape},
                                name=f"capture_{t.op.name.replace('/', '_')}", graph=self)[0]
        self.captures[t] = placeholder
        return placeholder


class Branch:
    """One branch of an If op: its graph, the placeholders of the If's inputs (after the
    predicate) and the tensors it gives. `extends`: another Branch whose results this one
    gives first, from the same inputs, before results of its own (a Scan's gradient makes
    such a forward body, which keeps what the gradient reads: scan_grad.py); not written
    into graph files, nor is `kept`."""

    def __init__(self, graph: BranchGraph, inputs: list[Tensor], outputs: list[Tensor]):
        self.graph, self.inputs, self.outputs = graph, tuple(inputs), tuple(outputs)
        self.extends: Branch | None = None
        # a tensor of this branch -> its values over a scan's steps, kept by a loop extending
        # it, for every gradient that reads them (scan_grad.py); not written into graph files
        self.kept: dict[Tensor, Tensor] = {}

    def __repr__(self):
        return f"<sg Branch {self.graph.label} of {len(self.graph.get_operations())} ops>"


def example_branch() -> Branch:
    """A branch of no inputs that gives 0.0 (what tests of every attribute start from)."""
    g = BranchGraph(Graph(), "example")
    with g.as_default():
        return Branch(g, [], [convert_to_tensor(0.0)])


class Region(AttrType):
    """A sub-graph attribute (a Branch): never written into source; a graph file carries it
    as a nested list of ops (graph_io.py), rebuilt as a closed sub-graph when loaded."""

    describe = "a sub-graph built by sg.cond, sg.while_loop or sg.scan"

    def check(self, value):
        if not isinstance(value, Branch):
            raise TypeError(f"must be {self.describe}, got {show(value)}")
        return value

    def example(self):
        return example_branch()


BRANCH = Region()


def copy_branch(branch: Branch, inputs: list[Tensor],
                mapping: dict | None = None) -> list[Tensor]:
    """Build `branch`'s ops again into the default graph, reading `inputs` where the branch
    reads its placeholders; its outputs there. Each copy keeps its op's name and line.
    `mapping`, if given, is filled with each tensor of the branch -> its copy."""
    mapping = {} if mapping is None else mapping
    mapping.update(zip(branch.inputs, inputs))
    ops = [op for op in branch.graph.get_operations()
           if not (op.outputs and all(t in mapping for t in op.outputs))]  # (placeholders)
    _copy(ops, mapping)
    return [mapping[t] for t in branch.outputs]


def copy_ops(graph: Graph, mapping: dict, outputs: list[Tensor]) -> list[Tensor]:
    """Copies, into the default graph, of the ops of `graph` that `outputs` need, reading
    `mapping[t]` (filled in as ops are copied) where they read a tensor `t` it holds; the
    copies of `outputs`. (Every placeholder they need must be in `mapping`.)"""
    needed = needed_ops(graph, outputs, mapping)
    for op in needed:
        if op.type == "Placeholder":
            raise AssertionError(f"copy_ops: the placeholder {op.name} is not mapped")
    _copy([op for op in graph.get_operations() if op in needed], mapping)
    return [mapping[t] for t in outputs]


def needed_ops(graph: Graph, outputs: list[Tensor], given) -> set[Operation]:
    """The ops of `graph` that computing `outputs` runs, when the tensors in `given` are
    known (through inputs and control dependencies)."""
    needed: set[Operation] = set()
    todo = [t.op for t in outputs if t not in given]
    while todo:
        op = todo.pop()
        if op not in needed:
            needed.add(op)
            todo += [t.op for t in op.inputs if t not in given]
            todo += [c for c in op.control_inputs if c.graph is graph]
    return needed


def _copy(ops: list[Operation], mapping: dict) -> None:
    graph = get_default_graph()
    ops_of: dict[Operation, Operation] = {}
    for op in ops:
        controls = [ops_of[c] for c in op.control_inputs if c in ops_of]
        with graph.control_dependencies(None), graph.control_dependencies(controls):
            new = create_operation(graph, op.type, [mapping[t] for t in op.inputs],
                                   dict(op.attrs), op.name)
        new.location = op.location
        ops_of[op] = new
        mapping.update(zip(op.outputs, new.outputs))


def encloses(graph: Graph, other: Graph) -> bool:
    """Is `other` the graph `graph` itself or one around it (of the conds it is a branch of)?"""
    while graph is not None:
        if graph is other:
            return True
        graph = getattr(graph, "outer", None)
    return False


def branch_tensor(value, g: BranchGraph, label: str, where: str) -> Tensor:
    if isinstance(value, Operation):
        raise TypeError(f"{where}: {label} returned the operation {value.name}; a branch must "
                        "return tensors")
    try:
        t = value.flow if isinstance(value, TensorArray) else convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{where}: {label} returned {value!r}, not a tensor: {e}") from None
    if t.graph is not g:  # a tensor of the enclosing graph, returned as it is
        with g.as_default():
            t = apply("Identity", [t], name="Identity")[0]  # (which captures it)
    return t


def check_stateless(g: BranchGraph, label: str, where: str,
                    holder: str = "a cond branch") -> None:
    for op in g.get_operations():  # (an Assert is a check: running it again changes nothing)
        if op.opdef.stateful and op.type not in ("Placeholder", "Assert"):
            raise ValueError(f"{where}: {label} creates {op.where()}, which reads or assigns "
                             f"variables or draws random numbers; {holder} may not (create "
                             "it outside the functions and pass values in)")


def placeholder(dtype, shape, name: str) -> Tensor:
    """A placeholder of the default graph (a sub-graph's input)."""
    return apply("Placeholder", [], {"dtype": dtype, "shape": shape}, name=name)[0]


def leaf_tensor(value, what: str, where: str) -> Tensor:
    """`value` (one leaf of a structure a user gave: loop variables, elems) as a tensor; an
    error naming it (`what`: "loop variable 2") and the call (`where`) otherwise."""
    if isinstance(value, Operation):
        raise TypeError(f"{where}: {what} is the operation {value.name}, not a tensor")
    if isinstance(value, TensorArray):  # (one with no element shape yet: an error saying so)
        return value.flow
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{where}: {what} ({value!r}) is not a tensor: {e}") from None


def check_loop_options(where: str, parallel_iterations, **flags) -> None:
    """TF1's loop options, accepted as TF1 types them: a positive int, and bools."""
    if type(parallel_iterations) is not int or parallel_iterations < 1:
        raise ValueError(f"{where}: parallel_iterations must be a positive int, got "
                         f"{parallel_iterations!r}")
    for label, flag in flags.items():
        if type(flag) is not bool:
            raise TypeError(f"{where}: {label} must be a bool, got {flag!r}")


def signature(tensors) -> str:
    return signature_of([(t.shape, t.dtype) for t in tensors])


def signature_of(pairs) -> str:
    return "(" + ", ".join(f"{d.name}{s}" for s, d in pairs) + ")"


def common_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    """What both shapes are known to be: equal dims kept, the others unknown."""
    if a.dims is None or b.dims is None or len(a.dims) != len(b.dims):
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


def eager_graph(values):
    """The dynamic mode's graph if any of `values` is a dynamic tensor, else None: the
    control-flow functions then run Python's own if and loops, with that graph the default
    one so that Python numbers they meet become dynamic tensors too."""
    for v in values:
        graph = getattr(v, "graph", None)
        if getattr(graph, "eager", False):
            return graph
    return None
