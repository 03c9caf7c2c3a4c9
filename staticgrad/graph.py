"""The IR: a `Graph` of `Operation`s whose edges are `Tensor`s, with TF1 names and semantics.

Operations are appended in creation order, and an operation's inputs always exist before it,
so creation order is a topological order: schedulers sort by `op._id` and need no graph search.
Shapes and dtypes are inferred when an operation is created (see `ops.creation`), so a shape
error surfaces at the user's line.

>>> g = Graph()
>>> with g.as_default():
...     x = placeholder(float32, [None, 3], name="x")   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import itertools
import re
import threading

from . import devices as _devices
from . import dtypes as _dt
from .errors import format_location, user_location
from .shapes import TensorShape, as_shape

# Used with fullmatch, never match + `$`: `$` also matches before a trailing newline, so
# "y\n" would pass (and a newline in a name would reach comments in generated source).
_VALID_OP_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*")
_VALID_SCOPE_NAME = re.compile(r"[A-Za-z0-9_.\-/>]*")


class GraphKeys:
    """Standard collection names, as in TF1."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    MODEL_VARIABLES = "model_variables"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    UPDATE_OPS = "update_ops"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    SUMMARIES = "summaries"


class Tensor:
    """One output of an operation: a symbolic value with a dtype and a (partial) static shape.

    `==` is object identity, as in TF1; use `sg.equal` for elementwise equality.
    """

    __slots__ = ("op", "value_index", "dtype", "_shape", "_static", "_consumers", "__weakref__")
    __array_ufunc__ = None  # make `ndarray + tensor` call Tensor.__radd__

    def __init__(self, op: Operation, value_index: int, dtype: _dt.DType, shape: TensorShape):
        self.op = op
        self.value_index = value_index
        self.dtype = dtype
        self._shape = shape
        self._static = None  # a NumPy value when known before running (see ops.kernels.fold_static)
        # the ops that read it: None, the one Operation, or a list of them (a list for each
        # tensor of a 100,000-op chain was 30 MB, and its garbage collector's work)
        self._consumers = None

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self) -> Graph:
        return self.op.graph

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        """Refine the static shape (it must be compatible with what is already known)."""
        shape = as_shape(shape, what=f"set_shape of tensor {self.name} ({self.op.where()})")
        try:
            self._shape = self._shape.merge_with(shape)
        except ValueError:
            raise ValueError(f"tensor {self.name} has shape {self._shape}, which is incompatible "
                             f"with {shape} ({self.op.where()})") from None

    @property
    def device(self) -> str:
        """The device of the op that makes this tensor ("" if none)."""
        return self.op._device

    def consumers(self) -> list[Operation]:
        """The operations that read this tensor, in the order they were created."""
        readers = self._consumers
        if readers is None:
            return []
        return list(readers) if type(readers) is list else [readers]

    def eval(self, feed_dict=None, session=None):
        """Run this tensor in `session` (default: the default session) and return its value."""
        return _session_for(session, self).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        shape = "<unknown>" if self._shape.dims is None else str(self._shape)
        return f'<Tensor "{self.name}" shape={shape} dtype={self.dtype.name}>'

    def __str__(self) -> str:  # what print shows, as TF1's: Tensor("Add:0", shape=(?, 10), ...)
        shape = "<unknown>" if self._shape.dims is None else str(self._shape)
        return f'Tensor("{self.name}", shape={shape}, dtype={self.dtype.name})'


    def __bool__(self):
        raise TypeError(f"using tensor {self.name} as a Python bool is not allowed: its value is "
                        "only known when a session runs it; to choose between values by a "
                        "condition, use sg.where")

    def __iter__(self):
        dims = self._shape.dims
        if dims is None or not dims or dims[0] is None:
            raise TypeError(f"tensor {self.name} of shape {self._shape} is not iterable: "
                            "its first dimension must be known")
        for i in range(dims[0]):
            yield self[i]

    def __len__(self):
        dims = self._shape.dims
        if dims is None or not dims or dims[0] is None:
            raise TypeError(f"len() of tensor {self.name} with shape {self._shape} is unknown")
        return dims[0]

    # Python operators are bound in ops/__init__.py, where the op functions live.


class Operation:
    """A node: one application of an op type to input tensors, with attributes."""

    __slots__ = ("graph", "type", "name", "inputs", "attrs", "outputs", "control_inputs",
                 "location", "_id", "opdef", "_device", "__weakref__")

    def __init__(self, graph, op_type, name, inputs, attrs, control_inputs, location, opdef):
        self.graph = graph
        self.type = op_type
        self.name = name
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.control_inputs = tuple(control_inputs)
        self.location = location
        self.opdef = opdef
        self.outputs = ()
        self._id = -1
        self._device = ""

    def values(self):
        return self.outputs

    @property
    def n_outputs(self) -> int:
        """len(outputs) (which a dynamic-mode tape node answers without making them)."""
        return len(self.outputs)

    @property
    def device(self) -> str:
        """The device the op was placed on by `sg.device` scopes, canonical
        ("/device:GPU:0"); "" if none."""
        return self._device

    def _set_device(self, name) -> None:
        """Place the op on device `name` (made canonical; "" or None: none)."""
        self._device = _devices.canonical(name or "")
        if self._device:
            self.graph._devices_used = True

    @property
    def node_def(self) -> dict:
        inputs = [t.name for t in self.inputs] + ["^" + o.name for o in self.control_inputs]
        return {"name": self.name, "op": self.type, "input": inputs}

    def get_attr(self, name):
        try:
            return self.attrs[name]
        except KeyError:
            raise ValueError(f"operation {self.name} ({self.type}) has no attr {name!r}") from None

    def where(self) -> str:
        """'Add op "loss/Add" created at train.py:12': how error messages name this node."""
        return f'{self.type} op "{self.name}" created at {format_location(self.location)}'

    def run(self, feed_dict=None, session=None) -> None:
        """Run this operation in `session` (default: the default session)."""
        _session_for(session, self).run(self, feed_dict=feed_dict)

    def __repr__(self):
        return f"<sg.Operation '{self.name}' type={self.type}>"


class _ThreadState(threading.local):
    def __init__(self):
        self.name_stack = ""
        self.control_stack = []  # list of lists of Operations (None entry clears)
        self.override_map = {}
        self.var_scope = None    # the current VariableScope (see variable_scope.py)
        self.device_stack = []   # sg.device scopes: DeviceSpecs and functions (None clears)


class Graph:
    """A persistent graph of operations. Make it current with `with g.as_default():`."""

    # True only for the dynamic mode's eager context (staticgrad.dynamic): an op "created" on
    # it runs at once on NumPy values instead of becoming a node (see ops.kernels.fold_static).
    eager = False

    def __init__(self):
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._collections: dict[str, list] = {}
        self._lock = threading.RLock()
        self._finalized = False
        self._thread = _ThreadState()
        self.seed = None
        self._op_seed_counter = itertools.count(1)
        self._devices_used = False  # some op was placed on a device (sessions then check)

    # -- building ---------------------------------------------------------------------------
    def create_op(self, op_type: str, inputs, attrs=None, name=None) -> Operation:
        """Create an operation of a registered type; infers its output shapes and dtypes."""
        return self._create_operation(op_type, list(inputs), dict(attrs or {}), name)

    # the op layer (ops/creation.py) installs its create_operation here: the graph knows how
    # to hold operations, the op table knows how to make them
    _create_operation = None

    def _add_op(self, op: Operation) -> None:
        with self._lock:
            ops = self._ops
            op._id = len(ops)
            ops.append(op)
            self._by_name[op.name] = op
            for t in op.inputs:
                readers = t._consumers
                if readers is None:
                    t._consumers = op
                elif type(readers) is list:
                    readers.append(op)
                else:
                    t._consumers = [readers, op]

    def finalize(self) -> None:
        """Make the graph read-only: adding an operation afterwards raises RuntimeError."""
        self._finalized = True

    @property
    def finalized(self) -> bool:
        return self._finalized

    def _check_not_finalized(self, what: str) -> None:
        if self._finalized:
            raise RuntimeError(f"graph is finalized and cannot be modified ({what})")

    # -- names --------------------------------------------------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """`name` under the current name scope, made unique with `_1`, `_2`... as TF1 does."""
        stack = self._thread.name_stack
        if stack:
            name = stack + "/" + name
        key = name.lower()
        in_use = self._names_in_use
        with self._lock:
            i = in_use.get(key, 0)
            if mark_as_used:
                in_use[key] = i + 1
            if i > 0:
                base = key
                while key in in_use:
                    key = f"{base}_{i}"
                    i += 1
                if mark_as_used:
                    in_use[key] = 1
                name = f"{name}_{i - 1}"
        return name

    def get_name_scope(self) -> str:
        return self._thread.name_stack

    def name_scope(self, name):
        """Open a name scope; yields the scope string ending in '/' (TF1 semantics).

        The name is checked here, when called, so that an error names the user's line (not
        contextlib's, as it would from inside the generator)."""
        if name is not None and not isinstance(name, str):
            raise TypeError(f"a scope name is a string, got {name!r} ({type(name).__name__})")
        if name and not _VALID_SCOPE_NAME.fullmatch(name):
            raise _bad_scope_name(name)
        return self._name_scope(name)

    @contextlib.contextmanager
    def _name_scope(self, name):
        old = self._thread.name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]  # re-enter an existing scope exactly
        else:
            new = self.unique_name(name)
        self._thread.name_stack = new
        try:
            yield (new + "/") if new else ""
        finally:
            self._thread.name_stack = old

    # -- lookup ---------------------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"operation names are strings, got {type(name).__name__}")
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"the name {name!r} refers to an operation not in the graph") from None

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str) or ":" not in name:
            raise ValueError(f"the name {name!r} looks like an operation name, not a tensor name; "
                             "tensor names look like 'op_name:0'")
        op_name, _, index = name.rpartition(":")
        op = self.get_operation_by_name(op_name)
        # ASCII digits only: int() would also take "0\n", " 1", "+1", "1_0" and other scripts'
        # digits, so a mistyped name would silently find some tensor
        if not (index.isascii() and index.isdigit()):
            raise KeyError(f"the name {name!r} does not name a tensor: the output index after "
                           "':' must be written in digits 0-9 only")
        try:
            return op.outputs[int(index)]
        except IndexError:
            raise KeyError(f"the name {name!r} refers to a tensor that does not exist: operation "
                           f"{op_name!r} has {len(op.outputs)} outputs") from None

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        """Resolve a Tensor, Operation, Variable or name string to an element of this graph."""
        obj = _graph_element(obj)
        if isinstance(obj, str):
            obj = self.get_tensor_by_name(obj) if ":" in obj else self.get_operation_by_name(obj)
        if isinstance(obj, Tensor | Operation):
            if obj.graph is not self:
                raise ValueError(f"{obj!r} is not an element of this graph")
            if isinstance(obj, Tensor) and not allow_tensor:
                raise TypeError(f"expected an operation, got tensor {obj.name}")
            if isinstance(obj, Operation) and not allow_operation:
                raise TypeError(f"expected a tensor, got operation {obj.name}")
            return obj
        raise TypeError(f"cannot interpret {obj!r} ({type(obj).__name__}) as a graph element")

    @property
    def version(self) -> int:
        return len(self._ops)

    def to_networkx(self):
        """The graph as a `networkx.MultiDiGraph`, for analysis and teaching: one node per
        operation (attrs `type`, `location`), one edge per tensor use (attrs `tensor`, `shape`,
        `dtype`, `index`) and per control dependency (`control=True`).

        >>> nx_graph = g.to_networkx()                       # doctest: +SKIP
        >>> networkx.dag_longest_path_length(nx_graph)        # doctest: +SKIP
        """
        import networkx as nx
        out = nx.MultiDiGraph()
        for op in self._ops:
            out.add_node(op.name, type=op.type, location=format_location(op.location))
        for op in self._ops:
            for i, t in enumerate(op.inputs):
                out.add_edge(t.op.name, op.name, tensor=t.name, shape=str(t.shape),
                             dtype=t.dtype.name, index=i)
            for c in op.control_inputs:
                out.add_edge(c.name, op.name, control=True)
        return out

    # -- collections ------------------------------------------------------------------------------
    def add_to_collection(self, name: str, value) -> None:
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        for name in ([names] if isinstance(names, str) else names):
            self.add_to_collection(name, value)

    def get_collection(self, name: str, scope=None) -> list:
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [v for v in items if pattern.match(getattr(v, "name", ""))]

    def get_collection_ref(self, name: str) -> list:
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_all_collection_keys(self) -> list[str]:
        return sorted(self._collections)

    def clear_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    # -- control dependencies and gradient overrides ------------------------------------------
    def control_dependencies(self, control_inputs):
        """Ops created inside run only after `control_inputs` (ops or tensors). None clears.
        The inputs are checked here, where the user's `with` is written."""
        if control_inputs is None:
            entry = None
        else:
            entry = []
            for c in control_inputs:
                c = _graph_element(c)
                if isinstance(c, Tensor):
                    c = c.op
                if not isinstance(c, Operation):
                    raise TypeError(f"control inputs must be operations or tensors, got {c!r}")
                if c.graph is not self and not self._control_from_outside(c):
                    raise ValueError(f"control input {c.where()} is from another graph than "
                                     f"the one it was given to, at "
                                     f"{format_location(user_location())}")
                if c.graph is self:
                    entry.append(c)
        return self._pushed(self._thread.control_stack, entry)

    def _control_from_outside(self, op: Operation) -> bool:
        """May this graph wait on `op`, of another graph? (A cond's branch may: on an op of
        a graph around it, which its If op then waits on; see control_flow.BranchGraph.)"""
        return False

    @property
    def variable_home(self) -> Graph:
        """The graph that holds the variables created while this one is the default: itself,
        or for a sub-graph of control flow the graph around them all, as TF1 lifts variables
        out of loops and branches (control_flow.BranchGraph)."""
        return self

    @staticmethod
    @contextlib.contextmanager
    def _pushed(stack: list, entry):
        """Within: `entry` on top of `stack` (a scope's: control inputs, devices)."""
        stack.append(entry)
        try:
            yield
        finally:
            stack.pop()

    def _current_control_inputs(self) -> list[Operation]:
        if not self._thread.control_stack:
            return []
        out = []
        for entry in reversed(self._thread.control_stack):
            if entry is None:
                break
            out.extend(entry)
        seen, unique = set(), []
        for op in out:
            if id(op) not in seen:
                seen.add(id(op))
                unique.append(op)
        return unique

    # -- devices -------------------------------------------------------------------------------
    def device(self, device_name_or_function):
        """Ops created inside are placed on this device ("/cpu:0", "/device:GPU:1",
        "/job:worker/task:0": merged into the enclosing scope's), or on what a function
        gives for each (`fn(op) -> name`). None clears the enclosing scopes. A name that is
        no device name raises ValueError here, where it is written."""
        entry = device_name_or_function
        if entry is not None and not callable(entry):
            try:
                entry = _devices.parse(entry)
            except (TypeError, ValueError) as e:
                raise type(e)(f"{e} (sg.device at {format_location(user_location())})") \
                    from None
        return self._pushed(self._thread.device_stack, entry)

    def _apply_device(self, op: Operation) -> None:
        """Place a new op as the device scopes say (only called when there are some)."""
        spec = _devices.DeviceSpec()
        for entry in self._thread.device_stack:
            if entry is None:
                spec = _devices.DeviceSpec()
            elif isinstance(entry, _devices.DeviceSpec):
                spec = _devices.merged(spec, entry)
            else:  # a function of the op (TF1's device functions)
                name = entry(op)
                if name is not None:
                    try:
                        spec = _devices.merged(spec, _devices.parse(name))
                    except (TypeError, ValueError) as e:
                        raise type(e)(f"the device function of sg.device gave {name!r} for "
                                      f"{op.where()}: {e}") from None
        op._device = spec.to_string()
        if op._device:
            self._devices_used = True

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict):
        """Within this block, ops of type K use the gradient registered as op_type_map[K]."""
        old = self._thread.override_map
        self._thread.override_map = {**old, **op_type_map}
        with _overrides_lock:
            OVERRIDE_MAPS_OPEN[0] += 1
        try:
            yield
        finally:
            self._thread.override_map = old
            with _overrides_lock:
                OVERRIDE_MAPS_OPEN[0] -= 1

    # -- default graph ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        """Make this the default graph within the block (per thread)."""
        _default.stack.append(self)
        try:
            yield self
        finally:
            _default.stack.pop()

    def __repr__(self):
        return f"<sg.Graph with {len(self._ops)} ops>"

    # Jupyter draws a graph: staticgrad.viz installs its repr_svg here as _repr_svg_ (which
    # gives None, so the text repr, without graphviz)


def _graph_element(obj):
    """What `obj` stands for in a graph: a variable (anything with TF1's
    `_as_graph_element()`) gives its tensor; anything else is itself."""
    convert = getattr(type(obj), "_as_graph_element", None)
    return convert(obj) if convert is not None else obj


def check_op_name(name: str) -> str:
    """`name` if it is a valid node name (the whole of it: no trailing newline), else
    ValueError (TypeError if it is not a string)."""
    if not isinstance(name, str):
        raise TypeError(f"node names are strings, got {name!r} ({type(name).__name__})")
    if not _VALID_OP_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a valid node name: names start with a letter, digit "
                         "or '.', and contain only letters, digits and _ . - / > (given at "
                         f"{format_location(user_location())})")
    return name


def _bad_scope_name(name: str) -> ValueError:
    return ValueError(f"{name!r} is not a valid scope name (letters, digits, and _ . - / only; "
                      f"given at {format_location(user_location())})")


# How many gradient_override_map blocks are open, in any graph and thread: while none is, the
# dynamic mode's dispatch need not look for one (it would at every op it records).
OVERRIDE_MAPS_OPEN = [0]
_overrides_lock = threading.Lock()


class _DefaultGraph(threading.local):
    def __init__(self):
        self.stack = []


_default = _DefaultGraph()
_global_default_graph = Graph()


def get_default_graph() -> Graph:
    """The innermost graph made default with `as_default()` in this thread, else the global one."""
    return _default.stack[-1] if _default.stack else _global_default_graph


# -- the default session (TF1 keeps it here too, in framework/ops.py): session.py pushes
# sessions on these stacks; Tensor.eval, Operation.run and Variable.load read them
class _SessionStack(threading.local):
    def __init__(self):
        self.stack = []    # the sessions made default in this thread, innermost last
        self.entered = []  # (session, its graph's as_default context) per `with session:`


_sessions = _SessionStack()
_interactive = []  # InteractiveSessions, default in every thread that has no other


def get_default_session():
    """The innermost session entered with `with` in this thread (or an InteractiveSession)."""
    if _sessions.stack:
        return _sessions.stack[-1]
    return _interactive[-1] if _interactive else None


def _session_for(session, element):
    """`session`, else the default one, checked to run `element` (a tensor or an op)."""
    session = session or get_default_session()
    if session is None:
        raise ValueError(f"cannot evaluate {element.name}: no default session is registered; "
                         "use `with sess.as_default():` or pass session=sess")
    if session.graph is not element.graph:
        raise ValueError(f"cannot evaluate {element.name} (made by {element.op.where()}): it "
                         "is from another graph than the session's")
    return session


def reset_default_graph() -> None:
    """Replace the global default graph with a fresh empty one (not inside `as_default()`)."""
    global _global_default_graph
    if _default.stack:
        raise AssertionError("do not use reset_default_graph() inside a `with g.as_default()` "
                             "block; it would leave that block's graph dangling")
    _global_default_graph = Graph()


def name_scope(name, default_name=None, values=None):
    """Open a name scope on the default graph (or the graph of `values`)."""
    g = get_default_graph()
    for v in values or ():
        if isinstance(v, Tensor):
            g = v.graph
            break
    return g.name_scope(name if name is not None else default_name)


def disable_eager_execution() -> None:
    """TF2's switch back to graphs, which TF1 programs ported to TF2 call first: staticgrad's
    graph API always builds graphs (define-then-run), so it changes nothing. (The dynamic
    mode, define-by-run, is staticgrad.dynamic.)"""


def disable_v2_behavior() -> None:
    """TF2's switch back to TF1's behaviour (graphs, sessions, collections): what
    staticgrad's graph API always has, so it changes nothing."""


def executing_eagerly() -> bool:
    """False: the graph API builds graphs, never running an op as it is created (TF1's
    answer; staticgrad.dynamic is the define-by-run mode)."""
    return False


def device(device_name_or_function):
    """A context in which every op created on the default graph is placed on a device (TF1's
    `tf.device`; see Graph.device). A session runs a /cpu op on the CPU; a /gpu op where a
    GPU backend can run it, else on the CPU under `ConfigProto(allow_soft_placement=True)`,
    else it refuses to run it, naming the op and the device.

    >>> with sg.device("/cpu:0"):  # doctest: +SKIP
    ...     w = sg.Variable(sg.zeros([3]))
    """
    return get_default_graph().device(device_name_or_function)


def control_dependencies(control_inputs):
    """A context in which every op created runs after `control_inputs` (ops or tensors) on the
    default graph.

    >>> with sg.control_dependencies([update]):  # doctest: +SKIP
    ...     y = sg.identity(x)
    """
    return get_default_graph().control_dependencies(control_inputs)


def add_to_collection(name, value):
    """Add `value` to the default graph's collection `name`."""
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    """Add `value` to each of the default graph's collections `names`."""
    get_default_graph().add_to_collections(names, value)


def get_collection(name, scope=None):
    """A copy of the default graph's collection `name`: the items whose name starts with
    `scope`, if given.

    >>> sg.get_collection(sg.GraphKeys.TRAINABLE_VARIABLES, scope="dense")  # doctest: +SKIP
    """
    return get_default_graph().get_collection(name, scope)


def get_collection_ref(name):
    """The default graph's collection `name` itself (a list to append to)."""
    return get_default_graph().get_collection_ref(name)
