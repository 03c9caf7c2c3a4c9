"""TF1's `gather_nd` and `scatter_nd`: picking and placing slices by index vectors.

    sg.gather_nd(params, [[0, 1], [2, 0]])          # params[0, 1] and params[2, 0]
    sg.scatter_nd([[1], [3]], updates, [5, 4])       # zeros [5, 4], rows 1 and 3 set

The last axis of `indices` holds K indices into the first K axes of params (or of `shape`);
the other axes of `indices` say how many slices. scatter_nd adds updates that land on one
place. An index out of range is an error naming the op, as in TF1. Each is the other's
gradient.
"""

from __future__ import annotations

from ..errors import here
from ..graph import name_scope
from ..shapes import TensorShape
from .array_ops import _known, _shape_arg, shape_of, transpose
from .conversion import convert_to_tensor
from .creation import apply1
from .table import register


def _index_depth(ctx, i: int):
    """(the index vectors' length K, the other dims of indices), K None if unknown."""
    dims = ctx.in_shapes[i].dims
    if not ctx.in_dtypes[i].is_integer:
        raise TypeError(f"indices must be integers, got {ctx.in_dtypes[i].name}")
    if dims is None:
        return None, None
    if not dims:
        raise ValueError("indices must have rank >= 1 (its last axis holds each index)")
    return dims[-1], dims[:-1]


def _gather_nd_infer(ctx):
    k, batch = _index_depth(ctx, 1)
    params = ctx.in_shapes[0].dims
    if k is None or params is None or batch is None:
        return [(TensorShape(None), ctx.in_dtypes[0])]
    if k > len(params):
        raise ValueError(f"indices index {k} axes, but params has only {len(params)}")
    return [(TensorShape([*batch, *params[k:]]), ctx.in_dtypes[0])]


def _gather_nd_grad(op, g):
    params, indices = op.inputs
    return [scatter_nd(indices, g, shape_of(params)), None]


register("GatherNd", _gather_nd_infer, "rt.gather_nd({0}, {1})", _gather_nd_grad, saves=("x1",),
         arity=2,
         new_array=True, doc="the slices of params (input 0) at the index vectors along the "
                             "last axis of indices (input 1)")


def _scatter_nd_infer(ctx):
    if ctx.in_dtypes[1].is_string:
        raise TypeError("scatter_nd adds its updates to zeros: it takes numbers, not strings")
    k, batch = _index_depth(ctx, 0)
    shape = ctx.value(2)
    if shape is None:
        n = ctx.in_shapes[2].dims
        out = TensorShape(None if n is None or n[0] is None else [None] * n[0])
    else:
        out = TensorShape([int(d) for d in shape])
    if k is not None and batch is not None and out.dims is not None:
        if k > len(out.dims):
            raise ValueError(f"indices index {k} axes, but the shape has only {len(out.dims)}")
        want = TensorShape([*batch, *out.dims[k:]])
        if not ctx.in_shapes[1].is_compatible_with(want):
            raise ValueError(f"updates have shape {ctx.in_shapes[1]}, but indices and shape "
                             f"call for {want}")
    return [(out, ctx.in_dtypes[1])]


def _scatter_nd_numpy(a, ctx):
    if ctx.value(2) is None:  # a shape computed when the run runs
        return f"rt.scatter_nd({a[0]}, {a[1]}, tuple({a[2]}))"
    return f"rt.scatter_nd({a[0]}, {a[1]}, {tuple(_known(ctx, 2, 'shape'))!r})"


register("ScatterNd", _scatter_nd_infer, _scatter_nd_numpy,
         lambda op, g: [None, gather_nd(g, op.inputs[0]), None], saves=("x0",), arity=3,
         new_array=True,
         static_inputs=(2,),
         doc="zeros of `shape` (input 2) with updates (input 1) added at the index vectors "
             "of indices (input 0)")


def gather_nd(params, indices, name=None, batch_dims=0):
    """The slices of `params` at the index vectors of `indices` (its last axis)."""
    if batch_dims:
        raise ValueError("gather_nd: batch_dims is not offered")
    params = convert_to_tensor(params)
    return apply1("GatherNd", [params, convert_to_tensor(indices)], name=name or "GatherNd")


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of `shape` with `updates` added at the index vectors of `indices`."""
    indices = convert_to_tensor(indices)
    updates = convert_to_tensor(updates)
    shape = shape if hasattr(shape, "dtype") else _shape_arg(shape)
    return apply1("ScatterNd", [indices, updates, convert_to_tensor(shape)],
                  name=name or "ScatterNd")


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The slices of `tensor` where `mask` (bool, matching tensor's dims from `axis`, default
    0) is true, stacked along one axis: TF1's boolean_mask (its length known only when the
    graph runs)."""
    where = f"boolean_mask {here()}"
    with name_scope(name):
        tensor, mask = convert_to_tensor(tensor), convert_to_tensor(mask)
        if not mask.dtype.is_bool:
            raise TypeError(f"{where}: the mask must be bool, got {mask.dtype.name}")
        k, rank = mask.shape.ndims, tensor.shape.ndims
        axis = 0 if axis is None else axis
        if k is None or k == 0 or rank is None:
            raise ValueError(f"{where}: the ranks of the tensor and of the mask (>= 1) must "
                             "be known")
        axis = axis % rank
        if axis + k > rank or not tensor.shape[axis:axis + k].is_compatible_with(mask.shape):
            raise ValueError(f"{where}: a mask of shape {mask.shape} does not match the "
                             f"tensor's shape {tensor.shape} from axis {axis}")
        hits = apply1("Where", [mask])
        if axis:
            perm = [*range(axis, rank), *range(axis)]
            picked = gather_nd(transpose(tensor, perm), hits)
            kept = picked.shape.ndims
            back = [*range(kept - axis, kept), *range(kept - axis)]
            return transpose(picked, back)
        return gather_nd(tensor, hits)
