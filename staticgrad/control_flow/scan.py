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

The Scan op itself is in scan_op.py. Gradients (scan_grad.py): a Scan also gives each step's
carried values, stacked (its `history`: memory grows with the number of rows, allocated
once; the generated code fills it only when a gradient reads it). The gradient of a Scan is
another Scan, over the rows in the opposite order; the values of the forward body that it
reads (an LSTM's gates) are kept, stacked, by the forward loop, which the compiler runs once
for both. It carries the gradients of the carried values and the sums of the captured
tensors' gradients over steps. Being a Scan itself, it has a gradient too: second
derivatives (Hessian-vector products) through scan, map_fn and the folds work.

TF1's `parallel_iterations`, `swap_memory` and `infer_shape` are accepted and change
nothing (rows run one after another; kept values stay in host memory; shapes are inferred).
"""

from __future__ import annotations

from ..errors import here
from ..graph import Tensor, get_default_graph, name_scope
from ..ops.array_ops import expand_dims
from ..ops.conversion import convert_to_tensor
from ..ops.join_ops import concat, stack
from ..ops.math_ops import stop_gradient
from . import structure as nest
from .branches import check_loop_options, eager_graph, encloses, leaf_tensor
from .scan_build import make_scan


# -- the user's functions -----------------------------------------------------------------------
def _where(kind: str) -> str:
    return f"{kind} {here()}"


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
