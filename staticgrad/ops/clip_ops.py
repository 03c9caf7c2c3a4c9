"""Clipping by norm (TF1's clip_ops), written with other ops; `clip_by_value` is in math_ops."""

from __future__ import annotations

from ..graph import name_scope
from . import math_ops as M
from .array_ops import ones_like
from .conversion import convert_to_tensor
from .indexed_slices import IndexedSlices
from .join_ops import stack
from .nn_ops import l2_loss
from .reduction_ops import reduce_sum


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`t * clip_norm / max(l2norm(t), clip_norm)`: the same tensor if its L2 norm (over
    `axes`, default all) is at most clip_norm, else rescaled to that norm. A zero tensor
    stays zero, with a finite gradient."""
    with name_scope(name, "clip_by_norm") as scope:
        values = convert_to_tensor(t, name="t")
        l2sum = reduce_sum(values * values, axes, keepdims=True)
        positive = l2sum > 0
        l2sum_safe = M.where(positive, l2sum, ones_like(l2sum))
        l2norm = M.where(positive, M.sqrt(l2sum_safe), l2sum)
        clip_norm = convert_to_tensor(clip_norm, dtype_hint=values.dtype)
        return M.identity(values * clip_norm / M.maximum(l2norm, clip_norm), name=scope)


def global_norm(t_list, name=None):
    """sqrt(sum of every tensor's squared L2 norm); None entries are skipped."""
    if isinstance(t_list, str) or not isinstance(t_list, list | tuple):
        raise TypeError(f"global_norm: t_list should be a list of tensors, got "
                        f"{type(t_list).__name__}")
    with name_scope(name, "global_norm"):
        values = [t.values if isinstance(t, IndexedSlices) else convert_to_tensor(t)
                  for t in t_list if t is not None]  # (IndexedSlices: their rows, as TF1)
        if not values:
            raise ValueError("global_norm: t_list holds no tensors")
        half_squares = reduce_sum(stack([l2_loss(v) for v in values]))
        return M.sqrt(half_squares * 2.0, name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(each tensor * clip_norm / max(global_norm, clip_norm), global_norm): rescale a list
    of tensors (gradients, typically) together so their joint norm is at most clip_norm; an
    IndexedSlices gradient stays one, its rows scaled.
    An infinite or NaN norm makes every result NaN, as in TF1."""
    if isinstance(t_list, str) or not isinstance(t_list, list | tuple):
        raise TypeError(f"clip_by_global_norm: t_list should be a list of tensors, got "
                        f"{type(t_list).__name__}")
    t_list = list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with name_scope(name, "clip_by_global_norm") as scope:
        clip_norm = convert_to_tensor(clip_norm, dtype_hint=use_norm.dtype)
        scale = clip_norm * M.minimum(1.0 / use_norm, 1.0 / clip_norm)
        scale = scale + (use_norm - use_norm)  # NaN when the norm is inf or NaN
        clipped = [None if t is None else _scaled(t, scale, f"{scope[:-1]}_{i}")
                   for i, t in enumerate(t_list)]
        return clipped, use_norm


def _scaled(t, scale, name):
    """t * scale; an IndexedSlices stays one (its rows scaled)."""
    if isinstance(t, IndexedSlices):
        return IndexedSlices(M.identity(t.values * scale, name=name), t.indices, t.dense_shape)
    return M.identity(convert_to_tensor(t) * scale, name=name)
