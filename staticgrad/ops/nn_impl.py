"""Neural-network functions built from other ops (TF1's nn_impl): dropout, moments, batch
normalization. They add no op types, so their gradients are those of the ops they use."""

from __future__ import annotations

import numbers

from .. import dtypes as _dt
from ..graph import name_scope
from . import math_ops as M
from .array_ops import shape, squeeze
from .conversion import convert_to_tensor, is_tensor_like
from .join_ops import stack
from .reduction_ops import reduce_mean
from .state_ops import random_uniform


def squared_difference(x, y, name=None):
    """(x - y) ** 2, elementwise."""
    with name_scope(name, "SquaredDifference"):
        x = convert_to_tensor(x)
        return M.square(x - convert_to_tensor(y, dtype_hint=x.dtype))


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Zero each element with probability `rate` (= 1 - keep_prob) and scale the others by
    1 / keep_prob, with a fresh random mask at every run (TF1 semantics).

    `keep_prob`/`rate` may be tensors (a placeholder fed 1.0 at test time makes it the
    identity); a Python keep_prob of 1 returns `x` itself.
    """
    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout: give exactly one of keep_prob and rate")
    with name_scope(name, "dropout"):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(f"dropout: x has to be a floating point tensor since it is going "
                             f"to be scaled; got {x.name} of dtype {x.dtype.name}")
        if keep_prob is not None:
            if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1:
                raise ValueError(f"dropout: keep_prob must be in (0, 1], got {keep_prob}")
            if isinstance(keep_prob, numbers.Real) and keep_prob == 1:
                return x
            rate = 1 - keep_prob if not is_tensor_like(keep_prob) else \
                1 - convert_to_tensor(keep_prob, dtype_hint=x.dtype)
        elif isinstance(rate, numbers.Real):
            if not 0 <= rate < 1:
                raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
            if rate == 0:
                return x
        if is_tensor_like(rate):
            rate = M.cast(rate, x.dtype) if convert_to_tensor(rate).dtype is not x.dtype \
                else convert_to_tensor(rate)
        draws = random_uniform(_noise_shape(x, noise_shape), dtype=x.dtype, seed=seed)
        keep = M.cast(draws >= rate, x.dtype)
        return x * (1 / (1 - rate)) * keep


def _noise_shape(x, noise_shape):
    """The mask's shape: x's shape where noise_shape is None or has None entries."""
    dims = x.shape.dims
    if noise_shape is None:
        if dims is not None and all(d is not None for d in dims):
            return list(dims)
        return shape(x)
    if is_tensor_like(noise_shape):
        return noise_shape
    out = []
    for i, d in enumerate(noise_shape):
        if d is None:
            known = dims[i] if dims is not None else None
            d = known if known is not None else shape(x)[i]
        out.append(d)
    return stack(out) if any(is_tensor_like(d) for d in out) else out


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of `x` over `axes`; the variance treats the mean as a constant in
    the reverse pass (TF1's `stop_gradient`; the gradient is the same either way)."""
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "moments"):
        x = convert_to_tensor(x)
        dtype = x.dtype
        if dtype is _dt.float16:  # accumulate in float32, answer in float16 (TF1)
            x = M.cast(x, _dt.float32)
        mean = reduce_mean(x, axes, keepdims=True, name="mean")
        variance = reduce_mean(squared_difference(x, M.stop_gradient(mean)), axes,
                               keepdims=True, name="variance")
        if not keepdims:
            axes = [axes] if isinstance(axes, int) else list(axes)
            mean, variance = squeeze(mean, axes), squeeze(variance, axes)
        return _cast_to(mean, dtype), _cast_to(variance, dtype)


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) / sqrt(variance + eps) * scale + offset, in TF1's arrangement:
    `x * inv + (offset - mean * inv)` with `inv = scale / sqrt(variance + eps)`."""
    with name_scope(name, "batchnorm"):
        x = convert_to_tensor(x)
        inv = M.rsqrt(convert_to_tensor(variance, dtype_hint=x.dtype) + variance_epsilon)
        if scale is not None:
            inv = inv * convert_to_tensor(scale, dtype_hint=x.dtype)
        mean = convert_to_tensor(mean, dtype_hint=x.dtype)
        shift = (convert_to_tensor(offset, dtype_hint=x.dtype) - mean * inv
                 if offset is not None else -mean * inv)
        return x * _cast_to(inv, x.dtype) + _cast_to(shift, x.dtype)


def _cast_to(t, dtype):
    return t if t.dtype is dtype else M.cast(t, dtype)
