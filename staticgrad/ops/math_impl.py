"""TF1's functions made of other ops (no op of their own, so their gradients are those of the
ops they are made of): reduce_logsumexp, l2_normalize, norm, sequence_mask, reverse,
tensordot, and the cast shorthands to_int32, to_int64, to_double."""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..errors import here
from ..graph import name_scope
from . import math_ops as M
from .array_ops import dims_of, expand_dims, reshape, transpose
from .conversion import convert_to_tensor
from .indexing_ops import range as irange
from .indexing_ops import strided_slice_spec
from .reduction_ops import reduce_max, reduce_sum


def _axis_arg(axis, reduction_indices=None, dim=None):
    """TF1's several names for one argument."""
    for given in (axis, reduction_indices, dim):
        if given is not None:
            return given
    return None


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None,
                     reduction_indices=None, keep_dims=None):
    """log(sum(exp(x))) over `axis`, computed from x - max(x) so that large values do not
    overflow (the max is held constant for the gradient, as TF1 does)."""
    if keep_dims is not None:
        keepdims = keep_dims
    axis = _axis_arg(axis, reduction_indices)
    with name_scope(name, "ReduceLogSumExp"):
        x = convert_to_tensor(input_tensor, dtype_hint=_dt.float32)
        top = reduce_max(x, axis, keepdims=True)
        top = M.stop_gradient(M.where(M.is_finite(top), top, M.zeros_like(top)))
        total = M.log(reduce_sum(M.exp(x - top), axis, keepdims=True)) + top
        return total if keepdims else _squeezed(total, axis, x)


def _squeezed(t, axis, like):
    """`t` (a reduction of `like` over `axis`, dims kept) without the reduced dims."""
    if axis is None:
        return reshape(t, [])
    rank = like.shape.ndims
    axes = {a % rank for a in np.reshape(np.asarray(axis), -1).tolist()}
    return reshape(t, [d for i, d in enumerate(dims_of(t)) if i not in axes])


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon)): unit length along `axis` (every axis if
    None)."""
    axis = _axis_arg(axis, dim=dim)
    with name_scope(name, "l2_normalize"):
        x = convert_to_tensor(x, dtype_hint=_dt.float32)
        squares = reduce_sum(M.square(x), axis, keepdims=True)
        return M.multiply(x, M.rsqrt(M.maximum(squares, M.cast(epsilon, x.dtype))))


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):
    """The norm of a vector (or, with `axis` a pair, the Frobenius norm of matrices): `ord`
    "euclidean", "fro" or 2 (the square root of the sum of squares), 1 (the sum of absolute
    values) or np.inf (the largest absolute value)."""
    keepdims = bool(keep_dims if keep_dims is not None else keepdims)
    x = convert_to_tensor(tensor, dtype_hint=_dt.float32)
    pair = isinstance(axis, list | tuple) and len(axis) == 2
    if ord not in ("euclidean", "fro", 1, 2, np.inf) or (pair and ord not in ("euclidean",
                                                                              "fro")):
        raise ValueError(f"norm {here()}: ord {ord!r} is not offered (vectors: "
                         "'euclidean', 'fro', 1, 2, np.inf; matrices: 'euclidean', 'fro')")
    with name_scope(name, "norm"):
        if ord == 1:
            return reduce_sum(M.abs(x), axis, keepdims=keepdims)
        if ord == np.inf:
            return reduce_max(M.abs(x), axis, keepdims=keepdims)
        return M.sqrt(reduce_sum(M.square(x), axis, keepdims=keepdims))


def sequence_mask(lengths, maxlen=None, dtype=_dt.bool_, name=None):
    """mask[..., j] = j < lengths[...]: a row of `maxlen` (default: the longest length)
    flags for each length."""
    with name_scope(name, "SequenceMask"):
        lengths = convert_to_tensor(lengths, dtype_hint=_dt.int32)
        if not lengths.dtype.is_integer:
            raise TypeError(f"sequence_mask {here()}: lengths must be integers, got "
                            f"{lengths.dtype.name}")
        if maxlen is None:
            maxlen = reduce_max(lengths)
        maxlen = M.cast(convert_to_tensor(maxlen), lengths.dtype)
        mask = M.less(irange(maxlen), expand_dims(lengths, -1))
        dtype = _dt.as_dtype(dtype)
        return mask if dtype is _dt.bool_ else M.cast(mask, dtype)


def reverse(tensor, axis, name=None):
    """`tensor` with the order of its elements along each of `axis` (ints known when the
    graph is built) reversed (TF1's tf.reverse, reverse_v2)."""
    x = convert_to_tensor(tensor)
    rank = x.shape.ndims
    axes = np.reshape(np.asarray(axis), -1).tolist()
    if rank is None:
        raise ValueError(f"reverse {here()}: the tensor's rank must be known")
    if any(not isinstance(a, int) or not -rank <= a < rank for a in axes) or \
            len({a % rank for a in axes}) != len(axes):
        raise ValueError(f"reverse {here()}: axis {axis!r} must be distinct ints in "
                         f"[{-rank}, {rank}) for a tensor of rank {rank}")
    flipped = {a % rank for a in axes}
    spec = tuple(("slice", None, None, -1 if i in flipped else None) for i in range(rank))
    return strided_slice_spec(x, spec, name=name or "ReverseV2")


reverse_v2 = reverse


def tensordot(a, b, axes, name=None):
    """The sum of a * b over the given axes: `axes` an int n (a's last n, b's first n) or a
    pair of lists of axes; the rest of a's axes, then the rest of b's."""
    with name_scope(name, "Tensordot"):
        a, b = convert_to_tensor(a), convert_to_tensor(b)
        ra, rb = a.shape.ndims, b.shape.ndims
        if ra is None or rb is None:
            raise ValueError(f"tensordot {here()}: the ranks must be known")
        if isinstance(axes, int):
            if not 0 <= axes <= min(ra, rb):
                raise ValueError(f"tensordot {here()}: axes={axes} for ranks {ra}, {rb}")
            on_a, on_b = list(range(ra - axes, ra)), list(range(axes))
        else:
            try:
                on_a, on_b = ([int(i) % r for i in np.reshape(np.asarray(ax), -1)]
                              for ax, r in zip(axes, (ra, rb)))
            except (TypeError, ValueError):
                raise ValueError(f"tensordot {here()}: axes must be an int or a pair of "
                                 f"lists of ints, got {axes!r}") from None
            if len(on_a) != len(on_b):
                raise ValueError(f"tensordot {here()}: {on_a} and {on_b} pair up "
                                 "different numbers of axes")
        free_a = [i for i in range(ra) if i not in on_a]
        free_b = [i for i in range(rb) if i not in on_b]
        a_dims, b_dims = dims_of(a), dims_of(b)
        left = reshape(transpose(a, free_a + on_a),
                       [_product([a_dims[i] for i in free_a]),
                        _product([a_dims[i] for i in on_a])])
        right = reshape(transpose(b, on_b + free_b),
                        [_product([b_dims[i] for i in on_b]),
                         _product([b_dims[i] for i in free_b])])
        out = M.matmul(left, right)
        return reshape(out, [a_dims[i] for i in free_a] + [b_dims[i] for i in free_b])


def _product(dims: list):
    out = 1
    for d in dims:
        out = out * d
    return out


def to_int32(x, name=None):
    """x cast to int32 (TF1's shorthand)."""
    return M.cast(x, _dt.int32, name)


def to_int64(x, name=None):
    """x cast to int64 (TF1's shorthand)."""
    return M.cast(x, _dt.int64, name)


def to_double(x, name=None):
    """x cast to float64 (TF1's shorthand)."""
    return M.cast(x, _dt.float64, name)
