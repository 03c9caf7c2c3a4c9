"""The numba loops of conv_fast (imported by it only when numba is usable; see there why).

Each loop runs over the images of the batch it is given; conv_fast gives each of its threads
a part of the batch (nogil), or for bias_relu a part of the rows, so that no two threads
write one element. Arrays are NHWC and C-contiguous; the channel loop is innermost, where
LLVM vectorizes it. Compiled on first use for each dtype and cached on disk by numba
(cache=True).

Padding is never materialized: a window position outside the input reads 0 (convolution,
average pooling) or -inf (max pooling), as runtime_conv's padded arrays do.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_OPTIONS = dict(nogil=True, cache=True, boundscheck=False)


@njit(**_OPTIONS)
def im2col(x, top, left, strides, dilations, cols):
    """cols[b, p, q, i, j, :] = x[b, p*sh + i*dh - top, q*sw + j*dw - left, :] (0 outside x):
    the window of every output position, cols of shape [N, OH, OW, kh, kw, C]. A window row
    wholly inside x with dilation 1 is kw*C consecutive elements of both: one plain copy
    (for a first layer's single channel, 5 elements rather than 5 copies of one), as a slice
    assignment from 32 elements on (lenet's second layer: 30% faster than the element loop,
    which is faster for a few elements)."""
    n, h, w, c = x.shape
    oh, ow, kh, kw = cols.shape[1], cols.shape[2], cols.shape[3], cols.shape[4]
    sh, sw = strides
    dh, dw = dilations
    flat_x = x.reshape(n, h * w * c)
    flat_cols = cols.reshape(n, oh * ow * kh * kw * c)
    row = kw * c
    for b in range(n):
        for p in range(oh):
            for q in range(ow):
                s0 = q * sw - left
                whole_row = dw == 1 and s0 >= 0 and s0 + kw <= w
                for i in range(kh):
                    r = p * sh + i * dh - top
                    at = ((p * ow + q) * kh + i) * row
                    if whole_row and 0 <= r < h:
                        start = (r * w + s0) * c
                        if row >= 32:
                            flat_cols[b, at:at + row] = flat_x[b, start:start + row]
                            continue
                        for t in range(row):
                            flat_cols[b, at + t] = flat_x[b, start + t]
                        continue
                    for j in range(kw):
                        s = s0 + j * dw
                        if 0 <= r < h and 0 <= s < w:
                            for k in range(c):
                                cols[b, p, q, i, j, k] = x[b, r, s, k]
                        else:
                            for k in range(c):
                                cols[b, p, q, i, j, k] = 0


@njit(**_OPTIONS)
def col2im(cols, top, left, strides, dilations, dx):
    """The transpose of im2col: dx[b, r, s, :] += cols[b, p, q, i, j, :] for every window
    position that reads (r, s); dx arrives zeroed. Whole window rows as in im2col."""
    n, h, w, c = dx.shape
    oh, ow, kh, kw = cols.shape[1], cols.shape[2], cols.shape[3], cols.shape[4]
    sh, sw = strides
    dh, dw = dilations
    flat_dx = dx.reshape(n, h * w * c)
    flat_cols = cols.reshape(n, oh * ow * kh * kw * c)
    row = kw * c
    for b in range(n):
        for p in range(oh):
            for q in range(ow):
                s0 = q * sw - left
                whole_row = dw == 1 and s0 >= 0 and s0 + kw <= w
                for i in range(kh):
                    r = p * sh + i * dh - top
                    if r < 0 or r >= h:
                        continue
                    if whole_row:
                        at = ((p * ow + q) * kh + i) * row
                        start = (r * w + s0) * c
                        for t in range(row):
                            flat_dx[b, start + t] += flat_cols[b, at + t]
                        continue
                    for j in range(kw):
                        s = s0 + j * dw
                        if 0 <= s < w:
                            for k in range(c):
                                dx[b, r, s, k] += cols[b, p, q, i, j, k]


@njit(**_OPTIONS)
def _bigger(v, m):
    """v where it wins over the maximum so far m, else m: np.maximum's result as a select
    (a NaN wins and stays), which LLVM vectorizes where a conditional store would not."""
    return v if (v > m) | (v != v) else m


@njit(**_OPTIONS)
def max_pool(x, ksize, strides, top, left, y):
    """y[b, p, q, :] = the maximum of each window (a NaN in it wins, as with np.maximum).
    A 2x2 window wholly inside x (every window of a 2x2 stride-2 pool on even sizes) is one
    pass over the channels with its four inputs in registers; any other folds its rows into
    y's row, one channel loop per element (both vectorized over the channels)."""
    n, h, w, c = x.shape
    oh, ow = y.shape[1], y.shape[2]
    kh, kw = ksize
    sh, sw = strides
    for b in range(n):
        for p in range(oh):
            r0 = p * sh - top
            r_lo, r_hi = max(r0, 0), min(r0 + kh, h)
            for q in range(ow):
                s0 = q * sw - left
                s_lo, s_hi = max(s0, 0), min(s0 + kw, w)
                out = y[b, p, q]
                if kh == 2 and kw == 2 and r_lo == r0 and r_hi == r0 + 2 and s_lo == s0 \
                        and s_hi == s0 + 2:
                    x00, x01 = x[b, r0, s0], x[b, r0, s0 + 1]
                    x10, x11 = x[b, r0 + 1, s0], x[b, r0 + 1, s0 + 1]
                    for k in range(c):
                        out[k] = _bigger(x11[k], _bigger(x10[k], _bigger(x01[k], x00[k])))
                    continue
                out[:] = -np.inf  # what runtime_conv pads with: a window all padding stays so
                for r in range(r_lo, r_hi):
                    for s in range(s_lo, s_hi):
                        row = x[b, r, s]
                        for k in range(c):
                            out[k] = _bigger(row[k], out[k])


@njit(**_OPTIONS)
def max_pool_grad(x, y, dy, ksize, strides, top, left, overlap, dx):
    """dx[b, r, s, :] += dy[b, p, q, :] at the first position (r, s) of each window, in
    row-major order over the whole window (padding included, as -inf), where x equals y.
    Branch-free over the channels (`todo` marks those not yet routed), so that LLVM
    vectorizes them. Where windows overlap, dx arrives zeroed and the gradients are added;
    where they do not (`overlap` false), each element a window holds is written once, as
    0 + its gradient or 0 + 0 (the sum on zeros, -0 made +0), and the caller zeroes dx only
    where some element is in no window. A 2x2 window wholly inside x then routes its four
    elements in one channel pass."""
    n, h, w, c = x.shape
    oh, ow = y.shape[1], y.shape[2]
    kh, kw = ksize
    sh, sw = strides
    zero = np.zeros(1, dx.dtype)[0]
    todo = np.empty(c, np.bool_)
    for b in range(n):
        for p in range(oh):
            r0 = p * sh - top
            for q in range(ow):
                s0 = q * sw - left
                top_in = y[b, p, q]
                grad = dy[b, p, q]
                if not overlap and kh == 2 and kw == 2 and 0 <= r0 and r0 + 2 <= h \
                        and 0 <= s0 and s0 + 2 <= w:
                    x00, x01 = x[b, r0, s0], x[b, r0, s0 + 1]
                    x10, x11 = x[b, r0 + 1, s0], x[b, r0 + 1, s0 + 1]
                    d00, d01 = dx[b, r0, s0], dx[b, r0, s0 + 1]
                    d10, d11 = dx[b, r0 + 1, s0], dx[b, r0 + 1, s0 + 1]
                    for k in range(c):  # `rest`: the gradient while not yet routed, then 0
                        m, rest = top_in[k], grad[k]
                        d00[k] = zero + (rest if x00[k] == m else zero)
                        rest = zero if x00[k] == m else rest
                        d01[k] = zero + (rest if x01[k] == m else zero)
                        rest = zero if x01[k] == m else rest
                        d10[k] = zero + (rest if x10[k] == m else zero)
                        rest = zero if x10[k] == m else rest
                        d11[k] = zero + (rest if x11[k] == m else zero)
                    continue
                todo[:] = True
                for i in range(kh):
                    r = r0 + i
                    for j in range(kw):
                        s = s0 + j
                        if 0 <= r < h and 0 <= s < w:
                            row, out = x[b, r, s], dx[b, r, s]
                            if overlap:
                                for k in range(c):
                                    hit = todo[k] & (row[k] == top_in[k])
                                    out[k] += grad[k] if hit else zero
                                    todo[k] &= not hit
                            else:
                                for k in range(c):
                                    hit = todo[k] & (row[k] == top_in[k])
                                    out[k] = zero + (grad[k] if hit else zero)
                                    todo[k] &= not hit
                        else:  # padding: the first maximum only where the window's is -inf
                            for k in range(c):
                                todo[k] &= top_in[k] != -np.inf


@njit(**_OPTIONS)
def avg_pool(x, divisors, ksize, strides, top, left, y):
    """y[b, p, q, :] = the sum of each window's elements inside x, in row-major order,
    divided by how many there are: divisors[count], the count in x's dtype (so that the
    division is x's, as runtime_conv's by its counts array). The sum is kept in registers
    for a 2x2 window wholly inside x, in y's row otherwise."""
    n, h, w, c = x.shape
    oh, ow = y.shape[1], y.shape[2]
    kh, kw = ksize
    sh, sw = strides
    for b in range(n):
        for p in range(oh):
            r0 = p * sh - top
            r_lo, r_hi = max(r0, 0), min(r0 + kh, h)
            for q in range(ow):
                s0 = q * sw - left
                s_lo, s_hi = max(s0, 0), min(s0 + kw, w)
                out = y[b, p, q]
                d = divisors[max(r_hi - r_lo, 0) * max(s_hi - s_lo, 0)]
                if kh == 2 and kw == 2 and r_lo == r0 and r_hi == r0 + 2 and s_lo == s0 \
                        and s_hi == s0 + 2:
                    x00, x01 = x[b, r0, s0], x[b, r0, s0 + 1]
                    x10, x11 = x[b, r0 + 1, s0], x[b, r0 + 1, s0 + 1]
                    for k in range(c):
                        out[k] = (((divisors[0] + x00[k]) + x01[k]) + x10[k] + x11[k]) / d
                    continue
                out[:] = 0
                for r in range(r_lo, r_hi):
                    for s in range(s_lo, s_hi):
                        row = x[b, r, s]
                        for k in range(c):
                            out[k] += row[k]
                for k in range(c):
                    out[k] /= d


@njit(**_OPTIONS)
def avg_pool_grad(dy, divisors, ksize, strides, top, left, overlap, dx):
    """dx[b, r, s, :] += dy[b, p, q, :] / divisors[count] (count: how many elements of the
    window (p, q) lie inside dx, divisors as in avg_pool) over every window that holds
    (r, s). Each window's share is divided once. Where windows overlap, dx arrives zeroed and
    the shares are added; where they do not (`overlap` false), each element of dx that a
    window holds is written once, as 0 + share (runtime_conv's sum on zeros, -0 made +0),
    and the caller zeroes dx only where some element is in no window."""
    n, h, w, c = dx.shape
    oh, ow = dy.shape[1], dy.shape[2]
    kh, kw = ksize
    sh, sw = strides
    zero = divisors[0]
    share = np.empty(c, dy.dtype)
    for b in range(n):
        for p in range(oh):
            r0 = p * sh - top
            r_lo, r_hi = max(r0, 0), min(r0 + kh, h)
            for q in range(ow):
                s0 = q * sw - left
                s_lo, s_hi = max(s0, 0), min(s0 + kw, w)
                d = divisors[max(r_hi - r_lo, 0) * max(s_hi - s_lo, 0)]
                grad = dy[b, p, q]
                if not overlap and kh == 2 and kw == 2 and r_lo == r0 and r_hi == r0 + 2 \
                        and s_lo == s0 and s_hi == s0 + 2:
                    d00, d01 = dx[b, r0, s0], dx[b, r0, s0 + 1]
                    d10, d11 = dx[b, r0 + 1, s0], dx[b, r0 + 1, s0 + 1]
                    for k in range(c):
                        v = zero + grad[k] / d
                        d00[k] = v
                        d01[k] = v
                        d10[k] = v
                        d11[k] = v
                    continue
                for k in range(c):
                    share[k] = grad[k] / d
                for r in range(r_lo, r_hi):
                    for s in range(s_lo, s_hi):
                        row = dx[b, r, s]
                        if overlap:
                            for k in range(c):
                                row[k] += share[k]
                        else:
                            for k in range(c):
                                row[k] = zero + share[k]


@njit(**_OPTIONS)
def bias_relu(x, b, y):
    """y[i, :] = np.maximum(x[i, :] + b, 0), rows i of [rows, C] arrays (y may be x): a
    NaN stays, and a sum of -0 gives +0, as np.maximum's."""
    rows, c = x.shape
    zero = b.dtype.type(0)
    for i in range(rows):
        row, out = x[i], y[i]
        for k in range(c):
            v = row[k] + b[k]
            out[k] = v if (v > zero) | (v != v) else zero


@njit(**_OPTIONS)
def relu_grad_bias_sum(dy, f, g, db):
    """g[i, :] = dy[i, :] * (f[i, :] > 0) (times 1 or 0, as ReluGrad's product with a
    boolean), rows i of [rows, C] arrays (g may be dy or f), and db += each row of g in
    order: np.sum over the leading axes, whose rows NumPy adds one after the other."""
    rows, c = dy.shape
    one, zero = db.dtype.type(1), db.dtype.type(0)
    for i in range(rows):
        grad, kept, out = dy[i], f[i], g[i]
        for k in range(c):
            v = grad[k] * (one if kept[k] > zero else zero)
            out[k] = v
            db[k] += v
