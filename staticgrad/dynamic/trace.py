"""From dynamic to static: `trace` runs a Python function once on dynamic tensors and records
every op it runs into a graph, which then runs (and differentiates, compiles, exports) like
any graph built with the graph API.
"""

from __future__ import annotations

import warnings

from ..graph import Graph
from ..ops.conversion import constant
from ..ops.creation import create_operation
from ..ops.state_ops import placeholder
from ..variables import Variable, variables_initializer
from .mode import STATE
from .tensor import Tensor, TracerWarning


class Tracer:
    """Turns the ops of one run into graph nodes, mapping each dynamic tensor to the graph
    tensor that computes it."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.tensors: dict[int, object] = {}  # id(dynamic tensor) -> graph tensor
        self._alive = []  # the mapped dynamic tensors, kept so that their ids stay theirs
        self.variables: list[Variable] = []
        self.state: set[int] = set()  # ids of the inputs and of the parameters read

    def bind(self, t: Tensor, graph_tensor) -> None:
        self.tensors[id(t)] = graph_tensor
        self._alive.append(t)

    def lookup(self, t: Tensor):
        """The graph tensor for t; a tensor made outside the trace becomes a constant, or a
        variable if it is a parameter (a leaf that requires grad)."""
        found = self.tensors.get(id(t))
        if found is None:
            with self.graph.as_default():
                if t.is_leaf and t.requires_grad:
                    var = Variable(t._data.copy(), name="parameter")
                    self.variables.append(var)
                    found = var._tensor
                    self.state.add(id(t))
                else:
                    found = constant(t._data, dtype=t.dtype)
            self.bind(t, found)
        return found

    def record(self, op_type, inputs, attrs, outputs) -> None:
        """Add the op that just ran to the graph."""
        if op_type == "CustomGradient" and "function" in attrs:
            # a custom Function: its forward ops are in the graph already; its hand-written
            # backward stays behind (gradients of the graph use the ops' own rules)
            results = [self.lookup(t) for t in inputs[-attrs["n_out"]:]]
        else:
            op = create_operation(self.graph, op_type, [self.lookup(t) for t in inputs],
                                  dict(attrs))
            results = op.outputs
        for t, g in zip(outputs, results):
            self.bind(t, g)

    def stop_gradient(self, t: Tensor, result: Tensor) -> None:
        """result is t's value cut from the graph (`detach()`, `.data`): in the graph it is a
        StopGradient of t's node, so that it still follows the inputs."""
        self.bind(result, create_operation(self.graph, "StopGradient", [self.lookup(t)],
                                           {}).outputs[0])

    def written(self, t: Tensor, value: Tensor | None, stacklevel: int = 4) -> None:
        """t was written in place, with the whole of `value` (a tensor), or with something the
        graph cannot follow (`value` None: a write by index, or of a NumPy value)."""
        if id(t) in self.state or (id(t) not in self.tensors and t.is_leaf
                                   and t.requires_grad):
            warnings.warn(TracerWarning(
                "an in-place update of a parameter or an input of the traced function is not "
                "recorded by dy.trace as a write: within one run of the graph later uses read "
                "the new value, but the parameter (a graph variable) or the caller's input is "
                "never updated, so the traced function's state does not advance from one call "
                "to the next; update parameters outside the traced function, or return the new "
                "values"), stacklevel=stacklevel)
            self.state.discard(id(t))
        if value is not None:
            self.bind(t, self.lookup(value))  # later uses read value's node
            return
        warnings.warn(TracerWarning("an in-place write by index or of a NumPy value is not "
                                    "recorded by dy.trace: later uses of the tensor read its "
                                    "value at this point as a constant"),
                      stacklevel=stacklevel)
        self.tensors.pop(id(t), None)


class Traced:
    """A traced function as a static graph.

    - `graph`: the Graph; `inputs`: its placeholders, one per example input;
    - `outputs`: the graph tensors of what the function returned (same nesting);
    - `variables`: graph variables made from the parameters the function read;
    - calling it runs the graph in its own Session (`session`) on NumPy values or tensors,
      returning NumPy arrays.
    """

    def __init__(self, fn, graph, inputs, outputs, variables):
        self.fn = fn
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs
        self.variables = variables
        with graph.as_default():
            self._init = variables_initializer(variables)
        self._session = None
        self._run = None

    @property
    def session(self):
        """The Session that __call__ uses (variables initialized to the traced values)."""
        if self._session is None:
            from ..session import Session
            self._session = Session(graph=self.graph)
            self._session.run(self._init)
            self._run = self._session.make_callable(self.outputs, self.inputs)
        return self._session

    def __call__(self, *args):
        if len(args) != len(self.inputs):
            raise TypeError(f"the traced function takes {len(self.inputs)} inputs, got "
                            f"{len(args)}")
        self.session  # noqa: B018 - opens the session and its callable on first use
        return self._run(*[a.detach().numpy() if isinstance(a, Tensor) else a for a in args])

    def __repr__(self):
        name = getattr(self.fn, "__name__", "function")
        return (f"<Traced {name}: {len(self.graph.get_operations())} graph ops, "
                f"{len(self.inputs)} inputs, {len(self.variables)} variables>")


def trace(fn, *example_inputs) -> Traced:
    """Run `fn(*example_inputs)` once on dynamic tensors, recording each op it runs into a
    static `Graph` with a placeholder per input (of the example's shape and dtype).

    >>> def model(x):                                                   # doctest: +SKIP
    ...     return dy.relu(x @ w + b).sum()
    >>> traced = dy.trace(model, dy.randn(4, 3))                        # doctest: +SKIP
    >>> traced(np.ones((4, 3), np.float32))       # runs in a Session   # doctest: +SKIP
    >>> sg.gradients(traced.outputs, traced.variables)                   # doctest: +SKIP

    What tracing keeps: every op on tensors, with its attributes (axes, shapes, indices) as
    they were in this run, and random ops (dy.rand, dropout) as random ops that draw anew at
    each run. Parameters the function reads (leaf tensors that require grad) become graph
    variables holding their current values; other tensors made outside the function, or
    inside it from data (dy.tensor, dy.zeros), become constants. `detach()` and `.data`
    become StopGradient nodes: the graph still computes them from the inputs.

    What tracing loses -- the graph is one path through the Python code, frozen:
    - Python control flow: an `if` or loop on a tensor's value (`if x.sum() > 0:`, `.item()`)
      took one branch in this run, and the graph holds that branch only (a TracerWarning
      says where a Python value was read from a tensor);
    - Python numbers computed from tensors or shapes become constants, and the placeholders
      have the examples' exact shapes, so the graph takes inputs of those shapes only;
    - values taken out of a tensor (`.item()`, `.numpy()`, `.tolist()`, `np.asarray(t)`,
      `dy.tensor(t)`) are constants in the graph, each with a TracerWarning;
    - hooks, retain_grad and custom Functions' hand-written backward (the graph's gradients
      use the ops' own rules); in-place writes by index, which later reads see as constants;
    - state: an in-place update of a parameter or an input (`p.sub_(lr * g)` under no_grad,
      `p.data = ...`) is seen by later ops of the same run, but the graph never writes it
      back -- the parameter's graph variable keeps its traced value, so calling the traced
      function again does not continue from the updated state (a TracerWarning says so).
      Trace the loss (or the gradients) and update the parameters outside the traced graph.
    """
    if STATE.tracer is not None:
        raise RuntimeError("dy.trace cannot run inside another dy.trace")
    from .creation import tensor
    examples = [x if isinstance(x, Tensor) else tensor(x) for x in example_inputs]
    graph = Graph()
    tracer = Tracer(graph)
    with graph.as_default():
        inputs = [placeholder(x.dtype, x.shape, name=f"input_{i}") for i, x in enumerate(examples)]
    for x, p in zip(examples, inputs):
        tracer.bind(x, p)
        tracer.state.add(id(x))
    STATE.tracer = tracer
    try:
        result = fn(*examples)
    finally:
        STATE.tracer = None
    outputs = _map_outputs(result, tracer)
    return Traced(fn, graph, inputs, outputs, tracer.variables)


def _map_outputs(value, tracer):
    if isinstance(value, Tensor):
        return tracer.lookup(value)
    if isinstance(value, list | tuple):
        return type(value)(_map_outputs(v, tracer) for v in value)
    if isinstance(value, dict):
        return {k: _map_outputs(v, tracer) for k, v in value.items()}
    raise TypeError(f"a traced function must return tensors (or lists, tuples or dicts of "
                    f"them), got {type(value).__name__}")
