"""The largest values and their places: TF1's `nn.top_k`, `nn.in_top_k`, `sort` and
`argsort`, on one op (TopKV2) along the last axis.

    values, indices = sg.nn.top_k(scores, k=3)    # the 3 largest of each row, largest first
    sg.sort(x, direction="DESCENDING")            # = top_k over the whole axis
    sg.nn.in_top_k(logits, labels, 5)             # is each label among its row's 5 largest

Ties go to the lower index first, as TF1's. The gradient of the values flows to the places
they were taken from. Also TF1's `unique` (op Unique): the distinct values of a vector in the
order they first appear, and where each element's value is among them.
"""

from __future__ import annotations

import collections

from .. import dtypes as _dt
from ..errors import here
from ..graph import name_scope
from ..shapes import TensorShape
from . import math_ops as M
from .array_ops import expand_dims, transpose
from .attr_types import Bool, DType, Int
from .conversion import convert_to_tensor
from .creation import apply
from .indexing_ops import one_hot
from .reduction_ops import reduce_sum
from .table import register


def _top_k_infer(ctx):
    M.check_kind(ctx, 0, "fi")
    dims, k = ctx.dims(0), ctx.attrs["k"]
    if dims is None:
        shape = None
    else:
        if not dims:
            raise ValueError("top_k needs a tensor of rank >= 1, got a scalar")
        if dims[-1] is not None and k > dims[-1]:
            raise ValueError(f"k ({k}) is more than the last dimension ({dims[-1]})")
        shape = [*dims[:-1], k]
    return [(TensorShape(shape), ctx.in_dtypes[0]), (TensorShape(shape), _dt.int32)]


def _top_k_grad(op, d_values, d_indices=None):
    """Each value's gradient back to the place it came from (a one-hot of its index over
    the last axis, summed over the k values)."""
    if d_values is None:
        return [None]
    x, (_, indices) = op.inputs[0], op.outputs
    n = x.shape.dims[-1] if x.shape.dims else None
    if n is None:
        raise ValueError(f"the gradient of top_k ({op.where()}) needs the last dimension of "
                         "its input known when the graph is built")
    spread = one_hot(indices, n, dtype=d_values.dtype) * expand_dims(d_values, -1)
    return [reduce_sum(spread, axis=-2)]


register("TopKV2", _top_k_infer, "rt.top_k({0}, {k})", _top_k_grad, saves=("y1",),
         attrs={"k": Int(lo=0), "sorted": Bool(default=True)}, arity=1, new_array=True,
         grad_takes_none=True,
         doc="the k largest values along the last axis, largest first, and their indices "
             "(int32); ties go to the lower index")


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - TF1's names
    """(values, indices): the `k` largest entries of each row of the last axis, largest
    first, and where they are."""
    k = _static_k(k, "top_k")
    with name_scope(name, "TopKV2"):
        x = convert_to_tensor(input)
        values, indices = apply("TopKV2", [x], {"k": k, "sorted": bool(sorted)})
        return _TopK(values, indices)


# (values, indices) and (y, idx), also by name, as TF1's namedtuples
_TopK = collections.namedtuple("TopKV2", ["values", "indices"])
_Unique = collections.namedtuple("Unique", ["y", "idx"])


def _static_k(k, what: str) -> int:
    value = getattr(convert_to_tensor(k), "_static", None) if not isinstance(k, int) else k
    if value is None or int(value) != value or int(value) < 0:
        raise TypeError(f"{what} {here()}: k must be a "
                        f"non-negative int known when the graph is built, got {k!r}")
    return int(value)


def in_top_k(predictions, targets, k, name=None):
    """For each row, is predictions[row, targets[row]] among the row's `k` largest? (Ties at
    the boundary count as in, as TF1's; a target out of range or a non-finite prediction
    is not in.)"""
    k = _static_k(k, "in_top_k")
    with name_scope(name, "in_top_k"):
        predictions = convert_to_tensor(predictions)
        targets = convert_to_tensor(targets)
        n = predictions.shape.dims[-1] if predictions.shape.dims else None
        if n is None or predictions.shape.ndims != 2:
            raise ValueError(f"in_top_k {here()}: predictions "
                             "must be [batch, classes] with the classes known")
        hot = one_hot(targets, n, dtype=predictions.dtype)
        target = reduce_sum(predictions * hot, axis=-1)
        valid = M.logical_and(reduce_sum(hot, axis=-1) > 0, M.is_finite(target))
        above = reduce_sum(M.cast(predictions > expand_dims(target, -1), _dt.int32), axis=-1)
        return M.logical_and(valid, above < k)


def _along_last(x, axis, fn, what: str):
    """fn applied with `axis` moved last (and moved back after)."""
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"{what} {here()}: the rank must be "
                         "known")
    axis = axis % rank
    if axis == rank - 1:
        return fn(x)
    perm = [*range(axis), *range(axis + 1, rank), axis]
    back = [*range(axis), rank - 1, *range(axis, rank - 1)]
    return transpose(fn(transpose(x, perm)), back)


def _direction(direction: str) -> bool:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    return direction == "DESCENDING"


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis`."""
    descending = _direction(direction)
    with name_scope(name, "sort"):
        x = convert_to_tensor(values)

        def fn(t):
            n = _last(t, "sort")
            return top_k(t, n)[0] if descending else -top_k(-t, n)[0]
        return _along_last(x, axis, fn, "sort")


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The indices (int32) that sort `values` along `axis` (equal values keep their order)."""
    descending = _direction(direction)
    with name_scope(name, "argsort"):
        x = convert_to_tensor(values)
        return _along_last(x, axis, lambda t: top_k(t if descending else -t,
                                                    _last(t, "argsort"))[1], "argsort")


def _last(t, what: str) -> int:
    n = t.shape.dims[-1] if t.shape.dims else None
    if n is None:
        raise ValueError(f"{what} {here()}: the length of the "
                         "sorted axis must be known when the graph is built")
    return n


def _unique_infer(ctx):
    if ctx.in_shapes[0].ndims not in (None, 1):
        raise ValueError(f"unique needs a vector, got shape {ctx.in_shapes[0]}")
    out = ctx.attrs["out_idx"]
    if out not in (_dt.int32, _dt.int64):
        raise TypeError(f"out_idx must be int32 or int64, got {out.name}")
    return [(TensorShape([None]), ctx.in_dtypes[0]), (ctx.in_shapes[0], out)]


register("Unique", _unique_infer, "rt.unique({0}, {out_idx})", differentiable=False,
         attrs={"out_idx": DType()}, arity=1, new_array=True,
         doc="the distinct values of a vector, in the order they first appear, and each "
             "element's place among them")


def unique(x, out_idx=_dt.int32, name=None):
    """(y, idx): the distinct values of the vector x in the order they first appear, and
    for each element of x its value's place in y (x == y[idx])."""
    y, idx = apply("Unique", [convert_to_tensor(x)], {"out_idx": _dt.as_dtype(out_idx)},
                   name=name or "Unique")
    return _Unique(y, idx)
