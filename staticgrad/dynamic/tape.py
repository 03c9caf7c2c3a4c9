"""The tape: one `Node` per op recorded while a computation runs (PyTorch's `grad_fn`s).

A node is what the op's gradient rule needs, shaped like a graph `Operation` (`type`,
`opdef`, `inputs`, `outputs`, `attrs`, `where()`), so the registry's rules run on it unchanged;
and where the gradients go: `next_functions`, one `(node, output index)` per input, with an
`AccumulateGrad` for a leaf that requires grad and `(None, 0)` for an input that does not.

A node keeps the inputs and outputs that its op's rule reads (`OpDef.saves`, as PyTorch's
nodes keep what their backward formula reads) and only the shape and dtype of the others,
which the rule sees as stand-ins (`stand_in`: zero-stride arrays of NaN). It refers to its
kept outputs weakly (they refer to it as their `grad_fn`) and keeps their values, re-wrapping
one when the tensor is gone but the rule asks for it. A backward without retain_graph frees
what each node it runs kept; running such a node again raises PyTorch's error, naming the
op (and, in anomaly mode, the user's line that recorded it: `mode.ANOMALY`). A node that kept
nothing can run again.

Nodes are instances of a class per kind, named as PyTorch names them (`MulBackward0`,
`SumBackward1`, `AccumulateGrad`), so `type(y.grad_fn).__name__` reads as it does there.
"""

from __future__ import annotations

import functools
import itertools
import weakref

import numpy as np

from ..errors import format_location, user_location
from ..shapes import TensorShape
from .mode import ANOMALY, EAGER
from .tensor import NO_NODE, Tensor, make_tensor

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")

# Registry op types whose PyTorch node is named differently (PyTorch's name without
# "Backward0"); the others are named after the op type: MulBackward0, ExpBackward0...
TORCH_NAMES = {
    "RealDiv": "Div", "MatMul": "Mm", "Reshape": "View", "ExpandDims": "Unsqueeze",
    "Transpose": "Permute", "BroadcastTo": "Expand", "ConcatV2": "Cat", "Pack": "Stack",
    "Unpack": "Unbind", "StridedSlice": "Slice", "GatherV2": "IndexSelect", "Select": "Where",
    "Cast": "ToCopy", "Square": "Pow", "Identity": "Alias", "FloorMod": "Remainder",
    "SoftmaxCrossEntropyWithLogits": "SoftmaxCrossEntropy",
    "SparseSoftmaxCrossEntropyWithLogits": "NllLoss", "Split": "SplitWithSizes",
    "AddN": "Add", "Rsqrt": "Rsqrt", "LogSoftmax": "LogSoftmax",
}

_SEQUENCE = itertools.count()  # Node.seq: creation order
_READS = itertools.count()     # numbers of _SEQUENCE that nodes_created() took
_CLASSES: dict[str, type] = {}


def nodes_created() -> int:
    """How many tape nodes this process has recorded so far: the difference across some code
    is the number of nodes that code recorded (`dy.tape_nodes_created()`).

    >>> before = nodes_created(); y = (w * x).sum(); nodes_created() - before   # doctest: +SKIP
    2
    """
    # each read takes one number from the sequence: node numbers stay in creation order
    return next(_SEQUENCE) - next(_READS)


def node_class(name: str) -> type:
    """The Node subclass called `name` (made once)."""
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = type(name, (Node,), {"__slots__": (), "__module__": __name__})
    return cls


def backward_name(op_type: str, attrs: dict) -> str:
    if "function" in attrs:  # a custom dy.autograd.Function
        return attrs["function"] + "Backward"
    return TORCH_NAMES.get(op_type, op_type) + "Backward0"


def rename(t: Tensor, name: str) -> Tensor:
    """Give the node that computed t PyTorch's name for it (e.g. RsubBackward1), if any."""
    if t.op is not NO_NODE:
        t.op.__class__ = node_class(name)
    return t


class AccumulateGrad:
    """The end of a path through the tape: adds the gradient into a leaf's `.grad`."""

    __slots__ = ("variable", "__weakref__")
    next_functions = ()

    def __init__(self, variable: Tensor):
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {id(self):#x}>"


def accumulator(leaf: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad: one per leaf while some graph uses it (the leaf refers to it
    weakly, the graph strongly)."""
    acc = leaf._acc() if leaf._acc is not None else None
    if acc is None:
        acc = AccumulateGrad(leaf)
        leaf._acc = weakref.ref(acc)
    return acc


_NO_EDGE = (None, 0)


class Node:
    """One recorded op (see the module docstring)."""

    # what every node has; the rest (a custom Function's ctx, hooks, retain_grad's tensors,
    # the inputs as rules see them) is rare or made late, so it lives in __dict__ when set
    # and reads as the class's None until then: a node is made at every op recorded
    __slots__ = ("opdef", "attrs", "next_functions", "seq", "_in", "_out", "_checks",
                 "_recorded_at", "_inputs", "__dict__", "__weakref__")
    graph = EAGER
    _ctx = None       # a custom Function's ctx (freed with the node)
    _hooks = None     # output index -> {handle id: hook}
    _retained = None  # output index -> weakref to the tensor that called retain_grad

    # Made by `record`, through the builder of the node's kind (see `_builder`), which
    # fills: opdef, attrs; seq (creation order: a topological order of the tape);
    # next_functions; _in (per input: the tensor if the rule reads it, else (shape, dtype));
    # _out (per output: [weakref, value, dtype, version counter] if read, else (shape,
    # dtype)); _checks ((version counter, its value then, slot) per value kept; None once
    # freed); _recorded_at (the user's line in anomaly mode, for errors naming the node);
    # _inputs (None: the inputs as rules see them, made when first asked for).

    @property
    def type(self) -> str:
        """The op type."""
        return self.opdef.type

    @property
    def n_outputs(self) -> int:
        return len(self._out)

    # -- what gradient rules read -----------------------------------------------------------
    @property
    def inputs(self) -> tuple:
        """The op's inputs: those its rule reads, and stand-ins of the others' shape and dtype
        (whose values are NaN: `stand_in`)."""
        if self._inputs is None:
            if self._checks is None:
                raise self.freed_error()
            self._inputs = tuple([x if type(x) is not tuple else stand_in(*x) for x in self._in])
        return self._inputs

    @property
    def outputs(self) -> tuple:
        """The op's outputs: those its rule reads (the tensors, or re-wrapped from the kept
        values if they are gone), and stand-ins of the others."""
        if self._checks is None:
            raise self.freed_error()
        outs = []
        for i, kept in enumerate(self._out):
            if type(kept) is tuple:
                outs.append(stand_in(*kept))
                continue
            t = kept[0]()
            if t is None:
                t = Tensor._make(kept[1], kept[2], kept[3])
                if t.dtype.is_floating:
                    t.op, t.value_index, t._requires_grad = self, i, True
                kept[0] = weakref.ref(t)
            outs.append(t)
        return tuple(outs)

    @property
    def wanted(self) -> list:
        """Which inputs need a gradient (the others lead nowhere)."""
        wanted = [fn is not None for fn, _ in self.next_functions]
        if len(wanted) < len(self._in):  # (a custom Function's node: see Function.apply)
            wanted += [False] * (len(self._in) - len(wanted))
        return wanted

    def where(self) -> str:
        return f"{self.type} op ({self.name()}) of the dynamic graph"

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"

    # -- hooks of output tensors ---------------------------------------------------------------
    def hooks_for(self, index: int) -> dict:
        if self._hooks is None:
            self._hooks = {}
        return self._hooks.setdefault(index, {})

    def retain(self, index: int, ref) -> None:
        if self._retained is None:
            self._retained = {}
        self._retained[index] = ref

    # -- backward's bookkeeping ---------------------------------------------------------------
    def check_saved(self) -> None:
        """Raise if backward cannot run this node: what its rule reads was freed by an earlier
        backward, or overwritten in place since."""
        if self._checks is None:
            raise self.freed_error()
        for box, version, i in self._checks:
            if box[0] != version:
                n_in = len(self._in)
                what = f"input {i}" if i < n_in else f"output {i - n_in}"
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: {what} of {self.name()} is at version {box[0]}; "
                    f"expected version {version} instead. Hint: the in-place update (x += ..., "
                    "x.zero_(), x[i] = ...) happened after the op used x; update a copy instead, "
                    "or do it after backward().")

    def freed_error(self) -> RuntimeError:
        return RuntimeError(f"{FREED_MESSAGE} ({self.name()}: the {self.type} op{self.made()})")

    def made(self) -> str:
        """Where the node was recorded, for an error's message: the user's line in anomaly
        mode, else how to have it."""
        if self._recorded_at is None:
            return "; run the forward pass under dy.autograd.detect_anomaly() to have this " \
                   "error name the line that recorded it"
        return f" recorded at {format_location(self._recorded_at)}"

    def release(self) -> None:
        """Free what the rule reads (a backward without retain_graph ran it): running it again
        is then an error. A node that keeps nothing stays as it is, as PyTorch's does."""
        if self._ctx is not None:
            self._ctx.free(self.freed_error())
        if not self._checks:
            return
        self._in = [None] * len(self._in)  # (only their number is read once freed)
        self._out = [None] * len(self._out)
        self._inputs = None
        self._checks = None
        self.attrs = None


_POISON: dict = {}  # NumPy dtype -> the one value of its stand-ins
# (shape, NumPy dtype) -> a stand-in array (read-only, so shared), emptied when it holds
# STAND_INS_KEPT: a loop over ever new shapes makes one per shape
_STAND_INS: dict = {}
STAND_INS_KEPT = 1024


def stand_in(shape: tuple, dtype) -> Tensor:
    """A tensor of `shape` and `dtype` that holds no memory, in place of a value the node does
    not keep: what a rule may read of it is its shape and dtype (tests/dynamic/test_saved.py
    checks that no rule reads more)."""
    t = make_tensor(stand_in_array(shape, dtype.np), dtype, [0])
    t._tshape = _SHAPES.get(shape) or _SHAPES.setdefault(shape, TensorShape(shape))
    return t


_SHAPES: dict = {}  # dims -> its TensorShape, for stand-ins (bounded with _STAND_INS)


def stand_in_array(shape: tuple, np_dtype) -> np.ndarray:
    """A read-only array of `shape` whose elements all share one item: NaN for floats, the
    least value for integers, True for bools, so that a value read by mistake shows."""
    made = _STAND_INS.get((shape, np_dtype))
    if made is not None:
        return made
    poison = _POISON.get(np_dtype)
    if poison is None:
        kind = np.dtype(np_dtype).kind
        value = np.nan if kind in "fc" else True if kind == "b" else np.iinfo(np_dtype).min \
            if kind in "iu" else 0
        poison = _POISON[np_dtype] = np.array(value, dtype=np_dtype)
    if len(_STAND_INS) >= STAND_INS_KEPT:
        _STAND_INS.clear()
        _SHAPES.clear()
    made = _STAND_INS[(shape, np_dtype)] = np.broadcast_to(poison, shape)
    return made


_ALL = (True,)


def _plan(opdef, attrs, n_in: int, n_out: int) -> tuple:
    """(keep input i?, keep output j?) for a node of `opdef`: what its rule reads (`saves`);
    everything for a rule that declares nothing or that gradient_override_map replaced."""
    key = (opdef.type, n_in, n_out)
    plan = _PLANS.get(key)
    if plan is None:
        saves = opdef.saves
        if saves is None:
            plan = (_ALL * n_in, _ALL * n_out)
        else:
            plan = (tuple(f"x{i}" in saves or "x*" in saves for i in range(n_in)),
                    tuple(f"y{j}" in saves or "y*" in saves for j in range(n_out)))
        if len(_PLANS) >= BUILDERS_KEPT:
            _PLANS.clear()
        _PLANS[key] = plan
    if attrs and "_gradient_op_type" in attrs:
        return (_ALL * n_in, _ALL * n_out)
    return plan


_PLANS: dict[tuple, tuple] = {}
# (op type, number of inputs, of outputs) -> (node class, builder), for ops with neither a
# custom Function's name nor a gradient override
_KINDS: dict[tuple, tuple] = {}


def record(op_type, opdef, inputs, attrs, outputs) -> Node:
    """Add a node for an op that just ran; its floating outputs now require grad."""
    if attrs and ("function" in attrs or "_gradient_op_type" in attrs):
        cls = node_class(backward_name(op_type, attrs))
        build = _builder(*_plan(opdef, attrs, len(inputs), len(outputs)))
    else:  # the common case, looked up once per op type and arity
        key = (op_type, len(inputs), len(outputs))
        kind = _KINDS.get(key)
        if kind is None:
            if len(_KINDS) >= BUILDERS_KEPT:  # (variadic ops: one per arity)
                _KINDS.clear()
            kind = _KINDS[key] = (node_class(backward_name(op_type, attrs)),
                                  _builder(*_plan(opdef, attrs, key[1], key[2])))
        cls, build = kind
    return build(cls, opdef, attrs, inputs, outputs)


# -- node builders ------------------------------------------------------------------------------
# Recording a node is the dynamic mode's most frequent work, and loops over an op's inputs and
# outputs cost more than what they do. So the code that builds a node of one kind (its arity,
# and which inputs and outputs its rule reads) is written out once per kind, as PyTorch
# generates a node class per op from derivatives.yaml. Nothing in the text comes from outside
# staticgrad: it is made of numbers of inputs and outputs and which of them are kept.
_BUILDERS: dict[tuple, object] = {}  # (keep_in, keep_out) -> builder
BUILDERS_KEPT = 1024  # emptied beyond (with _KINDS and _PLANS): one per arity of variadic ops
UNROLLED = 8  # at most this many inputs and outputs: a builder written out; more: a loop
_BUILDER_NAMESPACE = {"new": object.__new__, "SEQUENCE": _SEQUENCE, "NO_EDGE": _NO_EDGE,
                      "NO_NODE": NO_NODE, "accumulator": accumulator, "ref": weakref.ref,
                      "user_location": user_location, "ANOMALY": ANOMALY}


def _builder(keep_in: tuple, keep_out: tuple):
    """The function (cls, opdef, attrs, inputs, outputs) -> node for nodes of this kind:
    written out for up to UNROLLED values, else one loop for all arities (a stack of a list
    that grows at each step would otherwise write out ever longer builders)."""
    if len(keep_in) + len(keep_out) > UNROLLED:
        return functools.partial(_build_any, keep_in, keep_out)
    build = _BUILDERS.get((keep_in, keep_out))
    if build is None:
        if len(_BUILDERS) >= BUILDERS_KEPT:
            _BUILDERS.clear()
        namespace = dict(_BUILDER_NAMESPACE)
        exec(builder_source(keep_in, keep_out), namespace)  # noqa: S102 - see above
        build = _BUILDERS[(keep_in, keep_out)] = namespace["build"]
    return build


def builder_source(keep_in: tuple, keep_out: tuple) -> str:
    """The source of the builder for nodes keeping inputs `keep_in` and outputs `keep_out`
    (a bool each), e.g. for Mul, which keeps both inputs:

        def build(cls, opdef, attrs, inputs, outputs):
            x0, x1, = inputs
            y0, = outputs
            node = new(cls)
            ...
            node.next_functions = (NO_EDGE if not x0._requires_grad else ...,
    """
    n_in = len(keep_in)
    xs = [f"x{i}" for i in range(n_in)]
    ys = [f"y{j}" for j in range(len(keep_out))]
    kept = [x for x, keep in zip(xs, keep_in) if keep] + [y for y, keep in zip(ys, keep_out)
                                                           if keep]
    edges = "".join(f"\n        NO_EDGE if not {x}._requires_grad else (accumulator({x}), 0)"
                    f" if {x}.op is NO_NODE else ({x}.op, {x}.value_index)," for x in xs)
    ins = ", ".join(x if keep else f"({x}._data.shape, {x}.dtype)"
                    for x, keep in zip(xs, keep_in))
    outs = ", ".join(f"[ref({y}), {y}._data, {y}.dtype, {y}._version]" if keep else
                     f"({y}._data.shape, {y}.dtype)" for y, keep in zip(ys, keep_out))
    slots = {name: i for i, name in enumerate(xs + ys)}
    checks = ", ".join(f"({v}._version, {v}._version[0], {slots[v]})" for v in kept)
    lines = [
        "def build(cls, opdef, attrs, inputs, outputs):",
        f"    {''.join(x + ', ' for x in xs)}= inputs",
        f"    {''.join(y + ', ' for y in ys)}= outputs",
        "    node = new(cls)",
        "    node.opdef = opdef",
        "    node.attrs = attrs",
        "    node.seq = next(SEQUENCE)",
        f"    node.next_functions = ({edges}\n    )",
        f"    node._in = [{ins}]",
        f"    node._out = [{outs}]",
        f"    node._checks = [{checks}]",
        # in anomaly mode, the user's line (skipping this builder, record, and dispatch's
        # _finish and run)
        "    node._recorded_at = user_location(skip_frames=4) if ANOMALY[0] else None",
        "    node._inputs = None",
    ]
    for j, y in enumerate(ys):  # (after the edges: an in-place op's output is its input)
        lines += [f"    if {y}.dtype.is_floating:",
                  f"        {y}.op, {y}.value_index, {y}._requires_grad = node, {j}, True"]
    return "\n".join(lines + ["    return node", ""])


def _build_any(keep_in: tuple, keep_out: tuple, cls, opdef, attrs, inputs, outputs) -> Node:
    """What a written-out builder does (see builder_source), as loops: for many inputs."""
    node = object.__new__(cls)
    node.opdef, node.attrs, node.seq = opdef, attrs, next(_SEQUENCE)
    node.next_functions = tuple([
        _NO_EDGE if not x._requires_grad else (accumulator(x), 0) if x.op is NO_NODE
        else (x.op, x.value_index) for x in inputs])
    node._in = [x if keep else (x._data.shape, x.dtype) for x, keep in zip(inputs, keep_in)]
    node._out = [[weakref.ref(y), y._data, y.dtype, y._version] if keep else
                 (y._data.shape, y.dtype) for y, keep in zip(outputs, keep_out)]
    kept = [x for x, keep in zip(inputs, keep_in) if keep] + \
        [y for y, keep in zip(outputs, keep_out) if keep]
    slots = [i for i, keep in enumerate(keep_in + keep_out) if keep]
    node._checks = [(t._version, t._version[0], i) for t, i in zip(kept, slots)]
    node._recorded_at = user_location(skip_frames=4) if ANOMALY[0] else None
    node._inputs = None
    for j, y in enumerate(outputs):
        if y.dtype.is_floating:
            y.op, y.value_index, y._requires_grad = node, j, True
    return node
