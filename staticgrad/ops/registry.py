"""The op registry: each op type is defined once, all its rules side by side.

An `OpDef` holds
- `infer(ctx)`: the shape/dtype rule, run when the op is created (and again, with concrete
  shapes, when a session specializes a graph to its feeds);
- `numpy(args, ctx)`: the NumPy expression that computes it (a format string or a function);
  the same expression, compiled once per distinct text, is the op's *kernel* for constant
  folding and the dynamic mode, so the three cannot drift apart;
- `grad(op, *output_grads)`: the gradient rule, written with the graph API, or `None` with
  `differentiable=False` for ops that have no gradient (comparisons, argmax...).

`ctx` (a `NodeCtx`) gives a rule the input shapes, dtypes, static values and attrs.

Every attribute has a declared type (`attrs={"axis": Int()}`, see `attr_types`): values are
checked against it when an op is created, and an emitter writes one into source only as
`ctx.lit(name)`, the literal of its type; a format string's `{axis}` gets that literal too.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import string
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from .. import dtypes as _dt
from .. import runtime
from ..errors import format_location, user_location
from ..graph import Graph, Operation, Tensor, check_op_name, get_default_graph
from .attr_types import AttrType, check_attrs
from .expr import NUMPY, Expr

REGISTRY: dict[str, OpDef] = {}

# A static value is computed at build time only if its result is at most this many elements.
STATIC_FOLD_LIMIT = 1024


@dataclasses.dataclass
class OpDef:
    type: str
    infer: Callable
    numpy: str | Callable | None  # the reference kernel, as NumPy: a format string of its
    #                               inputs ("np.tanh({0})") and attrs, or f(args, ctx) -> text
    grad: Callable | None = None
    differentiable: bool = True
    computes: bool = True        # False: a feed or a constant (a value, not a node), or NoOp
    stateful: bool = False       # random draws, variables, assignments: never folded or merged
    elementwise: bool = False    # output[i] depends only on inputs[i] (after broadcasting)
    broadcasts: bool = False     # inputs broadcast: the reverse pass sums gradients back
    core_dims: int = 0           # trailing dims that never broadcast (2 for matmul)
    draws_random: bool = False   # needs a random generator (R[name]) from the session
    reads_state: bool = False    # reads session state V[name]: inlined where used, not bound
    view: bool = False           # output may share memory with input 0 (reshape, transpose...)
    static_inputs: tuple = ()    # inputs read only for their (static) value, e.g. shape tensors
    shape_inputs: tuple = ()     # inputs read only for their shape, e.g. zeros_like's argument
    new_array: bool = False      # the result is always a new array: never an input or a view
    doc: str = ""
    expr: Expr | None = None     # an elementwise op's math in the shared notation (ops/expr.py),
    #                              of which `numpy` is the NumPy printing
    api: object = None           # how it is offered to users (ops/vocabulary.py's Api), if so
    attrs: dict[str, AttrType] = dataclasses.field(default_factory=dict)  # declared types
    arity: int | tuple = 1       # how many inputs: n, or (at least, at most or None)
    checks_input: int | None = None  # its run-time error is about input i's values (a check):
    #                              the session names the op that made them, not this one
    format_attrs: tuple = ()     # the attrs a format-string `numpy` names ("{axis}")


def register(op_type: str, infer, numpy, grad=None, attrs=None, **kw) -> OpDef:
    """Define op `op_type`; `attrs` maps each attribute it takes to its declared type,
    `arity` says how many inputs it takes."""
    if op_type in REGISTRY:
        raise ValueError(f"op type {op_type!r} is already registered")
    kw.setdefault("broadcasts", kw.get("elementwise", False))
    if isinstance(numpy, Expr):  # the shared notation: its NumPy printing is the kernel
        if not kw.get("elementwise") or numpy.arity != kw.get("arity", 1):
            raise ValueError(f"{op_type}: an expression is for an elementwise op of as many "
                             f"inputs ({numpy.arity}) as its arity")
        kw["expr"], numpy = numpy, NUMPY.format(numpy)
    opdef = OpDef(op_type, infer, numpy, grad, attrs=dict(attrs or {}), **kw)
    if isinstance(numpy, str):
        fields = {f for _, f, _, _ in string.Formatter().parse(numpy) if f}
        named = tuple(sorted(f for f in fields if not f.isdigit()))
        undeclared = [f for f in named if f not in opdef.attrs]
        if undeclared:
            raise ValueError(f"{op_type}'s expression names undeclared attrs {undeclared}")
        opdef.format_attrs = named
    REGISTRY[op_type] = opdef
    return opdef


def check_arity(opdef: OpDef, n: int) -> None:
    """ValueError unless `n` inputs fit the op."""
    lo, hi = (opdef.arity, opdef.arity) if isinstance(opdef.arity, int) else opdef.arity
    if n < lo or (hi is not None and n > hi):
        want = str(lo) if lo == hi else f"at least {lo}" if hi is None else f"{lo} to {hi}"
        raise ValueError(f"{opdef.type} takes {want} input{'s' * (want != '1')}, got {n}")


def get_opdef(op_type: str) -> OpDef:
    try:
        return REGISTRY[op_type]
    except KeyError:
        raise KeyError(f"no op type {op_type!r} is registered") from None


class NodeCtx:
    """What a shape rule or emitter may know about one node: inputs, attrs, and outputs."""

    __slots__ = ("type", "attrs", "in_shapes", "in_dtypes", "in_values", "out_shapes",
                 "out_dtypes", "name", "_shares")

    def __init__(self, op_type, attrs, in_shapes, in_dtypes, in_values, name=""):
        self.type = op_type
        self.attrs = attrs
        self.in_shapes = in_shapes
        self.in_dtypes = in_dtypes
        self.in_values = in_values
        self.out_shapes = None
        self.out_dtypes = None
        self.name = name
        self._shares = None  # the code generator's answer to may_share(i), if it gave one

    def may_share(self, i) -> bool:
        """May input i share memory with anything else the run keeps (a feed, a variable, a
        constant, a value also read elsewhere, viewed or fetched)? An op that stores it as
        session state (Assign) then stores a copy. False for a kernel run on its own."""
        return self._shares is not None and self._shares(i)

    def dims(self, i):
        """Input i's dims tuple (None when the rank is unknown)."""
        return self.in_shapes[i].dims

    def value(self, i):
        """Input i's value if it is known before running, else None."""
        return self.in_values[i]

    def out_dims(self, i=0):
        return self.out_shapes[i].dims

    def lit(self, name: str) -> str:
        """Attribute `name` as Python source, made by its declared type (the only way an
        emitter may write an attribute into code)."""
        return REGISTRY[self.type].attrs[name].literal(self.attrs[name])


# -- gradient rules: which inputs' gradients are wanted -----------------------------------------

_rule = threading.local()  # .running: (op, wanted) while that op's gradient rule runs


def wants(op, i: int) -> bool:
    """Inside one of staticgrad's own gradient rules for op: is the gradient of its input i
    needed? (TF's `op.skip_input_indices`.) `sg.gradients` needs only the inputs on a path
    from an x, the dynamic mode's backward only those that require a gradient, so a rule that
    checks builds nothing for the other side of `x * 1.0001`, `x ** 2` or
    `matmul(features, w)`: nodes the compiler would prune, made for nothing. True outside a
    rule, and in a rule of the user's (RegisterGradient, custom_gradient), which is told
    nothing: a user's rule may call a built-in one and use every gradient it returns."""
    running = getattr(_rule, "running", None)
    return running is None or running[0] is not op or running[1][i]


def run_rule(rule, op, out_grads, wanted) -> list:
    """rule(op, *out_grads), with `wanted` (one bool per input, or None) for `wants`."""
    before = getattr(_rule, "running", None)
    _rule.running = None if wanted is None else (op, wanted)
    try:
        return list(rule(op, *out_grads))
    finally:
        _rule.running = before


# -- creating operations ------------------------------------------------------------------------

def create_operation(graph, op_type: str, inputs: list, attrs: dict, name=None) -> Operation:
    """Validate inputs, infer outputs, and add one operation to `graph`.

    On the dynamic mode's eager context (`graph.eager`), the op runs at once instead, with the
    same shape rule and kernel (see staticgrad.dynamic.dispatch); what it returns has the
    same `outputs`.
    """
    if graph.eager:
        return graph.run_operation(op_type, inputs, attrs, name)
    opdef = REGISTRY.get(op_type) or get_opdef(op_type)
    for i, t in enumerate(inputs):
        if type(t) is not Tensor and not isinstance(t, Tensor):
            raise TypeError(f"input {i} of {op_type} must be a Tensor, got {type(t).__name__}")
        if t.op.graph is not graph:
            hint = ("; it is a dynamic tensor: call graph-API functions on dynamic tensors under "
                    "staticgrad.dynamic.eager_mode(), so that the constants they make are "
                    "dynamic too") if t.graph.eager else ""
            made = "" if t.graph.eager else f" (created at {format_location(t.op.location)})"
            raise ValueError(f"input {t.name} of {op_type}{made} is from another graph than "
                             f"the op's, at {format_location(user_location())}; all inputs of "
                             f"an op must be from the same graph{hint}")
    if graph._finalized:
        graph._check_not_finalized(f"creating a {op_type} op at "
                                   f"{format_location(user_location())}")
    if name is not None and not isinstance(name, str):
        check_op_name(name)  # TypeError naming what was given
    if name and name.endswith("/"):  # an exact name, from a name scope (TF1 convention)
        name = check_op_name(name[:-1])
        if name in graph._by_name:
            raise ValueError(f"an operation named {name!r} already exists in the graph")
        graph._names_in_use.setdefault(name.lower(), 1)  # later unique names avoid it
    else:
        # the full name (with its scope) is checked: no scope can smuggle in other characters
        name = check_op_name(graph.unique_name(name or op_type))
    override = graph._thread.override_map.get(op_type)
    if override is not None:
        attrs = {**attrs, "_gradient_op_type": override}  # (not the caller's dict)
    op = Operation(graph, op_type, name, inputs, attrs,
                   graph._current_control_inputs() if graph._thread.control_stack else (),
                   user_location(), opdef)
    try:
        check_arity(opdef, len(inputs))
        if attrs or opdef.attrs:
            op.attrs = attrs = check_attrs(op_type, opdef.attrs, attrs)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op.where()}: {e}") from None
    in_values = [t._static for t in inputs]
    ctx = NodeCtx(op_type, attrs, [t._shape for t in inputs], [t.dtype for t in inputs],
                  in_values, name)
    try:
        outs = opdef.infer(ctx)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op.where()}: {e}") from None
    # (this runs once per op created: one output, the common case, without loops)
    if len(outs) == 1:
        (shape, dt), = outs
        op.outputs = (Tensor(op, 0, dt, shape),)
        ctx.out_shapes, ctx.out_dtypes = [shape], [dt]
    else:
        op.outputs = tuple([Tensor(op, i, dt, shape) for i, (shape, dt) in enumerate(outs)])
        ctx.out_shapes = [shape for shape, _ in outs]
        ctx.out_dtypes = [dt for _, dt in outs]
    # most ops read a value known only at run time: then nothing is folded (fold_static's
    # first test, without the call)
    for v in in_values:
        if v is None and not (opdef.static_inputs or opdef.shape_inputs
                              or op_type in STATIC_SOURCES):
            break
    else:
        values = fold_static(opdef, ctx)
        if values is not None:
            for t, v in zip(op.outputs, values):
                t._static = v
    graph._add_op(op)
    return op


Graph._create_operation = create_operation  # Graph.create_op (the graph layer is below this)


def apply(op_type: str, inputs: list, attrs=None, name=None, graph=None):
    """Create an op on the graph of its inputs (or the default graph); return its outputs."""
    if graph is None:
        graph = inputs[0].graph if inputs else get_default_graph()
    # (each op its own attrs dict: a shared empty one was written into through op.attrs)
    op = create_operation(graph, op_type, inputs, dict(attrs or {}), name)
    return op.outputs


def apply1(op_type: str, inputs: list, attrs=None, name=None, graph=None) -> Tensor:
    return apply(op_type, inputs, attrs, name, graph)[0]


# -- kernels and static values ------------------------------------------------------------------

# (expression, arity) -> compiled function, least recently used first. Bounded: an op whose
# attributes change at each call (x[i] in a loop over i) renders a new expression each time.
_KERNELS: OrderedDict[tuple, Callable] = OrderedDict()
KERNEL_CACHE_SIZE = 4096
KERNEL_NAMESPACE = {"np": np, "rt": runtime}


def render_numpy(opdef: OpDef, args: list[str], ctx: NodeCtx) -> str:
    """The NumPy expression of one node, from its emitter."""
    if isinstance(opdef.numpy, str):
        return render_format(opdef, args, ctx.attrs)
    return opdef.numpy(args, ctx)


def render_format(opdef: OpDef, args: list[str], attrs: dict) -> str:
    """A format-string expression with its inputs, and its attrs as literals of their types."""
    if not opdef.format_attrs:
        return opdef.numpy.format(*args)
    return opdef.numpy.format(*args, **{k: opdef.attrs[k].literal(attrs[k])
                                        for k in opdef.format_attrs})


def kernel(opdef: OpDef, ctx: NodeCtx) -> Callable:
    """The op's NumPy expression compiled into a function of its inputs (cached by its text)."""
    args = [f"a{i}" for i in range(len(ctx.in_shapes))]
    expr = render_numpy(opdef, args, ctx)
    key = (expr, len(args))
    fn = _KERNELS.get(key)
    if fn is None:
        fn = eval(f"lambda {', '.join(args)}: {expr}", KERNEL_NAMESPACE)  # noqa: S307
        _KERNELS[key] = fn
        while len(_KERNELS) > KERNEL_CACHE_SIZE:
            _KERNELS.popitem(last=False)
    else:
        _KERNELS.move_to_end(key)
    return fn


def run_kernel(opdef: OpDef, ctx: NodeCtx, arrays) -> list[np.ndarray]:
    """Evaluate one node on NumPy values; returns one array per output, with the right dtypes."""
    out = kernel(opdef, ctx)(*arrays)
    outs = list(out) if len(ctx.out_dtypes) > 1 else [out]
    return [np.asarray(v, dtype=dt.np) for v, dt in zip(outs, ctx.out_dtypes)]


def fold_static(opdef: OpDef, ctx: NodeCtx):
    """Values of the node's outputs if they can be known without running, else None.

    Known: constants, the shape/size/rank of a tensor whose shape is known, and small
    stateless computations whose inputs are all known (shape arithmetic, mostly).
    """
    source = STATIC_SOURCES.get(opdef.type)
    if source is not None:
        return source(ctx)
    if opdef.stateful or not opdef.computes:
        return None
    if opdef.static_inputs or opdef.shape_inputs:
        if any(v is None for i, v in enumerate(ctx.in_values) if i not in opdef.static_inputs
               and i not in opdef.shape_inputs):
            return None
    else:  # most ops: every input must be known (a loop: this runs once per op created)
        for v in ctx.in_values:
            if v is None:
                return None
    if any(ctx.in_values[i] is None and not ctx.in_shapes[i].is_fully_defined()
           for i in opdef.shape_inputs):
        return None
    if not all(s.is_fully_defined() and s.num_elements() <= STATIC_FOLD_LIMIT
               for s in ctx.out_shapes):
        return None
    arrays = [v if v is not None else np.zeros(ctx.in_shapes[i].dims, ctx.in_dtypes[i].np)
              for i, v in enumerate(ctx.in_values)]
    try:
        with np.errstate(all="ignore"):
            return run_kernel(opdef, ctx, arrays)
    except Exception:  # noqa: BLE001 - a fold that fails just leaves the value unknown
        return None


def _shape_value(ctx):
    s = ctx.in_shapes[0]
    if not s.is_fully_defined() or not _fits(max(s.dims, default=0), ctx.out_dtypes[0]):
        return None
    return [np.array(s.dims, dtype=ctx.out_dtypes[0].np)]


def _size_value(ctx):
    n = ctx.in_shapes[0].num_elements()
    fits = n is not None and _fits(n, ctx.out_dtypes[0])
    return [np.array(n, dtype=ctx.out_dtypes[0].np)] if fits else None


def _fits(n: int, dtype: _dt.DType) -> bool:
    """Does n fit dtype? (else the value is left to run time, which reports the overflow)"""
    return n <= np.iinfo(dtype.np).max


def _rank_value(ctx):
    r = ctx.in_shapes[0].ndims
    return None if r is None else [np.array(r, dtype=np.int32)]


def _const_value(ctx):
    return [ctx.attrs["value"]]


STATIC_SOURCES = {"Shape": _shape_value, "Size": _size_value, "Rank": _rank_value,
                  "Const": _const_value}


# -- converting Python values to tensors --------------------------------------------------------

def constant(value, dtype=None, shape=None, name=None, graph=None) -> Tensor:
    """A constant tensor holding `value` (converted to `dtype`, broadcast to `shape` if given)."""
    g = graph or get_default_graph()
    if shape is None and type(value) in (float, int) and value == value:
        # a Python number (x * 1.0001): its array, read-only, made once per number and dtype
        key = (dtype if dtype is None else _dt.as_dtype(dtype), type(value), value,
               math.copysign(1.0, value) if type(value) is float else 0)  # (0.0, -0.0 apart;
        #                                                                    NaN not cached)
        found = _NUMBERS.get(key)
        if found is None:
            found = _NUMBERS[key] = _constant_array(value, dtype, None, name)
            if len(_NUMBERS) > NUMBERS_KEPT:
                _NUMBERS.clear()
        arr, dtype = found
    else:
        arr, dtype = _constant_array(value, dtype, shape, name)
    return apply1("Const", [], {"value": arr, "dtype": dtype}, name=name or "Const", graph=g)


# (dtype, type, number, sign) -> (read-only array, dtype): constants are never written, so
# the thousands of Const ops of one number in a loop can share one array
_NUMBERS: dict = {}
NUMBERS_KEPT = 4096


def _constant_array(value, dtype, shape, name) -> tuple[np.ndarray, _dt.DType]:
    """`value` as a read-only array of `dtype` (inferred if None), broadcast to `shape`."""
    what = f"constant {name!r}" if name else "a constant"
    try:
        arr = np.asarray(value)
    except ValueError as e:  # a ragged list
        raise ValueError(f"cannot make {what} from {_short_repr(value)} at "
                         f"{format_location(user_location())}: {e}") from None
    if arr.dtype == object or (dtype is None and arr.dtype.kind in "USc"):
        raise TypeError(f"cannot make {what} from {type(value).__name__} {_short_repr(value)} "
                        f"at {format_location(user_location())}")
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
        if not _dt.can_cast_value(arr, dtype):
            raise TypeError(f"cannot convert {value!r} (dtype {arr.dtype}) to a {dtype.name} "
                            f"constant without losing information")
        arr = arr.astype(dtype.np)
    else:
        dtype = _dt.infer_dtype(value)
        arr = arr.astype(dtype.np)
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        if arr.size == 1:
            arr = np.broadcast_to(arr.reshape(()), shape)
        elif arr.size == int(np.prod(shape)):
            arr = arr.reshape(shape)
        else:
            raise ValueError(f"{what} of {arr.size} elements cannot take shape {shape} (too "
                             f"many or too few elements) at {format_location(user_location())}")
    arr = np.array(arr, copy=True)
    arr.setflags(write=False)
    return arr, dtype


def _short_repr(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def convert_to_tensor(value, dtype=None, name=None, graph=None, dtype_hint=None) -> Tensor:
    """A Tensor for `value`: tensors and variables pass through; other values become constants.

    `dtype` is a requirement (TypeError on mismatch); `dtype_hint` is tried first for Python and
    NumPy values (so `x + 1` keeps x's float32).
    """
    if type(value) is not Tensor and _stands_for_tensor(value):
        value = value._as_graph_element()  # a Variable: its tensor
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not _dt.as_dtype(dtype):
            raise TypeError(f"tensor {value.name} has dtype {value.dtype.name}, but "
                            f"{_dt.as_dtype(dtype).name} is required "
                            f"(created at {value.op.where()})")
        return value
    if isinstance(value, list | tuple) and any(isinstance(v, Tensor) or _stands_for_tensor(v)
                                               for v in value):
        from .join_ops import stack
        return stack(list(value), name=name)
    want = dtype if dtype is not None else dtype_hint
    if want is not None:
        try:
            return constant(value, dtype=want, name=name, graph=graph)
        except TypeError:
            if dtype is not None:
                raise
    return constant(value, name=name, graph=graph)


def is_tensor_like(value) -> bool:
    return type(value) is Tensor or isinstance(value, Tensor) or _stands_for_tensor(value)


def _stands_for_tensor(value) -> bool:
    """Is `value` a stand-in for a tensor of a graph (a Variable: TF1's _as_graph_element
    protocol, which keeps this layer from importing variables.py)?"""
    return hasattr(type(value), "_as_graph_element")


def scalar_literal(value) -> str | None:
    """Python source for a scalar that keeps NumPy's weak typing (`2.0`, `(-3.0)`), or None.
    A negative number is parenthesized: `-2.0 ** x` would be `-(2.0 ** x)`."""
    text = _scalar_literal(value)
    return f"({text})" if text is not None and text.startswith("-") else text


def _scalar_literal(value) -> str | None:
    if isinstance(value, bool | np.bool_):
        return repr(bool(value))
    if isinstance(value, int | np.integer):
        return repr(int(value))
    if isinstance(value, float | np.floating):
        v = float(value)
        if math.isnan(v):
            return "np.nan"
        if math.isinf(v):
            return "np.inf" if v > 0 else "(-np.inf)"
        if isinstance(value, np.floating) and value.dtype != np.float64:
            return _shortest(v, math.copysign(1.0, v), value.dtype.type)
        return repr(v)
    return None


@functools.lru_cache(maxsize=1024)
def _shortest(v: float, sign: float, kind) -> str:
    """The shortest text of v that reads back as the same `kind` (float32 0.1 reads "0.1",
    not "0.10000000149011612"). `sign` keeps -0.0 and 0.0 apart in the cache."""
    short = str(kind(v))
    return short if kind(float(short)) == kind(v) else repr(v)


def np_dtype(dtype: _dt.DType) -> str:
    """`np.float32`, for generated source."""
    return "np.bool_" if dtype.is_bool else f"np.{dtype.name}"
