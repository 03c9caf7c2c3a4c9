"""Running one op at once: what `create_operation` does for the eager context.

The same three steps as building a graph node, then one more:
1. the op's shape rule (`OpDef.infer`), so a bad input fails at the user's line with the
   graph side's message;
2. its kernel (`kernels.run_kernel`: the op's NumPy expression, compiled once per text), on
   the inputs' arrays;
3. the outputs as dynamic tensors;
4. a tape node, when grad mode is on and some input requires grad (see `tape.py`); and the
   op handed to the tracer while `trace` records.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from .. import runtime
from ..errors import InternalError, InvalidArgumentError, format_location, user_location
from ..graph import get_default_graph
from ..ops.attr_types import check_attrs
from ..ops.kernels import KERNEL_CACHE_SIZE, KERNEL_NAMESPACE, render_numpy, run_kernel
from ..ops.table import REGISTRY, NodeCtx, check_arity, get_opdef
from . import tape
from .mode import STATE
from .tensor import Tensor


class Ran:
    """What `create_operation` returns for an op that ran: its outputs."""

    __slots__ = ("outputs",)

    def __init__(self, outputs):
        self.outputs = outputs


def run_operation(op_type: str, inputs, attrs: dict) -> Ran:
    """Run op `op_type` on dynamic tensors `inputs`; record it if gradients need it."""
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
        outputs = _run(op_type, opdef, inputs, attrs, arrays)
        if STATE.grad_enabled:
            for t in inputs:
                if t._requires_grad:
                    if _override(attrs, op_type) or opdef.differentiable:
                        tape.record(op_type, opdef, inputs, attrs, outputs)
                    break
    if STATE.tracer is not None:
        STATE.tracer.record(op_type, inputs, attrs, outputs)
    return Ran(outputs)


def _run(op_type, opdef, inputs, attrs, arrays) -> tuple:
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
    try:
        values = _random_kernel(opdef, ctx, arrays) if opdef.draws_random else \
            run_kernel(opdef, ctx, arrays)
    except Exception as e:  # noqa: BLE001 - re-raised naming the op and the user's line
        raise InvalidArgumentError(None, None, f"{op_type} op at {_here()} failed: "
                                               f"{type(e).__name__}: {e}") from e
    version = inputs[0]._version if opdef.view else None  # a view shares its input's counter
    outputs = []
    for shape, dtype, value in zip(ctx.out_shapes, ctx.out_dtypes, values):
        if shape.dims != value.shape and not shape.is_compatible_with(value.shape):
            raise InternalError(None, None, f"{op_type}: the shape rule says {shape} but the "
                                            f"kernel made {value.shape}")
        outputs.append(Tensor._make(value, dtype, version))
    return tuple(outputs)


def _no_strings(op_type) -> TypeError:
    return TypeError(f"{op_type} op at {_here()}: the dynamic mode has no string tensors (as "
                     "PyTorch has none); build string work into a graph and run it in a "
                     "Session")


def _override(attrs: dict, op_type: str) -> bool:
    """Apply a `gradient_override_map` of the default graph; whether the op has a gradient."""
    override = get_default_graph()._thread.override_map.get(op_type)
    if override is not None:
        attrs["_gradient_op_type"] = override
    return "_gradient_op_type" in attrs


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
