"""Ops under PyTorch's names and argument conventions (`dim`, `keepdim`, `x.view(2, -1)`),
as functions (`dy.sum(x, dim=1)`) and as methods (`x.sum(dim=1)`), plus Python operators.

Each is a registry op run at once (`_op`): `sum` is the Sum op, `view` is Reshape, `cat` is
ConcatV2, so values and gradients are the graph side's. What is PyTorch's own is the argument
handling and its type promotion (`int_tensor * 0.5` is float32; float32 and float64 give
float64), done here before the op runs.
"""

from __future__ import annotations

import builtins
import collections
import numbers

import numpy as np

from .. import dtypes as _dt
from ..graph import Tensor as GraphTensor
from ..ops import vocabulary
from ..ops.indexing_ops import normalize_index
from ..ops.table import REGISTRY, NodeCtx
from ..shapes import TensorShape
from . import tape
from .creation import (
    as_size,
    bool,
    float16,
    float32,
    float64,
    from_numpy,
    int32,
    int64,
    rand,
    randn,
    tensor,
)
from .dispatch import run, run_binary, run_operation, run_unary
from .tensor import Tensor


# -- running ops, PyTorch's type promotion ------------------------------------------------------
def _op(op_type: str, inputs: list, attrs=None, name=None) -> Tensor:
    """Run a registry op; `name` is PyTorch's name for its node (default: from the op type)."""
    out = run(op_type, inputs, attrs if attrs is not None else {})[0]
    return tape.rename(out, name) if name is not None else out


def _category(dtype) -> builtins.int:
    return 2 if dtype.is_floating else 1 if dtype.is_integer else 0


def _promote_types(a, b):
    if a is b:
        return a
    if _category(a) != _category(b):
        return a if _category(a) > _category(b) else b
    return _dt.as_dtype(np.promote_types(a.np, b.np))


_SCALAR_DTYPES = {0: bool, 1: int64, 2: float32}


def result_type(*operands):
    """PyTorch's promotion: tensors with dims decide; a 0-d tensor only if of a higher
    category (bool < int < float), a Python number only if of a higher category too (then
    int64 or float32)."""
    dims = zero = None
    scalar = -1
    for v in operands:
        if isinstance(v, Tensor | np.ndarray):
            dt = v.dtype if isinstance(v, Tensor) else _dt.as_dtype(v.dtype)
            if v.ndim:
                dims = dt if dims is None else _promote_types(dims, dt)
            else:
                zero = dt if zero is None else _promote_types(zero, dt)
        elif isinstance(v, builtins.bool | np.bool_):
            scalar = builtins.max(scalar, 0)
        elif isinstance(v, numbers.Integral):
            scalar = builtins.max(scalar, 1)
        elif isinstance(v, numbers.Real):
            scalar = builtins.max(scalar, 2)
        elif isinstance(v, GraphTensor):
            raise TypeError(f"{v.name} is a graph tensor, not a dynamic tensor: the dynamic mode "
                            "runs ops on dynamic tensors only; run graph tensors in a Session")
        else:
            raise TypeError(f"expected a tensor or a number, got {type(v).__name__} {v!r}")
    result = dims
    if zero is not None:
        if result is None:
            result = zero
        elif _category(zero) > _category(result):
            result = _promote_types(result, zero)
    if scalar >= 0 and (result is None or scalar > _category(result)):
        result = _SCALAR_DTYPES[scalar]
    return result


def _takes_dtype(python_type, dtype) -> builtins.bool:
    """Whether a Python number of this type takes a tensor's dtype (the common fast case)."""
    return python_type is builtins.float and dtype.is_floating or \
        python_type is builtins.int and not dtype.is_bool


def _as(value, dtype) -> Tensor:
    """value (a tensor, array or number) as a tensor of `dtype` (a Cast op for a tensor)."""
    if isinstance(value, Tensor):
        if value.dtype is dtype:
            return value
        return _op("Cast", [value], {"dtype": dtype}, "ToCopyBackward0")
    return Tensor._make(np.asarray(value, dtype=dtype.np), dtype)


def _binary(op_type, a, b, name=None) -> Tensor:
    ta, tb = type(a), type(b)
    # the common cases, through run_binary: two tensors of one dtype, or a tensor and a
    # number that takes its dtype (x * 2.0, 1 - x)
    if ta is Tensor and (tb is Tensor and a.dtype is b.dtype or _takes_dtype(tb, a.dtype)):
        out = run_binary(op_type, a, b if tb is Tensor else _as(b, a.dtype))
    elif tb is Tensor and _takes_dtype(ta, b.dtype):
        out = run_binary(op_type, _as(a, b.dtype), b)
    else:
        dtype = result_type(a, b)
        return _op(op_type, [_as(a, dtype), _as(b, dtype)], None, name)
    return tape.rename(out, name) if name is not None else out


def _tensor(x) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray | np.generic):
        return from_numpy(np.asarray(x))
    return tensor(x)


# -- elementwise math ---------------------------------------------------------------------------
# The table's two-input ops (ops/vocabulary.py) are the functions below the loop further on;
# here are those whose PyTorch signature takes more than two inputs, or treats its inputs its
# own way. The loop puts the op's one-line doc (its Api's) before what each says here.
def add(input, other, alpha=1):  # noqa: A002
    """With PyTorch's `alpha`: input + alpha * other."""
    return _binary("Add", input, other if alpha == 1 else _binary("Mul", other, alpha))


def sub(input, other, alpha=1):  # noqa: A002
    """With PyTorch's `alpha`: input - alpha * other."""
    return _binary("Sub", input, other if alpha == 1 else _binary("Mul", other, alpha))


def rsub(input, other):  # noqa: A002
    """other - input (what `2 - x` runs)."""
    return _binary("Sub", other, input, "RsubBackward1")


def div(input, other, rounding_mode=None):  # noqa: A002
    """input / other; true division (ints give float32) unless rounding_mode="floor"."""
    if rounding_mode == "floor":
        return _binary("FloorDiv", input, other)
    if rounding_mode is not None:
        raise ValueError(f"div: rounding_mode must be None or 'floor', got {rounding_mode!r}")
    dtype = result_type(input, other)
    if not dtype.is_floating:
        dtype = float32
    return _op("RealDiv", [_as(input, dtype), _as(other, dtype)])


divide = true_divide = div


def pow(input, exponent):  # noqa: A001, A002
    """x ** 2 runs the Square op (PyTorch's PowBackward0 all the same)."""
    if isinstance(input, Tensor) and input.dtype.is_floating and \
            not isinstance(exponent, Tensor) and exponent == 2:
        return _op("Square", [input], None, "PowBackward0")
    name = "PowBackward1" if isinstance(exponent, Tensor) else "PowBackward0"
    return _binary("Pow", input, exponent, name)


def logical_and(input, other):  # noqa: A002
    """Inputs of any dtype: nonzero is true."""
    return _op("LogicalAnd", [_as(_tensor(input), bool), _as(_tensor(other), bool)])


def logical_or(input, other):  # noqa: A002
    """Inputs of any dtype: nonzero is true."""
    return _op("LogicalOr", [_as(_tensor(input), bool), _as(_tensor(other), bool)])


# what the dynamic mode writes by hand of the table's ops, by their dynamic names
_PYTORCH_EXTRAS = {"add": add, "sub": sub, "subtract": sub, "pow": pow,
                   "logical_and": logical_and, "logical_or": logical_or}


def clamp(input, min=None, max=None):  # noqa: A001, A002
    """input limited to [min, max] (either may be None)."""
    out = input
    if min is not None:
        out = _binary("Maximum", out, min)
    if max is not None:
        out = _binary("Minimum", out, max)
    return out


clip = clamp


def where(condition, input, other):  # noqa: A002
    """input where condition holds, else other (broadcast together)."""
    cond = _as(_tensor(condition), bool)
    dtype = result_type(input, other)
    return _op("Select", [cond, _as(input, dtype), _as(other, dtype)])


def _unary(op_type, function_name, doc, float_only=True):
    def fn(input):  # noqa: A002
        if type(input) is Tensor and input.dtype.is_floating:
            return run_unary(op_type, input)  # (the common case)
        x = _tensor(input)
        if float_only and not x.dtype.is_floating:
            x = _as(x, float32)
        return _op(op_type, [x])
    fn.__name__ = fn.__qualname__ = function_name
    fn.__doc__ = doc
    return fn


def _accepts(op_type: str, dtype) -> bool:
    """Does the one-input op take a tensor of `dtype`?"""
    ctx = NodeCtx(op_type, {}, [TensorShape([1])], [dtype], [None])
    try:
        REGISTRY[op_type].infer(ctx)
    except (TypeError, ValueError):
        return False
    return True


def _float_only(op_type: str) -> bool:
    """An op of floats only: the dynamic mode casts an integer tensor to float32 for it, as
    PyTorch computes torch.sqrt of an integer tensor."""
    return _accepts(op_type, float32) and not _accepts(op_type, int64)


def _binary_function(op_type, doc, name):
    def fn(input, other):  # noqa: A002
        if type(input) is Tensor and type(other) is Tensor and input.dtype is other.dtype:
            return run_binary(op_type, input, other)  # (the common case)
        return _binary(op_type, input, other)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


# The elementwise functions the op vocabulary offers in the dynamic mode (ops/vocabulary.py),
# each also a Tensor method of its name (x.tanh(), x.maximum(y)): dy.neg, dy.tanh, dy.eq...;
# PyTorch's own forms of some (_PYTORCH_EXTRAS) take their places.
ELEMENTWISE: dict = {}
_ELEMENTWISE_METHODS: dict = {}
for _type, _api, _name, _arity in vocabulary.dynamic_entries():
    if _arity == 1:
        _fn = _unary(_type, _name, f"{_api.doc} (x: input), elementwise.",
                     float_only=_float_only(_type))
    else:
        _fn = _PYTORCH_EXTRAS.get(_name)
        if _fn is None:
            _fn = _binary_function(_type, f"{_api.doc} (x: input, y: other), elementwise.",
                                   _name)
        elif _fn.__doc__ and not _fn.__doc__.startswith(_api.doc):  # (once: subtract is sub;
            #                                                      none under python -OO)
            _x, _y = _fn.__code__.co_varnames[:2]
            _fn.__doc__ = f"{_api.doc} (x: {_x}, y: {_y}), elementwise. {_fn.__doc__}"
    _ELEMENTWISE_METHODS[_name] = _fn
    for _alias in (_name, *_api.dynamic_aliases):
        ELEMENTWISE[_alias] = _PYTORCH_EXTRAS.get(_alias, _fn)
globals().update(ELEMENTWISE)


def equal(input, other) -> builtins.bool:  # noqa: A002
    """True if both have the same shape and elements."""
    return input.shape == other.shape and builtins.bool(np.all(input._data == other._data))


def allclose(input, other, rtol=1e-5, atol=1e-8) -> builtins.bool:  # noqa: A002
    """True if |input - other| <= atol + rtol * |other| everywhere."""
    return builtins.bool(np.allclose(_tensor(input)._data, _tensor(other)._data, rtol, atol))


# -- reductions ---------------------------------------------------------------------------------
def _dims(dim) -> tuple | None:
    if dim is None:
        return None
    return tuple(builtins.int(d) for d in np.reshape(dim, -1))


def _reduce(op_type, input, dim, keepdim, by_dim_name=None):  # noqa: A002
    name = by_dim_name if dim is not None else None
    return _op(op_type, [input], {"axis": _dims(dim), "keepdims": builtins.bool(keepdim)}, name)


def sum(input, dim=None, keepdim=False, dtype=None):  # noqa: A001, A002
    """The sum over `dim` (an int or a tuple; all dims if None)."""
    x = input
    if dtype is not None:
        x = _as(x, _dt.as_dtype(dtype))
    elif not x.dtype.is_floating and x.dtype is not int64:
        x = _as(x, int64)  # PyTorch sums bools and ints as int64
    return _reduce("Sum", x, dim, keepdim, "SumBackward1")


def mean(input, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """The mean over `dim` (all elements by default), of a floating tensor, as PyTorch's.

    >>> dy.tensor([1.0, 2.0]).mean()          # doctest: +SKIP
    tensor(1.5000)
    """
    x = input if dtype is None else _as(input, _dt.as_dtype(dtype))
    if not x.dtype.is_floating:  # PyTorch's rule: an integer mean would round, say why not
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {x.dtype.name}")
    return _reduce("Mean", x, dim, keepdim, "MeanBackward1")


def prod(input, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """The product over `dim` (all elements if None)."""
    x = input if dtype is None else _as(input, _dt.as_dtype(dtype))
    return _reduce("Prod", x, dim, keepdim, "ProdBackward1")


MaxMin = collections.namedtuple("MaxMin", ["values", "indices"])


def _extreme(op_type, arg_type, input, dim, keepdim, other):  # noqa: A002
    if isinstance(dim, Tensor) or other is not None:  # max(a, b): elementwise
        return _binary("Maximum" if op_type == "Max" else "Minimum", input,
                       dim if other is None else other)
    if dim is None:
        return _op(op_type, [input], {"axis": None, "keepdims": False},
                   f"{op_type}Backward1")
    values = _reduce(op_type, input, dim, keepdim, f"{op_type}Backward0")
    return MaxMin(values, _arg(arg_type, input, dim, keepdim))


def max(input, dim=None, keepdim=False, other=None):  # noqa: A001, A002
    """The largest value; with `dim`, (values, indices) along it; with a tensor, the
    elementwise maximum."""
    return _extreme("Max", "ArgMax", input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, other=None):  # noqa: A001, A002
    """The smallest value; with `dim`, (values, indices) along it; with a tensor, the
    elementwise minimum."""
    return _extreme("Min", "ArgMin", input, dim, keepdim, other)


def amax(input, dim=None, keepdim=False):  # noqa: A002
    """The largest value over `dim` (a dim or a tuple; all if None), without indices."""
    return _reduce("Max", input, dim, keepdim)


def amin(input, dim=None, keepdim=False):  # noqa: A002
    """The smallest value over `dim` (a dim or a tuple; all if None), without indices."""
    return _reduce("Min", input, dim, keepdim)


def _arg(op_type, input, dim, keepdim):  # noqa: A002
    x = input
    if dim is None:
        x, dim = reshape(x, -1), 0
    out = _op(op_type, [x], {"axis": builtins.int(dim) % x.ndim, "output_type": int64})
    return unsqueeze(out, dim) if keepdim else out


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    """The index of the largest value along `dim` (of the flattened input if None)."""
    return _arg("ArgMax", input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    """The index of the smallest value along `dim` (of the flattened input if None)."""
    return _arg("ArgMin", input, dim, keepdim)


def all(input, dim=None, keepdim=False):  # noqa: A001, A002
    """True where every element over `dim` (all if None) is nonzero."""
    return _reduce("All", _as(input, bool), dim, keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001, A002
    """True where some element over `dim` (all if None) is nonzero."""
    return _reduce("Any", _as(input, bool), dim, keepdim)


def var(input, dim=None, unbiased=True, keepdim=False):  # noqa: A002
    """The variance over `dim` (divided by n - 1 unless unbiased=False)."""
    centered = input - mean(input, dim, keepdim=True)
    n = input.numel() // builtins.max(mean(input, dim, keepdim=keepdim).numel(), 1)
    return sum(centered * centered, dim, keepdim) / builtins.max(n - builtins.int(unbiased), 1)


def std(input, dim=None, unbiased=True, keepdim=False):  # noqa: A002
    """The standard deviation over `dim` (divided by n - 1 unless unbiased=False)."""
    return ELEMENTWISE["sqrt"](var(input, dim, unbiased, keepdim))


# -- matrix products -----------------------------------------------------------------------------
def matmul(input, other):  # noqa: A002
    """The matrix product, with NumPy's rules for 1-D operands and batch dimensions."""
    a, b = _tensor(input), _tensor(other)
    if a.dtype is not b.dtype:
        dtype = result_type(a, b)
        a, b = _as(a, dtype), _as(b, dtype)
    if a.ndim >= 2 and b.ndim >= 2:
        name = "MmBackward0" if a.ndim == b.ndim == 2 else "BmmBackward0"
        return _op("MatMul", [a, b], {"transpose_a": False, "transpose_b": False}, name)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    out = matmul(unsqueeze(a, 0) if a.ndim == 1 else a, unsqueeze(b, -1) if b.ndim == 1 else b)
    if b.ndim == 1:
        out = squeeze(out, -1)
    if a.ndim == 1:
        out = squeeze(out, -2 if b.ndim > 1 else -1)
    return out


def mm(input, mat2):  # noqa: A002
    """The product of two matrices."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: both arguments must be matrices, got {input.ndim}D and "
                           f"{mat2.ndim}D")
    return matmul(input, mat2)


def bmm(input, mat2):  # noqa: A002
    """The batched product of two 3-D tensors ([b, n, m] @ [b, m, p])."""
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: both arguments must be 3D, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


def mv(input, vec):  # noqa: A002
    """The product of a matrix and a vector."""
    return matmul(input, vec)


def dot(input, other):  # noqa: A002
    """The dot product of two vectors."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return sum(_binary("Mul", input, other))


# -- shapes ---------------------------------------------------------------------------------------
def _int_vector(values) -> Tensor:
    return Tensor._make(np.asarray(values, dtype=np.int32).reshape(-1), int32)


def reshape(input, *shape):  # noqa: A002
    """input with its elements laid out in `shape` (one entry may be -1)."""
    return _op("Reshape", [input, _int_vector(as_size(shape))])


view = reshape


def view_as(input, other):  # noqa: A002
    return reshape(input, other.shape)


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    """input with its dims start_dim..end_dim merged into one."""
    dims = list(input.shape)
    if not dims:
        return reshape(input, 1)
    start, end = start_dim % len(dims), end_dim % len(dims)
    return reshape(input, dims[:start] + [-1] + dims[end + 1:])


def unsqueeze(input, dim):  # noqa: A002
    """input with a new axis of size 1 at `dim`."""
    return _op("ExpandDims", [input], {"axis": (builtins.int(dim),)})


def squeeze(input, dim=None):  # noqa: A002
    """input without its size-1 axes (only `dim`, if given and of size 1)."""
    if dim is None:
        return _op("Squeeze", [input], {"axis": None})
    shape = input.shape
    dims = tuple(d % builtins.max(len(shape), 1) for d in _dims(dim)) if shape else ()
    dims = tuple(d for d in dims if shape[d] == 1)
    if not dims:  # as in PyTorch, squeezing an axis that is not of size 1 changes nothing
        return _op("Reshape", [input, _int_vector(shape)], None, "SqueezeBackward1")
    return _op("Squeeze", [input], {"axis": dims}, "SqueezeBackward1")


def permute(input, *dims):  # noqa: A002
    """input with its axes in the order `dims`."""
    dims = as_size(dims)
    return _op("Transpose", [input], {"perm": tuple(d % len(dims) for d in dims)},
               "PermuteBackward0")


def transpose(input, dim0, dim1):  # noqa: A002
    """input with axes dim0 and dim1 swapped."""
    perm = list(range(input.ndim))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return _op("Transpose", [input], {"perm": tuple(perm)}, "TransposeBackward0")


swapaxes = transpose


def t(input):  # noqa: A002
    """The transpose of a matrix (a vector or scalar unchanged)."""
    if input.ndim < 2:
        return input
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return _op("Transpose", [input], {"perm": (1, 0)}, "TBackward0")


def expand(input, *sizes):  # noqa: A002
    """input broadcast to `sizes` (-1 keeps a dim); a view, not a copy."""
    sizes = list(as_size(sizes))
    lead = len(sizes) - input.ndim
    for i, d in enumerate(input.shape):
        if sizes[lead + i] == -1:
            sizes[lead + i] = d
    return _op("BroadcastTo", [input, _int_vector(sizes)])


def expand_as(input, other):  # noqa: A002
    return expand(input, other.shape)


def broadcast_to(input, size):  # noqa: A002
    """input broadcast to `size` (a view, not a copy)."""
    return expand(input, size)


def _same_dtype(tensors) -> list:
    tensors = [_tensor(x) for x in tensors]
    dtype = result_type(*tensors)
    return [_as(x, dtype) for x in tensors]


def cat(tensors, dim=0):
    """The tensors joined along `dim`."""
    return _op("ConcatV2", _same_dtype(tensors), {"axis": builtins.int(dim)})


concat = concatenate = cat


def stack(tensors, dim=0):
    """The tensors (of one shape) stacked along a new axis `dim`."""
    return _op("Pack", _same_dtype(tensors), {"axis": builtins.int(dim)})


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of `split_size_or_sections` elements along `dim` (the last may be smaller), or
    of the listed sizes."""
    total = tensor.shape[dim]
    if isinstance(split_size_or_sections, numbers.Integral):
        step = builtins.int(split_size_or_sections)
        sizes = [builtins.min(step, total - i) for i in range(0, total, step)] or [0]
    else:
        sizes = [builtins.int(s) for s in split_size_or_sections]
    axis = builtins.int(dim) % tensor.ndim
    return run_operation("Split", [tensor, _int_vector(sizes)],
                         {"axis": axis, "num": len(sizes)}).outputs


def chunk(input, chunks, dim=0):  # noqa: A002
    """input cut into `chunks` pieces of equal size along `dim` (the last may be smaller)."""
    return split(input, -(-input.shape[dim] // builtins.int(chunks)), dim)


def unbind(input, dim=0):  # noqa: A002
    """The slices of input along `dim`, as a tuple."""
    axis = builtins.int(dim) % input.ndim
    return run_operation("Unpack", [input], {"num": input.shape[axis], "axis": axis}).outputs


def index_select(input, dim, index):  # noqa: A002
    """The slices of input along `dim` picked by the integer tensor `index`."""
    index = _tensor(index)
    return _op("GatherV2", [input, index], {"axis": builtins.int(dim) % input.ndim})


def getitem(input, key):  # noqa: A002
    """input[key]: ints, slices, None and ... (a view); or a list / integer tensor of indices
    along the first axis (PyTorch's advanced indexing on one axis)."""
    if isinstance(key, list) or (isinstance(key, Tensor | np.ndarray) and key.ndim > 0):
        index = _tensor(key)
        if index.dtype.is_bool:
            raise TypeError("indexing by a boolean mask is not supported in the dynamic mode "
                            "(the result's shape would depend on the values); use dy.where")
        return index_select(input, 0, index)
    spec = normalize_index(key)
    name = "SelectBackward0" if builtins.all(isinstance(s, builtins.int) for s in spec) \
        else None
    return _op("StridedSlice", [input], {"index": spec}, name)


def softmax(input, dim):  # noqa: A002
    """exp(input) / sum(exp(input)) along `dim`."""
    return _op("Softmax", [input], {"axis": builtins.int(dim)})


def log_softmax(input, dim):  # noqa: A002
    """input - log(sum(exp(input))) along `dim`, computed stably."""
    return _op("LogSoftmax", [input], {"axis": builtins.int(dim)})


# -- conversions -----------------------------------------------------------------------------
def clone(input):  # noqa: A002
    """A copy of input (its own memory) that stays in the graph."""
    return _op("Cast", [input], {"dtype": input.dtype}, "CloneBackward0")


def detach(input):  # noqa: A002
    """input as a new leaf tensor sharing its data, cut from the graph."""
    return input.detach()


def to(input, dtype=None, *args, **kwargs):  # noqa: A002
    """input converted to `dtype` (devices other than the CPU are not known here)."""
    if isinstance(dtype, str) and dtype == "cpu":
        return input
    dtype = kwargs.get("dtype", dtype)
    return input if dtype is None else _as(input, _dt.as_dtype(dtype))


def _converter(dtype):
    return lambda self: _as(self, dtype)


# -- binding methods and operators onto Tensor -----------------------------------------------------
def _inplace(fn):
    def method(self, other):
        self._check_writable((other,))
        result = fn(self, other)
        if result.dtype is not self.dtype:
            if not np.can_cast(result.dtype.np, self.dtype.np, "same_kind"):
                raise RuntimeError(f"result type {result.dtype.name} can't be cast to the "
                                   f"desired output type {self.dtype.name} (in place)")
            result = _as(result, self.dtype)
        return self._write(result)
    method.__name__ = fn.__name__ + "_"
    return method


def _swap(fn):
    return lambda self, other: fn(other, self)


_METHODS = {
    **_ELEMENTWISE_METHODS,  # x.tanh(), x.neg()...: the op vocabulary's (see ELEMENTWISE)
    "div": div, "clamp": clamp, "clip": clamp,
    "sum": sum, "mean": mean, "prod": prod, "max": max, "min": min, "amax": amax, "amin": amin,
    "argmax": argmax, "argmin": argmin, "all": all, "any": any, "var": var, "std": std,
    "matmul": matmul, "mm": mm, "bmm": bmm, "mv": mv, "dot": dot,
    "reshape": reshape, "view": view, "view_as": view_as, "flatten": flatten,
    "unsqueeze": unsqueeze, "squeeze": squeeze, "permute": permute, "transpose": transpose,
    "t": t, "expand": expand, "expand_as": expand_as, "split": split, "chunk": chunk,
    "unbind": unbind, "index_select": index_select, "softmax": softmax,
    "log_softmax": log_softmax, "clone": clone, "to": to, "type": to,
    "float": _converter(float32), "double": _converter(float64), "half": _converter(float16),
    "long": _converter(int64), "int": _converter(int32), "bool": _converter(bool),
    "where": lambda self, condition, other: where(condition, self, other),
    "contiguous": lambda self: self, "cpu": lambda self: self,
    "add_": _inplace(add), "sub_": _inplace(sub), "mul_": _inplace(ELEMENTWISE["mul"]),
    "div_": _inplace(div),
    "clamp_": lambda self, min=None, max=None: _inplace(  # noqa: A006
        lambda x, _: clamp(x, min, max))(self, None),
    "__add__": add, "__radd__": _swap(add), "__sub__": sub, "__rsub__": rsub,
    "__mul__": ELEMENTWISE["mul"], "__rmul__": _swap(ELEMENTWISE["mul"]),
    "__truediv__": div, "__rtruediv__": _swap(div),
    "__floordiv__": ELEMENTWISE["floor_divide"],
    "__rfloordiv__": _swap(ELEMENTWISE["floor_divide"]),
    "__mod__": ELEMENTWISE["remainder"], "__rmod__": _swap(ELEMENTWISE["remainder"]),
    "__pow__": pow, "__rpow__": _swap(pow), "__matmul__": matmul, "__rmatmul__": _swap(matmul),
    "__neg__": ELEMENTWISE["neg"], "__abs__": ELEMENTWISE["abs"],
    "__invert__": ELEMENTWISE["logical_not"],
    "__and__": logical_and, "__or__": logical_or,
    **{f"__{op}__": ELEMENTWISE[op] for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    "__getitem__": getitem,
    "__iadd__": _inplace(add), "__isub__": _inplace(sub),
    "__imul__": _inplace(ELEMENTWISE["mul"]),
    "__itruediv__": _inplace(div),
}

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
Tensor.T = property(t)


def uniform_(self, a=0.0, b=1.0):
    """Fill in place with uniform draws in [a, b) (for initializing a leaf, under no_grad)."""
    self._check_writable()
    return self._write(rand(self.shape, dtype=self.dtype)._data * (b - a) + a)


def normal_(self, mean=0.0, std=1.0):  # noqa: A002
    """Fill in place with normal draws (for initializing a leaf, under no_grad)."""
    self._check_writable()
    return self._write(randn(self.shape, dtype=self.dtype)._data * std + mean)


Tensor.uniform_ = uniform_
Tensor.normal_ = normal_
