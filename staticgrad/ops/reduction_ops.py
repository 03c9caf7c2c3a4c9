"""Reductions: reduce_sum/mean/max/min/prod/any/all and argmax/argmin.

A reduction's gradient first puts back the reduced axes (`_restore`: expand_dims + broadcast
to the input's shape), then applies its rule.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..shapes import TensorShape
from . import math_ops as M
from .array_ops import _norm_axis, broadcast_to, expand_dims, reshape, shape_of
from .attr_types import MAX_RANK, Axis, Bool, DType, Ints, Optional
from .conversion import convert_to_tensor, is_tensor_like
from .creation import apply1
from .table import register

_REDUCE_ATTRS = {"axis": Optional(Ints(lo=-MAX_RANK, hi=MAX_RANK - 1)), "keepdims": Bool()}


def _axes(ctx):
    """Normalized reduced axes (a sorted tuple), or None when the rank is unknown."""
    rank = ctx.in_shapes[0].ndims
    axis = ctx.attrs["axis"]
    if rank is None:
        return None
    if axis is None:
        return tuple(range(rank))
    return tuple(sorted({_norm_axis(a, rank) for a in axis}))


def _reduce_infer(kinds, out_dtype=None):
    def infer(ctx):
        M.check_kind(ctx, 0, kinds)
        axes = _axes(ctx)
        dt = out_dtype or ctx.in_dtypes[0]
        if axes is None:
            return [(TensorShape(None), dt)]
        dims = ctx.in_shapes[0].dims
        if ctx.attrs["keepdims"]:
            out = [1 if i in axes else d for i, d in enumerate(dims)]
        else:
            out = [d for i, d in enumerate(dims) if i not in axes]
        return [(TensorShape(out), dt)]
    return infer


def _reduce_numpy(fn):
    def emit(a, ctx):
        axis = ctx.attrs["axis"]
        parts = [a[0]]
        if axis is not None:
            parts.append(f"axis={ctx.lit('axis')}")
        if ctx.attrs["keepdims"]:
            parts.append("keepdims=True")
        dt = ctx.out_dtypes[0]
        if fn in ("sum", "prod") and dt.is_integer:
            parts.append(f"dtype=np.{dt.name}")
        expr = f"np.{fn}({', '.join(parts)})"
        if fn == "mean" and not dt.is_floating:
            expr = f"{expr}.astype(np.{dt.name})"
        return expr
    return emit


def _restore(op, t):
    """Reduced tensor t (of op's output shape) with its reduced axes put back and broadcast to
    op's input shape."""
    x = op.inputs[0]
    rank = x.shape.ndims
    if rank is None:
        if op.attrs["axis"] is not None:
            raise NotImplementedError(f"gradient of {op.where()}: reducing given axes of a "
                                      "tensor of unknown rank")
    elif not op.attrs["keepdims"] and op.attrs["axis"] is not None:
        axes = tuple(sorted({a % rank for a in op.attrs["axis"]}))
        t = expand_dims(t, axes)
    elif not op.attrs["keepdims"] and rank > 0:
        t = reshape(t, [1] * rank)
    return broadcast_to(t, shape_of(x))


def _count(op):
    """Number of elements reduced into each output element, as a tensor of x's dtype."""
    x, y = op.inputs[0], op.outputs[0]
    n_in, n_out = x.shape.num_elements(), y.shape.num_elements()
    if n_in is not None and n_out is not None:
        return max(n_in, 1) // max(n_out, 1)
    from .array_ops import size
    return M.cast(M.maximum(size(x), 1) // M.maximum(size(y), 1), x.dtype)


def _sum_grad(op, g):
    return [_restore(op, g)]


def _mean_grad(op, g):
    return [_restore(op, g) / _count(op)]


def _minmax_grad(op, g):
    x = op.inputs[0]
    selected = M.cast(M.equal(_restore(op, op.outputs[0]), x), x.dtype)
    n_selected = _restore(op, reduce_sum(selected, op.attrs["axis"], keepdims=op.attrs["keepdims"]))
    return [selected / n_selected * _restore(op, g)]


def _prod_grad(op, g):
    # Exact also where x has zeros: with one zero in a slice, that entry's gradient is the
    # product of the others; with two or more, every gradient in the slice is zero.
    x = op.inputs[0]
    is_zero = M.equal(x, 0)
    n_zero = _restore(op, reduce_sum(M.cast(is_zero, x.dtype), op.attrs["axis"],
                                     keepdims=op.attrs["keepdims"]))
    ones = M.ones_like(x)
    prod_nonzero = _restore(op, reduce_prod(M.where(is_zero, ones, x), op.attrs["axis"],
                                            keepdims=op.attrs["keepdims"]))
    zeros = M.zeros_like(x)
    at_zero = M.where(M.equal(n_zero, 1), prod_nonzero, zeros)
    elsewhere = M.where(M.equal(n_zero, 0), _restore(op, op.outputs[0]) / M.where(is_zero, ones, x),
                        zeros)
    return [M.where(is_zero, at_zero, elsewhere) * _restore(op, g)]


def _reduction(op_type, kinds, fn, grad=None, saves=None):
    register(op_type, _reduce_infer(kinds), _reduce_numpy(fn), grad, saves=saves, arity=1,
             differentiable=grad is not None, new_array=grad is not None, attrs=_REDUCE_ATTRS)


_reduction("Sum", "fi", "sum", _sum_grad, saves=())
_reduction("Mean", "fi", "mean", _mean_grad, saves=())
_reduction("Max", "fi", "max", _minmax_grad, saves=("x0", "y0"))
_reduction("Min", "fi", "min", _minmax_grad, saves=("x0", "y0"))
_reduction("Prod", "fi", "prod", _prod_grad, saves=("x0", "y0"))
_reduction("Any", "b", "any")
_reduction("All", "b", "all")


def _arg_infer(ctx):
    M.check_kind(ctx, 0, "fi")
    if ctx.attrs["output_type"] not in (_dt.int32, _dt.int64):
        raise TypeError(f"output_type must be int32 or int64, got {ctx.attrs['output_type'].name}")
    dims = ctx.dims(0)
    if dims is None:
        return [(TensorShape(None), ctx.attrs["output_type"])]
    axis = _norm_axis(ctx.attrs["axis"], len(dims))
    return [(TensorShape(dims[:axis] + dims[axis + 1:]), ctx.attrs["output_type"])]


def _arg_numpy(fn):
    def emit(a, ctx):
        expr = f"np.{fn}({a[0]}, axis={ctx.lit('axis')})"
        dt = ctx.attrs["output_type"]
        return expr if dt is _dt.int64 else f"{expr}.astype({ctx.lit('output_type')})"
    return emit


_ARG_ATTRS = {"axis": Axis(), "output_type": DType()}
register("ArgMax", _arg_infer, _arg_numpy("argmax"), differentiable=False, attrs=_ARG_ATTRS,
         arity=1)
register("ArgMin", _arg_infer, _arg_numpy("argmin"), differentiable=False, attrs=_ARG_ATTRS,
         arity=1)


# -- public functions ----------------------------------------------------------------------------
def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices, keep_dims,
            dtype_hint=None):
    if axis is None:
        axis = reduction_indices
    if keep_dims is not None:
        keepdims = keep_dims
    x = convert_to_tensor(input_tensor, dtype_hint=dtype_hint)
    if axis is not None:
        if is_tensor_like(axis):
            v = convert_to_tensor(axis)._static
            if v is None:
                raise TypeError(f"{op_type}: axis must be known when the graph is built")
            axis = v
        axis = np.reshape(np.asarray(axis), -1).tolist()  # the attr's type checks each
    return apply1(op_type, [x], {"axis": axis, "keepdims": bool(keepdims)}, name=name)


def _reducer(op_type, fn_name, doc, dtype_hint=None):
    def fn(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
           keep_dims=None):
        return _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices,
                       keep_dims, dtype_hint)
    fn.__name__ = fn_name
    fn.__doc__ = (f"{doc} over `axis` (all axes if None); `keepdims` keeps reduced axes as "
                  f"size 1.\n\n>>> {fn_name}(x, axis=1)  # doctest: +SKIP")
    return fn


reduce_sum = _reducer("Sum", "reduce_sum", "Sum")
reduce_mean = _reducer("Mean", "reduce_mean", "Mean")
reduce_max = _reducer("Max", "reduce_max", "Maximum")
reduce_min = _reducer("Min", "reduce_min", "Minimum")
reduce_prod = _reducer("Prod", "reduce_prod", "Product")
reduce_any = _reducer("Any", "reduce_any", "Logical or", _dt.bool_)
reduce_all = _reducer("All", "reduce_all", "Logical and", _dt.bool_)


def _arg(op_type, input, axis, name, dimension, output_type):  # noqa: A002
    if axis is None:
        axis = dimension if dimension is not None else 0
    x = convert_to_tensor(input)
    return apply1(op_type, [x], {"axis": axis, "output_type": _dt.as_dtype(output_type)},
                  name=name)


def argmax(input, axis=None, name=None, dimension=None, output_type=_dt.int64):  # noqa: A002
    """Index of the largest value along `axis` (default 0)."""
    return _arg("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=_dt.int64):  # noqa: A002
    """Index of the smallest value along `axis` (default 0)."""
    return _arg("ArgMin", input, axis, name, dimension, output_type)


arg_max = argmax
arg_min = argmin
