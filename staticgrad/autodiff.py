"""Symbolic reverse-mode differentiation: `gradients(ys, xs)` adds gradient nodes to the graph.

The walk:
1. keep the ops that lie on a path from some x to some y;
2. seed each y with `grad_ys` (default: ones of y's shape, known at run time if need be);
3. visit those ops in reverse creation order; sum each output's incoming gradients once
   (`add_n`), call the op's gradient rule, check it returned one gradient per input with the
   input's dtype and shape, and sum a broadcast input's gradient back to its shape (this
   per-op step, `backward_step`, is shared with the dynamic mode's tape);
4. read off the summed gradient of each x.

Rules are written with the graph API (see `ops/`), so gradients of gradients need nothing
more. The walk is iterative and linear in the number of ops visited.
"""

from __future__ import annotations

import contextlib

from .errors import format_location, is_package_code, pinned_location, user_location
from .gcpause import paused_gc
from .graph import Operation, Tensor
from .ops import math_ops as M
from .ops.array_ops import ones_like, reshape, shape_of, sum_to, zeros_like
from .ops.attr_types import ABSENT, InProcess, Int
from .ops.conversion import convert_to_tensor
from .ops.creation import apply, run_rule
from .ops.indexed_slices import IndexedSlices, to_dense
from .ops.join_ops import concat, stack
from .ops.table import register
from .variables import Variable

_REGISTERED: dict[str, object] = {}  # gradient name -> rule, or None for "not differentiable"
_NOT_DIFFERENTIABLE = object()


class RegisterGradient:
    """Decorator registering a gradient rule under a name, for `gradient_override_map`.

    >>> @RegisterGradient("ClipGrad")               # doctest: +SKIP
    ... def _clip_grad(op, grad):
    ...     return [sg.clip_by_value(grad, -1.0, 1.0)]
    """

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("RegisterGradient takes the gradient's name as a string")
        self._op_type = op_type

    def __call__(self, fn):
        _check_new_gradient_name(self._op_type)
        _REGISTERED[self._op_type] = fn
        return fn


def _check_new_gradient_name(name: str) -> None:
    """A gradient name may be registered once, and never over a built-in op's own rule (use
    gradient_override_map to change one op's gradient)."""
    from .ops.table import REGISTRY
    if name in _REGISTERED or (name in REGISTRY and REGISTRY[name].grad is not None):
        raise KeyError(f"a gradient for {name!r} is already registered; register a new name "
                       "and select it with graph.gradient_override_map")


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TF1's name
    """Declare that ops of `op_type` have no gradient (differentiating through gives None)."""
    _check_new_gradient_name(op_type)
    _REGISTERED[op_type] = _NOT_DIFFERENTIABLE


NoGradient = NotDifferentiable


def _rule_for(op: Operation):
    """(rule or None, is_differentiable) for an op, honouring gradient_override_map."""
    opdef, attrs = op.opdef, op.attrs
    if opdef.grad is not None and not (attrs and "_gradient_op_type" in attrs):
        return opdef.grad, opdef.differentiable  # (no name can be registered over it)
    name = attrs.get("_gradient_op_type", op.type)
    if name in _REGISTERED:
        rule = _REGISTERED[name]
        return (None, False) if rule is _NOT_DIFFERENTIABLE else (rule, True)
    if name != op.type:
        raise LookupError(f"gradient {name!r} (overriding {op.where()}) is not registered; "
                          "use @sg.RegisterGradient(name)")
    return op.opdef.grad, op.opdef.differentiable


def _as_tensors(values, what: str) -> list[Tensor]:
    items = values if isinstance(values, list | tuple) else [values]
    out = []
    for v in items:
        if isinstance(v, Variable):
            v = v._tensor
        if not isinstance(v, Tensor):
            raise TypeError(f"{what} must be tensors or variables, got {v!r}")
        out.append(v)
    return out


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients="none"):
    """Symbolic d(sum of ys)/d(x) for each x in xs, as new graph nodes (TF1 semantics).

    `grad_ys` weights each y (the vector of a vector-Jacobian product). The result is aligned
    with xs: None where no path connects (or zeros with unconnected_gradients="zero").

    A gradient that is zero except on some rows (that of a gather along axis 0, an embedding
    lookup) is an `IndexedSlices`, as in TF1 (ops/indexed_slices.py).

    >>> dw, = sg.gradients(loss, [w])      # doctest: +SKIP
    """
    return _gradients(ys, xs, grad_ys, name, stop_gradients, unconnected_gradients, True)


def dense_gradients(ys, xs, grad_ys=None, name="gradients", stop_gradients=None,
                    unconnected_gradients="none"):
    """`gradients`, each a tensor (an IndexedSlices made dense): what the compiler's own
    derivations (a loop's gradient, a Jacobian) build on."""
    return _gradients(ys, xs, grad_ys, name, stop_gradients, unconnected_gradients, False)


def _gradients(ys, xs, grad_ys, name, stop_gradients, unconnected_gradients, sparse: bool):
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(f"unconnected_gradients must be 'none' or 'zero', "
                         f"got {unconnected_gradients!r}")
    ys = _as_tensors(ys, "ys")
    xs = _as_tensors(xs, "xs")
    stops = set(_as_tensors(stop_gradients, "stop_gradients")) if stop_gradients else set()
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    elif not isinstance(grad_ys, list | tuple) or (len(ys) == 1 and len(grad_ys) != 1):
        grad_ys = [grad_ys]  # one y: a list of numbers is its one grad_ys vector
    if len(grad_ys) != len(ys):
        raise ValueError(f"got {len(grad_ys)} grad_ys for {len(ys)} ys")
    graph = ys[0].graph
    if graph.eager:
        raise TypeError("sg.gradients builds gradient nodes into a graph, but these are dynamic "
                        "tensors: use staticgrad.dynamic.grad(ys, xs) or ys.backward()")
    capture = getattr(graph, "capture", None)  # (ys in a cond's branch: see below)
    for i, t in enumerate(xs):
        if t.graph is not graph and capture is not None:
            # a tensor of a graph around the branch: what the branch reads of it
            inner = capture(t)
            xs[i] = inner if inner is not None else t
    for t in ys + xs:
        if t.graph is not graph:
            raise ValueError(f"{t.name} (made by {t.op.where()}) is from another graph than "
                             f"{ys[0].name}")

    with graph.as_default(), graph.name_scope(name), paused_gc(), \
            pinned_location(user_location()):
        relevant = _between(xs, ys, stops)
        xs_set = set(xs)
        grads: dict[Tensor, list[Tensor]] = {}
        for y, gy in zip(ys, grad_ys):
            if gy is None:
                if not y.dtype.is_floating:
                    continue
                gy = ones_like(y, name=f"grad_ys_{ys.index(y)}")
            else:
                gy = convert_to_tensor(gy, dtype=y.dtype)
                if not gy.shape.is_compatible_with(y.shape):
                    raise ValueError(f"grad_ys for {y.name} has shape {gy.shape}, but "
                                     f"{y.name} has shape {y.shape} (gradients called at "
                                     f"{format_location(user_location())})")
            grads.setdefault(y, []).append(gy)

        thread = graph._thread
        for op in sorted(relevant, key=lambda o: o._id, reverse=True):
            # (once per op of the forward graph: one output, the common case, without loops)
            if len(op.outputs) == 1:
                t = op.outputs[0]
                g = None if stops and t in stops else _sum(grads.get(t))
                if g is None:
                    continue
                out_grads = [g if type(g) is Tensor else _dense(g)]
            else:
                out_grads = [None if t in stops else _dense(_sum(grads.get(t)))
                             for t in op.outputs]
                if all([g is None for g in out_grads]):
                    continue
            # only inputs that lead back to an x need a gradient (not x * 1.0001's constant)
            wanted = [t in xs_set or t.op in relevant for t in op.inputs]
            # the rule's nodes go in the scope "<op name>_grad" (what graph.name_scope does,
            # without its context manager: the op's name is a valid scope name already)
            outer = thread.name_stack
            thread.name_stack = graph.unique_name(f"{op.name}_grad")
            try:
                in_grads = backward_step(op, out_grads, None, wanted, sparse)
            finally:
                thread.name_stack = outer
            if in_grads is None:
                continue
            for x, g in zip(op.inputs, in_grads):
                if g is not None and x.dtype.is_floating:
                    parts = grads.get(x)
                    if parts is None:
                        grads[x] = [g]
                    else:
                        parts.append(g)

        result = []
        for x in xs:
            g = _sum(grads.get(x))
            if g is None and unconnected_gradients == "zero":
                g = zeros_like(x)
            result.append(g)
        return result


_NO_CONTEXT = contextlib.nullcontext()  # reusable: it holds no state


def backward_step(op, out_grads: list, scope=None, wanted=None,
                  sparse: bool = False) -> list | None:
    """One op's step of a reverse pass: its gradient rule applied to the gradients of its
    outputs, checked and with broadcasting summed away (`_checked`); None if the op is not
    differentiable. `scope` (a context manager) is entered around the rule; `wanted` (one
    bool per input) may name the inputs whose gradients are needed, the others giving None.

    Shared by `gradients` (op: a graph Operation, building nodes) and the dynamic mode's tape
    (op: a recorded node, run at once), so both use the same rules and checks. A rule's
    IndexedSlices stays one with `sparse`, else it is made dense.
    """
    rule, differentiable = _rule_for(op)
    if not differentiable:
        return None
    if rule is None:
        raise LookupError(f"no gradient is defined for {op.where()}")
    if op.n_outputs > 1 and not op.opdef.grad_takes_none:
        out_grads = [g if g is not None else zeros_like(t) for g, t in zip(out_grads, op.outputs)]
    # a rule of the user's own: its nodes point at its lines, not at the gradients() call;
    # and it is not told which gradients are wanted (see creation.wants), so that a rule
    # wrapping a built-in one (op.opdef.grad) gets every gradient from it
    if _is_own(op.opdef, rule):
        if scope is None:
            return _checked(op, run_rule(rule, op, out_grads, wanted), wanted, sparse)
        with scope:
            return _checked(op, run_rule(rule, op, out_grads, wanted), wanted, sparse)
    with scope if scope is not None else _NO_CONTEXT, pinned_location(None):
        return _checked(op, run_rule(rule, op, out_grads, None), wanted, sparse)


_OWN: dict = {}  # op type -> (its rule, is_package_code(rule)), asked once per op run


def _is_own(opdef, rule) -> bool:
    """is_package_code(rule), remembered for the op type's own rule."""
    known = _OWN.get(opdef.type)
    if known is None or known[0] is not rule:
        known = (rule, is_package_code(rule))
        if rule is opdef.grad:
            _OWN[opdef.type] = known
    return known[1]


def _sum(parts):
    """Several gradients into one tensor are summed once, by one AddN node; the list is
    replaced by the sum so that a second read reuses it. IndexedSlices alone add up to one
    IndexedSlices (their rows and indices joined, as TF1's); beside a dense gradient, they
    are made dense."""
    if not parts:
        return None
    if len(parts) > 1:
        if all(type(p) is IndexedSlices for p in parts):
            parts[:] = [IndexedSlices(concat([p.values for p in parts], 0),
                                      concat([p.indices for p in parts], 0),
                                      parts[0].dense_shape)]
        else:
            parts[:] = [M.add_n([_dense(p) for p in parts])]
    return parts[0]


def _dense(g):
    """g as a tensor: an IndexedSlices made dense (without TF1's warning: the reverse pass
    itself asks for it), anything else as it is."""
    return to_dense(g, warn=False) if type(g) is IndexedSlices else g


def _checked(op: Operation, in_grads: list, wanted=None, sparse: bool = False) -> list:
    """Verify a rule's result: one gradient per input, each with the input's dtype and a
    shape compatible with it (after summing away broadcasting)."""
    inputs = op.inputs
    if len(in_grads) != len(inputs):
        raise ValueError(f"the gradient rule of {op.where()} returned {len(in_grads)} "
                         f"gradients for {len(inputs)} inputs")
    out = []
    broadcasts = op.opdef.broadcasts
    for i, (x, g) in enumerate(zip(inputs, in_grads)):
        if g is None or (wanted is not None and not wanted[i]) or not x.dtype.is_floating:
            out.append(None)
            continue
        if type(g) is IndexedSlices:
            if g.dtype is not x.dtype:
                raise TypeError(f"the gradient rule of {op.where()} returned {g!r} of dtype "
                                f"{g.dtype.name} for input {i} of dtype {x.dtype.name}")
            if sparse:
                out.append(g)
                continue
            g = to_dense(g, warn=False)
        if type(g) is not Tensor and not isinstance(g, Tensor):  # (a dynamic tensor is one)
            g = convert_to_tensor(g, dtype_hint=x.dtype)
        dims, g_dims = x._shape.dims, g._shape.dims
        # equal, fully known shapes: provably not broadcast
        if broadcasts and (dims is None or g_dims != dims or None in dims) \
                and _may_be_broadcast(op, x, g):
            g = sum_to(g, shape_of(x))
            g_dims = g._shape.dims
        if g.dtype is not x.dtype:
            raise TypeError(f"the gradient rule of {op.where()} returned a {g.dtype.name} "
                            f"gradient for input {i} of dtype {x.dtype.name}")
        if g_dims != dims:  # (equal dims: compatible, and nothing to add)
            if not g._shape.is_compatible_with(x._shape):
                raise ValueError(f"the gradient rule of {op.where()} returned a gradient of "
                                 f"shape {g.shape} for input {i} of shape {x.shape}")
            g.set_shape(x._shape)  # keep what is known statically, e.g. (?, 3) not (?, ?)
        out.append(g)
    return out


def _may_be_broadcast(op: Operation, x: Tensor, g: Tensor) -> bool:
    """Could x have been broadcast to g's shape in op? Only then is a SumTo node needed.

    Provably not when the shapes are equal and fully known, or when every dim of x that is
    unknown is one that no other input of op could have broadcast it along (the others lack
    that dim or have it known as 1). Trailing `core_dims` (matmul's matrices) never broadcast.
    """
    xd, gd = x.shape.dims, g.shape.dims
    if xd is None or gd is None or len(xd) != len(gd):
        return True
    batch = len(xd) - op.opdef.core_dims
    for i, (a, b) in enumerate(zip(xd, gd)):
        if i >= batch:
            continue
        if a is not None and b is not None:
            if a != b:
                return True
            continue
        if a == 1:
            return True
        for other in op.inputs:
            od = other.shape.dims
            if other is x:
                continue
            if od is None:
                return True
            j = i - (len(xd) - len(od))  # the same dim of `other`, aligned from the right
            if 0 <= j < len(od) - op.opdef.core_dims and od[j] != 1:
                return True
    return False


def _between(xs, ys, stops) -> set:
    """Ops on some path from an x to a y (not passing through a stop tensor's producer): the
    ops reachable from an x, then those of them from which a y is reachable (every op on
    such a path is reachable from the x, so the second walk stays among the first's)."""
    from_x, stack_ = set(), []
    for t in xs:
        _push_readers(stack_, t)
    while stack_:
        op = stack_.pop()
        if op in from_x:
            continue
        from_x.add(op)
        for t in op.outputs:
            _push_readers(stack_, t)
    between, stack_ = set(), [y.op for y in ys if y not in stops]
    while stack_:
        op = stack_.pop()
        if op in between or op not in from_x:
            continue
        between.add(op)
        if stops:
            stack_.extend([t.op for t in op.inputs if t not in stops])
        else:
            stack_.extend([t.op for t in op.inputs])
    return between


def _push_readers(stack: list, t: Tensor) -> None:
    """Push the ops that read t (Tensor._consumers: None, one op, or a list)."""
    readers = t._consumers
    if readers is None:
        return
    if type(readers) is list:
        stack.extend(readers)
    else:
        stack.append(readers)


# -- derived helpers ------------------------------------------------------------------------------
def jacobian(y, x, name="jacobian"):
    """d y / d x as a tensor of shape y.shape + x.shape (both shapes must be fully known)."""
    y, x = _as_tensors(y, "y")[0], _as_tensors(x, "x")[0]
    if not (y.shape.is_fully_defined() and x.shape.is_fully_defined()):
        raise ValueError(f"jacobian needs fully known shapes, got y {y.shape} and x {x.shape}")
    n = y.shape.num_elements()
    with y.graph.name_scope(name):
        flat = reshape(y, [n])
        rows = [dense_gradients(flat[i], x, unconnected_gradients="zero")[0]
                for i in range(n)]
        return reshape(stack(rows), list(y.shape.dims) + list(x.shape.dims))


def hessians(ys, xs, name="hessians", colocate_gradients_with_ops=False, gate_gradients=False,
             aggregation_method=None):
    """For each x, the Hessian of sum(ys): shape x.shape + x.shape."""
    xs = _as_tensors(xs, "xs")
    grads = dense_gradients(ys, xs, unconnected_gradients="zero")
    with xs[0].graph.name_scope(name):
        return [jacobian(g, x) for g, x in zip(grads, xs)]


# -- custom gradients -----------------------------------------------------------------------------
def _variable_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, Variable) for v in value)


def _custom_infer(ctx):
    n = ctx.attrs["n_out"]
    if n > len(ctx.in_shapes):
        raise ValueError(f"n_out {n} is more than the op's {len(ctx.in_shapes)} inputs")
    return list(zip(ctx.in_shapes[-n:], ctx.in_dtypes[-n:]))


def _custom_numpy(args, ctx):
    n = ctx.attrs["n_out"]
    return args[-1] if n == 1 else "(" + ", ".join(args[-n:]) + ",)"


def _custom_grad(op, *grads):
    with pinned_location(None):  # grad_fn is the user's: its nodes point at its lines
        return _custom_grad_of(op, *grads)


def _custom_grad_of(op, *grads):
    n, variables = op.attrs["n_out"], op.attrs["variables"]
    n_in = len(op.inputs) - n - len(variables)
    if variables:
        result, var_grads = op.attrs["grad_fn"](*grads, variables=variables)
        var_grads = list(var_grads)
        if len(var_grads) != len(variables):
            raise ValueError(f"the grad_fn of custom_gradient {op.where()} returned "
                             f"{len(var_grads)} variable gradients for {len(variables)} "
                             "variables")
    else:
        result, var_grads = op.attrs["grad_fn"](*grads), []
    result = list(result) if isinstance(result, list | tuple) else [result]
    if len(result) != n_in:
        raise ValueError(f"the grad_fn of custom_gradient {op.where()} returned "
                         f"{len(result)} gradients for {n_in} inputs")
    return result + var_grads + [None] * n


register("CustomGradient", _custom_infer, _custom_numpy, _custom_grad, saves=(), view=True,
         attrs={"n_out": Int(lo=1),
                "grad_fn": InProcess("a Python function", callable, example=print),
                "variables": InProcess("a list of variables", _variable_list, example=[]),
                # a dynamic-mode autograd.Function's class name (its backward's name)
                "function": InProcess("a class name (a str)", lambda v: type(v) is str,
                                      example="Square", default=ABSENT)},
         doc="Identity on a custom_gradient function's outputs; its rule calls the user's "
             "grad_fn and stops gradients into the function's inner computation.", arity=(1, None))


def custom_gradient(f):
    """Decorator: `f(*xs)` returns `(y, grad_fn)`; gradients of y use `grad_fn(dy)` (which
    returns one gradient per x) instead of differentiating f's body.

    >>> @sg.custom_gradient                      # doctest: +SKIP
    ... def log1pexp(x):
    ...     e = sg.exp(x)
    ...     return sg.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))
    """
    def wrapped(*args):
        xs = [convert_to_tensor(a) for a in args]
        y, grad_fn = f(*xs)
        outs = _as_tensors(y, "custom_gradient outputs")
        variables = _variables_between(xs, outs)
        if variables and not _accepts_variables(grad_fn):
            names = ", ".join(v.name for v in variables)
            raise TypeError(f"custom_gradient function {getattr(f, '__name__', f)!r} uses the "
                            f"variables {names}: its grad_fn must accept a `variables` keyword "
                            "and return (gradients of the inputs, gradients of the variables)")
        result = apply("CustomGradient", xs + [v._tensor for v in variables] + outs,
                       {"n_out": len(outs), "grad_fn": grad_fn, "variables": variables},
                       name="CustomGradient")
        return list(result) if isinstance(y, list | tuple) else result[0]
    wrapped.__name__ = getattr(f, "__name__", "custom_gradient")
    wrapped.__doc__ = f.__doc__
    return wrapped


def _variables_between(xs, outs) -> list[Variable]:
    """The trainable variables that `outs` read, other than through `xs`."""
    graph = outs[0].graph
    stop = set(xs)
    seen, stack, found = set(), [t.op for t in outs if t not in stop], set()
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "VariableV2":
            found.add(op.outputs[0])
        stack.extend(t.op for t in op.inputs if t not in stop)
    return [v for v in graph.get_collection("trainable_variables") if v._tensor in found]


def _accepts_variables(fn) -> bool:
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "variables" or p.kind is p.VAR_KEYWORD for p in params)
