"""The Scan op: a body (a closed sub-graph, branches.py) run once for each row of its elems,
carrying values from one step to the next; what `scan`, `map_fn`, the folds (scan.py) and
`dynamic_rnn` (rnn/loops.py) build, and its gradient (scan_grad.py) too.

Its inputs are the initial carried values, the elems, then the tensors its body captures;
its outputs the last carried values, each step's outputs stacked, and each step's carried
values stacked (its `history`, which its gradient reads).
"""

from __future__ import annotations

import numpy as np

from ..ops.attr_types import Bool, Int
from ..ops.table import register
from ..shapes import TensorShape
from .branches import BRANCH, signature, signature_of
from .scan_build import _row, _split
from .scan_grad import scan_grad


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
    return [[(s, None) for s, _ in carries] + [(_row(s), _same_rows(v)) for s, v in elems]
            + captured]


def _same_rows(value):
    """The row that every row of `value` (elems known when compiling) is, bit for bit (0.0
    and -0.0 differ), if they all are one (a stacked shape, say: see scan_grad.py); else
    None."""
    if value is None or np.ndim(value) == 0 or len(value) == 0:
        return None
    value = np.ascontiguousarray(value)
    if value.size == 0:
        return value[0]
    rows = value.reshape(len(value), -1).view(np.uint8)
    return value[0] if (rows == rows[0]).all() else None


def _scan_region_values(attrs, out_shapes, results):
    """The stacked outputs whose every step's value is known when compiling (a Shape of a
    step's value: the same at every step), stacked."""
    (body,) = results
    c = attrs["carries"]
    known = [None] * len(out_shapes)
    for j, v in enumerate(body[c:]):
        shape = out_shapes[c + j]
        if v is not None and shape.is_fully_defined():
            known[c + j] = np.broadcast_to(v, shape.dims)
    return known


def _scan_region_results(attrs, in_shapes, results, loose=False):
    carries, elems, _ = _split(attrs, in_shapes)
    (body_shapes,) = results
    for i, (entry, after) in enumerate(zip(carries, body_shapes)):
        if after.dims != entry.dims:
            raise ValueError(f"carried value {i} has shape {entry} on entry but {after} "
                             "after one step; a scan's carried values keep their shapes")
    return [s for s, _ in _outputs(attrs, carries, elems, body_shapes)]


register("Scan", _scan_infer, None, scan_grad, saves=("x*", "y*"),
         attrs={"body": BRANCH, "carries": Int(lo=0), "elems": Int(lo=1), "reverse": Bool()},
         arity=(1, None), region_attrs=("body",),
         grad_takes_none=True, region_feeds=_scan_region_feeds,
         region_results=_scan_region_results, region_values=_scan_region_values,
         doc="runs its body (a region) once for each row of its elems, first to last (or "
             "last to first with `reverse`), carrying values between steps; gives the last "
             "carried values, each step's outputs stacked, and each step's carried values "
             "stacked (for its gradient)")
