"""What the CUDA backend's host code runs through CuPy: every numeric op that is neither a
generated kernel (elementwise ops, reductions, softmax) nor cuBLAS's (matmul).

The host code prints each such op's NumPy emitter text (the same text the NumPy backend
prints) with `np.` read as `cp.` (CuPy, which mirrors NumPy's API) and `rt.` as `crt.`: the
library below, `staticgrad.runtime`'s numeric helpers written for any NumPy-like array module.

    to_device_code("rt.gather(x, i, 0)")   # 'crt.gather(x, i, 0)'
    crt = make_library(cupy)              # crt.gather(params, indices, axis) on the GPU

The library's functions compute with `xp` alone. They bring a value to the host only where the
op's meaning needs it there: an index check that must raise as the NumPy runtime does (one
reduction, one scalar), a loop's count (truncated normal's redraws), a size that decides a
shape (a TensorArray's row). Their error messages are the NumPy runtime's own: on that path
they call it with the offending values copied to the host.
"""

from __future__ import annotations

import io
import math
import tokenize
import types

import numpy as np

from ... import runtime
from ...runtime_conv import _crop, _taps, _window_counts, output_hw, resolve_pads

# -- which ops run through the library -----------------------------------------------------------

# numeric ops another part of the CUDA backend computes: reductions and softmax (templates),
# matmul (cuBLAS), control flow and transfers (the host code itself), and values, not nodes
HANDLED_ELSEWHERE = frozenset({
    "Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin", "Softmax",
    "LogSoftmax", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
    "MatMul", "Transfer", "If", "While", "WhileGrad", "Scan", "Const", "Placeholder",
    "VariableV2", "NoOp"})
# ops not marked host_only whose work is Python's, not arithmetic: they print, or call the
# user's function, on the host
HOST_SIDE = frozenset({"Print", "PrintV2", "PyFunc"})

# every other numeric, computing, non-elementwise op (tests/backends/cuda/test_library.py
# checks that each is here or in NOT_ON_DEVICE)
LIBRARY_OPS = frozenset({
    "AddN", "Assert", "Assign", "AssignAdd", "AssignSub", "AvgPool", "AvgPoolGrad",
    "BroadcastTo", "Cast", "CheckNumerics", "ConcatV2", "Conv2D", "Conv2DBackpropFilter",
    "Conv2DBackpropInput", "Cumprod", "Cumsum", "CustomGradient", "Einsum", "ExpandDims", "Eye",
    "Fill", "FloorDiv", "FloorMod", "GatherGrad", "GatherNd", "GatherV2", "LeakyRelu",
    "LinSpace", "LogUniformCandidates", "MaxPool", "MaxPoolGrad", "MaxPoolGradGrad", "OneHot",
    "OnesLike", "Pack", "Pad", "PlaceholderWithDefault", "RandomStandardNormal",
    "RandomUniform", "Rank", "Reshape", "ScatterAdd", "ScatterNd", "ScatterSub",
    "ScatterUpdate", "Shape", "Size", "Slice", "Split", "Squeeze", "StridedSlice",
    "StridedSliceGrad", "SumTo", "TensorArrayWrite", "TensorArrayWriteGrad", "Tile", "TopKV2",
    "Transpose", "TruncatedNormal", "Unique", "Unpack", "Where", "ZerosLike"})
# op type -> why its device code cannot run under CuPy with this library (the host runs it)
NOT_ON_DEVICE: dict[str, str] = {
    "Range": "its text is cp.arange(start, limit, delta, dtype=...), and cupy.arange converts "
             "start and delta with numpy.<dtype>(value), which refuses a CuPy array (no "
             "implicit conversion to the host): its scalar inputs must be host values, so "
             "the host computes it",
}


# -- the emitter text on the device -------------------------------------------------------------

# the host code's modules: NumPy's name -> CuPy's, the runtime's -> this library's
RENAMED = {"np": "cp", "rt": "crt"}
# module names an emitter could reach for that the host code has not got (it has cp and crt)
FOREIGN_MODULES = frozenset({
    "numpy", "cupy", "cupyx", "math", "cmath", "operator", "builtins", "sys", "os", "re",
    "random", "itertools", "functools", "warnings", "scipy", "staticgrad", "runtime",
    "runtime_conv", "torch", "jax"})
# NumPy names whose values CuPy arrays cannot hold (strings live on the host only)
HOST_ONLY_NAMES = frozenset({"object_", "str_", "bytes_"})


def to_device_code(code: str) -> str:
    """`code` (an emitter's NumPy text) with the modules `np.` and `rt.` read as `cp.` and
    `crt.`: NAME tokens followed by a `.`, never inside a string, nor an attribute (`x.np`).

    >>> to_device_code("rt.gather(np.abs(x), i, 0)  # 'np.x'")
    "crt.gather(cp.abs(x), i, 0)  # 'np.x'"

    ValueError where the text reaches a module the host code has not got (`math.`), or an
    array of strings (`np.object_`), which no device array holds."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError) as e:
        raise ValueError(f"not Python source: {code!r} ({e})") from None
    edits = []
    for before, token, after, attr in zip([None, *tokens], tokens, tokens[1:], tokens[2:]):
        if token.type != tokenize.NAME or after.exact_type != tokenize.DOT:
            continue
        if before is not None and before.exact_type == tokenize.DOT:
            continue  # an attribute's attribute (x.np.y): not a module
        if token.string in FOREIGN_MODULES:
            raise ValueError(f"{code!r} reaches module {token.string!r}, which the device "
                             "host code has not got (only np. and rt., read as cp. and crt.)")
        if token.string in RENAMED:
            if attr.string in HOST_ONLY_NAMES:
                raise ValueError(f"{code!r} makes an array of Python objects ({token.string}."
                                 f"{attr.string}), which no device array can hold")
            edits.append((token.start, token.end, RENAMED[token.string]))
    lines = code.splitlines(keepends=True)
    for (row, col), (_, end), name in reversed(edits):
        lines[row - 1] = lines[row - 1][:col] + name + lines[row - 1][end:]
    return "".join(lines)


# -- the library ----------------------------------------------------------------------------------

# the dtypes CuPy's add.at adds (its atomicAdd's; cupy/_core/_routines_indexing.pyx): _add_at
# adds the others as one of these
ADDS_AT = frozenset({"float16", "float32", "float64", "int32", "uint32", "uint64"})


def make_library(xp) -> types.SimpleNamespace:
    """The numeric helpers of staticgrad.runtime, by the same names and signatures, for the
    NumPy-like array module `xp` (CuPy on the GPU; NumPy gives the runtime's results).

    >>> crt = make_library(np)
    >>> crt.one_hot(np.array([1, 0]), 2, 1.0, 0.0, -1, np.float32).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    library = _Library(xp)
    names = [n for n in dir(_Library) if not n.startswith("_")]
    return types.SimpleNamespace(xp=xp, AssertionFailed=runtime.AssertionFailed,
                                 **{n: getattr(library, n) for n in names})


class _Library:
    """Each method is the runtime function of its name, computed with `self.xp`."""

    def __init__(self, xp):
        self.xp = xp

    def _host(self, value):
        """`value` as a NumPy array on the host (for error messages)."""
        return self.xp.asnumpy(value) if hasattr(self.xp, "asnumpy") else np.asarray(value)

    def _any(self, mask) -> bool:
        """Does `mask` hold a True: one reduction, one scalar brought to the host."""
        return bool(self.xp.asarray(mask).any())

    @staticmethod
    def _ints(values) -> tuple:
        """A shape given as a tuple, a host array or a device array, as a tuple of ints (one
        transfer for a device array)."""
        return tuple(int(d) for d in (values.tolist() if hasattr(values, "tolist") else values))

    # -- softmax and its cross-entropies (until their kernels land: reduce.py) -----------------

    def _max_or_neg_inf(self, x, axis):
        """max along `axis`, keeping dims; -inf where the axis is empty (CuPy's max has no
        `initial`)."""
        if x.shape[axis] == 0:
            shape = list(x.shape)
            shape[axis] = 1
            return self.xp.full(shape, -np.inf, dtype=x.dtype)
        return x.max(axis=axis, keepdims=True)

    def softmax(self, x, axis=-1):
        e = self.xp.exp(x - self._max_or_neg_inf(x, axis))
        return e / e.sum(axis=axis, keepdims=True)

    def log_softmax(self, x, axis=-1):
        z = x - self._max_or_neg_inf(x, axis)
        return z - self.xp.log(self.xp.exp(z).sum(axis=axis, keepdims=True))

    def softmax_xent(self, labels, logits, axis=-1):
        return -(labels * self.log_softmax(logits, axis)).sum(axis=axis)

    def sparse_softmax_xent(self, labels, logits):
        depth = logits.shape[-1]
        labels = self.xp.asarray(labels)
        if labels.size and self._any((labels < 0) | (labels >= depth)):
            return runtime.sparse_softmax_xent(self._host(labels), self._host(logits))  # raises
        logp = self.log_softmax(logits, -1)
        picked = self.xp.take_along_axis(logp, labels[..., None].astype(np.int64), axis=-1)
        return 0 - picked[..., 0]

    # -- sums, selections, state ---------------------------------------------------------------

    def add_n(self, *xs, out=None):
        """xs[0] + xs[1] + ..., left to right, into `out` if given."""
        total = self.xp.copy(xs[0]) if len(xs) == 1 else xs[0] + xs[1]
        for x in xs[2:]:
            total = total + x
        if out is None:
            return total
        self.xp.copyto(out, total)
        return out

    def select(self, cond, x, y):
        return self.xp.where(cond, x, y)

    def sum_to(self, g, shape):
        """Sum `g` over the axes along which `shape` was broadcast to give g's shape."""
        xp, shape = self.xp, self._ints(shape)
        if xp.shape(g) == shape:
            return g
        lead = xp.ndim(g) - len(shape)
        axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                          if d == 1 and xp.shape(g)[i + lead] != 1)
        return xp.sum(g, axis=axes).reshape(shape) if axes else xp.reshape(g, shape)

    def update_in_place(self, ufunc, var, delta):
        """ufunc(var, delta), into var's own array where it can take it (runtime's rule)."""
        if (runtime._fp_errors_may_raise() or not getattr(var.flags, "writeable", True)
                or self.xp.result_type(var, delta) != var.dtype
                or self.xp.shape(delta) != var.shape):
            return ufunc(var, delta)
        return ufunc(var, delta, out=var)

    def scatter(self, ufunc, var, indices, updates, in_place):
        """var's rows `indices` combined with `updates` by ufunc (xp.add, xp.subtract; None
        sets them): sums through _add_at, a difference as the sum of the negation (CuPy's
        subtract.at takes int32 and uint32 alone), a row set twice set to its last update."""
        xp = self.xp
        indices = xp.asarray(indices)
        rows = var.shape[0]
        if indices.size and self._any((indices < 0) | (indices >= rows)):
            runtime.scatter(ufunc, self._host(var), self._host(indices), None, False)
        if ufunc is xp.subtract and var.dtype == bool:  # (NumPy's TypeError: no bool minus)
            runtime.scatter(np.subtract, self._host(var), self._host(indices),
                            self._host(updates), False)
        if not (in_place and getattr(var.flags, "writeable", True)
                and not runtime._fp_errors_may_raise()):
            var = xp.array(var)
        if ufunc is None:
            self._set_last(var, indices, updates)
        else:
            updates = xp.asarray(updates, dtype=var.dtype)
            self._add_at(var, indices, xp.negative(updates) if ufunc is xp.subtract
                         else updates)
        return var

    def _add_at(self, target, index, values) -> None:
        """xp.add.at(target, index, values) in every dtype, as NumPy adds (each repeat of a
        place adding too). CuPy's add.at takes ADDS_AT alone: a signed integer of 32 or 64
        bits adds as the unsigned one of its width (the same bits: two's complement), a
        narrower integer or a boolean in uint32, cast back (the sum modulo its width; for a
        boolean, any True), a complex number as its real and imaginary parts."""
        xp, dtype = self.xp, target.dtype
        values = xp.asarray(values, dtype=dtype)
        if dtype.name in ADDS_AT:
            xp.add.at(target, index, values)
        elif dtype.kind in "iu" and dtype.itemsize >= 4:
            unsigned = np.dtype(f"uint{8 * dtype.itemsize}")
            xp.add.at(target.view(unsigned), index, values.view(unsigned))
        elif dtype.kind in "biu":
            wide = target.astype(np.uint32)
            xp.add.at(wide, index, values.astype(np.uint32))
            target[...] = wide.astype(dtype)
        elif dtype.kind == "c":
            self._add_at(target.real, index, values.real)
            self._add_at(target.imag, index, values.imag)
        else:
            raise TypeError(f"cannot add {dtype} values at indices")

    def _set_last(self, target, indices, updates) -> None:
        """target[indices] = updates, a row that indices name twice set to its last update,
        as NumPy sets it (CuPy's assignment keeps any one of them): each row set once."""
        xp = self.xp
        flat = indices.reshape(-1)
        updates = xp.broadcast_to(xp.asarray(updates, dtype=target.dtype),
                                  indices.shape + target.shape[1:])
        updates = updates.reshape((flat.size,) + target.shape[1:])
        order = xp.argsort(flat, kind="stable")  # (a row's repeats in their order)
        ordered = flat[order]
        last = xp.ones(flat.size, dtype=bool)
        last[:-1] = ordered[1:] != ordered[:-1]
        keep = order[last]
        target[flat[keep]] = updates[keep]

    def strided_slice_grad(self, g, shape, index):
        """Scatter `g` into zeros of `shape` at `index` (the gradient of `x[index]`)."""
        out = self.xp.zeros(self._ints(shape), dtype=self.xp.asarray(g).dtype)
        out[index] = g
        return out

    # -- checks ----------------------------------------------------------------------------------

    def floordiv(self, x, y, out=None):
        self._check_divisor(y)
        return self.xp.floor_divide(x, y, out=out)

    def floormod(self, x, y, out=None):
        self._check_divisor(y)
        return self.xp.remainder(x, y, out=out)

    def _check_divisor(self, y) -> None:
        y = self.xp.asarray(y)
        if y.dtype.kind in "iu" and self._any(y == 0):
            runtime.floordiv(1, self._host(y))  # raises as the runtime does

    def assert_true(self, condition, message, summarize, data):
        if bool(condition):
            return None
        return runtime.assert_true(False, message, summarize, [self._host(d) for d in data])

    def check_numerics(self, x, message):
        if not self._any(~self.xp.isfinite(x)):
            return x
        return runtime.check_numerics(self._host(x), message)  # raises, naming NaN or Inf

    # -- indexing --------------------------------------------------------------------------------

    def gather(self, params, indices, axis):
        """xp.take(params, indices, axis); an index outside [0, n) is an IndexError."""
        indices = self.xp.asarray(indices)
        n = self.xp.shape(params)[axis]
        if indices.size and self._any((indices < 0) | (indices >= n)):
            runtime.gather(self._host(params), self._host(indices), axis)
        return self.xp.take(params, indices, axis=axis)

    def gather_grad(self, g, indices, shape, axis):
        """Sum `g` into zeros of `shape` at `indices` along `axis`."""
        out = self.xp.zeros(self._ints(shape), dtype=self.xp.asarray(g).dtype)
        self._add_at(out, (slice(None),) * axis + (self.xp.asarray(indices),), g)
        return out

    def _nd_places(self, indices, shape, what):
        """The index arrays of indices' vectors into `shape`, checked in one reduction."""
        xp = self.xp
        indices = xp.asarray(indices)
        k = indices.shape[-1]
        bounds = xp.asarray(shape[:k], dtype=indices.dtype) if k else 0
        if indices.size and self._any((indices < 0) | (indices >= bounds)):
            runtime._nd_places(self._host(indices), shape, what)  # raises, naming the vector
        return tuple(xp.moveaxis(indices, -1, 0))

    def gather_nd(self, params, indices):
        params = self.xp.asarray(params)
        return params[self._nd_places(indices, params.shape, "gather_nd")]

    def scatter_nd(self, indices, updates, shape):
        updates = self.xp.asarray(updates)
        out = self.xp.zeros(self._ints(shape), dtype=updates.dtype)
        self._add_at(out, self._nd_places(indices, out.shape, "scatter_nd"), updates)
        return out

    def one_hot(self, indices, depth, on, off, axis, dtype):
        xp = self.xp
        indices = xp.asarray(indices)
        hot = xp.expand_dims(indices, axis) == xp.arange(depth).reshape(
            (depth,) + (1,) * (indices.ndim - (axis if axis >= 0 else indices.ndim)))
        return xp.where(hot, xp.asarray(on, dtype), xp.asarray(off, dtype))

    # -- sorting and running sums ------------------------------------------------------------------

    def unique(self, x, out_idx):
        """(x's distinct values in the order they first appear, each element's place among
        them)."""
        xp = self.xp
        values, first, inverse = xp.unique(xp.asarray(x), return_index=True,
                                           return_inverse=True)
        order = xp.argsort(first)  # (first positions are distinct: any sort is stable here)
        place = xp.empty_like(order)
        place[order] = xp.arange(len(order))
        return values[order], place[inverse.reshape(-1)].astype(out_idx)

    def top_k(self, x, k):
        """(values, indices) of the k largest along the last axis, largest first, ties to the
        lower index, NaN as the largest."""
        xp = self.xp
        x = xp.asarray(x)
        n = x.shape[-1]
        if k > n:
            raise ValueError(f"k ({k}) is more than the last dimension ({n})")
        order = xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
        indices = (n - 1 - order).astype(np.int32)
        return xp.take_along_axis(x, indices, axis=-1), indices

    def cumulative(self, fn, x, axis, exclusive, reverse):
        """fn (xp.cumsum or xp.cumprod) of x along `axis`, as TF1's cumsum and cumprod."""
        xp = self.xp
        x = xp.asarray(x)
        if reverse:
            x = xp.flip(x, axis)
        out = fn(x, axis=axis, dtype=x.dtype)
        if exclusive and x.shape[axis]:
            out = xp.roll(out, 1, axis=axis)
            first = [slice(None)] * x.ndim
            first[axis] = 0
            out[tuple(first)] = 0 if fn is xp.cumsum else 1
        return xp.ascontiguousarray(xp.flip(out, axis)) if reverse else out

    # -- TensorArray ---------------------------------------------------------------------------

    def tensor_array_write(self, flow, index, value, grow):
        """A copy of `flow` with row `index` (brought to the host: it decides the shape) set to
        `value`, grown with rows of zeros with `grow`."""
        index, rows = int(index), flow.shape[0]
        if index < 0 or (index >= rows and not grow):
            runtime.tensor_array_write(np.empty((rows, 0)), index, None, grow)  # raises
        if index < rows:
            out = flow.copy()
        else:
            out = self.xp.zeros((index + 1,) + flow.shape[1:], dtype=flow.dtype)
            out[:rows] = flow
        out[index] = value
        return out

    # (the NumPy runtime's, which uses only the arrays' own methods)
    tensor_array_write_grad = staticmethod(runtime.tensor_array_write_grad)

    # -- random draws, from the generator the session keeps for the op (R[name]) ---------------

    def uniform(self, gen, shape, low, high, dtype):
        if np.dtype(dtype).kind in "iu":
            return gen.integers(low, high, size=shape, dtype=dtype)
        return (gen.random(shape) * (high - low) + low).astype(dtype)

    def normal(self, gen, shape, dtype):
        if np.dtype(dtype) in (np.float32, np.float64):
            return gen.standard_normal(shape, dtype=dtype)
        return gen.standard_normal(shape).astype(dtype)

    def truncated_normal(self, gen, shape, dtype):
        """Standard normal draws re-drawn until within two standard deviations: one count
        brought to the host a round."""
        xp = self.xp
        out = gen.standard_normal(shape)
        bad = xp.abs(out) > 2
        count = int(xp.count_nonzero(bad))
        while count:
            out[bad] = gen.standard_normal(count)
            bad = xp.abs(out) > 2
            count = int(xp.count_nonzero(bad))
        return out.astype(dtype)

    def log_uniform_candidates(self, gen, range_max, num_sampled, unique):
        """The runtime's log-uniform sampler (the same draws from the same generator); with
        `unique`, each batch's new ids found at once, one count brought to the host a batch."""
        xp = self.xp
        log_range = np.log(range_max + 1)

        def draw(n):
            return (xp.exp(gen.random(n) * log_range).astype(np.int64) - 1) % range_max

        if not unique:
            return xp.append(draw(num_sampled), num_sampled).astype(np.float64)
        seen, tries = xp.zeros(0, dtype=np.int64), 0
        while seen.size < num_sampled:
            ids = draw(num_sampled)
            both = xp.concatenate([seen, ids])
            _, first = xp.unique(both, return_index=True)
            new = xp.zeros(both.size, dtype=bool)
            new[first] = True
            new = new[seen.size:]  # the ids seen neither before nor earlier in the batch
            # where the batch completes the set: the first position with enough new ids
            need = xp.asarray(num_sampled - seen.size)
            taken = int(xp.searchsorted(xp.cumsum(new), need)) + 1
            taken = min(taken, ids.size)
            tries += taken
            seen = xp.concatenate([seen, ids[:taken][new[:taken]]])
        return xp.append(seen, tries).astype(np.float64)

    # -- convolution and pooling (NHWC), as runtime_conv computes them ----------------------------

    def _pad(self, x, pads, value=0):
        if not any(pads[0]) and not any(pads[1]):
            return x
        return self.xp.pad(x, ((0, 0), pads[0], pads[1], (0, 0)), constant_values=value)

    def _windows(self, xp_, k_hw, strides, dilations):
        """A strided view [N, OH, OW, kh, kw, C] of padded xp_: every output's window."""
        (kh, kw), (sh, sw), (dh, dw) = k_hw, strides, dilations
        oh, ow = output_hw(xp_.shape[1:3], k_hw, strides, ((0, 0), (0, 0)), dilations)
        n_, h_, w_, c_ = xp_.strides
        return self.xp.lib.stride_tricks.as_strided(
            xp_, (xp_.shape[0], oh, ow, kh, kw, xp_.shape[3]),
            (n_, h_ * sh, w_ * sw, h_ * dh, w_ * dw, c_))

    def _padded_zeros(self, input_shape, pads, dtype):
        n, h, w, c = input_shape
        return self.xp.zeros((n, h + sum(pads[0]), w + sum(pads[1]), c), dtype=dtype)

    def conv2d(self, x, w, strides, padding, dilations):
        """Cross-correlation of x [N, H, W, C] with w [kh, kw, C, O]: im2col, one matmul."""
        pads = resolve_pads(padding, x.shape[1:3], w.shape[:2], strides, dilations)
        windows = self._windows(self._pad(x, pads), w.shape[:2], strides, dilations)
        cols = self.xp.ascontiguousarray(windows).reshape(-1, math.prod(w.shape[:3]))
        return (cols @ w.reshape(-1, w.shape[3])).reshape(*windows.shape[:3], w.shape[3])

    def conv2d_backprop_input(self, input_shape, w, dy, strides, padding, dilations):
        """conv2d's gradient for its input: one tensordot, then one add per kernel offset."""
        input_shape = self._ints(input_shape)
        pads = resolve_pads(padding, input_shape[1:3], w.shape[:2], strides, dilations)
        cols = self.xp.tensordot(dy, w, axes=([3], [3]))  # [N, OH, OW, kh, kw, C]
        dxp = self._padded_zeros(input_shape, pads, cols.dtype)
        for i, j, index in _taps(w.shape[:2], strides, dilations, dy.shape[1:3]):
            dxp[index] += cols[:, :, :, i, j]
        return _crop(dxp, pads, input_shape[1:3])

    def conv2d_backprop_filter(self, x, filter_shape, dy, strides, padding, dilations):
        """conv2d's gradient for its filter: the input's windows, one matmul with dy."""
        k_hw = self._ints(filter_shape)[:2]
        pads = resolve_pads(padding, x.shape[1:3], k_hw, strides, dilations)
        windows = self._windows(self._pad(x, pads), k_hw, strides, dilations)
        cols = self.xp.ascontiguousarray(windows).reshape(-1, k_hw[0] * k_hw[1] * x.shape[3])
        product = cols.T @ dy.reshape(-1, dy.shape[3])
        return product.reshape(*k_hw, x.shape[3], dy.shape[3])

    def _fold_taps(self, ufunc, xp_, ksize, strides, out_hw):
        out = None
        for _, _, index in _taps(ksize, strides, (1, 1), out_hw):
            out = xp_[index].copy() if out is None else ufunc(out, xp_[index], out=out)
        return out

    def _first_max(self, xp_, y, ksize, strides):
        """For each kernel offset: (index into xp_, where it holds its window's first max)."""
        todo = self.xp.ones(y.shape, dtype=bool)
        for _, _, index in _taps(ksize, strides, (1, 1), y.shape[1:3]):
            first = todo & (xp_[index] == y)
            todo &= ~first
            yield index, first

    def _counts(self, in_hw, ksize, strides, pads, out_hw, dtype):
        """Each window's number of non-padding elements (shape arithmetic, on the host)."""
        return self.xp.asarray(_window_counts(in_hw, ksize, strides, pads, out_hw, dtype))

    def max_pool(self, x, ksize, strides, padding):
        pads = resolve_pads(padding, x.shape[1:3], ksize, strides)
        out_hw = output_hw(x.shape[1:3], ksize, strides, pads)
        return self._fold_taps(self.xp.maximum, self._pad(x, pads, -np.inf), ksize, strides,
                               out_hw)

    def max_pool_grad(self, x, y, dy, ksize, strides, padding):
        """Each dy to the first maximum of its window."""
        pads = resolve_pads(padding, x.shape[1:3], ksize, strides)
        xp_ = self._pad(x, pads, -np.inf)
        dxp = self.xp.zeros(xp_.shape, dtype=dy.dtype)
        for index, first in self._first_max(xp_, y, ksize, strides):
            dxp[index] += self.xp.where(first, dy, 0)
        return _crop(dxp, pads, x.shape[1:3])

    def max_pool_grad_grad(self, x, y, g, ksize, strides, padding):
        """g read at the first maximum of each window."""
        pads = resolve_pads(padding, x.shape[1:3], ksize, strides)
        xp_, gp = self._pad(x, pads, -np.inf), self._pad(g, pads)
        out = self.xp.zeros(y.shape, dtype=g.dtype)
        for index, first in self._first_max(xp_, y, ksize, strides):
            out += self.xp.where(first, gp[index], 0)
        return out

    def avg_pool(self, x, ksize, strides, padding):
        pads = resolve_pads(padding, x.shape[1:3], ksize, strides)
        out_hw = output_hw(x.shape[1:3], ksize, strides, pads)
        sums = self._fold_taps(self.xp.add, self._pad(x, pads), ksize, strides, out_hw)
        return sums / self._counts(x.shape[1:3], ksize, strides, pads, out_hw, x.dtype)

    def avg_pool_grad(self, input_shape, dy, ksize, strides, padding):
        """Each dy shared over its window's non-padding elements."""
        input_shape = self._ints(input_shape)
        pads = resolve_pads(padding, input_shape[1:3], ksize, strides)
        share = dy / self._counts(input_shape[1:3], ksize, strides, pads, dy.shape[1:3],
                                  dy.dtype)
        dxp = self._padded_zeros(input_shape, pads, dy.dtype)
        for _, _, index in _taps(ksize, strides, (1, 1), dy.shape[1:3]):
            dxp[index] += share
        return _crop(dxp, pads, input_shape[1:3])
