"""Shape and layout ops: reshape, transpose, concat, slicing, gather, broadcasting.

Shape-like arguments (a reshape's target, a slice's begin) are input tensors read only for
their static value (`static_inputs`): they are folded when the graph is specialized to its
feeds, so the generated code holds concrete shapes (`np.reshape(x, (32, 10))`).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..shapes import TensorShape
from .attr_types import MAX_RANK, DType, Ints, Optional
from .conversion import convert_to_tensor, is_tensor_like
from .creation import apply1
from .table import register

_AXES = Ints(lo=-MAX_RANK, hi=MAX_RANK - 1)  # axes of a tensor (checked against its rank)


def _known(ctx, i, what):
    v = ctx.value(i)
    if v is None:
        raise ValueError(f"{what} must be known when the graph is compiled")
    return [int(d) for d in np.reshape(v, -1)]


def _shape_arg(value, name="shape"):
    """A shape argument as an int32 tensor (a constant when given as a Python list)."""
    if is_tensor_like(value) or (isinstance(value, list | tuple)
                                   and any(is_tensor_like(v) for v in value)):
        t = convert_to_tensor(value)  # a list mixing ints and scalar tensors is stacked
        if not t.dtype.is_integer:
            raise TypeError(f"{name} must be an integer tensor, got {t.dtype.name} {t.name}")
        return t
    arr = np.asarray(value)
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be a list of ints, got {value!r}")
    return convert_to_tensor(arr.astype(np.int64 if arr.size and np.abs(arr).max() >= 2**31
                                        else np.int32), name=name)


def shape_from_vector(ctx, i) -> TensorShape:
    """The shape that input i (a 1-D shape vector) describes: concrete when its value is known,
    else of known rank when its length is."""
    target = ctx.value(i)
    if target is not None:
        return TensorShape([int(d) for d in np.reshape(target, -1)])
    n = ctx.in_shapes[i].dims
    return TensorShape(None if not n or n[0] is None else [None] * n[0])


def _norm_axis(axis, rank, what="axis"):
    if rank is None:
        return axis
    if not -rank <= axis < rank:
        raise ValueError(f"{what} {axis} is out of range for a tensor of rank {rank}")
    return axis % rank


def shape_of(x):
    """The shape of x as an int32 tensor (folded to a constant when known)."""
    return apply1("Shape", [convert_to_tensor(x)], {"out_type": _dt.int32})


def dims_of(t) -> list:
    """t's dims, each an int where the graph knows it, else a scalar tensor of its size when
    the graph runs (what a reshape target or a tile count takes)."""
    if t.shape.dims is None:
        raise ValueError(f"{t.name}: its rank must be known")
    sizes = None
    out = []
    for i, d in enumerate(t.shape.dims):
        if d is None:
            sizes = shape_of(t) if sizes is None else sizes
            d = sizes[i]
        out.append(d)
    return out


# -- Shape, Size, Rank ----------------------------------------------------------------------------
def _index_type(ctx):
    """The out_type attr, which must be int32 or int64 (as TF1's)."""
    dt = ctx.attrs["out_type"]
    if dt not in (_dt.int32, _dt.int64):
        raise TypeError(f"out_type must be int32 or int64, got {dt.name}")
    return dt


register("Shape", lambda ctx: [(TensorShape([ctx.in_shapes[0].ndims]), _index_type(ctx))],
         lambda a, ctx: f"np.array(np.shape({a[0]}), dtype={ctx.lit('out_type')})",
         differentiable=False, shape_inputs=(0,), attrs={"out_type": DType()}, arity=1)
register("Size", lambda ctx: [(TensorShape([]), _index_type(ctx))],
         lambda a, ctx: f"{ctx.lit('out_type')}(np.size({a[0]}))",
         differentiable=False, shape_inputs=(0,), attrs={"out_type": DType()}, arity=1)
register("Rank", lambda ctx: [(TensorShape([]), _dt.int32)],
         lambda a, ctx: f"np.int32(np.ndim({a[0]}))", differentiable=False, shape_inputs=(0,),
         arity=1)


# -- Reshape and friends --------------------------------------------------------------------------
def _reshape_infer(ctx):
    x = ctx.in_shapes[0]
    if ctx.value(1) is None:
        return [(shape_from_vector(ctx, 1), ctx.in_dtypes[0])]
    target = [int(d) for d in np.reshape(ctx.value(1), -1)]  # -1 entries still present
    if sum(d == -1 for d in target) > 1:
        raise ValueError(f"shape {target} has more than one -1")
    known = int(np.prod([d for d in target if d != -1]))
    size = x.num_elements()
    if -1 in target:
        if size is None:
            out = [None if d == -1 else d for d in target]
        else:
            if known == 0 or size % known:
                raise ValueError(f"cannot reshape a tensor of shape {x} ({size} elements) "
                                 f"into shape {target}")
            out = [size // known if d == -1 else d for d in target]
    else:
        if size is not None and size != known:
            raise ValueError(f"cannot reshape a tensor of shape {x} ({size} elements) into "
                             f"shape {target} ({known} elements)")
        out = target
    return [(TensorShape(out), ctx.in_dtypes[0])]


def _reshape_numpy(a, ctx):
    dims = ctx.out_dims()
    if dims is not None and None not in dims:
        return f"np.reshape({a[0]}, {tuple(dims)!r})"
    if ctx.value(1) is not None:  # a target known, with a -1 the input's size decides
        target = tuple(int(d) for d in np.reshape(ctx.value(1), -1))
        return f"np.reshape({a[0]}, {target!r})"
    return f"np.reshape({a[0]}, tuple({a[1]}))"


register("Reshape", _reshape_infer, _reshape_numpy,
         lambda op, g: [reshape(g, shape_of(op.inputs[0])), None], saves=(),
         view=True, static_inputs=(1,), arity=2)


def _transpose_infer(ctx):
    dims = ctx.dims(0)
    perm = ctx.attrs["perm"]
    if perm is None:
        return [(TensorShape(None if dims is None else dims[::-1]), ctx.in_dtypes[0])]
    if dims is not None and all(-len(dims) <= p < len(dims) for p in perm):
        perm = [p % len(dims) for p in perm]  # negative entries (rank unknown when built)
    if dims is not None and sorted(perm) != list(range(len(dims))):
        raise ValueError(f"perm {list(perm)} is not a permutation of the {len(dims)} axes of "
                         f"shape {ctx.in_shapes[0]}")
    out = None if dims is None else [dims[p] for p in perm]
    return [(TensorShape(out), ctx.in_dtypes[0])]


def _transpose_numpy(a, ctx):
    perm = ctx.attrs["perm"]
    if perm is None or (len(perm) == 2 and tuple(perm) == (1, 0)):
        return f"{a[0]}.T"
    return f"np.transpose({a[0]}, {ctx.lit('perm')})"


def _transpose_grad(op, g):
    perm = op.attrs["perm"]
    return [transpose(g, None if perm is None else list(np.argsort(perm)))]


register("Transpose", _transpose_infer, _transpose_numpy, _transpose_grad, saves=(), view=True,
         attrs={"perm": Optional(_AXES)}, arity=1)


def _expand_dims_infer(ctx):
    dims = ctx.dims(0)
    axes = ctx.attrs["axis"]
    if dims is None:
        return [(TensorShape(None), ctx.in_dtypes[0])]
    out = list(dims)
    rank = len(dims) + len(axes)
    for ax in sorted(_norm_axis(a, rank) for a in axes):
        out.insert(ax, 1)
    return [(TensorShape(out), ctx.in_dtypes[0])]


register("ExpandDims", _expand_dims_infer,
         lambda a, ctx: f"np.expand_dims({a[0]}, {ctx.lit('axis')})",
         lambda op, g: [reshape(g, shape_of(op.inputs[0]))], saves=(), view=True,
         attrs={"axis": _AXES}, arity=1)


def _squeeze_infer(ctx):
    dims = ctx.dims(0)
    axes = ctx.attrs["axis"]
    if dims is None:
        return [(TensorShape(None), ctx.in_dtypes[0])]
    if axes is None:
        if None in dims:
            return [(TensorShape(None), ctx.in_dtypes[0])]
        return [(TensorShape([d for d in dims if d != 1]), ctx.in_dtypes[0])]
    axes = {_norm_axis(a, len(dims)) for a in axes}
    for a in axes:
        if dims[a] not in (1, None):
            raise ValueError(f"cannot squeeze axis {a} of shape {ctx.in_shapes[0]}: its size "
                             f"is {dims[a]}, not 1")
    return [(TensorShape([d for i, d in enumerate(dims) if i not in axes]), ctx.in_dtypes[0])]


def _squeeze_numpy(a, ctx):
    axes = ctx.attrs["axis"]
    return f"np.squeeze({a[0]})" if axes is None else f"np.squeeze({a[0]}, {ctx.lit('axis')})"


register("Squeeze", _squeeze_infer, _squeeze_numpy,
         lambda op, g: [reshape(g, shape_of(op.inputs[0]))], saves=(), view=True,
         attrs={"axis": Optional(_AXES)}, arity=1)


# -- broadcasting and its adjoint --------------------------------------------------------------
def _broadcast_to_infer(ctx):
    target = shape_from_vector(ctx, 1)
    if ctx.value(1) is None:
        return [(target, ctx.in_dtypes[0])]
    from ..shapes import broadcast_shapes
    try:
        out = broadcast_shapes([ctx.in_shapes[0], target])
    except ValueError:
        out = None
    if out is None or out != target and out.is_fully_defined():
        raise ValueError(f"cannot broadcast shape {ctx.in_shapes[0]} to {target}")
    return [(target, ctx.in_dtypes[0])]


def _broadcast_to_numpy(a, ctx):
    if ctx.in_shapes[0] == ctx.out_shapes[0] and ctx.in_shapes[0].is_fully_defined():
        return a[0]
    if ctx.value(1) is None and a[1] != "None":  # a shape computed when the run runs (the
        return f"np.broadcast_to({a[0]}, tuple({a[1]}))"  # sum of a loop's growing output)
    return f"np.broadcast_to({a[0]}, {tuple(_known(ctx, 1, 'the target shape'))!r})"


register("BroadcastTo", _broadcast_to_infer, _broadcast_to_numpy,
         lambda op, g: [sum_to(g, shape_of(op.inputs[0])), None], saves=(), view=True,
         static_inputs=(1,), arity=2)


def _sum_to_infer(ctx):
    target, src = shape_from_vector(ctx, 1), ctx.in_shapes[0]
    if target.dims is not None and src.dims is not None:
        lead = len(src.dims) - len(target.dims)
        if lead < 0 or any(t is not None and s is not None and t not in (1, s)
                           for t, s in zip(target.dims, src.dims[lead:])):
            raise ValueError(f"cannot sum shape {src} to {target}: the target must be a shape "
                             "that broadcasts to it (a sum only removes or shrinks axes)")
    return [(target, ctx.in_dtypes[0])]


def _sum_to_numpy(a, ctx):
    src, dst = ctx.in_shapes[0].dims, ctx.out_shapes[0].dims
    if src is None or dst is None or None in src or None in dst:
        if ctx.value(1) is not None:  # (the target known, the source's shape not yet)
            target = tuple(int(d) for d in np.reshape(ctx.value(1), -1))
            return f"rt.sum_to({a[0]}, {target!r})"
        return f"rt.sum_to({a[0]}, {a[1]})"
    if src == dst:
        return a[0]
    lead = len(src) - len(dst)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(dst)
                                      if d == 1 and src[i + lead] != 1)
    expr = f"np.sum({a[0]}, axis={axes!r})" if axes else a[0]
    kept = tuple(d for i, d in enumerate(src) if i not in axes)
    return expr if kept == tuple(dst) else f"np.reshape({expr}, {tuple(dst)!r})"


register("SumTo", _sum_to_infer, _sum_to_numpy,
         lambda op, g: [broadcast_to(g, shape_of(op.inputs[0])), None], saves=(),
         static_inputs=(1,),
         view=True,  # the input itself (or a reshape of it) where there is nothing to sum
         doc="Sum a broadcast gradient back to an input's shape (the adjoint of BroadcastTo).",
         arity=2)


def sum_to(x, shape):
    """Sum x over the axes along which `shape` would broadcast to x's shape."""
    return apply1("SumTo", [convert_to_tensor(x), _shape_arg(shape)])


def broadcast_to(input, shape, name=None):  # noqa: A002 - TF1's name
    """input broadcast to `shape` (NumPy broadcasting rules)."""
    return apply1("BroadcastTo", [convert_to_tensor(input), _shape_arg(shape)], name=name)


# -- filling -----------------------------------------------------------------------------------
def _fill_infer(ctx):
    if ctx.in_shapes[1].ndims not in (0, None):
        raise ValueError(f"the fill value must be a scalar, got shape {ctx.in_shapes[1]}")
    return [(shape_from_vector(ctx, 0), ctx.in_dtypes[1])]


def _fill_numpy(a, ctx):
    shape = tuple(_known(ctx, 0, "the shape to fill"))
    dt = DType().literal(ctx.out_dtypes[0])
    v = ctx.value(1)
    if v is not None and v == 0:
        return f"np.zeros({shape!r}, dtype={dt})"
    if v is not None and v == 1:
        return f"np.ones({shape!r}, dtype={dt})"
    return f"np.full({shape!r}, {a[1]}, dtype={dt})"


def _fill_grad(op, g):
    from .reduction_ops import reduce_sum
    return [None, reduce_sum(g)]


register("Fill", _fill_infer, _fill_numpy, _fill_grad, saves=(), static_inputs=(0,), arity=2)


def _like_numpy(fill):
    def emit(a, ctx):
        dims = ctx.out_dims()
        dt = DType().literal(ctx.out_dtypes[0])
        if ctx.out_dtypes[0].is_string:  # (zeros only: empty strings, as TF1's)
            shape = f"np.shape({a[0]})" if dims is None or None in dims else repr(tuple(dims))
            return f"np.full({shape}, b'', dtype={dt})"
        if dims is None or None in dims:
            return f"np.{fill}_like({a[0]}, dtype={dt})"
        return f"np.{fill}({tuple(dims)!r}, dtype={dt})"
    return emit


def _like_infer(ctx):
    dtype = ctx.attrs["dtype"] or ctx.in_dtypes[0]
    if dtype.is_string and ctx.type == "OnesLike":
        raise TypeError("ones of dtype string do not exist (TF1 has none either)")
    return [(ctx.in_shapes[0], dtype)]


register("ZerosLike", _like_infer, _like_numpy("zeros"), differentiable=False,
         shape_inputs=(0,), attrs={"dtype": Optional(DType(), default=None)}, arity=1)
register("OnesLike", _like_infer, _like_numpy("ones"), differentiable=False, shape_inputs=(0,),
         attrs={"dtype": Optional(DType(), default=None)}, arity=1)


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with the scalar `value`. Where `dims` is a list of
    ints and scalar tensors ([batch, 16]), the ints are the result's static dims, as TF1
    reads them."""
    out = apply1("Fill", [_shape_arg(dims, "dims"), convert_to_tensor(value)], name=name)
    if isinstance(dims, list | tuple) and not out.graph.eager:
        out.set_shape([int(d) if isinstance(d, int | np.integer) and not isinstance(d, bool)
                       else None for d in dims])
    return out


def zeros(shape, dtype=_dt.float32, name=None):
    """A tensor of zeros of `shape`."""
    dtype = _dt.as_dtype(dtype)
    return fill(shape, convert_to_tensor(np.zeros((), dtype.np)), name=name or "zeros")


def ones(shape, dtype=_dt.float32, name=None):
    """A tensor of ones of `shape`."""
    dtype = _dt.as_dtype(dtype)  # np.ones: also True for bool (the int 1 is not a bool)
    return fill(shape, convert_to_tensor(np.ones((), dtype.np)), name=name or "ones")


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """Zeros with the shape (and dtype, unless given) of `tensor`."""
    t = convert_to_tensor(tensor)
    attrs = {"dtype": _dt.as_dtype(dtype) if dtype is not None else None}
    return apply1("ZerosLike", [t], attrs, name=name)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """Ones with the shape (and dtype, unless given) of `tensor`."""
    t = convert_to_tensor(tensor)
    attrs = {"dtype": _dt.as_dtype(dtype) if dtype is not None else None}
    return apply1("OnesLike", [t], attrs, name=name)


# -- public reshape family ---------------------------------------------------------------------
def reshape(tensor, shape, name=None):
    """tensor with its elements laid out in `shape` (one entry may be -1)."""
    return apply1("Reshape", [convert_to_tensor(tensor), _shape_arg(shape)], name=name)


def transpose(a, perm=None, name="transpose", conjugate=False):
    """a with its axes permuted by `perm` (default: reversed)."""
    a = convert_to_tensor(a)
    if perm is not None:
        if is_tensor_like(perm):
            v = convert_to_tensor(perm)._static
            if v is None:
                raise TypeError("transpose: perm must be known when the graph is built")
            perm = v
        perm = np.reshape(np.asarray(perm), -1).tolist()
        if all(isinstance(p, int) and -len(perm) <= p < len(perm) for p in perm):
            # a permutation names every axis, so its length is the rank even when a's is unknown
            perm = [p % len(perm) for p in perm]
    return apply1("Transpose", [a], {"perm": perm}, name=name)  # the shape rule checks it


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    """input with a new axis of size 1 inserted at `axis`."""
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("expand_dims needs an axis")
    axes = tuple(int(a) for a in np.reshape(axis, -1))
    return apply1("ExpandDims", [convert_to_tensor(input)], {"axis": axes}, name=name)


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    """input without its size-1 axes (only those listed in `axis`, if given)."""
    axis = squeeze_dims if axis is None else axis
    if axis is not None:
        axis = tuple(int(a) for a in np.reshape(axis, -1))
    return apply1("Squeeze", [convert_to_tensor(input)], {"axis": axis}, name=name)


def shape(input, name=None, out_type=_dt.int32):  # noqa: A002
    """The shape of `input` as a 1-D int tensor."""
    return apply1("Shape", [convert_to_tensor(input)], {"out_type": _dt.as_dtype(out_type)},
                  name=name)


def size(input, name=None, out_type=_dt.int32):  # noqa: A002
    """The number of elements of `input` as a scalar int tensor."""
    return apply1("Size", [convert_to_tensor(input)], {"out_type": _dt.as_dtype(out_type)},
                  name=name)


def rank(input, name=None):  # noqa: A002
    """The rank of `input` as a scalar int32 tensor."""
    return apply1("Rank", [convert_to_tensor(input)], name=name)
