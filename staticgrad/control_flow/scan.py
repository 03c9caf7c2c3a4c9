"""`scan`, `map_fn`, `foldl`, `foldr`: the Scan op, a body (branches.py) run once for each
element along the first axis of its `elems`, carrying values from one step to the next.

    total = sg.foldl(lambda acc, x: acc + x * x, xs, initializer=0.0)
    running = sg.scan(lambda acc, x: acc * 0.9 + x, xs)          # every step's acc, stacked
    squares = sg.map_fn(lambda x: x * x, xs)

The body is called once, while the graph is built, on placeholders standing for one step's
carried values and one row of each of `elems`; it gives the next carried values and the
step's outputs, stacked along a new first axis. The NumPy backend writes the op as a Python
`for` over the rows, into arrays preallocated for the stacked outputs (the number of rows is
known when the session compiles).

Gradients: a Scan also gives each step's carried values, stacked (its `history`: memory
grows with the number of rows, allocated once; the generated code fills it only when a
gradient reads it). The gradient of a Scan is another Scan, over the rows in the opposite
order, whose body computes the forward body again from that step's carried values and then
its gradient; it carries the gradients of the carried values and the sums of the captured
tensors' gradients over steps. Being a Scan itself, it has a gradient too: second
derivatives (Hessian-vector products) through scan, map_fn and the folds work.

TF1's `parallel_iterations`, `swap_memory` and `infer_shape` are accepted and change
nothing (rows run one after another; kept values stay in host memory; shapes are inferred).
"""

from __future__ import annotations

from ..autodiff import gradients
from ..errors import format_location, user_location
from ..graph import Operation, Tensor, get_default_graph, name_scope
from ..ops.array_ops import expand_dims, zeros_like
from ..ops.attr_types import Bool, Int
from ..ops.conversion import convert_to_tensor
from ..ops.creation import apply
from ..ops.join_ops import concat, stack
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


# -- the Scan op --------------------------------------------------------------------------------
def _split(attrs, items: list) -> tuple[list, list, list]:
    """A Scan's inputs as (initial carried values, elems, captured tensors)."""
    c, e = attrs["carries"], attrs["elems"]
    return items[:c], items[c:c + e], items[c + e:]


def _rows(shapes) -> int | None:
    """The number of rows of the elems (their common first dim), None if unknown."""
    dims = [s.dims[0] for s in shapes if s.dims is not None and s.dims[0] is not None]
    return dims[0] if dims else None


def _scan_infer(ctx):
    attrs, body = ctx.attrs, ctx.attrs["body"]
    if attrs["carries"] + attrs["elems"] > len(ctx.in_shapes):
        raise ValueError(f"carries and elems say {attrs['carries']} and {attrs['elems']} "
                         f"inputs, but it has {len(ctx.in_shapes)}")
    carries, elems, _ = _split(attrs, list(zip(ctx.in_shapes, ctx.in_dtypes)))
    if not elems:
        raise ValueError("it needs at least one elems tensor to scan over")
    for s, d in elems:
        if s.ndims == 0:
            raise ValueError(f"its elems must have a first axis to scan over, got {d.name}{s}")
    firsts = {s.dims[0] for s, _ in elems if s.dims is not None and s.dims[0] is not None}
    if len(firsts) > 1:
        raise ValueError(f"its elems have different numbers of rows: {sorted(firsts)}")
    fed = [(s, d) for s, d in carries] + [(_row(s), d) for s, d in elems] + \
        list(zip(ctx.in_shapes[len(carries) + len(elems):],
                 ctx.in_dtypes[len(carries) + len(elems):]))
    if len(fed) != len(body.inputs) or any(
            d is not p.dtype or not s.is_compatible_with(p.shape)
            for (s, d), p in zip(fed, body.inputs)):
        raise ValueError(f"its body takes {signature(body.inputs)}, but it is given "
                         f"{signature_of(fed)}")
    if len(body.outputs) < len(carries) or \
            [t.dtype for t in body.outputs[:len(carries)]] != [d for _, d in carries]:
        raise ValueError("its body must give the carried values first, of their dtypes")
    return _outputs(attrs, [s for s, _ in carries], [s for s, _ in elems],
                    [t.shape for t in body.outputs])


def _row(shape: TensorShape) -> TensorShape:
    return TensorShape(None) if shape.dims is None else TensorShape(shape.dims[1:])


def _outputs(attrs, carry_shapes, elem_shapes, body_shapes) -> list:
    """(shape, dtype) of each output: the last carried values, each step's outputs stacked,
    then each carried value of each step stacked (the history)."""
    body = attrs["body"]
    c = attrs["carries"]
    n = _rows(elem_shapes)
    dtypes = [t.dtype for t in body.outputs]
    finals = [(s, d) for s, d in zip(carry_shapes, dtypes[:c])]
    stacked = [(TensorShape([n]).concatenate(s), d)
               for s, d in zip(body_shapes[c:], dtypes[c:])]
    history = [(TensorShape([n]).concatenate(s), d) for s, d in zip(carry_shapes, dtypes[:c])]
    return finals + stacked + history


def _scan_region_feeds(attrs, in_shapes, in_values, loose=False):
    carries, elems, captured = _split(attrs, list(zip(in_shapes, in_values)))
    return [[(s, None) for s, _ in carries] + [(_row(s), None) for s, _ in elems] + captured]


def _scan_region_results(attrs, in_shapes, results, loose=False):
    carries, elems, _ = _split(attrs, in_shapes)
    (body_shapes,) = results
    for i, (entry, after) in enumerate(zip(carries, body_shapes)):
        if after.dims != entry.dims:
            raise ValueError(f"carried value {i} has shape {entry} on entry but {after} "
                             "after one step; a scan's carried values keep their shapes")
    return [s for s, _ in _outputs(attrs, carries, elems, body_shapes)]


def _scan_grad(op: Operation, *grads):
    """Another Scan, over the rows in the opposite order (see the module's docstring). The
    gradient of the history (read by a gradient's own gradient) joins each step's carried
    values' gradient."""
    attrs, body = op.attrs, op.attrs["body"]
    c = attrs["carries"]
    inits, elems, captured = _split(attrs, list(op.inputs))
    n_ys = len(body.outputs) - c
    finals, ys, history = op.outputs[:c], op.outputs[c:c + n_ys], op.outputs[c + n_ys:]
    d_finals, d_ys, d_history = grads[:c], grads[c:c + n_ys], grads[c + n_ys:]
    diff_carries = [i for i in range(c) if inits[i].dtype.is_floating]
    diff_ys = [j for j in range(n_ys) if ys[j].dtype.is_floating and d_ys[j] is not None]
    wanted_elems = [k for k, e in enumerate(elems) if e.dtype.is_floating]
    wanted_caps = [k for k, t in enumerate(captured) if t.dtype.is_floating]
    if all(grads[i] is None for i in diff_carries) and \
            all(d_ys[j] is None for j in diff_ys) and \
            all(d_history[i] is None for i in diff_carries):
        return [None] * len(op.inputs)
    seeds = [d_finals[i] if d_finals[i] is not None else zeros_like(finals[i])
             for i in diff_carries]
    dys = [d_ys[j] for j in diff_ys]  # (outputs nobody reads: no gradient to carry back)
    with_history = any(d_history[i] is not None for i in diff_carries)
    dhs = [d_history[i] if d_history[i] is not None else zeros_like(history[i])
           for i in diff_carries] if with_history else []
    zeros = [zeros_like(captured[k]) for k in wanted_caps]
    n_c, n_e, n_dy = len(diff_carries), len(wanted_elems), len(diff_ys)

    def step(carried, rows):
        d_carry, d_caps = carried[:n_c], carried[n_c:]
        c_t, e_t = rows[:c], rows[c:c + len(elems)]
        dy_t, dh_t = rows[c + len(elems):c + len(elems) + n_dy], rows[c + len(elems) + n_dy:]
        g = get_default_graph()
        caps = [g.capture(t) for t in captured]
        copied = copy_branch(body, [*c_t, *e_t, *caps])
        targets = [copied[i] for i in diff_carries] + [copied[c + j] for j in diff_ys]
        xs = [c_t[i] for i in diff_carries] + [e_t[k] for k in wanted_elems] + \
            [caps[k] for k in wanted_caps]
        ds = gradients(targets, xs, grad_ys=[*d_carry, *dy_t])
        ds = [d if d is not None else zeros_like(x) for d, x in zip(ds, xs)]
        d_c = [d + h for d, h in zip(ds[:n_c], dh_t)] if dh_t else ds[:n_c]
        return ([*d_c, *[a + b for a, b in zip(d_caps, ds[n_c + n_e:])]], ds[n_c:n_c + n_e])

    out = make_scan(step, [*seeds, *zeros], [*history, *elems, *dys, *dhs],
                    not attrs["reverse"], f"the gradient of the {body.graph.where}",
                    "ScanGrad")
    d_inits, d_caps = out[:n_c], out[n_c:n_c + len(wanted_caps)]
    d_elems = out[n_c + len(wanted_caps):n_c + len(wanted_caps) + n_e]
    full = [None] * len(op.inputs)
    for i, d in zip(diff_carries, d_inits):
        full[i] = d
    for k, d in zip(wanted_elems, d_elems):
        full[c + k] = d
    for k, d in zip(wanted_caps, d_caps):
        full[c + len(elems) + k] = d
    return full


register("Scan", _scan_infer, None, _scan_grad,
         attrs={"body": BRANCH, "carries": Int(lo=0), "elems": Int(lo=1), "reverse": Bool()},
         arity=(1, None), region_attrs=("body",),
         grad_takes_none=True, region_feeds=_scan_region_feeds,
         region_results=_scan_region_results,
         doc="runs its body (a region) once for each row of its elems, first to last (or "
             "last to first with `reverse`), carrying values between steps; gives the last "
             "carried values, each step's outputs stacked, and each step's carried values "
             "stacked (for its gradient)")


def make_scan(fn, carried: list[Tensor], elems: list[Tensor], reverse: bool, where: str,
              name: str = "Scan") -> list[Tensor]:
    """A Scan op of `fn(carried placeholders, row placeholders) -> (next carried values,
    this step's outputs)` (lists of tensors), built now into a closed sub-graph: its last
    carried values, then its stacked outputs (the history stays behind)."""
    outer = get_default_graph()
    g = BranchGraph(outer, "fn", where)
    with g.as_default():
        c_ph = [placeholder(t.dtype, t.shape, f"carried_{i}") for i, t in enumerate(carried)]
        e_ph = [placeholder(t.dtype, _row(t.shape), f"elem_{i}") for i, t in enumerate(elems)]
        nexts, ys = fn(c_ph, e_ph)
        nexts = [branch_tensor(v, g, "fn", where) for v in nexts]
        ys = [branch_tensor(v, g, "fn", where) for v in ys]
    check_stateless(g, "fn", where, "the function of a scan, map_fn or fold")
    for i, (t, after) in enumerate(zip(carried, nexts)):
        if after.dtype is not t.dtype:
            raise TypeError(f"{where}: carried value {i} enters as {t.dtype.name} but fn "
                            f"returns {after.dtype.name}")
        if not after.shape.is_compatible_with(t.shape):
            raise ValueError(f"{where}: carried value {i} has shape {t.shape} on entry but "
                             f"{after.shape} after one step; a scan's carried values keep "
                             "their shapes")
    captured = list(g.captures)
    body = Branch(g, [*c_ph, *e_ph, *[g.capture(t) for t in captured]], [*nexts, *ys])
    with outer.control_dependencies(g.outer_controls):
        outputs = apply("Scan", [*carried, *elems, *captured],
                        {"body": body, "carries": len(carried), "elems": len(elems),
                         "reverse": reverse}, name=name)
    g.finalize()
    return list(outputs[:len(carried) + len(ys)])


# -- the user's functions -----------------------------------------------------------------------
def _where(kind: str) -> str:
    return f"{kind} at {format_location(user_location())}"


def _check_common(fn, where: str, parallel_iterations, back_prop, swap_memory) -> None:
    if not callable(fn):
        raise TypeError(f"{where}: fn must be callable, got {fn!r}")
    check_loop_options(where, parallel_iterations, back_prop=back_prop,
                       swap_memory=swap_memory)


def _tensors(structure, what: str, where: str) -> list[Tensor]:
    return [leaf_tensor(v, f"{what} {i}", where) for i, v in enumerate(nest.flatten(structure))]


def _elems(elems, verb: str, where: str) -> list[Tensor]:
    """The tensors of `elems` (a structure), checked: at least one, each with a first axis,
    all of one length where known."""
    tensors = _tensors(elems, "elems", where)
    if not tensors:
        raise ValueError(f"{where}: elems is empty; there is nothing to {verb} over")
    _check_elems(tensors, where)
    return tensors


def _check_elems(elems: list[Tensor], where: str) -> None:
    """Every elems tensor has a first axis, all of one length where known."""
    for i, t in enumerate(elems):
        if t.shape.ndims == 0:
            raise ValueError(f"{where}: elems {i} has shape (); its elems must have a first "
                             "axis to scan over")
    firsts = {t.shape.dims[0] for t in elems
              if t.shape.dims is not None and t.shape.dims[0] is not None}
    if len(firsts) > 1:
        raise ValueError(f"{where}: its elems have different numbers of rows: "
                         f"{sorted(firsts)}")


def _graph_of(tensors: list[Tensor], where: str):
    """The graph the op goes in (the default one, or the tensors' own when the default does
    not enclose it), and the tensors as it sees them (captured from graphs around it)."""
    outer = get_default_graph()
    if not encloses(outer, tensors[0].graph):
        outer = tensors[0].graph
    seen = []
    for t in tensors:
        if t.graph is not outer:
            if not encloses(outer, t.graph):
                raise ValueError(f"{where}: {t.name} is from another graph than the others")
            t = outer.capture(t)
        seen.append(t)
    return outer, seen


def _scan_structured(kind, fn, elems, initializer, reverse, back_prop, name, where,
                     carry_only: bool):
    """scan, foldl and foldr: fn(acc, x) -> acc over the rows of elems (a structure)."""
    eager = eager_graph([*nest.flatten(elems), *nest.flatten(initializer)])
    if eager is not None:  # the dynamic mode: Python's own loop, on what graph mode accepts
        with eager.as_default():
            elem_ts = _elems(elems, "scan", where)
            out = _eager(fn, elems, elem_ts, initializer, reverse, where, carry_only)
            return out if back_prop else _stopped(out)
    elem_ts = _elems(elems, "scan", where)
    first_from_elems = initializer is None
    with name_scope(name, kind):
        if first_from_elems:  # the first row (the last with reverse) starts the accumulator
            initializer = nest.pack(elems, iter([t[-1] if reverse else t[0] for t in elem_ts]))
            elem_ts = [t[:-1] if reverse else t[1:] for t in elem_ts]
        init_ts = _tensors(initializer, "the initializer's value", where)
        outer, all_ts = _graph_of([*init_ts, *elem_ts], where)
        init_ts, elem_ts = all_ts[:len(init_ts)], all_ts[len(init_ts):]
        with outer.as_default():
            def step(carried, rows):
                acc = nest.pack(initializer, iter(carried))
                x = nest.pack(elems, iter(rows))
                result = nest.matched(fn(acc, x), initializer, "fn", "the accumulator", where)
                nexts = nest.flatten(result)
                return nexts, ([] if carry_only else nexts)

            out = make_scan(step, init_ts, elem_ts, reverse, where)
    finals, stacked = out[:len(init_ts)], out[len(init_ts):]
    if not carry_only and first_from_elems:  # the first accumulator is a row of its own
        stacked = [_with_first(s, i, reverse) for s, i in zip(stacked, init_ts)]
    result = finals if carry_only else stacked
    if not back_prop:
        result = [stop_gradient(t) for t in result]
    return nest.pack(initializer, iter(result))


def _with_first(stacked: Tensor, first: Tensor, reverse: bool) -> Tensor:
    row = expand_dims(first, 0)
    return concat([stacked, row] if reverse else [row, stacked], 0)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """fn(acc, x) applied over the rows of elems, each step's acc stacked (TF1's tf.scan).

    `elems` is a tensor or a structure of them, all with the same number of rows; `acc`
    starts as `initializer` (or the first row of elems, which is then the first output).

    >>> sg.scan(lambda acc, x: acc + x, sg.constant([1., 2., 3.]))   # [1., 3., 6.]
    """
    where = _where("scan")
    _check_common(fn, where, parallel_iterations, back_prop, swap_memory)
    return _scan_structured("scan", fn, elems, initializer, reverse, back_prop, name, where,
                            carry_only=False)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """fn(acc, x) applied over the rows of elems, first to last; the last acc (TF1's
    tf.foldl).

    >>> sg.foldl(lambda acc, x: acc + x, sg.constant([1., 2., 3.]))   # 6.
    """
    where = _where("foldl")
    _check_common(fn, where, parallel_iterations, back_prop, swap_memory)
    return _scan_structured("foldl", fn, elems, initializer, False, back_prop, name, where,
                            carry_only=True)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """fn(acc, x) applied over the rows of elems, last to first; the last acc (TF1's
    tf.foldr)."""
    where = _where("foldr")
    _check_common(fn, where, parallel_iterations, back_prop, swap_memory)
    return _scan_structured("foldr", fn, elems, initializer, True, back_prop, name, where,
                            carry_only=True)


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None):
    """fn applied to each row of elems, the results stacked (TF1's tf.map_fn). `dtype`, the
    structure of dtypes fn returns when it differs from elems', is checked when given."""
    where = _where("map_fn")
    _check_common(fn, where, parallel_iterations or 10, back_prop, swap_memory)
    eager = eager_graph(nest.flatten(elems))
    if eager is not None:  # the dynamic mode: Python's own loop
        with eager.as_default():
            elem_ts = _elems(elems, "map", where)
            rows = elem_ts[0].shape[0]
            outs = [fn(nest.pack(elems, iter([t[i] for t in elem_ts]))) for i in range(rows)]
            out = _eager_stack(outs, where)
            return out if back_prop else _stopped(out)
    elem_ts = _elems(elems, "map", where)
    holder = {}
    with name_scope(name, "map"):
        outer, elem_ts = _graph_of(elem_ts, where)
        with outer.as_default():
            def step(carried, rows):
                result = fn(nest.pack(elems, iter(rows)))
                holder["structure"] = result
                return [], nest.flatten(result)

            out = make_scan(step, [], elem_ts, False, where)
    structure = holder["structure"]
    if dtype is not None:  # TF1's dtype: the structure of dtypes fn returns
        wanted = [getattr(d, "name", d) for d in nest.flatten(dtype)]
        if nest.shape_of(dtype, loose=True) != nest.shape_of(structure, loose=True) or \
                wanted != [t.dtype.name for t in out]:
            raise TypeError(f"{where}: fn returns {nest.describe(structure)} of "
                            f"{[t.dtype.name for t in out]}, but dtype says {wanted}")
    if not back_prop:
        out = [stop_gradient(t) for t in out]
    return nest.pack(structure, iter(out))


# -- the dynamic mode ---------------------------------------------------------------------------
def _eager(fn, elems, elem_ts, initializer, reverse, where, carry_only):
    rows = list(range(int(elem_ts[0].shape[0])))
    if reverse:
        rows.reverse()
    outs = []
    if initializer is None:
        first, rows = rows[0], rows[1:]
        acc = nest.pack(elems, iter([t[first] for t in elem_ts]))
        outs.append(acc)
    else:
        acc = nest.pack(initializer, iter(_tensors(initializer, "the initializer's value",
                                                   where)))
    for i in rows:
        acc = nest.matched(fn(acc, nest.pack(elems, iter([t[i] for t in elem_ts]))), acc,
                           "fn", "the accumulator", where)
        outs.append(acc)
    if carry_only:
        return acc
    if reverse:
        outs.reverse()
    leaves = [nest.flatten(o) for o in outs]
    stacked = [stack([row[k] for row in leaves]) for k in range(len(leaves[0]))]
    return nest.pack(outs[0], iter(stacked))


def _stopped(structure):
    return nest.pack(structure, iter([stop_gradient(t) for t in nest.flatten(structure)]))


def _eager_stack(outs, where):
    if not outs:
        raise ValueError(f"{where}: elems has no rows; the dynamic mode cannot tell what fn "
                         "would return")
    leaves = [nest.flatten(o) for o in outs]
    stacked = [stack([convert_to_tensor(row[k]) for row in leaves])
               for k in range(len(leaves[0]))]
    return nest.pack(outs[0], iter(stacked))
