"""The tape: one `Node` per op recorded while a computation runs (PyTorch's `grad_fn`s).

A node is what the op's gradient rule needs, shaped like a graph `Operation` (`type`,
`opdef`, `inputs`, `outputs`, `attrs`, `where()`), so the registry's rules run on it unchanged;
and where the gradients go: `next_functions`, one `(node, output index)` per input, with an
`AccumulateGrad` for a leaf that requires grad and `(None, 0)` for an input that does not.

A node keeps its inputs and its outputs' values (what a rule may read) until backward frees
it; it refers to its output tensors weakly (they refer to it as their `grad_fn`), and
re-wraps a saved value when an output tensor is gone but a rule asks for it.

Nodes are instances of a class per kind, named as PyTorch names them (`MulBackward0`,
`SumBackward1`, `AccumulateGrad`), so `type(y.grad_fn).__name__` reads as it does there.
"""

from __future__ import annotations

import itertools
import weakref

from .mode import EAGER
from .tensor import NO_NODE, Tensor

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


def _edge(t: Tensor) -> tuple:
    if not t._requires_grad:
        return (None, 0)
    if t.op is NO_NODE:
        return (accumulator(t), 0)
    return (t.op, t.value_index)


class Node:
    """One recorded op (see the module docstring)."""

    __slots__ = ("type", "opdef", "inputs", "attrs", "next_functions", "seq", "_outputs",
                 "_values", "_dtypes", "_boxes", "_versions", "_freed", "_hooks", "_retained",
                 "__weakref__")
    graph = EAGER

    def __init__(self, op_type, opdef, inputs, attrs, outputs):
        self.type = op_type
        self.opdef = opdef
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.next_functions = tuple(_edge(t) for t in self.inputs)
        self.seq = next(_SEQUENCE)  # creation order: a topological order of the tape
        self._outputs = [weakref.ref(t) for t in outputs]
        self._values = [t._data for t in outputs]
        self._dtypes = [t.dtype for t in outputs]
        self._boxes = [t._version for t in self.inputs] + [t._version for t in outputs]
        self._versions = [box[0] for box in self._boxes]
        self._freed = False
        self._hooks = None     # output index -> {handle id: hook}
        self._retained = None  # output index -> weakref to the tensor that called retain_grad

    # -- what gradient rules read -----------------------------------------------------------
    @property
    def outputs(self) -> tuple:
        """The op's output tensors (re-wrapped from the saved values if they are gone)."""
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        outs = []
        for i, ref in enumerate(self._outputs):
            t = ref()
            if t is None:
                t = Tensor._make(self._values[i], self._dtypes[i],
                                 self._boxes[len(self._boxes) - len(self._outputs) + i])
                if t.dtype.is_floating:
                    t.op, t.value_index, t._requires_grad = self, i, True
                self._outputs[i] = weakref.ref(t)
            outs.append(t)
        return tuple(outs)

    @property
    def wanted(self) -> list:
        """Which inputs need a gradient (the others lead nowhere)."""
        wanted = [fn is not None for fn, _ in self.next_functions]
        return wanted + [False] * (len(self.inputs) - len(wanted))

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
        """Raise if backward cannot run this node: freed, or a saved value overwritten."""
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        for i, (box, version) in enumerate(zip(self._boxes, self._versions)):
            if box[0] != version:
                n_in = len(self.inputs)
                what = f"input {i}" if i < n_in else f"output {i - n_in}"
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: {what} of {self.name()} is at version {box[0]}; "
                    f"expected version {version} instead. Hint: the in-place update (x += ..., "
                    "x.zero_(), x[i] = ...) happened after the op used x; update a copy instead, "
                    "or do it after backward().")

    def release(self) -> None:
        """Free what the rule needed (inputs, saved values, attrs): the graph is spent."""
        self.inputs = ()
        self.attrs = None
        self._values = self._outputs = self._boxes = None
        self._freed = True


def record(op_type, opdef, inputs, attrs, outputs) -> Node:
    """Add a node for an op that just ran; its floating outputs now require grad."""
    node = node_class(backward_name(op_type, attrs))(op_type, opdef, inputs, attrs, outputs)
    for i, t in enumerate(outputs):
        if t.dtype.is_floating:
            t.op, t.value_index, t._requires_grad = node, i, True
    return node
