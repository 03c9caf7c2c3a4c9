"""`while_loop`: the While op, holding a condition and a body (branches.py), run as a loop.

    i, total = sg.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + x), [0, 0.0])

`cond` and `body` are each called once, while the graph is built, on placeholders standing
for the loop variables (the values of one iteration); the NumPy backend writes their lines
inside a Python `while` loop. Tensors of the graph around the
loop that they read are captured as inputs of the While op, read once, before the loop.

Shapes: a loop variable keeps its shape from one iteration to the next unless its entry in
`shape_invariants` says which dims may change (TF1's rule); the sub-graphs are compiled for
the invariant shape, so an unknown dim there reaches the generated code as unknown.

`maximum_iterations` adds a counter as the first loop variable, as TF1 does: the loop stops
when the counter reaches it, whatever `cond` says.

Gradients: the gradient of a While is a WhileGrad op, holding the condition, the body and
the body's gradient (built by differentiating a copy of the body). It runs the loop again
from the While's inputs, keeping each iteration's loop variables in a list (memory grows
with the iterations actually run), then runs the body's gradient over them in reverse
order, summing the gradients of the captured tensors (an RNN's weights) over iterations.
Recomputing the forward loop keeps each sub-graph closed, as a cond's gradient does.
Second derivatives (Hessian-vector products) need `maximum_iterations` given as a number:
the WhileGrad's own gradient then writes the loop as a Scan of that many steps, each an If
that runs the body while the condition holds (scan.py), and differentiates that (memory for
that many iterations, allocated once). Without it, differentiating a WhileGrad raises
LookupError naming it.

`parallel_iterations` and `swap_memory` are accepted, as TF1's, and change nothing here:
iterations run one after another in the session's thread (the body's own NumPy calls
use the cores as they do outside a loop), and the kept iterations stay in host memory.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..autodiff import dense_gradients as gradients
from ..errors import format_location, user_location
from ..graph import Operation, Tensor, get_default_graph, name_scope
from ..ops.array_ops import zeros_like
from ..ops.attr_types import Int, Ints
from ..ops.conversion import convert_to_tensor
from ..ops.creation import apply
from ..ops.math_ops import stop_gradient
from ..ops.table import register
from ..shapes import TensorShape
from . import structure as nest
from .branches import (
    BRANCH,
    Branch,
    BranchGraph,
    branch_tensor,
    check_loop_options,
    check_stateless,
    copy_branch,
    eager_graph,
    encloses,
    leaf_tensor,
    placeholder,
    signature,
    signature_of,
)
from .scan_build import make_scan
from .tensor_array import TensorArray

# -- the While op -------------------------------------------------------------------------------
_MAX_STEPS = 2 ** 31 - 1  # a maximum_iterations known as a number (a loop's int32 counter)

def _loop_shapes(attrs, in_shapes, loose: bool = False, fed: bool = False) -> list[TensorShape]:
    """The shape of each loop variable within the loop: its entry shape, or its declared
    invariant (the body's placeholder) where `relaxed` names it. `fed` (specializing to the
    feeds' shapes): every one's entry shape, which stands where the body keeps it. `loose`:
    every one's shape as the graph declares it within the loop (the body's placeholder), as
    TF1 takes a loop variable's static shape for its invariant: what specialization falls
    back to when a loop variable's concrete shape changes from one iteration to the next."""
    body, relaxed = attrs["body"], attrs["relaxed"]
    n = attrs["loop_vars"]
    if fed and not loose:
        return list(in_shapes[:n])
    return [body.inputs[i].shape if loose or i in relaxed else in_shapes[i] for i in range(n)]


def _check_counts(attrs, n_inputs: int) -> None:
    """The attrs agree with the inputs (a graph file's may not)."""
    n = attrs["loop_vars"]
    if n > n_inputs:
        raise ValueError(f"loop_vars says {n} loop variables, but it has {n_inputs} inputs")
    relaxed = list(attrs["relaxed"])
    if relaxed != sorted(set(relaxed)) or any(not 0 <= i < n for i in relaxed):
        raise ValueError(f"relaxed {tuple(relaxed)} must name loop variables 0 to {n - 1} "
                         "once each, in order")


def _check_results(body: Branch, cond: Branch, dtypes) -> None:
    """The body gives the loop variables' dtypes, the condition a bool scalar."""
    got = [t.dtype for t in body.outputs]
    if got != list(dtypes):
        raise ValueError(f"its body gives {[d.name for d in got]} for loop variables of "
                         f"{[d.name for d in dtypes]}")
    (going,) = cond.outputs
    if going.dtype is not _dt.bool_ or going.shape.ndims not in (None, 0):
        raise ValueError(f"its cond gives {going.dtype.name}{going.shape}, not a bool scalar")


def _while_infer(ctx):
    n, body, cond = ctx.attrs["loop_vars"], ctx.attrs["body"], ctx.attrs["cond"]
    _check_counts(ctx.attrs, len(ctx.in_shapes))
    given = list(zip(ctx.in_shapes, ctx.in_dtypes))
    for label, b in (("cond", cond), ("body", body)):
        if len(given) != len(b.inputs) or any(d is not p.dtype or not s.is_compatible_with(
                p.shape) for (s, d), p in zip(given, b.inputs)):
            raise ValueError(f"its {label} takes {signature(b.inputs)}, but its inputs are "
                             f"{signature_of(given)}")
    if len(body.outputs) != n or len(cond.outputs) != 1:
        raise ValueError(f"its body gives {len(body.outputs)} values for {n} loop variables")
    _check_results(body, cond, ctx.in_dtypes[:n])
    return [(s, d) for s, (_, d) in zip(_loop_shapes(ctx.attrs, ctx.in_shapes), given)]


def _while_region_feeds(attrs, in_shapes, in_values, loose=False):
    """The loop variables at their shapes within the loop, with no static value (each
    iteration has its own); the captured tensors as they are."""
    n = attrs["loop_vars"]
    shapes = _loop_shapes(attrs, in_shapes, loose, fed=True)
    for i, s in enumerate(shapes):
        if s.dims is None:
            raise ValueError(f"loop variable {i} changes shape from one iteration to the next, "
                             "and its shape invariant does not say its rank; give it one of "
                             "known rank in shape_invariants")
    given = [(s, None) for s in shapes] + \
        list(zip(in_shapes[n:], in_values[n:]))
    return [given, given]


def _check_kept_shape(i: int, entry: TensorShape, after: TensorShape, fixed: bool) -> None:
    """ValueError unless loop variable i, entering with shape `entry`, may have shape `after`
    after one iteration: a compatible one, the same one where `entry` is fully known and
    `fixed` (no shape invariant relaxes it), as TF1 checks. (While building the loop and
    again for the fed shapes.)"""
    if not after.is_compatible_with(entry) or (
            fixed and entry.is_fully_defined() and after.dims != entry.dims):
        raise ValueError(f"loop variable {i} enters the loop with shape {entry}, but has "
                         f"shape {after} after one iteration; to let its shape change, "
                         "give while_loop a less specific shape for it in shape_invariants")


def _check_body_shapes(attrs, loop_shapes, body_shapes, loose: bool) -> None:
    """For the fed shapes: each loop variable keeps its shape, a relaxed one dim for dim,
    unknown dims included (when it does not, the loop is specialized again, `loose`);
    loosely, within its invariant."""
    for i, (entry, after) in enumerate(zip(loop_shapes, body_shapes)):
        if not loose and i in attrs["relaxed"] and after.dims != entry.dims:
            raise ValueError(f"loop variable {i} enters the loop with shape {entry}, but has "
                             f"shape {after} after one iteration")
        _check_kept_shape(i, entry, after, not loose and i not in attrs["relaxed"])


def _while_region_results(attrs, in_shapes, results, loose=False):
    loop_shapes = _loop_shapes(attrs, in_shapes, loose, fed=True)
    _check_body_shapes(attrs, loop_shapes, results[1], loose)
    return loop_shapes


def _while_grad(op: Operation, *grads):
    """A WhileGrad op: the loop again, then the body's gradient backwards (module docstring)."""
    n = op.attrs["loop_vars"]
    body = op.attrs["body"]
    ins = list(op.inputs)
    wanted_vars = tuple(i for i in range(n) if ins[i].dtype.is_floating)
    wanted_caps = tuple(j for j in range(n, len(ins)) if ins[j].dtype.is_floating)
    if not wanted_vars or not any(grads[i] is not None for i in wanted_vars):
        return [None] * len(ins)
    seeds = [grads[i] if grads[i] is not None else zeros_like(op.outputs[i])
             for i in wanted_vars]
    g = BranchGraph(get_default_graph(), "the gradient of the body", body.graph.where)
    with g.as_default():
        params = [placeholder(p.dtype, p.shape, f"grad_in_{k}")
                  for k, p in enumerate(body.inputs)]
        upstream = [placeholder(body.inputs[i].dtype, body.inputs[i].shape, f"grad_of_{i}")
                    for i in wanted_vars]
        copied = copy_branch(body, params)
        xs = [params[i] for i in wanted_vars + wanted_caps]
        dxs = gradients([copied[i] for i in wanted_vars], xs, grad_ys=upstream)
        k = len(wanted_vars)  # (a captured tensor the body never reads gets None, as in TF1)
        wanted_caps = tuple(j for j, d in zip(wanted_caps, dxs[k:]) if d is not None)
        dxs = [d if d is not None else zeros_like(x) for d, x in zip(dxs[:k], xs)] + \
            [d for d in dxs[k:] if d is not None]
        dxs = [branch_tensor(d, g, "the gradient of the body", body.graph.where) for d in dxs]
    if g.captures:  # (a gradient rule reached outside the copied body: a bug here)
        raise AssertionError(f"the gradient of {op.where()} reads tensors from outside it")
    g.finalize()
    body_grad = Branch(g, params + upstream, dxs)
    attrs = {"cond": op.attrs["cond"], "body": body, "body_grad": body_grad, "loop_vars": n,
             "relaxed": op.attrs["relaxed"], "wanted": wanted_vars + wanted_caps,
             "max_iterations": op.attrs["max_iterations"]}
    results = apply("WhileGrad", [*ins, *seeds], attrs, name="WhileGrad")
    full = [None] * len(ins)
    for i, r in zip(wanted_vars + wanted_caps, results):
        full[i] = r
    return full


register("While", _while_infer, None, _while_grad, saves=("x*", "y*"),
         attrs={"cond": BRANCH, "body": BRANCH, "loop_vars": Int(lo=1),
                "relaxed": Ints(), "max_iterations": Int(lo=-1, hi=_MAX_STEPS, default=-1)},
         arity=(1, None), region_attrs=("cond", "body"),
         grad_takes_none=True, region_feeds=_while_region_feeds,
         region_results=_while_region_results,
         doc="runs its body (a region) on its loop variables while its cond (a region) "
             "gives true; its inputs are the loop variables' first values, then the tensors "
             "the regions capture")


# -- the WhileGrad op ---------------------------------------------------------------------------
def _while_grad_infer(ctx):
    attrs = ctx.attrs
    n, wanted = attrs["loop_vars"], list(attrs["wanted"])
    k = len([i for i in wanted if i < n])
    forward = len(ctx.in_shapes) - k
    if k == 0 or forward < n or wanted != sorted(set(wanted)) or \
            any(not 0 <= i < forward for i in wanted):
        raise ValueError(f"it takes {n} loop variables, the captured tensors and a gradient "
                         f"for each of the {k} loop variables it differentiates; wanted "
                         f"{tuple(wanted)} must name its inputs once each, in order")
    _check_counts(attrs, forward)
    body, cond, body_grad = attrs["body"], attrs["cond"], attrs["body_grad"]
    for label, b, count in (("cond", cond, forward), ("body", body, forward),
                            ("body_grad", body_grad, forward + k)):
        if len(b.inputs) != count:
            raise ValueError(f"its {label} takes {len(b.inputs)} inputs, not {count}")
    if len(body.outputs) != n or len(body_grad.outputs) != len(wanted):
        raise ValueError(f"its body gives {len(body.outputs)} values for {n} loop variables "
                         f"and its body_grad {len(body_grad.outputs)} for {len(wanted)} "
                         "gradients")
    _check_results(body, cond, ctx.in_dtypes[:n])
    if [t.dtype for t in body_grad.outputs] != [ctx.in_dtypes[i] for i in wanted]:
        raise ValueError("its body_grad gives gradients of other dtypes than its inputs'")
    return [(ctx.in_shapes[i], ctx.in_dtypes[i]) for i in wanted]


def _while_grad_region_feeds(attrs, in_shapes, in_values, loose=False):
    n, wanted = attrs["loop_vars"], attrs["wanted"]
    k = len([i for i in wanted if i < n])
    forward_shapes, forward_values = in_shapes[:len(in_shapes) - k], in_values[:len(in_shapes) - k]
    cond_body = _while_region_feeds(attrs, forward_shapes, forward_values, loose)
    loop_shapes = _loop_shapes(attrs, forward_shapes, loose, fed=True)
    upstream = [(loop_shapes[i], None) for i in wanted if i < n]
    return [*cond_body, cond_body[1] + upstream]


def _while_grad_region_results(attrs, in_shapes, results, loose=False):
    n, wanted = attrs["loop_vars"], attrs["wanted"]
    k = len([i for i in wanted if i < n])
    forward_shapes = in_shapes[:len(in_shapes) - k]
    loop_shapes = _loop_shapes(attrs, forward_shapes, loose, fed=True)
    _check_body_shapes(attrs, loop_shapes, results[1], loose)
    return [loop_shapes[i] if i < n else forward_shapes[i] for i in wanted]


def _while_grad_grad(op: Operation, *grads):
    """Second derivatives, where the loop's maximum_iterations was a number known when it
    was built: the WhileGrad's gradient computed again as the gradient of the loop written as
    a Scan of that many steps (each an If running the body while the condition holds), whose
    gradient rules have gradients of their own; differentiated here."""
    limit = op.attrs["max_iterations"]
    where = op.attrs["body"].graph.where
    if limit < 0:
        raise LookupError(f"second derivatives through a while_loop need maximum_iterations "
                          f"given as a number: {op.where()} differentiates the loop of "
                          f"{where} once, and has no gradient itself")
    n, wanted = op.attrs["loop_vars"], op.attrs["wanted"]
    k = len([i for i in wanted if i < n])
    if all(g is None for g in grads):
        return [None] * len(op.inputs)
    # each input through an identity of its own: the derivatives below are partial ones (a
    # seed computed from the loop's own output must not bring that path in a second time)
    inputs = [apply("Identity", [t])[0] for t in op.inputs]
    forward, seeds = inputs[:len(inputs) - k], inputs[len(inputs) - k:]
    finals = _loop_as_scan(op.attrs["cond"], op.attrs["body"], forward, n, limit, where)
    xs = [forward[i] for i in wanted]
    again = gradients([finals[i] for i in wanted[:k]], xs, grad_ys=seeds)
    again = [d if d is not None else zeros_like(x) for d, x in zip(again, xs)]
    used = [(d, g) for d, g in zip(again, grads) if g is not None]
    return gradients([d for d, _ in used], inputs, grad_ys=[g for _, g in used])


def _loop_as_scan(cond: Branch, body: Branch, inputs: list[Tensor], n: int, steps: int,
                  where: str) -> list[Tensor]:
    """The last loop variables of the While of `cond` and `body` on `inputs` (loop variables
    then captured tensors), computed as a Scan of `steps` steps, each running the body under
    an If while the condition holds; a flag carried along says it stopped."""
    from .cond import cond as make_cond

    captured = inputs[n:]

    def step(carried, rows):
        running, values = carried[0], carried[1:]
        g = get_default_graph()
        caps = [g.capture(t) for t in captured]
        going = apply("LogicalAnd", [running, copy_branch(cond, [*values, *caps])[0]])[0]
        nexts = make_cond(going, lambda: copy_branch(body, [*values, *caps]),
                          lambda: list(values), strict=True)
        return [going, *nexts], []

    indices = convert_to_tensor(np.arange(steps, dtype=np.int32))
    out = make_scan(step, [convert_to_tensor(True), *inputs[:n]], [indices], False,
                    f"the {where} as a scan", "WhileAsScan")
    return out[1:1 + n]


register("WhileGrad", _while_grad_infer, None, _while_grad_grad, saves=("x*", "y*"),
         attrs={"cond": BRANCH, "body": BRANCH, "body_grad": BRANCH, "loop_vars": Int(lo=1),
                "relaxed": Ints(), "wanted": Ints(),
                "max_iterations": Int(lo=-1, hi=_MAX_STEPS, default=-1)},
         arity=(2, None), region_attrs=("cond", "body", "body_grad"),
         grad_takes_none=True, region_feeds=_while_grad_region_feeds,
         region_results=_while_grad_region_results,
         doc="the gradient of a While: runs the loop again from the While's inputs, keeping "
             "each iteration's loop variables, then its body_grad (a region) over them in "
             "reverse; gives the gradients of the inputs `wanted` names")


# -- sg.while_loop ------------------------------------------------------------------------------
def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """Repeat `body` while `cond` is true, decided when the session runs (TF1's
    tf.while_loop).

    `loop_vars` is a tensor or a nested structure of them (tuples, lists, dicts, namedtuples);
    `cond(*loop_vars)` returns a bool scalar, `body(*loop_vars)` the next loop variables in
    the same structure, dtypes and shapes (or shapes compatible with `shape_invariants`,
    the same structure of TensorShapes). Both are called once, now, to build the loop.

    >>> i, s = sg.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s * 2.0),
    ...                      (0, x))                             # doctest: +SKIP
    """
    where = f"while_loop at {format_location(user_location())}"
    for label, fn in (("cond", cond), ("body", body)):
        if not callable(fn):
            raise TypeError(f"{where}: {label} must be callable, got {fn!r}")
    check_loop_options(where, parallel_iterations, back_prop=back_prop,
                       swap_memory=swap_memory, return_same_structure=return_same_structure)
    leaves = nest.flatten(loop_vars)
    if not leaves:
        raise ValueError(f"{where}: no loop variables were given")
    eager = eager_graph(leaves)
    if eager is not None:  # the dynamic mode: Python's own loop, on what graph mode accepts
        with eager.as_default():
            tensors = [leaf_tensor(v, f"loop variable {i}", where) for i, v in enumerate(leaves)]
            out = _eager_loop(cond, body, loop_vars, tensors, maximum_iterations, where)
            if not back_prop:
                out = [stop_gradient(t) for t in out]
            return nest.unpacked(nest.pack(loop_vars, iter(out)), return_same_structure)
    # a TensorArray whose element shape is not known yet waits for the body's first write to
    # say it (as in TF1); until then a stand-in of that dtype and any shape holds its place
    waiting = {i: v for i, v in enumerate(leaves) if isinstance(v, TensorArray)}
    if waiting and get_default_graph().eager:  # (the dynamic mode has no body to learn from)
        next(iter(waiting.values())).flow  # noqa: B018 - raises: give element_shape
    tensors = [_Waiting(v) if i in waiting else leaf_tensor(v, f"loop variable {i}", where)
               for i, v in enumerate(leaves)]
    invariants = _invariants(shape_invariants, loop_vars, tensors, where)
    growing = nest.dynamic_flows(loop_vars)  # (a dynamic_size TensorArray's rows may grow)
    invariants = [TensorShape([None, *t.shape.dims[1:]]) if inv is None and id(t) in growing
                  and t.shape.dims else inv for t, inv in zip(tensors, invariants)]
    outer = get_default_graph()
    known = [t for t in tensors if not isinstance(t, _Waiting)]
    if known and not encloses(outer, known[0].graph):
        outer = known[0].graph
    tensors = [t if isinstance(t, _Waiting) else _into(outer, t, where) for t in tensors]
    counted = maximum_iterations is not None
    if counted:
        limit = _into(outer, _iteration_limit(maximum_iterations, where), where)
        tensors = [convert_to_tensor(0, dtype=limit.dtype), *tensors]
        invariants = [TensorShape([]), *invariants]
    with outer.as_default(), name_scope(name, "while") as scope:
        cond_g = BranchGraph(outer, "cond", where)
        with cond_g.as_default(), cond_g.name_scope(scope):
            cond_params = params = _params(tensors, invariants)
            args = _args(loop_vars, params[1:] if counted else params)
            keep_going = branch_tensor(cond(*args), cond_g, "cond", where)
            _check_condition(keep_going, where)
            if counted:
                keep_going = apply("LogicalAnd", [apply("Less", [params[0],
                                                                 cond_g.capture(limit)])[0],
                                                  keep_going])[0]
        body_g = BranchGraph(outer, "body", where)
        with body_g.as_default(), body_g.name_scope(scope):
            body_params = params = _params(tensors, invariants)
            args = _args(loop_vars, params[1:] if counted else params)
            result = nest.matched(body(*args), loop_vars, "body", "loop_vars", where)
            nexts = [branch_tensor(v, body_g, "body", where) for v in nest.flatten(result)]
            if counted:
                nexts = [apply("Add", [params[0], convert_to_tensor(1, dtype=limit.dtype)])[0],
                         *nexts]
        for g, label in ((cond_g, "cond"), (body_g, "body")):
            check_stateless(g, label, where, "a while_loop's cond or body")
        first = 1 if counted else 0
        for i, array in waiting.items():  # its buffer, made now that its shape is known
            k = first + i
            tensors[k] = _learned_buffer(array, nexts[k], where)
            # the loop's placeholders get the element shape, rows unknown (as the ops the body
            # built on them read it: the feeds' rows are news to them when specialized)
            within = TensorShape([None, *tensors[k].shape.dims[1:]])
            if array.dynamic_size:  # (its rows may grow)
                invariants[k] = within
            for param in (cond_params[k], body_params[k]):
                _refine(param, within)
        _check_body(tensors, invariants, nexts, counted, where,
                    lenient={first + i for i in waiting})
        known = limit._static if counted else None  # (a number known now: a Python int)
        outputs = _make_while(tensors, invariants, (cond_g, cond_params, [keep_going]),
                              (body_g, body_params, nexts),
                              -1 if known is None else max(int(known), 0))
    if counted:
        outputs = outputs[1:]
    if not back_prop:
        outputs = [stop_gradient(t) for t in outputs]
    return nest.unpacked(nest.pack(loop_vars, iter(outputs)), return_same_structure)


class _Waiting:
    """What stands for a TensorArray's buffer while the loop is built, until the body's
    first write says its element shape: its dtype, any shape."""

    def __init__(self, array: TensorArray):
        self.dtype, self.shape = array.dtype, TensorShape(None)


def _learned_buffer(array: TensorArray, after: Tensor, where: str) -> Tensor:
    """The entry buffer of a TensorArray that waited for the body, of the element shape the
    body's write gave it. (The array itself stays as it was: another loop may take it.)"""
    element = TensorShape(None) if after.shape.dims is None else \
        TensorShape(after.shape.dims[1:])
    if not element.is_fully_defined():
        raise ValueError(f"{where}: {array!r} enters the loop with no element shape, and the "
                         f"body does not write an element of a known shape ({element}); give "
                         "the TensorArray element_shape")
    return array._buffer(element)


def _refine(param: Tensor, shape: TensorShape) -> None:
    """A loop's placeholder for a TensorArray's buffer that waited for the body (of any
    shape then), given the shape the body's write said, before the loop is made."""
    param._shape = shape
    param.op.attrs["shape"] = shape


def _into(outer, t: Tensor, where: str) -> Tensor:
    """`t` as the loop's graph sees it: captured when it is of a graph around that one."""
    if t.graph is outer:
        return t
    if not encloses(outer, t.graph):
        raise ValueError(f"{where}: {t.name} is from another graph than the loop's")
    return outer.capture(t)


def _iteration_limit(maximum_iterations, where: str) -> Tensor:
    try:
        limit = convert_to_tensor(maximum_iterations)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{where}: maximum_iterations must be an integer scalar: {e}") from None
    if not limit.dtype.is_integer or limit.shape.ndims not in (0, None):
        raise ValueError(f"{where}: maximum_iterations must be an integer scalar, got "
                         f"{limit.dtype.name}{TensorShape(list(limit.shape))}")
    if limit.dtype not in (_dt.int32, _dt.int64):
        limit = apply("Cast", [limit], {"dtype": _dt.int32})[0]
    return limit


def _invariants(shape_invariants, loop_vars, tensors, where: str) -> list:
    """Each loop variable's shape within the loop where `shape_invariants` declares one
    (a TensorShape, or None for any shape), else None (its entry shape)."""
    if shape_invariants is None:
        return [None] * len(tensors)
    if nest.shape_of(shape_invariants, loose=True) != nest.shape_of(loop_vars, loose=True):
        raise ValueError(f"{where}: shape_invariants must have the structure of loop_vars, "
                         f"{nest.describe(loop_vars)}, with a TensorShape for each tensor; got "
                         f"{shape_invariants!r}")
    out = []
    for i, (s, t) in enumerate(zip(nest.flatten(shape_invariants), tensors)):
        if s is not None and not isinstance(s, TensorShape):
            raise TypeError(f"{where}: the shape invariant of loop variable {i} must be a "
                            f"TensorShape (sg.TensorShape([None, 3])) or None, got {s!r}")
        shape = TensorShape(None) if s is None else s
        if not t.shape.is_compatible_with(shape):
            raise ValueError(f"{where}: loop variable {i} has shape {t.shape}, which its shape "
                             f"invariant {shape} does not allow")
        out.append(shape)
    return out


def _params(tensors, invariants) -> list[Tensor]:
    """The placeholders standing for one iteration's loop variables."""
    return [placeholder(t.dtype, inv if inv is not None else t.shape, f"loop_var_{i}")
            for i, (t, inv) in enumerate(zip(tensors, invariants))]


def _args(loop_vars, params) -> tuple:
    """What cond and body are called with: the loop variables' structure, spread when it is
    a list or tuple (TF1's `body(*loop_vars)`)."""
    packed = nest.pack(loop_vars, iter(params))
    return tuple(packed) if isinstance(packed, list | tuple) else (packed,)


def _check_condition(t: Tensor, where: str) -> None:
    if t.dtype is not _dt.bool_ or (t.shape.ndims is not None and t.shape.ndims != 0):
        raise TypeError(f"{where}: cond returned {t.dtype.name}{t.shape}; it must return a "
                        "bool scalar")


def _check_body(tensors, invariants, nexts, counted: bool, where: str,
                lenient=frozenset()) -> None:
    """The body's results against the loop variables: the same dtypes, and shapes its
    invariants allow (only compatible ones for those in `lenient`, the buffers of
    TensorArrays that waited for the body: their rows are checked for the fed shapes)."""
    first = 1 if counted else 0
    for i, (t, inv, after) in enumerate(zip(tensors, invariants, nexts)):
        k = i - first
        if after.dtype is not t.dtype:
            raise TypeError(f"{where}: loop variable {k} enters the loop as {t.dtype.name} but "
                            f"the body returns {after.dtype.name}")
        try:
            _check_kept_shape(k, inv if inv is not None else t.shape, after.shape,
                              inv is None and i not in lenient)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None


def _make_while(tensors, invariants, cond_side, body_side, max_iterations: int) -> list[Tensor]:
    """The While op running the built cond and body, each (its BranchGraph, its loop
    variables' placeholders, its results): its inputs are the loop variables, then the
    tensors either captured, in one order for both."""
    captured = list(dict.fromkeys([*cond_side[0].captures, *body_side[0].captures]))
    branches = [Branch(g, params + [g.capture(t) for t in captured], outs)
                for g, params, outs in (cond_side, body_side)]
    relaxed = tuple(i for i, inv in enumerate(invariants) if inv is not None)
    waits = list(dict.fromkeys([*cond_side[0].outer_controls, *body_side[0].outer_controls]))
    graph = get_default_graph()
    with graph.control_dependencies(waits):
        outputs = list(apply("While", [*tensors, *captured],
                             {"cond": branches[0], "body": branches[1],
                              "loop_vars": len(tensors), "relaxed": relaxed,
                              "max_iterations": max_iterations}, name="While"))
    for g, _, _ in (cond_side, body_side):
        g.finalize()  # built: a tensor made in the loop and used later is refused there
    return outputs


def _eager_loop(cond, body, loop_vars, tensors, maximum_iterations, where: str) -> list:
    """The dynamic mode: Python's own while, checking what graph mode checks; the last
    loop variables, flat."""
    limit = None
    if maximum_iterations is not None:
        limit = int(_iteration_limit(maximum_iterations, where))
    current, done = tensors, 0
    while limit is None or done < limit:
        args = _args(loop_vars, current)
        keep_going = convert_to_tensor(cond(*args))
        _check_condition(keep_going, where)
        if not bool(keep_going):
            break
        result = nest.matched(body(*args), loop_vars, "body", "loop_vars", where)
        nexts = [convert_to_tensor(v) for v in nest.flatten(result)]
        for i, (t, after) in enumerate(zip(current, nexts)):
            if after.dtype is not t.dtype:
                raise TypeError(f"{where}: loop variable {i} enters the loop as "
                                f"{t.dtype.name} but the body returns {after.dtype.name}")
        current, done = nexts, done + 1
    return current
