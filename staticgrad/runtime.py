"""Helpers that generated code calls as `rt.<name>` when one NumPy expression is not enough.

This module needs only NumPy (exported programs copy the helpers they use), and it is the one
place where numerically delicate kernels (stable sigmoid, softmax, cross-entropy, erf) live.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

# NumPy's clip ufunc itself. np.clip reaches it through three Python calls (2 us a call, where
# the ufunc call takes 0.4): time that, in a fused block, the other threads wait for the GIL.
# For floats and for bounds within an integer dtype, np.clip computes exactly this ufunc.
clip = getattr(np._core.umath, "clip", np.clip)


def sigmoid(x, out=None):
    """1 / (1 + exp(-x)): four passes, computed in `out` (which may be x). Accurate to a few
    ulps in both tails: for x < 0 it is 1 / (1 + big), as exact as exp(-x) itself. Where
    exp(-x) overflows (x below -88.7 in float32, -709.8 in float64) it gives 0, where the
    true value is a subnormal number under 3e-39 (float32). That overflow, exp(-x)
    underflowing for large x (sigmoid 1) and subnormal results are expected, and not
    reported even under np.errstate(all="raise"). (The form max(e, x >= 0) / (1 + e) with
    e = exp(-|x|), exact down to the subnormals, takes seven passes: 1.5x the time.)"""
    with np.errstate(over="ignore", under="ignore"):
        e = np.negative(x, out=out)
        if not isinstance(e, np.ndarray):  # one number (the scalar fast path)
            return 1 / (1 + np.exp(e))
        np.exp(e, out=e)
        np.add(e, 1, out=e)
        return np.divide(1, e, out=e)


def log1p(x, out=None):
    """log(1 + x), accurate for small |x|, from NumPy's SIMD log (np.log1p calls the scalar C
    library, several times slower for float32). With u = 1 + x rounded, the exact
    correction (x - (u - 1)) / u restores what the rounding lost (0 when u is exact).
    u is clipped to [tiny, max] inside the correction only, so that x = -1 (u = 0) gives
    0 / tiny = 0 and x = +inf gives inf / max = inf, never 0/0 or inf - inf; log(u) then
    gives -inf, +inf, and NaN for x < -1 or NaN, as log1p does, and NumPy's warnings (or
    errors, under np.errstate) for x <= -1 are np.log1p's. Below x = -5 the correction also
    overflows, where the result is NaN either way. `out` may be x. The compiler writes these
    same steps into fused kernels (backends/numpy/expand.py), in this order."""
    x = np.asarray(x)
    if x.dtype.kind != "f" or x.ndim == 0:
        return np.log1p(x, out=out)
    info = np.finfo(x.dtype)
    u = x + 1
    w = clip(u, info.tiny, info.max)
    c = np.subtract(w, 1)
    np.subtract(x, c, out=c)
    np.divide(c, w, out=c)
    np.log(u, out=u)
    return np.add(u, c, out=out)


def add_n(*xs, out=None):
    """xs[0] + xs[1] + ..., added left to right (as the written sum would be), into `out`,
    which may be one of xs."""
    if len(xs) == 1:  # a copy (AddN always makes a new array)
        if out is None:
            return np.copy(xs[0])
        np.copyto(out, xs[0])
        return out
    into = out
    if out is not None and any(np.may_share_memory(out, x) for x in xs[2:]):
        into = None  # out is read later: add into a new array, then copy
    total = np.add(xs[0], xs[1], out=into)
    for x in xs[2:]:
        total = np.add(total, x, out=total if isinstance(total, np.ndarray) else None)
    if out is not None and into is None:
        np.copyto(out, total)
        return out
    return total


def update_in_place(ufunc, var, delta):
    """ufunc(var, delta) written into var's own array: a variable's update (AssignAdd,
    AssignSub) where the compiler found that no other value holds that array. Into a new array
    instead where var cannot take it (read-only, another dtype or shape), and where a
    floating-point error could raise: a ufunc raises only after writing its result, and an
    update that raises must leave the variable as it was."""
    if (_fp_errors_may_raise() or not var.flags.writeable
            or np.result_type(var, delta) != var.dtype or np.shape(delta) != var.shape):
        return ufunc(var, delta)
    return ufunc(var, delta, out=var)


def scatter(ufunc, var, indices, updates, in_place):
    """var with the rows of `updates` combined into its rows `indices` by ufunc (np.add,
    np.subtract; None sets them): ScatterAdd, ScatterSub, ScatterUpdate. Into var's own array
    with `in_place` (the compiler found no other value holding it) where var can take it and
    no floating-point error could raise; into a copy otherwise. An index outside the rows is
    an IndexError naming it, before anything is written."""
    indices = np.asarray(indices)
    rows = var.shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= rows):
        bad = indices[(indices < 0) | (indices >= rows)].reshape(-1)[0]
        raise IndexError(f"indices holds {bad}, which is not in [0, {rows})")
    if not (in_place and var.flags.writeable and not _fp_errors_may_raise()):
        var = np.array(var)
    if ufunc is None:
        var[indices] = updates
    else:
        ufunc.at(var, indices, updates)
    return var


def _fp_errors_may_raise() -> bool:
    """Could a floating-point error in a ufunc raise here: NumPy set to raise, to call or log
    to a handler (which may raise), or to warn where a warnings filter turns RuntimeWarning
    into an error (`-W error`, pytest's filterwarnings = error)? Filters are read only where
    `warnings.filters` holds them all (not under Python 3.14's context-aware warnings)."""
    modes = np.geterr().values()
    if "raise" in modes or "call" in modes or "log" in modes:
        return True
    if "warn" not in modes:
        return False
    if getattr(sys.flags, "context_aware_warnings", False):
        return True
    return any(f[0] == "error" and issubclass(RuntimeWarning, f[2]) for f in warnings.filters)


# Arrays smaller than this go to np.where. Masks that follow the data have no pattern the
# CPU's branch predictor could learn, and np.where then takes about 4 ns an element: at 4K
# float32, 16.8 us against select's 10.4 (8K: 35 against 12). A mask it has learnt (the same
# one again, or sorted data) makes np.where as fast as select from 16K elements down.
SELECT_MIN_SIZE = 1 << 12
_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}  # an integer as wide as a dtype
_NUMBERS = (np.ndarray, np.generic, bool, int, float)


def select(cond, x, y):
    """np.where(cond, x, y), computed on the bits: y ^ ((x ^ y) & m), m all ones where cond
    holds. The same bits as np.where (NaN payloads and signed zeros too), and 2-5x faster
    for large arrays whose condition has no pattern, as in most gradients
    (benchmarks/bench_select.py). Python numbers take the array's dtype as np.where would give
    them (NEP 50); small arrays, other mixes of dtypes, and numbers the dtype cannot hold go
    to np.where."""
    if not isinstance(cond, np.ndarray) or cond.dtype != np.bool_ or \
            not (isinstance(x, _NUMBERS) and isinstance(y, _NUMBERS)) or \
            max(cond.size, np.size(x), np.size(y)) < SELECT_MIN_SIZE or \
            max(cond.ndim, np.ndim(x), np.ndim(y)) == 0:  # 0-d: bit ops give scalars
        return np.where(cond, x, y)
    dtype = np.result_type(x, y)
    if dtype.itemsize not in _BITS or dtype.kind not in "biuf" or \
            any(isinstance(v, np.ndarray) and v.dtype != dtype for v in (x, y)):
        return np.where(cond, x, y)
    try:
        xi = np.asarray(x, dtype).view(_BITS[dtype.itemsize])
        yi = np.asarray(y, dtype).view(_BITS[dtype.itemsize])
    except OverflowError:  # a Python int out of the dtype's range: np.where wraps it
        return np.where(cond, x, y)
    # 0 or -1 (all ones), widened as it is read; astype makes any nonzero byte of a bool
    # (u8.view(bool) may hold 255) a 1, as np.where reads it
    mask = cond.astype(np.int8)
    np.negative(mask, out=mask)
    bits = np.bitwise_and(np.bitwise_xor(xi, yi), mask)
    return np.bitwise_xor(bits, yi, out=bits).view(dtype)


# Arrays smaller than this go to np.logaddexp: there one ufunc call costs less than ten.
SOFTPLUS_MIN_SIZE = 1 << 10


def softplus(x, out=None):
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), in NumPy's SIMD loops with `log1p`
    below: np.logaddexp calls the C library's exp and log1p one element at a time, about 4x
    slower from 1K elements up (single numbers and smaller arrays go to it). Its correction
    keeps tiny results' digits; its clip does nothing here (1 + exp(-|x|) is in [1, 2]).

    Within 5.5 ulps in float32 (5.34 the most over every float32 number; np.logaddexp's is
    1.5, and NumPy's float32 log, which sets it, is within 3.8), 2 in float16 (every number),
    under 2.5 in float64 (1.96 the most in 60M numbers), subnormal results included. +inf gives
    +inf, -inf 0, NaN NaN, and nothing is reported (a signalling NaN aside), even under
    np.errstate: exp(-|x|) underflowing (|x| > 87 in float32) is expected. `out` may be x."""
    x = np.asarray(x)
    if x.size < SOFTPLUS_MIN_SIZE or x.ndim == 0:  # (it flags NaN inputs as invalid: NaN
        #                                             gives NaN; a 0-d x has no out= arrays)
        with np.errstate(under="ignore", invalid="ignore"):
            return np.logaddexp(0, x, out=out)
    with np.errstate(under="ignore"):  # exp(-|x|) and the correction may be subnormal
        v = np.abs(x)
        np.negative(v, out=v)
        np.exp(v, out=v)
        log1p(v, out=v)
        return np.add(np.maximum(x, 0), v, out=out)  # out may be x: read before the add


# (the softmax family's reductions are the ufuncs' own: np.max and np.sum are the same
# reductions behind 3-4 us of Python each, and a classifier's step makes several)

def _max_or_neg_inf(x, axis):
    """max along `axis`, keeping dims; -inf where the axis is empty (no reduction error)."""
    return np.maximum.reduce(x, axis=axis, keepdims=True, initial=-np.inf)


def softmax(x, axis=-1):
    z = x - _max_or_neg_inf(x, axis)
    e = np.exp(z)
    return e / np.add.reduce(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    z = x - _max_or_neg_inf(x, axis)
    with np.errstate(divide="ignore"):  # the sum is >= 1, or 0 only where the axis is empty
        return z - np.log(np.add.reduce(np.exp(z), axis=axis, keepdims=True))


def softmax_xent(labels, logits, axis=-1):
    """-sum(labels * log_softmax(logits)) along `axis`, stable for logits of any size."""
    return -np.sum(labels * log_softmax(logits, axis), axis=axis)


def sparse_softmax_xent(labels, logits):
    """-log_softmax(logits)[..., labels]; a label outside [0, classes) is an error, as in TF1."""
    depth = np.shape(logits)[-1]
    labels = np.asarray(labels)
    if labels.size and (labels.min() < 0 or labels.max() >= depth):
        bad = labels[(labels < 0) | (labels >= depth)].ravel()[0]
        raise ValueError(f"received a label value of {bad} which is outside the valid range "
                         f"of [0, {depth})")
    logp = log_softmax(logits, -1)
    if labels.ndim == 1:  # (a batch of labels: one fancy index, the common case)
        return 0 - logp[np.arange(len(labels)), labels]
    return 0 - np.take_along_axis(logp, labels[..., None].astype(np.intp), axis=-1)[..., 0]


_erf_vec = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    x = np.asarray(x)
    out = _erf_vec(x)
    return np.asarray(out, dtype=x.dtype)[()] if x.ndim == 0 else out.astype(x.dtype)


_erfc_vec = np.frompyfunc(math.erfc, 1, 1)


def erfc(x):
    """1 - erf(x), from the C library's erfc (math.erfc): accurate in the tail, where
    1 - erf(x) would be 0 for x above 6 (float64) and lose every digit before."""
    x = np.asarray(x)
    out = _erfc_vec(x)
    return np.asarray(out, dtype=x.dtype)[()] if x.ndim == 0 else out.astype(x.dtype)


def elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def sum_to(g, shape):
    """Sum `g` over the axes along which `shape` was broadcast to give g's shape."""
    shape = tuple(shape)
    if np.shape(g) == shape:
        return g
    lead = np.ndim(g) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                      if d == 1 and np.shape(g)[i + lead] != 1)
    return np.sum(g, axis=axes).reshape(shape) if axes else np.reshape(g, shape)


def strided_slice_grad(g, shape, index):
    """Scatter `g` into zeros of `shape` at `index` (the gradient of `x[index]`)."""
    out = np.zeros(shape, dtype=np.result_type(g))
    out[index] = g
    return out


def floordiv(x, y, out=None):
    """x // y; an integer division by zero is an error, as in TF1 (NumPy gives 0 and a
    warning). Floats divide as NumPy's do (inf, nan)."""
    _check_divisor(y)
    return np.floor_divide(x, y, out=out)


def floormod(x, y, out=None):
    """x % y (with the sign of y); an integer zero divisor is an error, as in TF1."""
    _check_divisor(y)
    return np.remainder(x, y, out=out)


def _check_divisor(y) -> None:
    if np.asarray(y).dtype.kind in "iu" and not np.all(y):
        raise ZeroDivisionError("integer division by zero")


class AssertionFailed(ValueError):
    """An Assert op's condition was false (the session reports it as InvalidArgumentError
    naming the op)."""


def assert_true(condition, message, summarize, data):
    """Nothing, or AssertionFailed("assertion failed: [message] [data]...") as TF1 words it,
    each of `data` shown by its first `summarize` elements."""
    if bool(condition):
        return None
    shown = [f"[{_summary(d, summarize)}]" for d in data]
    raise AssertionFailed(" ".join(["assertion failed:", f"[{message}]", *shown]))


def _summary(value, summarize) -> str:
    """The first `summarize` elements of `value`, space-separated, '...' if there are more."""
    flat = np.asarray(value).ravel()
    return " ".join(_text(v) for v in flat[:summarize]) + ("..." if flat.size > summarize
                                                           else "")


def _text(v) -> str:
    """One element as printed: a string's text (as TF1 prints it), else str(v)."""
    return v.decode("utf-8", "backslashreplace") if type(v) is bytes else str(v)


_PRINTED: dict = {}  # a Print op's counter -> how many times it printed (for first_n)


def _shown(value, summarize) -> str:
    """A printed tensor: `[1.0 2.0...]`, or a scalar alone."""
    return f"[{_summary(value, summarize)}]" if np.ndim(value) else \
        _text(np.asarray(value).item())


def print_tensors(x, message, first_n, summarize, key, data):
    """x itself, printing `message` then each of `data` to stderr, as TF1's Print (the
    first `first_n` times the op whose counter is `key` runs, if first_n >= 0)."""
    if first_n >= 0:
        count = _PRINTED.get(key, 0)
        _PRINTED[key] = count + 1
        if count >= first_n:
            return x
    print(message + "".join(_shown(d, summarize) for d in data), file=sys.stderr)
    return x


def print_items(layout, tensors, sep, end, stream, summarize):
    """Print the strings of `layout` with `tensors` where it says None, as print."""
    values = iter(tensors)
    items = [piece if piece is not None else _shown(next(values), summarize)
             for piece in layout]
    print(*items, sep=sep, end=end, file=sys.stderr if stream == "stderr" else sys.stdout)


# the Python functions py_func ops call (ops/py_func_ops.py), by the number in their code
PY_FUNCS: dict = {}
_PY_FUNC_KEYS = iter(range(-1, -(1 << 62), -1))  # (the dynamic mode's: apart from the ops')


def register_py_func(func, key=None) -> int:
    """Keep `func` for the generated code to call as `key` (a new one if None)."""
    key = next(_PY_FUNC_KEYS) if key is None else key
    PY_FUNCS[key] = func
    return key


def call_py_func(key, dtypes, args):
    """The arrays PY_FUNCS[key](*args) gives, one for each of `dtypes` and of that dtype."""
    out = PY_FUNCS[key](*args)
    if len(dtypes) != 1 or isinstance(out, list | tuple):
        out = list(out) if isinstance(out, list | tuple) else [out]
    else:
        out = [out]
    if len(out) != len(dtypes):
        raise ValueError(f"the function of py_func gave {len(out)} values for {len(dtypes)} "
                         "dtypes (Tout)")
    arrays = []
    for i, (value, dtype) in enumerate(zip(out, dtypes)):
        if np.dtype(getattr(dtype, "np", dtype)).kind == "O":  # strings: each must be bytes
            arrays.append(to_strings(value, f"output {i} of the function of py_func"))
        elif isinstance(value, np.ndarray | np.generic):
            if value.dtype != dtype:
                raise TypeError(f"the function of py_func gave output {i} of dtype "
                                f"{value.dtype}, where Tout says {np.dtype(dtype)}")
            arrays.append(np.asarray(value))
        else:  # a Python number or list: taken at the dtype Tout says
            arrays.append(np.asarray(value, dtype=dtype))
    return tuple(arrays)


def check_numerics(x, message):
    """x itself, or FloatingPointError("<message> : Tensor had NaN values") (TF1's words)
    when it holds a NaN or an infinity."""
    if not np.isfinite(x).all():
        kind = "NaN" if np.isnan(x).any() else "Inf"
        raise FloatingPointError(f"{message} : Tensor had {kind} values")
    return x


def gather(params, indices, axis):
    """np.take(params, indices, axis), where an index outside [0, n) is an error, as in TF1
    (np.take alone would read index -1 as the last slice)."""
    indices = np.asarray(indices)
    n = np.shape(params)[axis]
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        bad = np.flatnonzero((indices < 0) | (indices >= n))[0]
        position = ", ".join(str(int(i)) for i in np.unravel_index(bad, indices.shape))
        raise IndexError(f"indices[{position}] = {indices.flat[bad]} is not in [0, {n})")
    return np.take(params, indices, axis=axis)


def gather_grad(g, indices, shape, axis):
    """Sum `g` into zeros of `shape` at `indices` along `axis` (the gradient of gather)."""
    out = np.zeros(shape, dtype=np.result_type(g))
    index = (slice(None),) * axis + (indices,)
    np.add.at(out, index, g)
    return out


def _nd_places(indices, shape, what):
    """The index arrays of indices' vectors into `shape`, each checked as TF1 checks them."""
    indices = np.asarray(indices)
    k = indices.shape[-1]
    for d in range(k):
        column = indices[..., d]
        bad = (column < 0) | (column >= shape[d])
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise IndexError(f"{what}: indices{list(at)} = {indices[at].tolist()} does not "
                             f"index into shape {tuple(shape)}")
    return tuple(np.moveaxis(indices, -1, 0))


def gather_nd(params, indices):
    """The slices of params at the index vectors of indices (the last axis)."""
    params = np.asarray(params)
    return params[_nd_places(indices, params.shape, "gather_nd")]


def scatter_nd(indices, updates, shape):
    """Zeros of `shape` with updates added at the index vectors of indices."""
    updates = np.asarray(updates)
    out = np.zeros(tuple(int(d) for d in shape), dtype=updates.dtype)
    np.add.at(out, _nd_places(indices, out.shape, "scatter_nd"), updates)
    return out


def unique(x, out_idx):
    """(the distinct values of vector x in the order they first appear, each element's place
    among them), as TF1's unique."""
    x = np.asarray(x)
    values, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    return values[order], place[inverse.reshape(-1)].astype(out_idx)


def top_k(x, k):
    """(values, indices) of the k largest along the last axis, largest first, ties to the
    lower index, NaN as the largest: a stable ascending sort of the row reversed, read
    backwards."""
    x = np.asarray(x)
    n = x.shape[-1]
    if k > n:  # (a last dimension free when compiled: the slice below would give fewer)
        raise ValueError(f"k ({k}) is more than the last dimension ({n})")
    order = np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    indices = (n - 1 - order).astype(np.int32)
    return np.take_along_axis(x, indices, axis=-1), indices


def cumulative(fn, x, axis, exclusive, reverse):
    """np.cumsum or np.cumprod of x along `axis`, as TF1's: `exclusive` shifts by one (the
    first position gets the identity), `reverse` runs from the end."""
    x = np.asarray(x)
    if reverse:
        x = np.flip(x, axis)
    out = fn(x, axis=axis, dtype=x.dtype)
    if exclusive and x.shape[axis]:  # (an empty axis: nothing to shift)
        out = np.roll(out, 1, axis=axis)
        first = [slice(None)] * x.ndim
        first[axis] = 0
        out[tuple(first)] = 0 if fn is np.cumsum else 1
    return np.ascontiguousarray(np.flip(out, axis)) if reverse else out


def tensor_array_write(flow, index, value, grow):
    """A copy of `flow` (a TensorArray's buffer) with row `index` set to `value`; with `grow`
    (dynamic_size), grown with rows of zeros to hold it."""
    index, rows = int(index), flow.shape[0]
    if index < 0 or (index >= rows and not grow):
        raise IndexError(f"TensorArray write: index {index} is not in [0, {rows})"
                         if not grow else f"TensorArray write: index {index} is negative")
    if index < rows:
        out = flow.copy()
    else:
        out = np.zeros((index + 1,) + flow.shape[1:], dtype=flow.dtype)
        out[:rows] = flow
    out[index] = value
    return out


def tensor_array_write_grad(dy, flow, index):
    """The gradients of tensor_array_write(flow, index, value) for flow and value, from the
    gradient `dy` of its result."""
    index, rows = int(index), flow.shape[0]
    d_flow = dy[:rows].copy()
    if index < rows:
        d_flow[index] = 0
    return d_flow, dy[index].copy()


def one_hot(indices, depth, on, off, axis, dtype):
    indices = np.asarray(indices)
    hot = np.expand_dims(indices, axis) == np.arange(depth).reshape(
        (depth,) + (1,) * (indices.ndim - (axis if axis >= 0 else indices.ndim)))
    return np.where(hot, np.asarray(on, dtype), np.asarray(off, dtype))


def truncated_normal(gen, shape, dtype):
    """Standard normal draws re-drawn until within two standard deviations (TF1's rule)."""
    out = gen.standard_normal(shape)
    bad = np.abs(out) > 2
    while np.any(bad):
        out[bad] = gen.standard_normal(int(np.count_nonzero(bad)))
        bad = np.abs(out) > 2
    return out.astype(dtype)


def uniform(gen, shape, low, high, dtype):
    if np.dtype(dtype).kind in "iu":
        return gen.integers(low, high, size=shape, dtype=dtype)
    return (gen.random(shape) * (high - low) + low).astype(dtype)


def log_uniform_candidates(gen, range_max, num_sampled, unique):
    """num_sampled ids in [0, range_max) drawn with P(k) = log((k + 2) / (k + 1)) /
    log(range_max + 1), as TF1's log-uniform sampler (distinct ones with `unique`: drawn
    until there are that many), then the number of draws it took; float64."""
    log_range = np.log(range_max + 1)

    def draw(n):
        return (np.exp(gen.random(n) * log_range).astype(np.int64) - 1) % range_max

    if not unique:
        return np.append(draw(num_sampled), num_sampled).astype(np.float64)
    seen: dict = {}
    tries = 0
    while len(seen) < num_sampled:
        for k in draw(num_sampled).tolist():  # (a batch at a time, kept in draw order)
            tries += 1
            seen.setdefault(k, None)
            if len(seen) == num_sampled:
                break
    return np.array([*seen, tries], dtype=np.float64)


def normal(gen, shape, dtype):
    if np.dtype(dtype) in (np.float32, np.float64):
        return gen.standard_normal(shape, dtype=dtype)
    return gen.standard_normal(shape).astype(dtype)


# -- kernels in another module, reached as rt.<name>: convolution and pooling (runtime_conv) -----
from .runtime_conv import (  # noqa: E402, F401
    avg_pool,
    avg_pool_grad,
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    max_pool,
    max_pool_grad,
    max_pool_grad_grad,
)
from .runtime_strings import (  # noqa: E402, F401 (the string kernels, as rt.<name>)
    as_string,
    join_strings,
    reduce_join,
    regex_full_match,
    regex_replace,
    string_join,
    string_length,
    string_lower,
    string_strip,
    string_to_number,
    string_upper,
    substr,
    to_strings,
)
from .runtime_summary import (  # noqa: E402, F401 (the summary kernels, as rt.<name>)
    merge_summary,
    summary_histogram,
    summary_image,
    summary_scalar,
    summary_text,
)
