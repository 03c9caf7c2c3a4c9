"""Convolution and pooling kernels (NHWC), reached from generated code as `rt.conv2d` etc.

Layouts are TF1's: input [batch, height, width, channels], filter [height, width, in, out].
`padding` is `((top, bottom), (left, right))`, or "SAME" / "VALID" resolved here with TF's
arithmetic (generated code passes the resolved pairs; the strings are the fallback when a
spatial size is known only at run time).

- Forward conv: a strided window view of the padded input, copied into one matrix (im2col
  without a Python loop; with one input channel, one strided copy per kernel offset), times
  the filter as a matrix.
- Backward: the filter gradient is the same matrix's transpose times out_backprop. The input
  gradient, with stride 1 and several input channels, is the convolution of out_backprop
  with the filter turned half a turn (unless a pad is wider than the window reaches);
  otherwise out_backprop times the filter's transpose, scatter-added back one slice-add per
  kernel offset (col2im).
- Pools fold over the kernel offsets (np.maximum / np.add, in place, on one strided slice per
  offset), and so do their gradients; where the windows tile the input, the max pooling
  gradient compares the input with the maxima once. Max pooling pads with -inf and routes
  each gradient to the first maximum of its window (row-major), as TF does; average pooling
  divides by the number of non-padding elements of each window, as TF does.

Written for small layers too: each call is a few NumPy calls with no per-call set-up beyond
them (no np.pad, no stride_tricks helpers), since a small network's training step makes
dozens. conv_fast runs its numba loops instead for large calls where the `[fast]` extra is
installed.

Every kernel keeps its input's dtype.
"""

from __future__ import annotations

import numpy as np

# -- padding arithmetic (shared with the shape rules in ops/conv_ops.py) --------------------------

def axis_pads(padding, size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """(before, after) padding along one axis; `padding` is "SAME", "VALID" or a pair."""
    if padding == "VALID":
        return (0, 0)
    if padding == "SAME":
        out = -(-size // stride)
        total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
        return (total // 2, total - total // 2)
    return (int(padding[0]), int(padding[1]))


def resolve_pads(padding, in_hw, k_hw, strides, dilations=(1, 1)):
    """((top, bottom), (left, right)) for a 2-D window."""
    per_axis = (padding, padding) if isinstance(padding, str) else padding
    return tuple(axis_pads(*args) for args in zip(per_axis, in_hw, k_hw, strides, dilations))


def output_size(size: int, k: int, stride: int, dilation: int, pads) -> int:
    """Number of window positions along one axis (< 1 when the window does not fit)."""
    return (size + pads[0] + pads[1] - (k - 1) * dilation - 1) // stride + 1


# -- windows and kernel offsets ------------------------------------------------------------------

def _bordered(x, pads, value=0):
    """x inside a border of `value` (`pads` wide): a new C-contiguous array; x itself, made
    C-contiguous, where there is no padding. (A slice assignment into a filled array: np.pad
    takes 15-20 us a call in its own Python, more than a small layer's whole work.)"""
    (top, bottom), (left, right) = pads
    if not (top or bottom or left or right):
        return np.ascontiguousarray(x)
    n, h, w, c = x.shape
    xp = np.full((n, h + top + bottom, w + left + right, c), value, x.dtype)
    xp[:, top:top + h, left:left + w] = x
    return xp


def _crop(xp, pads, hw):
    (top, _), (left, _) = pads
    return xp[:, top:top + hw[0], left:left + hw[1], :]


def _windows(xp, k_hw, strides, dilations, out_hw):
    """A view [N, OH, OW, kh, kw, C] of C-contiguous xp: the window of every output position,
    read in place through strides (an ndarray over xp's buffer: np.lib.stride_tricks'
    helpers spend 10 us a call on checks this needs none of)."""
    (sh, sw), (dh, dw) = strides, dilations
    s_n, s_h, s_w, s_c = xp.strides
    shape = (xp.shape[0], *out_hw, *k_hw, xp.shape[3])
    if 0 in shape:
        return np.empty(shape, xp.dtype)
    return np.ndarray(shape, xp.dtype, xp, 0, (s_n, s_h * sh, s_w * sw, s_h * dh, s_w * dw, s_c))


def _taps(k_hw, strides, dilations, out_hw):
    """For each kernel offset (i, j): the index of what it reads from the padded input at every
    output position, a [N, OH, OW, C] slice."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = k_hw, strides, dilations, out_hw
    for i in range(kh):
        for j in range(kw):
            yield i, j, (slice(None), slice(i * dh, i * dh + (oh - 1) * sh + 1, sh),
                         slice(j * dw, j * dw + (ow - 1) * sw + 1, sw))


def offset_copies(xp, strides, dilations, out):
    """im2col one kernel offset at a time: out [N, OH, OW, kh, kw, C] filled with each offset's
    strided slice of the padded input xp [N, H, W, C], one NumPy copy of the whole batch each
    (with one channel, where a window's row is kw elements, too few to copy well row by row:
    conv_blocked's one-channel slabs too)."""
    for i, j, index in _taps(out.shape[3:5], strides, dilations, out.shape[1:3]):
        out[:, :, :, i, j] = xp[index]
    return out


def _columns(x, k_hw, strides, dilations, pads, out_hw):
    """The im2col matrix of x, [N*OH*OW, kh*kw*C]: every window as a row. From two channels
    on, one copy of the windows' view (the view itself where the windows are x's elements,
    1x1 of stride 1); with one channel, `offset_copies` (32 8x8 images, 3x3: 65 us against 89
    for the view's copy)."""
    xp = _bordered(x, pads)
    (kh, kw), c = k_hw, x.shape[3]
    if c != 1:
        return _windows(xp, k_hw, strides, dilations, out_hw).reshape(-1, kh * kw * c)
    cols = np.empty((x.shape[0], *out_hw, kh, kw, 1), x.dtype)
    return offset_copies(xp, strides, dilations, cols).reshape(-1, kh * kw)


def _padded_zeros(input_shape, pads, dtype):
    n, h, w, c = input_shape
    return np.zeros((n, h + sum(pads[0]), w + sum(pads[1]), c), dtype=dtype)


# -- convolution ---------------------------------------------------------------------------------

def _checked_out_hw(what, in_shape, k_shape, strides, pads, dilations, dy_shape=None):
    """The window positions along each axis of the convolution of an input of `in_shape`
    [N, H, W, C] with a filter of `k_shape` [kh, kw, C, O]. ValueError, naming `what`, where
    the (dilated) window does not fit the padded input, the channels differ, or dy_shape (a
    gradient's) is not the output's: the graph's shape rules say so first, but a module
    exported with sizes left free meets them only here."""
    n, h, w, c = in_shape
    kh, kw, k_in, k_out = k_shape
    out_hw = output_hw((h, w), (kh, kw), strides, pads, dilations)
    if min(out_hw) < 1:
        raise ValueError(f"{what}: the {kh}x{kw} window (dilations {tuple(dilations)}) does "
                         f"not fit the {h}x{w} input padded by {tuple(pads)}")
    if k_in != c:
        raise ValueError(f"{what}: the input has {c} channels and the filter {k_in}")
    if dy_shape is not None and tuple(dy_shape) != (n, *out_hw, k_out):
        raise ValueError(f"{what}: out_backprop has shape {tuple(dy_shape)}, the "
                         f"convolution's output {(n, *out_hw, k_out)}")
    return out_hw


def conv2d(x, w, strides, padding, dilations):
    """Cross-correlation of x [N, H, W, C] with w [kh, kw, C, O]: [N, OH, OW, O]."""
    pads = resolve_pads(padding, x.shape[1:3], w.shape[:2], strides, dilations)
    out_hw = _checked_out_hw("Conv2D", x.shape, w.shape, strides, pads, dilations)
    cols = _columns(x, w.shape[:2], strides, dilations, pads, out_hw)
    return (cols @ w.reshape(-1, w.shape[3])).reshape(x.shape[0], *out_hw, w.shape[3])


def conv2d_backprop_input(input_shape, w, dy, strides, padding, dilations):
    """Gradient of conv2d with respect to its input of `input_shape`, given dy [N, OH, OW, O].

    With stride 1 and more than one input channel, the convolution of dy with the filter
    turned half a turn and its channels swapped, padded so that every window reaching the
    input is whole (one im2col and one product). Otherwise (a stride, one channel, whose
    product would have one column, or a pad wider than the window reaches, which would make
    that padding negative): dy times the filter's transpose, then each kernel offset's slice
    added back (col2im)."""
    input_shape = tuple(int(d) for d in input_shape)
    kh, kw, c, o = w.shape
    pads = resolve_pads(padding, input_shape[1:3], (kh, kw), strides, dilations)
    _checked_out_hw("Conv2DBackpropInput", input_shape, w.shape, strides, pads, dilations,
                    dy.shape)
    (top, bottom), (left, right) = pads
    (dh, dw) = dilations
    span_h, span_w = (kh - 1) * dh, (kw - 1) * dw
    full = ((span_h - top, span_h - bottom), (span_w - left, span_w - right))
    if tuple(strides) == (1, 1) and c > 1 and min(full[0] + full[1]) >= 0:
        turned = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))
        return conv2d(dy, turned, (1, 1), full, dilations)
    cols = (dy.reshape(-1, o) @ w.reshape(-1, o).T).reshape(*dy.shape[:3], kh, kw, c)
    dxp = _padded_zeros(input_shape, pads, cols.dtype)
    for i, j, index in _taps(w.shape[:2], strides, dilations, dy.shape[1:3]):
        dxp[index] += cols[:, :, :, i, j]
    return _crop(dxp, pads, input_shape[1:3])


def conv2d_backprop_filter(x, filter_shape, dy, strides, padding, dilations):
    """Gradient of conv2d with respect to its filter of `filter_shape`, given dy."""
    filter_shape = tuple(int(d) for d in filter_shape)
    k_hw = filter_shape[:2]
    pads = resolve_pads(padding, x.shape[1:3], k_hw, strides, dilations)
    out_hw = _checked_out_hw("Conv2DBackpropFilter", x.shape, filter_shape, strides, pads,
                             dilations, dy.shape)
    cols = _columns(x, k_hw, strides, dilations, pads, out_hw)
    product = columns_t_dot(cols, dy.reshape(-1, dy.shape[3]))
    return product.reshape(*k_hw, x.shape[3], dy.shape[3])


def columns_t_dot(cols, dy2d):
    """cols.T @ dy2d, the filter gradient's product ([kh*kw*C, M] x [M, O], M = N*OH*OW),
    ordered for OpenBLAS: where kh*kw*C is small (a first layer's), taken as (dy2d.T @ cols).T,
    which OpenBLAS splits better (on this project's two cores, M = 100352: 24 ms against
    0.09-3.7 s for 25 or 9 columns and 32 outputs); larger ones as they are (3x faster so)."""
    if cols.shape[1] <= 128:
        return np.ascontiguousarray((dy2d.T @ cols).T)
    return cols.T @ dy2d


# -- pooling -------------------------------------------------------------------------------------

def output_hw(in_hw, k_hw, strides, pads, dilations=(1, 1)) -> tuple[int, int]:
    """The number of window positions along each spatial axis (conv_fast's too)."""
    return tuple(output_size(*axis) for axis in zip(in_hw, k_hw, strides, dilations, pads))


def _fold_taps(ufunc, xp, ksize, strides, out_hw):
    """`ufunc` folded over the kernel offsets: its reduction over every window, in place."""
    taps = [index for _, _, index in _taps(ksize, strides, (1, 1), out_hw)]
    if len(taps) == 1:
        return xp[taps[0]].copy()
    out = ufunc(xp[taps[0]], xp[taps[1]])
    for index in taps[2:]:
        ufunc(out, xp[index], out=out)
    return out


def max_pool(x, ksize, strides, padding):
    pads = resolve_pads(padding, x.shape[1:3], ksize, strides)
    out_hw = output_hw(x.shape[1:3], ksize, strides, pads)
    return _fold_taps(np.maximum, _bordered(x, pads, -np.inf), ksize, strides, out_hw)


def _first_max(xp, y, ksize, strides):
    """For each kernel offset: (index into padded xp, mask of the outputs whose first maximum
    in row-major window order is at that offset)."""
    todo = np.ones(y.shape, dtype=bool)
    for _, _, index in _taps(ksize, strides, (1, 1), y.shape[1:3]):
        first = todo & (xp[index] == y)
        todo &= ~first
        yield index, first


def max_pool_grad(x, y, dy, ksize, strides, padding):
    """Gradient of y = max_pool(x): each dy goes to the first maximum of its window."""
    pads = resolve_pads(padding, x.shape[1:3], ksize, strides)
    if _exactly_tiled(x.shape, ksize, strides, pads, y.shape) and np.isfinite(dy).all():
        return _max_pool_grad_tiled(x, y, dy, ksize)
    xp = _bordered(x, pads, -np.inf)
    dxp = np.zeros(xp.shape, dtype=dy.dtype)
    for index, first in _first_max(xp, y, ksize, strides):
        dxp[index] += np.where(first, dy, 0)
    return _crop(dxp, pads, x.shape[1:3])


def _exactly_tiled(x_shape, ksize, strides, pads, y_shape) -> bool:
    """Is x exactly its windows side by side, [N, OH, kh, OW, kw, C], with no padding and no
    element left over (a 2x2 pool of stride 2 on even sizes)? (conv_fast's `_tiled` allows
    padding and a last window reaching past the input: its loops index each element.)"""
    return (tuple(ksize) == tuple(strides) and not any(pads[0] + pads[1])
            and y_shape[1] * ksize[0] == x_shape[1] and y_shape[2] * ksize[1] == x_shape[2])


def _max_pool_grad_tiled(x, y, dy, ksize):
    """max_pool_grad where the windows tile x: x seen as [N, OH, kh, OW, kw, C] (no copy),
    compared with y once; each offset then writes its slice of the gradient as dy times the
    mask of the windows whose first maximum it holds, and a last pass adds 0 (so that every
    zero is +0, as runtime_conv's sums on zeros give). Where dy holds an infinity or a NaN,
    which times 0 is not 0, the general way."""
    n, oh, ow, c = y.shape
    kh, kw = ksize
    at_max = x.reshape(n, oh, kh, ow, kw, c) == y[:, :, None, :, None, :]
    dx = np.empty(x.shape, dy.dtype)
    windows = dx.reshape(n, oh, kh, ow, kw, c)
    todo = np.ones(y.shape, dtype=bool)
    for i in range(kh):
        for j in range(kw):
            first = np.logical_and(at_max[:, :, i, :, j], todo)
            np.multiply(dy, first, out=windows[:, :, i, :, j])
            np.logical_xor(todo, first, out=todo)
    return np.add(dx, 0, out=dx)


def max_pool_grad_grad(x, y, g, ksize, strides, padding):
    """g (shaped like x) read at the first maximum of each window: shaped like y."""
    pads = resolve_pads(padding, x.shape[1:3], ksize, strides)
    xp, gp = _bordered(x, pads, -np.inf), _bordered(g, pads)
    out = np.zeros(y.shape, dtype=g.dtype)
    for index, first in _first_max(xp, y, ksize, strides):
        out += np.where(first, gp[index], 0)
    return out


def _window_counts(in_hw, ksize, strides, pads, out_hw, dtype):
    """Number of non-padding elements in each window, shaped [OH, OW, 1]."""
    counts = []
    for size, k, stride, (before, _), n in zip(in_hw, ksize, strides, pads, out_hw):
        start = np.arange(n) * stride - before
        counts.append(np.minimum(start + k, size) - np.maximum(start, 0))
    return np.multiply.outer(*counts)[:, :, None].astype(dtype)


def avg_pool(x, ksize, strides, padding):
    pads = resolve_pads(padding, x.shape[1:3], ksize, strides)
    out_hw = output_hw(x.shape[1:3], ksize, strides, pads)
    sums = _fold_taps(np.add, _bordered(x, pads), ksize, strides, out_hw)
    return sums / _window_counts(x.shape[1:3], ksize, strides, pads, out_hw, x.dtype)


def avg_pool_grad(input_shape, dy, ksize, strides, padding):
    """Gradient of avg_pool for an input of `input_shape`: each dy shared over its window."""
    input_shape = tuple(int(d) for d in input_shape)
    pads = resolve_pads(padding, input_shape[1:3], ksize, strides)
    share = dy / _window_counts(input_shape[1:3], ksize, strides, pads, dy.shape[1:3], dy.dtype)
    dxp = _padded_zeros(input_shape, pads, dy.dtype)
    for _, _, index in _taps(ksize, strides, (1, 1), dy.shape[1:3]):
        dxp[index] += share
    return _crop(dxp, pads, input_shape[1:3])
