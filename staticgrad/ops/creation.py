"""Making operations: `create_operation` (what Graph.create_op runs), `apply`/`apply1`, and
the gradient-rule helpers that say which inputs' gradients are wanted."""

from __future__ import annotations

import threading

from ..errors import format_location, user_location
from ..graph import Graph, Operation, Tensor, check_op_name, get_default_graph
from ..shapes import shared as shared_shape
from .attr_types import check_attrs
from .kernels import STATIC_SOURCES, fold_static
from .table import REGISTRY, NodeCtx, check_arity, get_opdef

# -- gradient rules: which inputs' gradients are wanted -----------------------------------------

class _RuleState(threading.local):
    running = None  # (op, wanted) while that op's gradient rule runs (a plain read, no getattr)


_rule = _RuleState()


def wants(op, i: int) -> bool:
    """Inside one of staticgrad's own gradient rules for op: is the gradient of its input i
    needed? (TF's `op.skip_input_indices`.) `sg.gradients` needs only the inputs on a path
    from an x, the dynamic mode's backward only those that require a gradient, so a rule that
    checks builds nothing for the other side of `x * 1.0001`, `x ** 2` or
    `matmul(features, w)`: nodes the compiler would prune, made for nothing. True outside a
    rule, and in a rule of the user's (RegisterGradient, custom_gradient), which is told
    nothing: a user's rule may call a built-in one and use every gradient it returns."""
    running = _rule.running
    return running is None or running[0] is not op or running[1][i]


def run_rule(rule, op, out_grads, wanted) -> list:
    """rule(op, *out_grads), with `wanted` (one bool per input, or None) for `wants`."""
    before = _rule.running
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
    if opdef.internal:
        raise ValueError(f"{op_type} ops are made only by the compiler's passes; a graph "
                         f"cannot hold one (at {format_location(user_location())})")
    for i, t in enumerate(inputs):
        if type(t) is not Tensor and not isinstance(t, Tensor):
            raise TypeError(f"input {i} of {op_type} must be a Tensor, got {type(t).__name__}")
        if t.op.graph is not graph:
            # a branch of a cond reads a tensor of an enclosing graph: through a placeholder
            captured = graph.capture(t) if hasattr(graph, "capture") else None
            if captured is not None:
                inputs = [*inputs[:i], captured, *inputs[i + 1:]]
                continue
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
    thread = graph._thread  # (a thread-local: read once)
    override = thread.override_map.get(op_type)
    if override is not None:
        attrs = {**attrs, "_gradient_op_type": override}  # (not the caller's dict)
    # (the walk to the user's frame starts at this one's caller: this frame is never it)
    op = Operation(graph, op_type, name, inputs, attrs,
                   graph._current_control_inputs() if thread.control_stack else (),
                   user_location(skip_frames=1), opdef)
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
        op.outputs = (Tensor(op, 0, dt, shared_shape(shape)),)
    else:
        op.outputs = tuple([Tensor(op, i, dt, shared_shape(shape))
                            for i, (shape, dt) in enumerate(outs)])
    # most ops read a value known only at run time: then nothing is folded (fold_static's
    # first test, without the call), and the ctx's outputs, which only folding reads, are
    # not filled in
    for v in in_values:
        if v is None and not (opdef.static_inputs or opdef.shape_inputs
                              or op_type in STATIC_SOURCES):
            break
    else:
        ctx.out_shapes = [shape for shape, _ in outs]
        ctx.out_dtypes = [dt for _, dt in outs]
        values = fold_static(opdef, ctx)
        if values is not None:
            for t, v in zip(op.outputs, values):
                t._static = v
    if thread.device_stack:  # (a device function sees the finished op, as in TF1)
        graph._apply_device(op)
    graph._add_op(op)
    return op


Graph._create_operation = create_operation  # Graph.create_op (the graph layer is below this)


# how many branch graphs (control_flow.BranchGraph) are the default graph of some thread
BRANCHES_OPEN = [0]


def apply(op_type: str, inputs: list, attrs=None, name=None, graph=None):
    """Create an op on the graph of its inputs (or the default graph); return its outputs."""
    if graph is None:
        graph = _graph_for(inputs)
    # (each op its own attrs dict: a shared empty one was written into through op.attrs)
    return create_operation(graph, op_type, inputs, dict(attrs or {}), name).outputs


def apply1(op_type: str, inputs: list, attrs=None, name=None, graph=None) -> Tensor:
    """`apply`'s first output. (Its own call of create_operation, not apply's: nearly every
    op is made through here, and each frame between the user's and create_operation's is
    one more step of the walk to the user's line.)"""
    if graph is None:
        graph = _graph_for(inputs)
    return create_operation(graph, op_type, inputs, dict(attrs or {}), name).outputs[0]


def _graph_for(inputs: list):
    """The graph an op of these inputs goes to: theirs, or the default graph."""
    graph = inputs[0].graph if inputs else get_default_graph()
    if BRANCHES_OPEN[0] and inputs:  # a cond's branch function is building its branch:
        default = get_default_graph()  # ops go there, reading the graph around it
        if default is not graph and hasattr(default, "capture"):
            graph = default
    return graph
