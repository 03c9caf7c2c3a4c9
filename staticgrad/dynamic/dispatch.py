"""Running one op at once: what `create_operation` does for the eager context.

The same three steps as building a graph node, then one more:
1. the op's shape rule (`OpDef.infer`), so a bad input fails at the user's line with the
   graph side's message;
2. its kernel (`kernels.run_kernel`: the op's NumPy expression, compiled once per text), on
   the inputs' arrays;
3. the outputs as dynamic tensors;
4. a tape node, when grad mode is on and some input requires grad (see `tape.py`); and the
   op handed to the tracer while `trace` records.

Steps 1 and 2 are looked up, not redone, for a call like one made before: an op whose shape
rule and kernel depend only on its inputs' shapes and dtypes and on its attrs (`_plan_key`
says which) keeps, per (op type, shapes, dtypes, attrs), its compiled kernel and its outputs'
dtypes (`_PLANS`). That is what makes an eager op cost microseconds: PyTorch's dispatcher
caches its kernels by dtype the same way.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from .. import runtime
from ..dtypes import DType
from ..errors import InternalError, InvalidArgumentError, format_location, user_location
from ..graph import OVERRIDE_MAPS_OPEN, get_default_graph
from ..ops.attr_types import check_attrs
from ..ops.kernels import KERNEL_CACHE_SIZE, KERNEL_NAMESPACE, kernel, render_numpy, run_kernel
from ..ops.table import REGISTRY, NodeCtx, check_arity, get_opdef
from . import tape
from .mode import STATE
from .tensor import Tensor, make_tensor


class Ran:
    """What `create_operation` returns for an op that ran: its outputs."""

    __slots__ = ("outputs",)

    def __init__(self, outputs):
        self.outputs = outputs


def run_operation(op_type: str, inputs, attrs: dict) -> Ran:
    """Run op `op_type` on dynamic tensors `inputs`; record it if gradients need it."""
    return Ran(run(op_type, inputs, attrs))


def run_binary(op_type: str, a: Tensor, b: Tensor) -> Tensor:
    """run(op_type, (a, b), {})[0] for two tensors (not subclasses) of one dtype: the path of
    Python's operators and the two-input functions, written out for the planned case."""
    plan = _PLANS.get((op_type, a._data.shape, a.dtype.name, b._data.shape, b.dtype.name))
    if plan is not None and plan.np_dtype is not None:
        try:
            value = plan.fn(a._data, b._data)
        except Exception:  # noqa: BLE001 - run again by `run`, to be reported naming the op
            return run(op_type, (a, b), {})[0]
        if type(value) is not np.ndarray or value.dtype is not plan.np_dtype:
            value = np.asarray(value, dtype=plan.np_dtype)
        out = make_tensor(value, plan.dtypes[0], a._version if plan.view else [0])
        if (a._requires_grad or b._requires_grad) and STATE.grad_enabled \
                or STATE.tracer is not None:
            _finish(op_type, plan.opdef, plan.attrs, (a, b), (out,))
        return out
    return run(op_type, (a, b), {})[0]


def run_unary(op_type: str, a: Tensor) -> Tensor:
    """run(op_type, (a,), {})[0] for a tensor (not a subclass): `run_binary`'s one-input
    twin (x.exp(), -x)."""
    plan = _PLANS.get((op_type, a._data.shape, a.dtype.name))
    if plan is not None and plan.np_dtype is not None:
        try:
            value = plan.fn(a._data)
        except Exception:  # noqa: BLE001 - run again by `run`, to be reported naming the op
            return run(op_type, (a,), {})[0]
        if type(value) is not np.ndarray or value.dtype is not plan.np_dtype:
            value = np.asarray(value, dtype=plan.np_dtype)
        out = make_tensor(value, plan.dtypes[0], a._version if plan.view else [0])
        if a._requires_grad and STATE.grad_enabled or STATE.tracer is not None:
            _finish(op_type, plan.opdef, plan.attrs, (a,), (out,))
        return out
    return run(op_type, (a,), {})[0]


def run(op_type: str, inputs, attrs: dict) -> tuple:
    """run_operation's outputs (the dynamic mode's own functions call this)."""
    key = _plan_key(op_type, inputs, attrs)
    plan = _PLANS.get(key) if key is not None else None
    if plan is not None:
        try:
            if len(inputs) == 2:
                values = plan.fn(inputs[0]._data, inputs[1]._data)
            else:
                values = plan.fn(*[t._data for t in inputs])
        except Exception:  # noqa: BLE001 - run again below, to be reported naming the op
            plan = None
    if plan is not None:
        view_of = inputs[0]._version if plan.view else None
        if plan.np_dtype is not None:  # one output
            if type(values) is not np.ndarray or values.dtype is not plan.np_dtype:
                values = np.asarray(values, dtype=plan.np_dtype)
            outputs = (make_tensor(values, plan.dtypes[0], view_of or [0]),)
        else:
            outputs = tuple([make_tensor(np.asarray(v, dtype=dt.np), dt, view_of or [0])
                             for v, dt in zip(values, plan.dtypes)])
        return _finish(op_type, plan.opdef, plan.attrs, inputs, outputs)
    opdef = REGISTRY.get(op_type) or get_opdef(op_type)
    try:
        check_arity(opdef, len(inputs))
        if attrs or opdef.attrs:
            attrs = check_attrs(op_type, opdef.attrs, attrs)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{op_type} op at {_here()}: {e}") from None
    arrays = []
    for i, t in enumerate(inputs):
        if type(t) is not Tensor and not isinstance(t, Tensor):
            raise _foreign_input(op_type, i, t)
        arrays.append(t._data)
    if not opdef.computes or (opdef.stateful and not opdef.draws_random):
        if op_type != "Const":
            raise TypeError(f"{op_type} ops hold graph or session state and have no place in the "
                            f"dynamic mode ({_here()}); make tensors with dy.tensor(data, "
                            "requires_grad=...) and update them under dy.no_grad()")
        if attrs["dtype"].is_string:
            raise _no_strings(op_type)
        outputs = (Tensor._make(attrs["value"], attrs["dtype"]),)
    else:
        outputs = _run(op_type, opdef, inputs, attrs, arrays, key)
    return _finish(op_type, opdef, attrs, inputs, outputs)


def _finish(op_type, opdef, attrs: dict, inputs, outputs) -> tuple:
    """Record the op that ran: a tape node if some input requires grad and the op has a
    gradient (with a copy of `attrs`: the node keeps it), and the tracer's op; `outputs`."""
    state = STATE
    if state.grad_enabled:
        for t in inputs:
            if t._requires_grad:
                recorded = _with_override(attrs, op_type) if OVERRIDE_MAPS_OPEN[0] else \
                    dict(attrs) if attrs else {}
                if opdef.differentiable or "_gradient_op_type" in recorded:
                    tape.record(op_type, opdef, inputs, recorded, outputs)
                break
    if state.tracer is not None:  # (an op built in a gradient_override_map block gets it)
        state.tracer.record(op_type, inputs, _with_override(attrs, op_type), outputs)
    return outputs


def _with_override(attrs: dict, op_type: str) -> dict:
    """A copy of `attrs`, with the gradient_override_map of the default graph applied."""
    attrs = dict(attrs) if attrs else {}
    if OVERRIDE_MAPS_OPEN[0]:
        override = get_default_graph()._thread.override_map.get(op_type)
        if override is not None:
            attrs["_gradient_op_type"] = override
    return attrs


# -- plans: what a call like one made before needs --------------------------------------------
class Plan:
    """How to run an op on inputs of given shapes and dtypes: its compiled kernel, its
    outputs' dtypes, and its checked attrs (a copy goes to each call: a node keeps it)."""

    __slots__ = ("opdef", "fn", "dtypes", "np_dtype", "attrs", "view")

    def __init__(self, opdef, fn, dtypes, attrs):
        self.opdef = opdef
        self.fn = fn
        self.dtypes = tuple(dtypes)
        self.np_dtype = dtypes[0].np if len(dtypes) == 1 else None  # None: several outputs
        self.attrs = attrs
        self.view = opdef.view


# key -> Plan; emptied when it holds PLAN_CACHE_SIZE (a loop over ever new shapes makes one
# per shape)
_PLANS: dict[tuple, Plan] = {}
PLAN_CACHE_SIZE = 4096
# attr value types a plan's key may hold: each value's type is in the key too, so that True
# and 1 (equal, of one hash) never share a plan. Not floats: -0.0 == 0.0 would.
_KEY_TYPES = frozenset({int, bool, str, type(None)})


def _plan_key(op_type: str, inputs, attrs: dict):
    """The key of the plan for this call: the op type, each input's shape and dtype, the
    values of its static inputs (a target shape, begin and size: small vectors that its
    shape rule and kernel read), and the attrs with their types; None if a plan cannot
    serve it (a foreign input, a static input of more than STATIC_KEYED elements, an attr
    whose value is not a plain int, bool, str, None, dtype or tuple of ints)."""
    key = [op_type]
    opdef = REGISTRY.get(op_type)
    static = opdef.static_inputs if opdef is not None else ()
    for i, t in enumerate(inputs):
        if type(t) is not Tensor and not isinstance(t, Tensor):
            return None
        key.append(t._data.shape)
        key.append(t.dtype.name)
        if static and i in static:
            if t._data.size > STATIC_KEYED:
                return None
            key.append(t._data.tobytes())
    if attrs:
        for name, value in attrs.items():
            kind = type(value)
            if kind not in _KEY_TYPES and kind is not DType and not (
                    kind is tuple and all(type(v) is int for v in value)):
                return None
            key.append((name, kind, value))
    return tuple(key)


STATIC_KEYED = 16  # static inputs (shapes, begin/size) at most this long are keyed by value


def _plannable(opdef, ctx: NodeCtx) -> bool:
    """Do the op's shape rule and kernel depend on nothing but its inputs' shapes and dtypes,
    its attrs and the values of its static inputs (all in the plan's key)? Not for random or
    stateful ops; not for ops with other integer inputs (indices, labels: left out, should an
    emitter read one); and not where the shape rule reads a float input's value (Range's
    bounds: its rule, asked again without those values, must give the same outputs)."""
    if opdef.stateful or opdef.draws_random or opdef.numpy is None:
        return False
    static = opdef.static_inputs
    if any(dt.is_integer and i not in static for i, dt in enumerate(ctx.in_dtypes)):
        return False
    blind = NodeCtx(ctx.type, ctx.attrs, ctx.in_shapes, ctx.in_dtypes,
                    [v if i in static else None for i, v in enumerate(ctx.in_values)],
                    ctx.name)
    try:
        outs = opdef.infer(blind)
    except (TypeError, ValueError):
        return False
    return [shape.dims for shape, _ in outs] == [shape.dims for shape in ctx.out_shapes] and \
        [dtype for _, dtype in outs] == ctx.out_dtypes


def _run(op_type, opdef, inputs, attrs, arrays, key=None) -> tuple:
    ctx = NodeCtx(op_type, attrs, [t._shape for t in inputs], [t.dtype for t in inputs], arrays,
                  op_type)
    try:
        outs = opdef.infer(ctx)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op_type} op at {_here()}: {e}") from None
    ctx.out_shapes = [shape for shape, _ in outs]
    ctx.out_dtypes = [dtype for _, dtype in outs]
    if any(dtype.is_string for dtype in ctx.out_dtypes):
        raise _no_strings(op_type)
    fn = None
    try:
        if opdef.draws_random:
            values = _random_kernel(opdef, ctx, arrays)
        else:
            fn = kernel(opdef, ctx)
            values = run_kernel(opdef, ctx, arrays, fn)
    except Exception as e:  # noqa: BLE001 - re-raised naming the op and the user's line
        raise InvalidArgumentError(None, None, f"{op_type} op at {_here()} failed: "
                                               f"{type(e).__name__}: {e}") from e
    view_of = inputs[0]._version if opdef.view else None  # a view shares its input's counter
    outputs = []
    for shape, dtype, value in zip(ctx.out_shapes, ctx.out_dtypes, values):
        if shape.dims != value.shape and not shape.is_compatible_with(value.shape):
            raise InternalError(None, None, f"{op_type}: the shape rule says {shape} but the "
                                            f"kernel made {value.shape}")
        outputs.append(make_tensor(value, dtype, view_of or [0]))
    if key is not None and _plannable(opdef, ctx):
        if len(_PLANS) >= PLAN_CACHE_SIZE:
            _PLANS.clear()
        _PLANS[key] = Plan(opdef, fn, ctx.out_dtypes, dict(attrs))
    return tuple(outputs)


def _no_strings(op_type) -> TypeError:
    return TypeError(f"{op_type} op at {_here()}: the dynamic mode has no string tensors (as "
                     "PyTorch has none); build string work into a graph and run it in a "
                     "Session")


def _here() -> str:
    return format_location(user_location())


def _foreign_input(op_type, i, t) -> Exception:
    kind = getattr(t, "name", type(t).__name__)
    return TypeError(f"input {i} of {op_type} ({_here()}) is {kind}, not a dynamic tensor: the "
                     "dynamic mode runs ops on dynamic tensors only (dy.tensor(...)); call "
                     "graph-API functions that make constants under dy.eager_mode(), and run "
                     "graph tensors in a Session")


# -- random ops ----------------------------------------------------------------------------------
class Generator:
    """A source of random numbers (PyTorch's `torch.Generator`): a NumPy generator, freshly
    seeded from the OS until `manual_seed`. `GENERATOR` is the one that dynamic-mode random
    ops draw from (`dy.manual_seed` seeds it); a DataLoader may be given its own.

    >>> g = dy.Generator().manual_seed(0)      # doctest: +SKIP
    """

    def __init__(self):
        self.rng = np.random.default_rng()

    def manual_seed(self, seed) -> Generator:
        """Seed this generator (any int: a negative seed is taken modulo 2**64, as PyTorch
        takes it); returns it."""
        self.rng = np.random.default_rng(int(seed) % (1 << 64))
        return self

    def __getitem__(self, op_name):  # the `R[name]` of a random op's NumPy expression
        return self.rng


GENERATOR = Generator()
_RANDOM_NAMESPACE = {**KERNEL_NAMESPACE, "np": np, "rt": runtime, "R": GENERATOR}
# (expression, arity) -> compiled function, least recently used first; bounded as the
# registry's kernels are: the shape is in the expression, so each new shape makes one.
_RANDOM_KERNELS: OrderedDict[tuple, Callable] = OrderedDict()


def _random_kernel(opdef, ctx, arrays) -> list:
    """Run a random op's emitter with `R[...]` bound to the dynamic mode's generator."""
    args = [f"a{i}" for i in range(len(arrays))]
    expr = render_numpy(opdef, args, ctx)
    key = (expr, len(args))
    # popped and put back, to be the most recently used: unlike get and move_to_end, this
    # cannot raise when another thread evicts the entry in between
    fn = _RANDOM_KERNELS.pop(key, None)
    if fn is None:
        fn = eval(f"lambda {', '.join(args)}: {expr}", _RANDOM_NAMESPACE)  # noqa: S307
    _RANDOM_KERNELS[key] = fn
    while len(_RANDOM_KERNELS) > KERNEL_CACHE_SIZE:
        _RANDOM_KERNELS.popitem(last=False)
    return [np.asarray(fn(*arrays), dtype=ctx.out_dtypes[0].np)]
