"""From dynamic to static: `trace` runs a Python function (or an `nn.Module`) once on dynamic
tensors and records every op it runs into a graph, which then runs (and differentiates,
compiles, exports) like any graph built with the graph API. A module's parameters and buffers
become graph variables by their `state_dict` names; `Traced.train_step` compiles a training
step (the loss, its gradients and the optimizer's update) into the traced graph's Session.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np

from ..graph import Graph, GraphKeys
from ..ops.conversion import constant
from ..ops.creation import create_operation
from ..ops.math_ops import cast
from ..ops.state_ops import assign, group, placeholder
from ..variables import Variable, variables_initializer
from .mode import STATE
from .nn.module import Module
from .tensor import Tensor, TracerWarning
from .trace_optim import graph_update, write_back


class Tracer:
    """Turns the ops of one run into graph nodes, mapping each dynamic tensor to the graph
    tensor that computes it."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.tensors: dict[int, object] = {}  # id(dynamic tensor) -> graph tensor
        self._alive = []  # the mapped dynamic tensors, kept so that their ids stay theirs
        self.variables: list[Variable] = []
        self.parameters: list[tuple[Tensor, Variable]] = []  # the tensors of `variables`
        self.state: set[int] = set()  # ids of the inputs and of the parameters read
        self.module_state: dict[int, tuple[Tensor, Variable]] = {}  # a module's, by id
        self.module_written: dict[int, None] = {}  # ids of those written, in order
        self.module_initial: dict[int, tuple] = {}  # (array, its values, dtype, shape) before

    def add_module_state(self, module: Module) -> OrderedDict:
        """Make a graph variable of each parameter and buffer of `module`, named by its
        `state_dict` name and holding its current value (trainable if it requires grad), and
        return them by name; the traced ops read these variables, and in-place writes of them
        (BatchNorm's running statistics) become assignments (`updates`)."""
        found = OrderedDict()
        named = module.state_dict(keep_vars=True)  # (a tied tensor: under each of its names)
        named.update((name, t) for name, t in module.named_buffers() if name not in named)
        with self.graph.as_default():
            for name, t in named.items():
                if id(t) in self.module_state:
                    found[name] = self.module_state[id(t)][1]
                    continue
                initial = t._data.copy()
                var = Variable(initial, name=name,
                               trainable=t.requires_grad and t.is_floating_point())
                self.module_initial[id(t)] = (t._data, initial, t.dtype)
                found[name] = var
                self.module_state[id(t)] = (t, var)
                if var.trainable:
                    self.variables.append(var)
                    self.parameters.append((t, var))
                self.bind(t, var._tensor)
        return found

    def state_updates(self) -> list:
        """An assignment per module tensor written in place during the run, of the value it
        had at the end of it; made after the run's ops, so that their reads see the old
        value (a graph runs its ops in the order they were made)."""
        updates = []
        with self.graph.as_default():
            for key in self.module_written:
                t, var = self.module_state[key]
                new = self.tensors.get(key)
                if new is None:  # written by index: the value it ended with, as a constant
                    new = constant(t._data, dtype=t.dtype)
                if new.dtype != var.dtype:
                    new = cast(new, var.dtype)
                update = assign(var, new, name=f"update_{var.op.name}").op
                self.graph.add_to_collection(GraphKeys.UPDATE_OPS, update)
                updates.append(update)
        return updates

    def restore_module_state(self) -> None:
        """Put back the module tensors that the run wrote, as they were before it: tracing
        leaves the module where the graph's variables start."""
        for key in self.module_written:
            t, _ = self.module_state[key]
            array, initial, t.dtype = self.module_initial[key]
            np.copyto(array, initial)  # in place: tensors sharing the array see it too
            t._data = array  # (`t.data = ...` gave it another array: the module's comes back)
            t._tshape = None
            t._version[0] += 1

    def bind(self, t: Tensor, graph_tensor) -> None:
        self.tensors[id(t)] = graph_tensor
        self._alive.append(t)

    def lookup(self, t: Tensor):
        """The graph tensor for t; a tensor made outside the trace becomes a constant, or a
        variable if it is a parameter (a leaf that requires grad)."""
        found = self.tensors.get(id(t))
        if found is None:
            with self.graph.as_default():
                if t.is_leaf and t.requires_grad and id(t) not in self.module_state:
                    var = Variable(t._data.copy(), name="parameter")
                    self.variables.append(var)
                    self.parameters.append((t, var))
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
        if id(t) in self.module_state:
            self.module_written[id(t)] = None  # assigned its final value after the run
        elif id(t) in self.state or (id(t) not in self.tensors and t.is_leaf
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
    """A traced function (or module) as a static graph.

    - `graph`: the Graph; `inputs`: its placeholders, one per example input;
    - `outputs`: the graph tensors of what the function returned (same nesting);
    - `variables`: the trainable graph variables: the module's parameters that require grad,
      and the parameters (leaf tensors that require grad) the function read outside it;
    - `state`: the module's parameters and buffers as graph variables, by `state_dict` name
      (empty when no module was traced); `updates`: the assignments that advance its buffers
      (BatchNorm's running statistics), also in the graph's UPDATE_OPS collection;
    - calling it runs the graph (outputs and updates) in its own Session (`session`) on NumPy
      values or tensors, returning NumPy arrays.

    The variables start from the values the tensors had when traced, and from then on live in
    `session`: the module and the graph no longer share memory. `state_dict()` reads them back
    (`model.load_state_dict(traced.state_dict())` puts trained values into the module), and
    `load_state_dict(model.state_dict())` puts the module's values into the session.
    """

    def __init__(self, fn, graph, inputs, outputs, variables, module=None, state=None,
                 updates=(), parameters=()):
        self.fn = fn
        self.module = module
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs
        self.variables = variables
        self.state = OrderedDict() if state is None else state
        self.updates = list(updates)
        self._parameters = list(parameters)  # (dynamic tensor, its Variable), to map optimizers
        self._persistent = set() if module is None else set(module.state_dict())
        with graph.as_default():
            self._init = variables_initializer(variables + [v for v in self.state.values()
                                                            if v not in variables])
        self._session = None
        self._run = None

    @property
    def session(self):
        """The Session that __call__ and train_step use (variables initialized to the traced
        values)."""
        if self._session is None:
            from ..session import Session
            self._session = Session(graph=self.graph)
            self._session.run(self._init)
            self._run = self._session.make_callable((self.outputs, self.updates), self.inputs)
        return self._session

    def __call__(self, *args):
        self._check_arity(args)
        self.session  # noqa: B018 - opens the session and its callable on first use
        return self._run(*_arrays(args))[0]

    def _check_arity(self, args) -> None:
        if len(args) != len(self.inputs):
            raise TypeError(f"the traced function takes {len(self.inputs)} inputs, got "
                            f"{len(args)}")

    def state_dict(self) -> OrderedDict:
        """The module's parameters and persistent buffers as the session holds them now, by
        their names in the module's `state_dict` (copies, as NumPy arrays).

        >>> model.load_state_dict(traced.state_dict())   # trained in the graph   # doctest: +SKIP
        """
        return OrderedDict((name, self.session.read_variable(var))
                           for name, var in self.state.items() if name in self._persistent)

    def load_state_dict(self, state_dict) -> None:
        """Set the session's variables from `state_dict` (a module's, or `state_dict()`'s):
        every name of `state()` that it holds; an unknown name raises KeyError."""
        unknown = [name for name in state_dict if name not in self.state]
        if unknown:
            raise KeyError(f"the traced graph has no variable for {unknown}")
        for name, value in state_dict.items():
            if isinstance(value, Tensor):
                value = value.detach().numpy()
            self.session.write_variable(self.state[name], value)

    def train_step(self, optimizer, loss=None) -> TrainStep:
        """Compile a training step into `session`: the gradients of `loss` (default: the
        output, a scalar) with respect to `variables`, the optimizer's update of them, and
        `updates`. Returns a `TrainStep`: `step(*inputs)` runs one step and returns the loss.

        `optimizer` is a graph optimizer (`sg.train.AdamOptimizer()`..., TF1's rules) or a
        `dy.optim` one -- SGD (momentum, dampening, nesterov, weight_decay, maximize), Adam
        and AdamW (amsgrad too), RMSprop (momentum, centered) or Adagrad (lr_decay,
        initial_accumulator_value) -- whose own update rule, PyTorch's, is written as graph
        ops with the same arithmetic: N traced steps give the parameters N eager steps give.
        Per parameter group, with the group's hyper-parameters; the lr is read from the
        optimizer's group at each step (a scheduler's changes reach the graph), the others
        are compiled in as they are now (a step raises ValueError if one changes). The state
        the eager optimizer holds (momentum buffers, moments, step counts, after some eager
        steps) is where the graph's starts; `TrainStep.write_back()` puts the graph's state
        back into the optimizer. A dy.optim optimizer with an update of its own (a subclass's
        `_update`) raises NotImplementedError. See trace_optim.py.

        >>> loss_of = lambda x, y: criterion(model(x), y)                 # doctest: +SKIP
        >>> traced = dy.trace(loss_of, x, y, module=model)                # doctest: +SKIP
        >>> optimizer = dy.optim.Adam(model.parameters(), lr=1e-3)        # doctest: +SKIP
        >>> step = traced.train_step(optimizer)                           # doctest: +SKIP
        >>> for x, y in batches: step(x, y)                               # doctest: +SKIP
        >>> model.load_state_dict(traced.state_dict())                    # doctest: +SKIP
        >>> step.write_back()    # the optimizer's state, to go on eagerly  # doctest: +SKIP
        """
        if loss is None:
            loss = self.outputs
        if not (hasattr(loss, "graph") and loss.graph is self.graph):
            raise TypeError("train_step needs loss=, a scalar tensor of the traced graph (the "
                            "traced function returned more than one tensor)")
        known = set(self.graph.get_collection(GraphKeys.GLOBAL_VARIABLES))
        with self.graph.as_default():
            update = graph_update(optimizer, loss, self.variables, self._parameters)
            train_op = group(*update.ops, *self.updates, name="train_step")
            made = [v for v in self.graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
                    if v not in known]  # the optimizer's slots and accumulators
            if made:
                self.session.run(variables_initializer(made))
        for slot, value in update.slot_values:
            self.session.write_variable(slot, value)
        return TrainStep(self, loss, train_op, optimizer, update)

    def __repr__(self):
        name = getattr(self.fn, "__name__", type(self.fn).__name__)
        state = f", {len(self.state)} module tensors" if self.state else ""
        return (f"<Traced {name}: {len(self.graph.get_operations())} graph ops, "
                f"{len(self.inputs)} inputs, {len(self.variables)} variables{state}>")


class TrainStep:
    """One compiled training step of a `Traced` (what `Traced.train_step` returns): calling it
    with the traced function's inputs runs the step in the traced session and returns the
    loss as a NumPy value. `train_op` is the graph op (the optimizer's update, with the traced
    buffer updates grouped in); `optimizer` the optimizer it was made from."""

    def __init__(self, traced: Traced, loss, train_op, optimizer=None, update=None):
        self.traced = traced
        self.loss = loss
        self.train_op = train_op
        self.optimizer = optimizer
        feeds = update.feeds if update is not None else []
        self._states = update.states if update is not None else []
        self._hypers = [value for _, value in feeds]  # (a dy.optim group's lr, at each step)
        self._run = traced.session.make_callable(
            (loss, train_op), list(traced.inputs) + [placeholder for placeholder, _ in feeds])

    def __call__(self, *args):
        self.traced._check_arity(args)
        return self._run(*_arrays(args), *[value() for value in self._hypers])[0]

    def write_back(self) -> None:
        """Put the optimizer state the graph holds now (step counts, moments, momentum
        buffers) into the dy.optim optimizer, so that eager steps go on from the traced ones
        (with `model.load_state_dict(traced.state_dict())` for the parameters). Nothing to do
        for a graph optimizer, whose state lives in the graph only."""
        write_back(self._states, self.optimizer, self.traced.session)


def _arrays(args):
    return [a.detach().numpy() if isinstance(a, Tensor) else a for a in args]


def trace(fn, *example_inputs, module: Module | None = None) -> Traced:
    """Run `fn(*example_inputs)` once on dynamic tensors, recording each op it runs into a
    static `Graph` with a placeholder per input (of the example's shape and dtype).

    >>> def model(x):                                                   # doctest: +SKIP
    ...     return dy.relu(x @ w + b).sum()
    >>> traced = dy.trace(model, dy.randn(4, 3))                        # doctest: +SKIP
    >>> traced(np.ones((4, 3), np.float32))       # runs in a Session   # doctest: +SKIP
    >>> sg.gradients(traced.outputs, traced.variables)                   # doctest: +SKIP

    Modules: `fn` may be an `nn.Module` (`dy.trace(model, x)`), or a function of a module's
    (`dy.trace(lambda x, y: criterion(model(x), y), x, y, module=model)`). Every parameter and
    buffer of the module then becomes a graph variable named by its `state_dict` name
    (`traced.state["fc1.weight"]`), initialized from its value; the buffers' in-place updates
    in the run (BatchNorm's running statistics, in training mode) become assignments that run
    with the graph (`traced.updates`), so the graph's state advances as the module's does.
    The module is traced in the mode it is in (`train()` or `eval()`); the buffers the run
    wrote are put back afterwards, so module and graph start from the same state. `train_step`
    compiles a training step; `model.load_state_dict(traced.state_dict())` copies the trained
    values back into the module.

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
    - state outside a traced module: an in-place update of a parameter or an input
      (`p.sub_(lr * g)` under no_grad, `p.data = ...`) that is not a traced module's is seen
      by later ops of the same run, but the graph never writes it back -- the parameter's
      graph variable keeps its traced value, so calling the traced function again does not
      continue from the updated state (a TracerWarning says so). Trace the loss and update
      the parameters with `train_step` or outside the traced graph.
    - backward() and an optimizer's step() cannot be traced: trace the loss, and let
      `train_step` add its gradients and the optimizer's update to the graph.
    """
    if STATE.tracer is not None:
        raise RuntimeError("dy.trace cannot run inside another dy.trace")
    from .creation import tensor
    examples = [x if isinstance(x, Tensor) else tensor(x) for x in example_inputs]
    if module is None and isinstance(fn, Module):
        module = fn
    graph = Graph()
    tracer = Tracer(graph)
    state = None if module is None else tracer.add_module_state(module)
    with graph.as_default():
        inputs = [placeholder(x.dtype, x.shape, name=f"input_{i}") for i, x in enumerate(examples)]
    for x, p in zip(examples, inputs):
        tracer.bind(x, p)
        tracer.state.add(id(x))
    STATE.tracer = tracer
    try:
        try:
            result = fn(*examples)
        finally:
            STATE.tracer = None
        outputs = _map_outputs(result, tracer)
        updates = tracer.state_updates()
    finally:
        tracer.restore_module_state()
    return Traced(fn, graph, inputs, outputs, tracer.variables, module=module, state=state,
                  updates=updates, parameters=tracer.parameters)


def _map_outputs(value, tracer):
    if isinstance(value, Tensor):
        return tracer.lookup(value)
    if isinstance(value, list | tuple):
        return type(value)(_map_outputs(v, tracer) for v in value)
    if isinstance(value, dict):
        return {k: _map_outputs(v, tracer) for k, v in value.items()}
    raise TypeError(f"a traced function must return tensors (or lists, tuples or dicts of "
                    f"them), got {type(value).__name__}")
