"""Indexing: `tensor[...]`, slice, gather, one_hot, where(cond); and range, linspace, eye.

`tensor[i, 1:3, ..., None]` becomes one StridedSlice op whose index is kept as a static
spec and rendered back as Python indexing in the generated code (`x[0, 1:3, ..., None]`).
Its gradient scatters into zeros (StridedSliceGrad), and the two are each other's adjoints.
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes as _dt
from ..errors import here
from ..shapes import TensorShape
from .array_ops import _known, _norm_axis, _shape_arg, shape_of
from .attr_types import MAX_RANK, Axis, DType, IndexSpec, Int, Number
from .conversion import convert_to_tensor, is_tensor_like
from .creation import apply1
from .indexed_slices import IndexedSlices
from .table import register


# -- index specs ---------------------------------------------------------------------------------
def normalize_index(key) -> tuple:
    """A hashable spec of a Python index: ints, (start, stop, step) slices, None, Ellipsis."""
    items = key if isinstance(key, tuple) else (key,)
    spec = []
    for k in items:
        if k is None or k is Ellipsis:
            spec.append(k)
        elif isinstance(k, builtins.slice):
            parts = []
            for p in (k.start, k.stop, k.step):
                if is_tensor_like(p):
                    v = convert_to_tensor(p)._static
                    if v is None:
                        raise TypeError("slice bounds must be Python ints or tensors whose "
                                        "value is known when the graph is built")
                    p = int(v)
                parts.append(None if p is None else int(p))
            if parts[2] == 0:
                raise ValueError(f"slice step cannot be zero (index {key!r}, {here()})")
            spec.append(("slice", *parts))
        elif isinstance(k, int | np.integer):
            spec.append(int(k))
        elif is_tensor_like(k):
            v = convert_to_tensor(k)._static
            if v is None or np.ndim(v) != 0:
                raise TypeError("tensor indices must be scalars known when the graph is built; "
                                "use sg.gather to index by a computed tensor")
            spec.append(int(v))
        else:
            raise TypeError(f"cannot index a tensor with {k!r} ({type(k).__name__}); use ints, "
                            "slices, None, ... or sg.gather")
    if spec.count(Ellipsis) > 1:
        raise ValueError("an index can contain at most one '...'")
    return tuple(spec)


def index_source(spec) -> str:
    """Python source of an index spec, e.g. '0, 1:3, ..., None' (made by its declared type)."""
    return IndexSpec().literal(spec)


def _sliced_shape(dims, spec, where_shape):
    consumed = sum(1 for s in spec if s is not None and s is not Ellipsis)
    if consumed > len(dims):
        raise ValueError(f"too many indices ({consumed}) for shape {where_shape}")
    out, i = [], 0
    for s in spec:
        if s is None:
            out.append(1)
        elif s is Ellipsis:
            n = len(dims) - consumed
            out.extend(dims[i:i + n])
            i += n
        elif isinstance(s, int):
            d = dims[i]
            if d is not None and not -d <= s < d:
                raise ValueError(f"index {s} is out of bounds for axis {i} of size {d} "
                                 f"(shape {where_shape})")
            i += 1
        else:
            d = dims[i]
            span = None if d is None else builtins.slice(*s[1:]).indices(d)
            out.append(None if span is None else len(builtins.range(*span)))
            i += 1
    out.extend(dims[i:])
    return out


def _strided_slice_infer(ctx):
    dims = ctx.dims(0)
    if dims is None:
        return [(TensorShape(None), ctx.in_dtypes[0])]
    return [(TensorShape(_sliced_shape(dims, ctx.attrs["index"], ctx.in_shapes[0])),
             ctx.in_dtypes[0])]


register("StridedSlice", _strided_slice_infer,
         lambda a, ctx: f"{a[0]}[{ctx.lit('index')}]",
         lambda op, g: [apply1("StridedSliceGrad", [g, shape_of(op.inputs[0])],
                               {"index": op.attrs["index"]})], saves=(),
         view=True, attrs={"index": IndexSpec()}, arity=1)


def _strided_slice_grad_infer(ctx):
    target = ctx.value(1)
    if target is None:
        return [(TensorShape(None), ctx.in_dtypes[0])]
    return [(TensorShape([int(d) for d in target]), ctx.in_dtypes[0])]


register("StridedSliceGrad", _strided_slice_grad_infer,
         lambda a, ctx: (f"rt.strided_slice_grad({a[0]}, {tuple(_known(ctx, 1, 'shape'))!r}, "
                         f"np.s_[{ctx.lit('index')}])"),
         lambda op, g: [strided_slice_spec(g, op.attrs["index"]), None], saves=(),
         static_inputs=(1,), attrs={"index": IndexSpec()}, arity=2)


def strided_slice_spec(x, spec, name=None):
    return apply1("StridedSlice", [convert_to_tensor(x)], {"index": spec}, name=name)


def getitem(tensor, key):
    """tensor[key] for ints, slices (with negative bounds and strides), None and `...`; and
    integer scalars computed when the graph runs (`x[i]` in a loop body, as TF1 allows),
    each taken by a gather along its axis after the rest is sliced."""
    items = key if isinstance(key, tuple) else (key,)
    computed = [k for k, item in enumerate(items) if _computed_index(item)]
    try:
        spec = normalize_index(tuple(builtins.slice(None) if k in computed else item
                                     for k, item in enumerate(items)))
    except (TypeError, ValueError) as e:
        name = getattr(tensor, "name", "a tensor")
        raise type(e)(f"cannot index {name}: {e}") from None
    if not computed:
        return strided_slice_spec(tensor, spec, name="strided_slice")
    tensor = convert_to_tensor(tensor)
    if tensor.shape.ndims == 0:
        raise ValueError(f"cannot index {tensor.name}: it is a scalar")
    axes = _output_axes(spec, tensor, computed)
    out = strided_slice_spec(tensor, spec, name="strided_slice") \
        if any(s != ("slice", None, None, None) for s in spec) else tensor
    for k in reversed(computed):  # (the last first: the axes before it stay where they are)
        index = convert_to_tensor(items[k])
        if index.shape.ndims != 0 or not index.dtype.is_integer:
            raise TypeError(f"cannot index {tensor.name}: a computed index must be an integer "
                            f"scalar, got {index.dtype.name}{index.shape}; use sg.gather to "
                            "take several")
        out = _take(out, index, axes[k])
    return out


def _take(t, index, axis: int):
    """t's slice at `index` (a scalar computed when the graph runs; -1 the last, as TF1's)
    along `axis` (an index out of range: the gather's error, naming the line)."""
    if index.dtype not in (_dt.int32, _dt.int64):
        index = apply1("Cast", [index], {"dtype": _dt.int32})  # (int8 cannot hold the size)
    size = shape_of(t)[axis]
    if size.dtype is not index.dtype:
        size = apply1("Cast", [size], {"dtype": index.dtype})
    index = apply1("Select", [index < 0, index + size, index])
    return apply1("GatherV2", [t, index], {"axis": axis}, name="strided_slice")


def _computed_index(item) -> bool:
    """Is `item` an index whose value is known only when the graph runs (a scalar tensor)?"""
    return is_tensor_like(item) and not isinstance(item, int | np.integer) and \
        convert_to_tensor(item)._static is None


def _output_axes(spec, tensor, computed) -> dict:
    """For each position of `spec` that is a slice, the axis it gives in the sliced result
    (those after a '...' need the rank: an error if a computed index is among them)."""
    rank = tensor.shape.ndims
    if Ellipsis in spec and rank is None:
        if any(k > spec.index(Ellipsis) for k in computed):
            raise ValueError(f"cannot index {tensor.name}: a computed index after '...' needs "
                             "the rank known")
        spec = spec[:spec.index(Ellipsis)]
    consumed = sum(1 for s in spec if s is not None and s is not Ellipsis)
    axes, axis = {}, 0
    for k, s in enumerate(spec):
        if s is Ellipsis:
            axis += rank - consumed
        elif s is None or isinstance(s, tuple):
            axes[k] = axis
            axis += 1
    return axes


# -- slice ---------------------------------------------------------------------------------------
def _slice_bounds(ctx):
    dims = ctx.dims(0)
    begin, size = ctx.value(1), ctx.value(2)
    if dims is None or begin is None or size is None:
        return None
    begin = [int(b) for b in np.reshape(begin, -1)]
    size = [int(s) for s in np.reshape(size, -1)]
    if not len(begin) == len(size) == len(dims):
        raise ValueError(f"begin {begin} and size {size} need one entry per axis of shape "
                         f"{ctx.in_shapes[0]}")
    out = []
    for ax, (b, s, d) in enumerate(zip(begin, size, dims)):
        if s == -1:
            s = None if d is None else d - b
        if b < 0 or (s is not None and s < 0) or (d is not None and s is not None and b + s > d):
            raise ValueError(f"slice begin {begin} size {size} is out of bounds on axis {ax} "
                             f"of shape {ctx.in_shapes[0]}")
        out.append(s)
    return begin, out


def _slice_infer(ctx):
    bounds = _slice_bounds(ctx)
    if bounds is None:
        dims = ctx.dims(0)
        return [(TensorShape(None if dims is None else [None] * len(dims)), ctx.in_dtypes[0])]
    return [(TensorShape(bounds[1]), ctx.in_dtypes[0])]


def _slice_numpy(a, ctx):
    bounds = _slice_bounds(ctx)
    if bounds is None or None in bounds[1]:
        raise ValueError(f"slice bounds of {ctx.name} must be known when compiled")
    spec = tuple(("slice", b, b + s, None) for b, s in zip(*bounds))
    return f"{a[0]}[{index_source(spec)}]"


def _slice_grad(op, g):
    from .join_ops import pad, stack
    x, begin = op.inputs[0], op.inputs[1]
    after = shape_of(x) - begin - shape_of(op.outputs[0])
    return [pad(g, stack([begin, after], axis=1)), None, None]


register("Slice", _slice_infer, _slice_numpy, _slice_grad, saves=("x1",), view=True,
         static_inputs=(1, 2), arity=3)


def slice(input_, begin, size, name=None):  # noqa: A001 - TF1's name
    """The part of input_ starting at `begin` of extent `size` (-1: to the end)."""
    return apply1("Slice", [convert_to_tensor(input_), _shape_arg(begin, "begin"),
                            _shape_arg(size, "size")], name=name)


# -- gather ----------------------------------------------------------------------------------------
def _gather_infer(ctx):
    p, idx = ctx.in_shapes
    if not ctx.in_dtypes[1].is_integer:
        raise TypeError(f"indices must be integers, got {ctx.in_dtypes[1].name}")
    axis = ctx.attrs["axis"]
    if p.dims is None or idx.dims is None:
        return [(TensorShape(None), ctx.in_dtypes[0])]
    axis = _norm_axis(axis, len(p.dims))
    return [(TensorShape(p.dims[:axis] + idx.dims + p.dims[axis + 1:]), ctx.in_dtypes[0])]


def _gather_grad(op, g):
    """Along axis 0, TF1's IndexedSlices: g's rows, at the indices (flattened, with g's
    leading dims), of a tensor of params' shape; along another axis, the dense gradient."""
    params, indices = op.inputs
    axis, rank = op.attrs["axis"], params.shape.ndims
    if rank is None or axis % rank != 0:
        grad = apply1("GatherGrad", [g, indices, shape_of(params)], {"axis": axis})
        return [grad, None]
    if indices.shape.ndims != 1:
        from .array_ops import reshape
        from .join_ops import concat
        row = params.shape.dims[1:]
        g = reshape(g, [-1, *row] if None not in row else
                    concat([[-1], shape_of(params)[1:]], 0))
        indices = reshape(indices, [-1])
    return [IndexedSlices(g, indices, shape_of(params)), None]


# an index outside [0, n) is an error, as in TF1 (np.take alone would wrap -1 around)
register("GatherV2", _gather_infer, "rt.gather({0}, {1}, {axis})", _gather_grad, saves=("x1",),
         attrs={"axis": Axis()}, arity=2)


def _gather_grad_infer(ctx):
    target = ctx.value(2)
    shape = TensorShape(None if target is None else [int(d) for d in target])
    if shape.dims is not None:
        _norm_axis(ctx.attrs["axis"], len(shape.dims))
    return [(shape, ctx.in_dtypes[0])]


def _gather_grad_numpy(a, ctx):
    rank = ctx.in_shapes[2].dims[0] if ctx.in_shapes[2].dims else None
    if ctx.value(2) is None and a[2] != "None" and rank is not None:  # a shape computed
        axis = Int().literal(_norm_axis(ctx.attrs["axis"], rank))  # when the run runs
        return f"rt.gather_grad({a[0]}, {a[1]}, tuple({a[2]}), {axis})"
    shape = tuple(_known(ctx, 2, "shape"))
    axis = Int().literal(_norm_axis(ctx.attrs["axis"], len(shape)))
    return f"rt.gather_grad({a[0]}, {a[1]}, {shape!r}, {axis})"


register("GatherGrad", _gather_grad_infer, _gather_grad_numpy,
         lambda op, g: [gather(g, op.inputs[1], axis=op.attrs["axis"]), None, None], saves=("x1",),
         static_inputs=(2,), attrs={"axis": Axis()}, arity=3)


def gather(params, indices, validate_indices=None, name=None, axis=0):
    """Slices of `params` along `axis` picked by integer `indices`."""
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices, dtype_hint=_dt.int32)
    return apply1("GatherV2", [params, indices], {"axis": axis}, name=name)


# -- one_hot, where(cond) ------------------------------------------------------------------------
def _one_hot_infer(ctx):
    if not ctx.in_dtypes[0].is_integer:
        raise TypeError(f"indices must be integers, got {ctx.in_dtypes[0].name}")
    dims = ctx.dims(0)
    if dims is None:
        return [(TensorShape(None), ctx.attrs["dtype"])]
    axis = ctx.attrs["axis"]
    if axis > len(dims):
        raise ValueError(f"axis {axis} is out of range for indices of rank {len(dims)} (the "
                         f"output has rank {len(dims) + 1}; -1 is the last axis)")
    out = list(dims)
    out.insert(len(out) if axis == -1 else axis, ctx.attrs["depth"])
    return [(TensorShape(out), ctx.attrs["dtype"])]


register("OneHot", _one_hot_infer,
         "rt.one_hot({0}, {depth}, {on_value}, {off_value}, {axis}, {dtype})",
         differentiable=False,
         attrs={"depth": Int(lo=0), "on_value": Number(), "off_value": Number(),
                "axis": Int(-1, MAX_RANK - 1), "dtype": DType()}, arity=1)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A one-hot encoding of integer `indices` with `depth` classes (out-of-range: all off)."""
    dtype = _dt.as_dtype(dtype) if dtype is not None else _dt.float32
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    cast = bool if dtype.is_bool else float if dtype.is_floating else int
    if is_tensor_like(depth):  # a tensor whose value is known when the graph is built
        known = convert_to_tensor(depth)._static
        if known is None or np.ndim(known) != 0:
            raise TypeError(f"OneHot of {getattr(indices, 'name', 'indices')}: depth "
                            f"{convert_to_tensor(depth).name} must be a scalar known when the "
                            f"graph is built ({here()})")
        depth = known.item()
    attrs = {"depth": depth, "on_value": cast(on), "off_value": cast(off),
             "axis": -1 if axis is None else axis, "dtype": dtype}
    return apply1("OneHot", [convert_to_tensor(indices, dtype_hint=_dt.int32)], attrs, name=name)


register("Where", lambda ctx: [(TensorShape([None, ctx.in_shapes[0].ndims]), _dt.int64)],
         "np.argwhere({0})", differentiable=False, arity=1)


# -- sequences -------------------------------------------------------------------------------------
def _range_infer(ctx):
    dt = ctx.attrs["dtype"]
    vals = [ctx.value(i) for i in builtins.range(3)]
    if any(v is None for v in vals):
        return [(TensorShape([None]), dt)]
    start, limit, delta = (v.item() for v in vals)
    if delta == 0:
        raise ValueError("range delta must not be zero")
    return [(TensorShape([max(0, int(np.ceil((limit - start) / delta)))]), dt)]


register("Range", _range_infer, "np.arange({0}, {1}, {2}, dtype={dtype})",
         differentiable=False, attrs={"dtype": DType()}, arity=3)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF1's name
    """[start, start + delta, ...) up to but excluding `limit`; `range(n)` is 0..n-1."""
    if limit is None:
        start, limit = 0, start
    values = [start, limit, delta]
    if dtype is None:
        kinds = [convert_to_tensor(v).dtype if is_tensor_like(v) else _dt.infer_dtype(v)
                 for v in values]
        dtype = next((k for k in kinds if k.is_floating), kinds[0])
    dtype = _dt.as_dtype(dtype)
    tensors = [convert_to_tensor(v, dtype=dtype) if not is_tensor_like(v)
               else convert_to_tensor(v) for v in values]
    return apply1("Range", tensors, {"dtype": dtype}, name=name)


def _linspace_infer(ctx):
    return [(TensorShape([ctx.attrs["num"]]), ctx.in_dtypes[0])]


register("LinSpace", _linspace_infer,
         lambda a, ctx: (f"np.linspace({a[0]}, {a[1]}, {ctx.lit('num')}, "
                         f"dtype=np.{ctx.in_dtypes[0].name})"),
         differentiable=False, attrs={"num": Int(lo=0)}, arity=2)


def linspace(start, stop, num, name=None):
    """`num` evenly spaced values from start to stop inclusive."""
    # float32 is the default for Python numbers; a NumPy float value keeps its own dtype
    hint = start.dtype if isinstance(start, np.ndarray | np.generic) and start.dtype.kind == "f" \
        else _dt.float32
    start = convert_to_tensor(start, dtype_hint=hint)
    stop = convert_to_tensor(stop, dtype=start.dtype)
    return apply1("LinSpace", [start, stop], {"num": int(num)}, name=name)


lin_space = linspace

register("Eye", lambda ctx: [(TensorShape([ctx.attrs["n"], ctx.attrs["m"]]), ctx.attrs["dtype"])],
         "np.eye({n}, {m}, dtype={dtype})", differentiable=False,
         attrs={"n": Int(lo=0), "m": Int(lo=0), "dtype": DType()}, arity=0)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dt.float32, name=None):
    """The identity matrix (num_rows x num_columns)."""
    from .array_ops import broadcast_to
    m = num_rows if num_columns is None else num_columns
    t = apply1("Eye", [], {"n": int(num_rows), "m": int(m), "dtype": _dt.as_dtype(dtype)},
               name=name)
    if batch_shape is not None:
        t = broadcast_to(t, list(batch_shape) + [int(num_rows), int(m)])
    return t
