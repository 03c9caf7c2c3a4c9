"""Control flow held inside the graph: `cond` (the If op, holding two branches).

A static graph cannot use Python's `if` on a value it has not computed yet: `sg.cond(pred,
true_fn, false_fn)` calls each function once, while the graph is built, to build its branch
as a closed sub-graph (a `BranchGraph`), and adds one If op that runs the taken branch when
the session runs. A tensor of the enclosing graph that a branch reads is *captured*: it
becomes an input of the If op (and a placeholder of the branch), so a branch reads nothing
but its inputs, and the compiler turns each branch into a region of the If node (ir.py)
that the NumPy backend writes as a function called under a Python `if`.

    y = sg.cond(x > 0, lambda: sg.sqrt(x), lambda: -x)

Only the taken branch runs. Ops created outside the branch functions run whatever the
predicate is, as in TF1: `a = sg.log(x); sg.cond(p, lambda: a, lambda: 0.0)` computes `a`
either way (it is an input of the If op); build it inside true_fn to compute it only there.

Gradients flow through the taken branch only: the gradient of an If is an If whose branches
each compute their forward branch again, then its gradient (the forward values a branch
made are not kept for the backward pass: recomputing them keeps each branch closed, at the
cost of running the taken branch twice). Gradients of gradients work the same way.

A branch may not create variables or assign them (TF1 can): create them outside, and
choose between values with cond. Graph files cannot carry an If op yet.
"""

from __future__ import annotations

import collections
import contextlib
import threading

from . import dtypes as _dt
from .autodiff import gradients
from .errors import format_location, user_location
from .graph import Graph, Operation, Tensor, get_default_graph, name_scope
from .ops.array_ops import zeros_like
from .ops.attr_types import InProcess
from .ops.conversion import convert_to_tensor
from .ops.creation import BRANCHES_OPEN, apply, create_operation
from .ops.table import register
from .shapes import TensorShape

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
        # the device scopes around the cond reach the ops of its branches, as in TF1
        self._thread.device_stack = list(outer._thread.device_stack)

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
        raise ValueError(f"{what}: it reads a tensor made inside {self.label} of the "
                         f"{self.where}, which exists only there; return it from the branch "
                         "function to use it outside")

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
    predicate) and the tensors it gives."""

    def __init__(self, graph: BranchGraph, inputs: list[Tensor], outputs: list[Tensor]):
        self.graph, self.inputs, self.outputs = graph, tuple(inputs), tuple(outputs)

    def __repr__(self):
        return f"<sg Branch {self.graph.label} of {len(self.graph.get_operations())} ops>"


def _example_branch() -> Branch:
    """A branch of no inputs that gives 0.0 (what tests of every attribute start from)."""
    g = BranchGraph(Graph(), "example")
    with g.as_default():
        return Branch(g, [], [convert_to_tensor(0.0)])


_BRANCH = InProcess("a branch of a cond (built by sg.cond)", lambda v: isinstance(v, Branch),
                    example=_example_branch())


def _if_infer(ctx):
    _check_predicate(ctx.in_dtypes[0], ctx.in_shapes[0])  # (create_operation adds the op)
    then_b, else_b = ctx.attrs["then_branch"], ctx.attrs["else_branch"]
    for label, b in (("then_branch", then_b), ("else_branch", else_b)):
        given = list(zip(ctx.in_shapes[1:], ctx.in_dtypes[1:]))
        if len(given) != len(b.inputs) or any(
                d is not p.dtype or not s.is_compatible_with(p.shape)
                for (s, d), p in zip(given, b.inputs)):
            raise ValueError(f"its {label} takes {_signature(b.inputs)}, but the inputs after "
                             f"the predicate are {_signature_of(given)}")
    if [t.dtype for t in then_b.outputs] != [t.dtype for t in else_b.outputs]:
        raise TypeError(f"then_branch gives {_signature(then_b.outputs)}, else_branch "
                        f"{_signature(else_b.outputs)}")
    return [(_common_shape(a.shape, b.shape), a.dtype)
            for a, b in zip(then_b.outputs, else_b.outputs)]


def _signature(tensors) -> str:
    return _signature_of([(t.shape, t.dtype) for t in tensors])


def _signature_of(pairs) -> str:
    return "(" + ", ".join(f"{d.name}{s}" for s, d in pairs) + ")"


def _common_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    """What both shapes are known to be: equal dims kept, the others unknown."""
    if a.dims is None or b.dims is None or len(a.dims) != len(b.dims):
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


def _if_grad(op: Operation, *grads):
    """Each branch's gradient, recomputed from the If's inputs (see the module's docstring)."""
    then_b, else_b = op.attrs["then_branch"], op.attrs["else_branch"]
    xs = list(op.inputs[1:])
    wanted = [i for i, x in enumerate(xs) if x.dtype.is_floating]
    outs = [i for i, t in enumerate(op.outputs) if t.dtype.is_floating]
    if not wanted or not outs:
        return [None] * len(op.inputs)
    # a missing output gradient is a zero one (the rule gets None for outputs nobody reads)
    seeds = [grads[i] if grads[i] is not None else zeros_like(op.outputs[i]) for i in outs]
    outer = get_default_graph()
    made = []
    for branch in (then_b, else_b):
        g = BranchGraph(outer, f"the gradient of {branch.graph.label}", branch.graph.where)
        with g.as_default():
            inputs = [g.capture(x) for x in xs]
            copied = copy_branch(branch, inputs)
            dxs = gradients([copied[i] for i in outs], [inputs[i] for i in wanted],
                            grad_ys=[g.capture(s) for s in seeds])
            dxs = [d if d is not None else zeros_like(inputs[i]) for d, i in zip(dxs, wanted)]
        made.append((g, dxs))
    results = _make_if(op.inputs[0], made[0], made[1], "cond_grad")
    full = [None] * len(op.inputs)
    for i, r in zip(wanted, results):
        full[1 + i] = r
    return full


register("If", _if_infer, None, _if_grad, attrs={"then_branch": _BRANCH,
                                                 "else_branch": _BRANCH},
         arity=(1, None), region_attrs=("then_branch", "else_branch"),
         doc="runs its then_branch or its else_branch (regions) on its inputs after the "
             "predicate, by the predicate")


def copy_branch(branch: Branch, inputs: list[Tensor]) -> list[Tensor]:
    """Build `branch`'s ops again into the default graph, reading `inputs` where the branch
    reads its placeholders; its outputs there. Each copy keeps its op's name and line."""
    graph = get_default_graph()
    mapping: dict[Tensor, Tensor] = dict(zip(branch.inputs, inputs))
    ops_of: dict[Operation, Operation] = {}
    for op in branch.graph.get_operations():
        if op.outputs and all(t in mapping for t in op.outputs):
            continue  # a placeholder of an input
        controls = [ops_of[c] for c in op.control_inputs if c in ops_of]
        with graph.control_dependencies(None), graph.control_dependencies(controls):
            new = create_operation(graph, op.type, [mapping[t] for t in op.inputs],
                                   dict(op.attrs), op.name)
        new.location = op.location
        ops_of[op] = new
        for t, u in zip(op.outputs, new.outputs):
            mapping[t] = u
    return [mapping[t] for t in branch.outputs]


def _make_if(pred: Tensor, then_side, else_side, name: str) -> list[Tensor]:
    """The If op choosing between two built branches, each (its BranchGraph, its outputs):
    the inputs are the tensors either branch captured, in one order for both."""
    (then_g, then_out), (else_g, else_out) = then_side, else_side
    captured = list(dict.fromkeys([*then_g.captures, *else_g.captures]))
    branches = []
    for g, outs in ((then_g, then_out), (else_g, else_out)):
        inputs = [g.capture(t) for t in captured]  # (a placeholder even where unused)
        branches.append(Branch(g, inputs, outs))
    waits = list(dict.fromkeys([*then_g.outer_controls, *else_g.outer_controls]))
    graph = get_default_graph()
    with graph.control_dependencies(waits):
        outputs = list(apply("If", [pred, *captured], {"then_branch": branches[0],
                                                       "else_branch": branches[1]}, name=name))
    for g in (then_g, else_g):
        g.finalize()  # built: a tensor made in a branch and used later is refused there
    return outputs


# -- sg.cond ------------------------------------------------------------------------------------
def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """true_fn() if pred else false_fn(), decided when the session runs (TF1's tf.cond).

    Each function is called once, now, to build its branch; both must return the same
    structure (a tensor, or lists, tuples and dicts of tensors) of the same dtypes. Only the
    taken branch runs. A single-element list is returned as its element unless `strict`.

    >>> y = sg.cond(x > 0, lambda: sg.sqrt(x), lambda: -x)   # doctest: +SKIP
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    for label, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if not callable(fn):
            raise TypeError(f"cond: {label} must be callable, got {fn!r} (at "
                            f"{format_location(user_location())})")
    pred = convert_to_tensor(pred)
    where = f"cond at {format_location(user_location())}"
    if pred.graph.eager:  # the dynamic mode: Python's own if, on what graph mode accepts
        _check_predicate(pred.dtype, pred.shape, where)
        out = true_fn() if bool(pred) else false_fn()
        return _unpacked(_pack(out, iter([convert_to_tensor(v) for v in _flatten(out)])),
                         strict)
    outer = get_default_graph()
    if not _encloses(outer, pred.graph):  # (a cond's branch builds its own conds inside)
        outer = pred.graph
    elif pred.graph is not outer:
        pred = outer.capture(pred)
    _check_predicate(pred.dtype, pred.shape, where)
    with outer.as_default(), name_scope(name, "cond") as scope:
        sides = []
        for label, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
            g = BranchGraph(outer, label, where)
            with g.as_default(), g.name_scope(scope):  # (its ops named as TF1's: cond/Sqrt)
                structure = fn()
                leaves = [_branch_tensor(v, g, label, where) for v in _flatten(structure)]
            _check_stateless(g, label, where)
            sides.append((g, leaves, structure))
        (tg, tleaves, tstruct), (fg, fleaves, fstruct) = sides
        if _shape_of(tstruct) != _shape_of(fstruct):
            raise ValueError(f"{where}: true_fn and false_fn must return the same structure; "
                             f"true_fn returned {_describe(tstruct)}, false_fn "
                             f"{_describe(fstruct)}")
        for i, (a, b) in enumerate(zip(tleaves, fleaves)):
            if a.dtype is not b.dtype:
                raise TypeError(f"{where}: output {i} is {a.dtype.name} in true_fn but "
                                f"{b.dtype.name} in false_fn; both branches must give one dtype")
            if not a.shape.is_compatible_with(b.shape):  # (never compiles: see specialize)
                raise ValueError(f"{where}: output {i} has shape {a.shape} in true_fn but "
                                 f"{b.shape} in false_fn; staticgrad compiles concrete shapes, "
                                 "so both branches must give one shape (TF1 allows this)")
        if not tleaves:
            raise ValueError(f"{where}: the branches return no tensors; cond chooses between "
                             "values (create ops that must run outside it)")
        outputs = _make_if(pred, (tg, tleaves), (fg, fleaves), "If")
    return _unpacked(_pack(tstruct, iter(outputs)), strict)


def _encloses(graph: Graph, other: Graph) -> bool:
    """Is `other` the graph `graph` itself or one around it (of the conds it is a branch of)?"""
    while graph is not None:
        if graph is other:
            return True
        graph = getattr(graph, "outer", None)
    return False


def _check_predicate(dtype, shape, where: str = "") -> None:
    """TypeError or ValueError unless the predicate is a bool scalar (`where`: the cond's)."""
    at = f"{where}: " if where else ""
    if dtype is not _dt.bool_:
        raise TypeError(f"{at}the predicate has dtype {dtype.name}; cond needs a bool scalar")
    if shape.ndims is not None and shape.ndims != 0:
        raise ValueError(f"{at}the predicate has shape {shape}; cond needs a scalar")


def _branch_tensor(value, g: BranchGraph, label: str, where: str) -> Tensor:
    if isinstance(value, Operation):
        raise TypeError(f"{where}: {label} returned the operation {value.name}; a branch must "
                        "return tensors")
    try:
        t = convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{where}: {label} returned {value!r}, not a tensor: {e}") from None
    if t.graph is not g:  # a tensor of the enclosing graph, returned as it is
        with g.as_default():
            t = apply("Identity", [t], name="Identity")[0]  # (which captures it)
    return t


def _check_stateless(g: BranchGraph, label: str, where: str) -> None:
    for op in g.get_operations():
        if op.opdef.stateful and op.type != "Placeholder":
            raise ValueError(f"{where}: {label} creates {op.where()}, which reads or assigns "
                             "variables or draws random numbers; a cond branch may not (create "
                             "it outside the branch functions and choose between values)")


def _keys(mapping) -> list:
    """A dict's keys in the order both branches' dicts agree on: sorted (by repr where they
    do not sort, keys of mixed types)."""
    try:
        return sorted(mapping)
    except TypeError:
        return sorted(mapping, key=repr)


def _flatten(structure) -> list:
    if isinstance(structure, dict):
        return [v for k in _keys(structure) for v in _flatten(structure[k])]
    if isinstance(structure, list | tuple):
        return [v for item in structure for v in _flatten(item)]
    return [structure]


def _shape_of(structure):
    """The structure with every leaf made alike: two branches' must be equal."""
    if isinstance(structure, dict):
        return ("dict", tuple((k, _shape_of(structure[k])) for k in _keys(structure)))
    if isinstance(structure, list | tuple):
        return (type(structure).__qualname__, tuple(_shape_of(v) for v in structure))
    return "tensor"


def _describe(structure) -> str:
    if isinstance(structure, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(structure[k])}"
                               for k in _keys(structure)) + "}"
    if isinstance(structure, list):
        return "[" + ", ".join(_describe(v) for v in structure) + "]"
    if isinstance(structure, tuple):
        items = ", ".join(_describe(v) for v in structure)
        if hasattr(structure, "_fields"):
            return f"{type(structure).__qualname__}({items})"
        return f"({items}{',' if len(structure) == 1 else ''})"
    return "a tensor"


def _pack(structure, leaves):
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], leaves) for k in _keys(structure)}
        items = [(k, packed[k]) for k in structure]
        if isinstance(structure, collections.defaultdict):
            return type(structure)(structure.default_factory, items)
        try:
            return type(structure)(items)
        except TypeError:  # a dict subclass that is not made from pairs
            return dict(items)
    if isinstance(structure, list):
        return [_pack(v, leaves) for v in structure]
    if isinstance(structure, tuple):
        items = [_pack(v, leaves) for v in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    return next(leaves)


def _unpacked(out, strict: bool):
    if not strict and isinstance(out, list | tuple) and not hasattr(out, "_fields") \
            and len(out) == 1:
        return out[0]
    return out
