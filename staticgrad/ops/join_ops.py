"""Joining and splitting: concat, stack, unstack, split, tile, pad."""

from __future__ import annotations

import numpy as np

from ..errors import here
from ..shapes import TensorShape
from .array_ops import _known, _norm_axis, _shape_arg, reshape, shape_of, zeros_like
from .attr_types import Axis, Choice, Int, Ints, Number
from .conversion import convert_operands, convert_to_tensor, is_tensor_like
from .creation import apply, apply1
from .table import register

_OUTPUTS = Int(0, 1 << 20)  # how many outputs an op makes (split, unstack)


def _same_dtype(ctx):
    first = ctx.in_dtypes[0]
    for i, dt in enumerate(ctx.in_dtypes):
        if dt is not first:
            raise TypeError(f"input {i} has dtype {dt.name} but input 0 has {first.name}")
    return first


def _dim_along(x, axis):
    """x's size along `axis`: an int when known, else an int32 scalar tensor."""
    d = x.shape.dims[axis] if x.shape.dims is not None else None
    return d if d is not None else shape_of(x)[axis]


# -- concat ----------------------------------------------------------------------------------------
def _concat_infer(ctx):
    dt = _same_dtype(ctx)
    axis = ctx.attrs["axis"]
    ranks = {s.ndims for s in ctx.in_shapes if s.ndims is not None}
    if len(ranks) > 1:
        raise ValueError("inputs have different ranks: "
                         + ", ".join(str(s) for s in ctx.in_shapes))
    if not ranks:
        return [(TensorShape(None), dt)]
    rank = ranks.pop()
    axis = _norm_axis(axis, rank)
    out = [None] * rank
    total = 0
    for s in ctx.in_shapes:
        for i, d in enumerate(s.dims):
            if i == axis:
                total = None if total is None or d is None else total + d
            elif d is not None:
                if out[i] is not None and out[i] != d:
                    raise ValueError(f"dimension {i} differs between inputs: "
                                     + ", ".join(str(s) for s in ctx.in_shapes))
                out[i] = d
    out[axis] = total
    return [(TensorShape(out), dt)]


def _concat_grad(op, g):
    axis = op.attrs["axis"]
    rank = op.outputs[0].shape.ndims
    axis = axis % rank if rank is not None else axis
    sizes = [_dim_along(x, axis) for x in op.inputs]
    return list(split(g, sizes, axis=axis))


register("ConcatV2", _concat_infer,
         lambda a, ctx: f"np.concatenate([{', '.join(a)}], axis={ctx.lit('axis')})",
         _concat_grad, saves=(), attrs={"axis": Axis()}, arity=(1, None))


def concat(values, axis, name="concat"):
    """The tensors in `values` joined along `axis`."""
    values = [convert_to_tensor(v) for v in values]
    if len(values) == 1:
        from .math_ops import identity
        return identity(values[0], name=name)
    return apply1("ConcatV2", values, {"axis": axis}, name=name)


# -- stack / unstack -----------------------------------------------------------------------------
def _pack_infer(ctx):
    dt = _same_dtype(ctx)
    shape = ctx.in_shapes[0]
    for s in ctx.in_shapes[1:]:
        if not shape.is_compatible_with(s):
            raise ValueError("inputs must have one shape; got "
                             + ", ".join(str(s) for s in ctx.in_shapes))
        shape = shape.merge_with(s)
    if shape.dims is None:
        return [(TensorShape(None), dt)]
    out = list(shape.dims)
    out.insert(_norm_axis(ctx.attrs["axis"], len(out) + 1), len(ctx.in_shapes))
    return [(TensorShape(out), dt)]


register("Pack", _pack_infer,
         lambda a, ctx: f"np.stack([{', '.join(a)}], axis={ctx.lit('axis')})",
         lambda op, g: unstack(g, num=len(op.inputs), axis=op.attrs["axis"]), saves=(),
         attrs={"axis": Axis()}, arity=(1, None))


def _unpack_infer(ctx):
    dims = ctx.dims(0)
    num, axis = ctx.attrs["num"], ctx.attrs["axis"]
    if dims is None:
        return [(TensorShape(None), ctx.in_dtypes[0])] * num
    axis = _norm_axis(axis, len(dims))
    if dims[axis] is not None and dims[axis] != num:
        raise ValueError(f"num {num} does not match the size {dims[axis]} of axis {axis} of "
                         f"shape {ctx.in_shapes[0]} (unstack makes one output per slice)")
    if num == 0:
        raise ValueError(f"unstack along axis {axis} of shape {ctx.in_shapes[0]} needs its size "
                         "known and above 0 (num 0 makes no outputs)")
    out = TensorShape(dims[:axis] + dims[axis + 1:])
    return [(out, ctx.in_dtypes[0])] * num


def _unpack_numpy(a, ctx):
    axis = ctx.lit("axis")
    if ctx.attrs["num"] == 1:
        return f"np.take({a[0]}, 0, axis={axis})"  # one output: the value, not a 1-tuple
    return f"tuple(np.moveaxis({a[0]}, {axis}, 0))" if ctx.attrs["axis"] else f"tuple({a[0]})"


def _unpack_grad(op, *grads):
    grads = [g if g is not None else zeros_like(t) for g, t in zip(grads, op.outputs)]
    return [stack(grads, axis=op.attrs["axis"])]


register("Unpack", _unpack_infer, _unpack_numpy, _unpack_grad, saves=(), view=True,
         attrs={"num": _OUTPUTS, "axis": Axis()}, arity=1)


def stack(values, axis=0, name="stack"):
    """The tensors in `values` (one shape) stacked along a new axis."""
    values = list(values)
    tensors = [v for v in values if is_tensor_like(v)]
    if tensors:
        first = convert_to_tensor(tensors[0])
        values = [convert_operands(first, v)[1] for v in values]
    else:
        values = [convert_to_tensor(v) for v in values]
    return apply1("Pack", values, {"axis": axis}, name=name)


pack = stack


def unstack(value, num=None, axis=0, name="unstack"):
    """The slices of `value` along `axis`, as a list of tensors."""
    value = convert_to_tensor(value)
    dims = value.shape.dims
    if num is None:
        if dims is None or not -len(dims) <= axis < len(dims) or dims[axis] is None:
            raise ValueError(f"unstack: cannot infer num from {value.name} of shape "
                             f"{value.shape} along axis {axis}; pass num= ({here()})")
        num = dims[axis]
    return list(apply("Unpack", [value], {"num": num, "axis": axis}, name=name))


unpack = unstack


# -- split --------------------------------------------------------------------------------------
def _split_infer(ctx):
    dims = ctx.dims(0)
    axis, num = ctx.attrs["axis"], ctx.attrs["num"]
    sizes = ctx.value(1)
    dt = ctx.in_dtypes[0]
    if dims is None:
        return [(TensorShape(None), dt)] * num
    axis = _norm_axis(axis, len(dims))
    total = dims[axis]
    if sizes is None:
        outs = [None] * num
    else:
        sizes = [int(s) for s in np.reshape(sizes, -1)]
        if sizes.count(-1) == 1 and total is not None:
            sizes[sizes.index(-1)] = total - (sum(sizes) + 1)
        if total is not None and sum(sizes) != total:
            raise ValueError(f"split sizes {sizes} do not add up to {total}, the size of axis "
                             f"{axis} of shape {ctx.in_shapes[0]}")
        outs = sizes
    return [(TensorShape(dims[:axis] + (s,) + dims[axis + 1:]), dt) for s in outs]


def _split_numpy(a, ctx):
    axis = ctx.attrs["axis"]
    sizes = [s.dims[axis] for s in ctx.out_shapes]
    if None in sizes:
        raise ValueError(f"split sizes of {ctx.name} must be known when the graph is compiled")
    bounds = list(np.cumsum(sizes)[:-1].tolist())
    if len(sizes) == 1:
        return a[0]  # one output: the value, not a 1-tuple
    return f"tuple(np.split({a[0]}, {bounds!r}, axis={ctx.lit('axis')}))"


def _split_grad(op, *grads):
    grads = [g if g is not None else zeros_like(t) for g, t in zip(grads, op.outputs)]
    return [concat(grads, axis=op.attrs["axis"]), None]


register("Split", _split_infer, _split_numpy, _split_grad, saves=(), view=True, static_inputs=(1,),
         attrs={"num": _OUTPUTS, "axis": Axis()}, arity=2)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """value cut along `axis` into equal parts (an int) or parts of the given sizes (a list)."""
    value = convert_to_tensor(value)
    dims = value.shape.dims
    ax = _norm_axis(int(axis), len(dims)) if dims is not None else int(axis)
    if isinstance(num_or_size_splits, int | np.integer):
        n = int(num_or_size_splits)
        total = dims[ax] if dims is not None else None
        if total is None:
            part = shape_of(value)[ax] // n
            sizes = stack([part] * n)
        else:
            if total % n:
                raise ValueError(f"split: axis {ax} of {value.name} of shape {value.shape} "
                                 f"(size {total}) does not divide into {n} equal parts "
                                 f"({here()})")
            sizes = _shape_arg([total // n] * n)
    else:
        items = list(num_or_size_splits)
        n = num if num is not None else len(items)
        if any(is_tensor_like(s) for s in items):
            sizes = stack([convert_to_tensor(s) for s in items])
        else:
            sizes = _shape_arg([int(s) for s in items])
    return list(apply("Split", [value, sizes], {"axis": ax, "num": n}, name=name))


# -- tile --------------------------------------------------------------------------------------
def _tile_infer(ctx):
    dims = ctx.dims(0)
    mult = ctx.attrs["multiples"]
    if dims is not None and len(mult) != len(dims):
        raise ValueError(f"multiples {list(mult)} must have one entry per axis of shape "
                         f"{ctx.in_shapes[0]}")
    if dims is None:
        return [(TensorShape([None] * len(mult)), ctx.in_dtypes[0])]
    return [(TensorShape([None if d is None else d * m for d, m in zip(dims, mult)]),
             ctx.in_dtypes[0])]


def _tile_grad(op, g):
    from .reduction_ops import reduce_sum
    x = op.inputs[0]
    mult = op.attrs["multiples"]
    interleaved = []  # (m0, d0, m1, d1, ...): reshape takes ints mixed with scalar tensors
    for i, m in enumerate(mult):
        interleaved += [m, _dim_along(x, i)]
    return [reduce_sum(reshape(g, interleaved), axis=list(range(0, 2 * len(mult), 2)))]


register("Tile", _tile_infer, lambda a, ctx: f"np.tile({a[0]}, {ctx.lit('multiples')})",
         _tile_grad, saves=(), attrs={"multiples": Ints(lo=0)}, arity=1)


def tile(input, multiples, name=None):  # noqa: A002
    """input repeated `multiples[i]` times along axis i."""
    mult = tuple(int(m) for m in np.reshape(
        convert_to_tensor(multiples)._static if is_tensor_like(multiples) else multiples, -1))
    return apply1("Tile", [convert_to_tensor(input)], {"multiples": mult}, name=name)


# -- pad -----------------------------------------------------------------------------------------
def _pad_infer(ctx):
    if ctx.in_dtypes[0].is_string and ctx.attrs["mode"] == "CONSTANT":
        raise TypeError("a constant pad of strings is not offered (its constant_values is "
                        "a number); pad with mode REFLECT or SYMMETRIC, or sg.concat")
    dims = ctx.dims(0)
    pads = ctx.value(1)
    if dims is None or pads is None:
        return [(TensorShape(None if dims is None else [None] * len(dims)), ctx.in_dtypes[0])]
    pads = np.reshape(pads, (-1, 2))
    if len(pads) != len(dims) or (pads < 0).any():
        raise ValueError(f"paddings {pads.tolist()} must be [rank, 2] non-negative for shape "
                         f"{ctx.in_shapes[0]}")
    return [(TensorShape([None if d is None else d + int(p.sum()) for d, p in zip(dims, pads)]),
             ctx.in_dtypes[0])]


def _pad_numpy(a, ctx):
    pads = [tuple(p) for p in np.reshape(_known(ctx, 1, "paddings"), (-1, 2)).tolist()]
    mode = ctx.attrs["mode"]
    if mode == "CONSTANT":
        c = ctx.attrs["constant_values"]
        extra = f", constant_values={ctx.lit('constant_values')}" if c != 0 else ""
        return f"np.pad({a[0]}, {pads!r}{extra})"
    return f"np.pad({a[0]}, {pads!r}, mode={_NUMPY_PAD_MODES[mode]!r})"


_PAD_MODES = Choice("CONSTANT", "REFLECT", "SYMMETRIC")
_NUMPY_PAD_MODES = {"REFLECT": "reflect", "SYMMETRIC": "symmetric"}


def _pad_grad(op, g):
    from .indexing_ops import slice as _slice
    if op.attrs["mode"] != "CONSTANT":
        raise NotImplementedError(f"the gradient of Pad with mode {op.attrs['mode']} "
                                  f"({op.where()}) is not implemented")
    begin = op.inputs[1][:, 0]
    return [_slice(g, begin, shape_of(op.inputs[0])), None]


register("Pad", _pad_infer, _pad_numpy, _pad_grad, saves=("x1",), static_inputs=(1,),
         attrs={"mode": _PAD_MODES, "constant_values": Number()}, arity=2)


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """tensor padded by paddings[i] = [before, after] along each axis i."""
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"pad mode must be CONSTANT, REFLECT or SYMMETRIC, got {mode!r}")
    tensor = convert_to_tensor(tensor)
    value = convert_to_tensor(constant_values, dtype_hint=tensor.dtype)._static \
        if is_tensor_like(constant_values) else np.asarray(constant_values)
    if value is None or np.ndim(value) != 0:
        raise TypeError(f"pad: constant_values must be a scalar known when the graph is built, "
                        f"got {constant_values!r}")
    return apply1("Pad", [tensor, _shape_arg(paddings, "paddings")],
                  {"mode": mode, "constant_values": value.astype(tensor.dtype.np).item()},
                  name=name)
