"""`cond`: the If op, holding two branches (branches.py), only the taken one run.

    y = sg.cond(x > 0, lambda: sg.sqrt(x), lambda: -x)

Each function is called once, while the graph is built, to build its branch; the NumPy
backend writes each branch as a function of the module, called under a Python `if`.

Only the taken branch runs. Ops created outside the branch functions run whatever the
predicate is, as in TF1: `a = sg.log(x); sg.cond(p, lambda: a, lambda: 0.0)` computes `a`
either way (it is an input of the If op); build it inside true_fn to compute it only there.

Gradients flow through the taken branch only: the gradient of an If is an If whose branches
each compute their forward branch again, then its gradient (the forward values a branch
made are not kept for the backward pass: recomputing them keeps each branch closed, at the
cost of running the taken branch twice). Gradients of gradients work the same way.

A variable a branch creates (sg.Variable, get_variable) is created in the graph around
the cond, as TF1 lifts it, and the branch reads its value. A branch may not assign variables
or draw random numbers (TF1 can: the gradient here runs the branch again, which would draw
again): do it outside and choose between values. A graph file carries the branches as
nested lists of ops (graph_io.py).
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..autodiff import dense_gradients as gradients
from ..errors import format_location, user_location
from ..graph import Operation, Tensor, get_default_graph, name_scope
from ..ops.array_ops import zeros_like
from ..ops.conversion import convert_to_tensor
from ..ops.creation import apply
from ..ops.table import register
from . import structure as nest
from .branches import (
    BRANCH,
    Branch,
    BranchGraph,
    branch_tensor,
    check_stateless,
    common_shape,
    copy_branch,
    encloses,
    signature,
    signature_of,
)


def _if_infer(ctx):
    _check_predicate(ctx.in_dtypes[0], ctx.in_shapes[0])  # (create_operation adds the op)
    then_b, else_b = ctx.attrs["then_branch"], ctx.attrs["else_branch"]
    for label, b in (("then_branch", then_b), ("else_branch", else_b)):
        given = list(zip(ctx.in_shapes[1:], ctx.in_dtypes[1:]))
        if len(given) != len(b.inputs) or any(
                d is not p.dtype or not s.is_compatible_with(p.shape)
                for (s, d), p in zip(given, b.inputs)):
            raise ValueError(f"its {label} takes {signature(b.inputs)}, but the inputs after "
                             f"the predicate are {signature_of(given)}")
    if [t.dtype for t in then_b.outputs] != [t.dtype for t in else_b.outputs]:
        raise TypeError(f"then_branch gives {signature(then_b.outputs)}, else_branch "
                        f"{signature(else_b.outputs)}")
    return [(common_shape(a.shape, b.shape), a.dtype)
            for a, b in zip(then_b.outputs, else_b.outputs)]


def _if_grad(op: Operation, *grads):
    """Each branch's gradient, recomputed from the If's inputs (see the module's docstring)."""
    then_b, else_b = op.attrs["then_branch"], op.attrs["else_branch"]
    xs = list(op.inputs[1:])
    wanted = [i for i, x in enumerate(xs) if x.dtype.is_floating]
    outs = [i for i, t in enumerate(op.outputs) if t.dtype.is_floating]
    if not wanted or not outs:
        return [None] * len(op.inputs)
    # a missing output gradient is a zero one (the rule gets None for outputs nobody reads)
    seeds = [grads[i] if grads[i] is not None else zeros_like(op.outputs[i]) for i in outs]
    outer = get_default_graph()
    made = []
    for branch in (then_b, else_b):
        g = BranchGraph(outer, f"the gradient of {branch.graph.label}", branch.graph.where)
        with g.as_default():
            inputs = [g.capture(x) for x in xs]
            copied = copy_branch(branch, inputs)
            dxs = gradients([copied[i] for i in outs], [inputs[i] for i in wanted],
                            grad_ys=[g.capture(s) for s in seeds])
            dxs = [d if d is not None else zeros_like(inputs[i]) for d, i in zip(dxs, wanted)]
        made.append((g, dxs))
    results = _make_if(op.inputs[0], made[0], made[1], "cond_grad")
    full = [None] * len(op.inputs)
    for i, r in zip(wanted, results):
        full[1 + i] = r
    return full


def _if_region_feeds(attrs, in_shapes, in_values, loose=False):
    """Each branch reads the If's inputs after the predicate, as they are."""
    given = list(zip(in_shapes[1:], in_values[1:]))
    return [given, given]


def _if_region_results(attrs, in_shapes, results, loose=False):
    then_shapes, else_shapes = results
    for i, (a, b) in enumerate(zip(then_shapes, else_shapes)):
        if a.dims != b.dims:
            raise ValueError(f"output {i} has shape {a} in then_branch but {b} in "
                             "else_branch; staticgrad compiles concrete shapes, so both "
                             "branches must give one shape for given feed shapes (TF1 allows "
                             "this)")
    return then_shapes


register("If", _if_infer, None, _if_grad, saves=("x*", "y*"), attrs={"then_branch": BRANCH,
                                                 "else_branch": BRANCH},
         arity=(1, None), region_attrs=("then_branch", "else_branch"),
         grad_takes_none=True, region_feeds=_if_region_feeds,
         region_results=_if_region_results,
         doc="runs its then_branch or its else_branch (regions) on its inputs after the "
             "predicate, by the predicate")


def _make_if(pred: Tensor, then_side, else_side, name: str) -> list[Tensor]:
    """The If op choosing between two built branches, each (its BranchGraph, its outputs):
    the inputs are the tensors either branch captured, in one order for both."""
    (then_g, then_out), (else_g, else_out) = then_side, else_side
    captured = list(dict.fromkeys([*then_g.captures, *else_g.captures]))
    branches = []
    for g, outs in ((then_g, then_out), (else_g, else_out)):
        inputs = [g.capture(t) for t in captured]  # (a placeholder even where unused)
        branches.append(Branch(g, inputs, outs))
    waits = list(dict.fromkeys([*then_g.outer_controls, *else_g.outer_controls]))
    graph = get_default_graph()
    with graph.control_dependencies(waits):
        outputs = list(apply("If", [pred, *captured], {"then_branch": branches[0],
                                                       "else_branch": branches[1]}, name=name))
    for g in (then_g, else_g):
        g.finalize()  # built: a tensor made in a branch and used later is refused there
    return outputs


# -- sg.cond ------------------------------------------------------------------------------------


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """true_fn() if pred else false_fn(), decided when the session runs (TF1's tf.cond).

    Each function is called once, now, to build its branch; both must return the same
    structure (a tensor, or lists, tuples and dicts of tensors) of the same dtypes. Only the
    taken branch runs. A single-element list is returned as its element unless `strict`.

    >>> y = sg.cond(x > 0, lambda: sg.sqrt(x), lambda: -x)   # doctest: +SKIP
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    for label, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if not callable(fn):
            raise TypeError(f"cond: {label} must be callable, got {fn!r} (at "
                            f"{format_location(user_location())})")
    pred = convert_to_tensor(pred)
    where = f"cond at {format_location(user_location())}"
    if pred.graph.eager:  # the dynamic mode: Python's own if, on what graph mode accepts
        _check_predicate(pred.dtype, pred.shape, where)
        with pred.graph.as_default():
            out = true_fn() if bool(pred) else false_fn()
            leaves = [convert_to_tensor(v) for v in nest.flatten(out)]
        return nest.unpacked(nest.pack(out, iter(leaves)), strict)
    outer = get_default_graph()
    if not encloses(outer, pred.graph):  # (a cond's branch builds its own conds inside)
        outer = pred.graph
    elif pred.graph is not outer:
        pred = outer.capture(pred)
    _check_predicate(pred.dtype, pred.shape, where)
    with outer.as_default(), name_scope(name, "cond") as scope:
        sides = []
        for label, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
            g = BranchGraph(outer, label, where)
            with g.as_default(), g.name_scope(scope):  # (its ops named as TF1's: cond/Sqrt)
                structure = fn()
                leaves = [branch_tensor(v, g, label, where) for v in nest.flatten(structure)]
            check_stateless(g, label, where)
            sides.append((g, leaves, structure))
        (tg, tleaves, tstruct), (fg, fleaves, fstruct) = sides
        if nest.shape_of(tstruct) != nest.shape_of(fstruct):
            raise ValueError(f"{where}: true_fn and false_fn must return the same structure; "
                             f"true_fn returned {nest.describe(tstruct)}, false_fn "
                             f"{nest.describe(fstruct)}")
        for i, (a, b) in enumerate(zip(tleaves, fleaves)):
            if a.dtype is not b.dtype:
                raise TypeError(f"{where}: output {i} is {a.dtype.name} in true_fn but "
                                f"{b.dtype.name} in false_fn; both branches must give one dtype")
            if not a.shape.is_compatible_with(b.shape):  # (never compiles: see specialize)
                raise ValueError(f"{where}: output {i} has shape {a.shape} in true_fn but "
                                 f"{b.shape} in false_fn; staticgrad compiles concrete shapes, "
                                 "so both branches must give one shape (TF1 allows this)")
        if not tleaves:
            raise ValueError(f"{where}: the branches return no tensors; cond chooses between "
                             "values (create ops that must run outside it)")
        outputs = _make_if(pred, (tg, tleaves), (fg, fleaves), "If")
    return nest.unpacked(nest.pack(tstruct, iter(outputs)), strict)


def _check_predicate(dtype, shape, where: str = "") -> None:
    """TypeError or ValueError unless the predicate is a bool scalar (`where`: the cond's)."""
    at = f"{where}: " if where else ""
    if dtype is not _dt.bool_:
        raise TypeError(f"{at}the predicate has dtype {dtype.name}; cond needs a bool scalar")
    if shape.ndims is not None and shape.ndims != 0:
        raise ValueError(f"{at}the predicate has shape {shape}; cond needs a scalar")
