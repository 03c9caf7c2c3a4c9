"""Making tensors, under PyTorch's names and dtype rules: `tensor` (Python floats are
float32, ints int64; NumPy arrays keep their dtype), `zeros`, `ones`, `arange`, `linspace`...,
and random tensors, which are the registry's random ops drawing from one generator
(`manual_seed`), so that `trace` records them as random ops.

>>> w = dy.randn(3, 1, requires_grad=True)          # doctest: +SKIP
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes as _dt
from .dispatch import GENERATOR, run_operation
from .tensor import Tensor

float16 = half = _dt.float16
float32 = float = _dt.float32  # noqa: A001 - PyTorch's names
float64 = double = _dt.float64
int8, int16, uint8 = _dt.int8, _dt.int16, _dt.uint8
int32 = int = _dt.int32  # noqa: A001
int64 = long = _dt.int64
bool = _dt.bool_  # noqa: A001


def get_default_dtype():
    """The dtype of tensors made from Python floats: float32."""
    return float32


# -- making tensors -----------------------------------------------------------------------------
def _dtype_of(array: np.ndarray, from_python: builtins.bool) -> _dt.DType:
    """PyTorch's dtype for data: Python floats are float32, ints int64; NumPy keeps its own."""
    if from_python:
        kind = array.dtype.kind
        if kind == "f":
            return float32
        if kind in "iu":
            return int64
    return _dt.as_dtype(array.dtype)


def tensor(data, dtype=None, requires_grad=False) -> Tensor:
    """A new leaf tensor holding a copy of `data` (a number, nested lists, a NumPy array).

    >>> dy.tensor([1.0, 2.0], requires_grad=True)       # doctest: +SKIP
    tensor([1., 2.], requires_grad=True)
    """
    if isinstance(data, Tensor):
        data._python_value("dy.tensor(tensor)")  # a copy of the values: a constant in a trace
        data = data._data
    from_python = not isinstance(data, np.ndarray | np.generic)
    array = np.array(data)
    if array.dtype == object or array.dtype.kind not in "biuf":
        raise TypeError(f"cannot make a tensor from {type(data).__name__} {data!r}")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dtype_of(array, from_python)
    if dt.is_string:
        raise TypeError("the dynamic mode has no string tensors (as PyTorch has none)")
    return Tensor._make(np.array(array, dtype=dt.np), dt).requires_grad_(requires_grad)


def as_tensor(data, dtype=None) -> Tensor:
    """`data` itself if it is a tensor (of `dtype`), else a new tensor (sharing a NumPy array's
    memory when no conversion is needed)."""
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype is _dt.as_dtype(dtype) else data.to(dtype)
    if isinstance(data, np.ndarray) and (dtype is None or _dt.as_dtype(dtype).np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing `array`'s memory."""
    if array.dtype.kind not in "biuf":
        raise TypeError(f"cannot make a tensor from an array of dtype {array.dtype}")
    return Tensor._make(array, _dt.as_dtype(array.dtype))


def FloatTensor(data) -> Tensor:  # noqa: N802 - PyTorch's legacy constructors
    """A float32 tensor holding a copy of `data` (PyTorch's legacy constructor)."""
    return tensor(data, float32)


def DoubleTensor(data) -> Tensor:  # noqa: N802
    """A float64 tensor holding a copy of `data` (PyTorch's legacy constructor)."""
    return tensor(data, float64)


def LongTensor(data) -> Tensor:  # noqa: N802
    """An int64 tensor holding a copy of `data` (PyTorch's legacy constructor)."""
    return tensor(data, int64)


def as_size(size) -> tuple:
    """A size given as f(2, 3), f((2, 3)) or f([2, 3])."""
    if len(size) == 1 and isinstance(size[0], list | tuple):
        size = size[0]
    return tuple(builtins.int(d) for d in size)


def _filled(array, dtype, requires_grad) -> Tensor:
    return Tensor._make(array, _dt.as_dtype(dtype)).requires_grad_(requires_grad)


def zeros(*size, dtype=None, requires_grad=False) -> Tensor:
    """A tensor of zeros of shape `size` (float32 unless `dtype`)."""
    dt = _dt.as_dtype(dtype or float32)
    return _filled(np.zeros(as_size(size), dt.np), dt, requires_grad)


def ones(*size, dtype=None, requires_grad=False) -> Tensor:
    """A tensor of ones of shape `size` (float32 unless `dtype`)."""
    dt = _dt.as_dtype(dtype or float32)
    return _filled(np.ones(as_size(size), dt.np), dt, requires_grad)


def empty(*size, dtype=None, requires_grad=False) -> Tensor:
    """A tensor whose values are whatever the memory held (as in PyTorch)."""
    dt = _dt.as_dtype(dtype or float32)
    return _filled(np.empty(as_size(size), dt.np), dt, requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False) -> Tensor:
    """A tensor of shape `size` filled with `fill_value`."""
    dt = _dt.as_dtype(dtype) if dtype is not None else \
        _dtype_of(np.asarray(fill_value), not isinstance(fill_value, np.generic))
    return _filled(np.full(as_size((size,)), fill_value, dt.np), dt, requires_grad)


def zeros_like(input, dtype=None, requires_grad=False) -> Tensor:  # noqa: A002
    """Zeros of input's shape (and dtype, unless `dtype`)."""
    return zeros(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def ones_like(input, dtype=None, requires_grad=False) -> Tensor:  # noqa: A002
    """Ones of input's shape (and dtype, unless `dtype`)."""
    return ones(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, requires_grad=False) -> Tensor:  # noqa: A002
    """`fill_value` in input's shape (and dtype, unless `dtype`)."""
    return full(input.shape, fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad)


def empty_like(input, dtype=None, requires_grad=False) -> Tensor:  # noqa: A002
    """A tensor of input's shape whose values are whatever the memory held."""
    return empty(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def eye(n, m=None, dtype=None, requires_grad=False) -> Tensor:
    """The identity matrix, n x m (m = n if None)."""
    dt = _dt.as_dtype(dtype or float32)
    return _filled(np.eye(n, n if m is None else m, dtype=dt.np), dt, requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False) -> Tensor:
    """[start, start + step, ...) up to `end`; int64 for ints, float32 if any is a float."""
    if end is None:
        start, end = 0, start
    values = np.arange(start, end, step)
    dt = _dt.as_dtype(dtype) if dtype is not None else _dtype_of(values, True)
    return _filled(values.astype(dt.np), dt, requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False) -> Tensor:
    """`steps` evenly spaced values from start to end inclusive."""
    dt = _dt.as_dtype(dtype or float32)
    return _filled(np.linspace(start, end, steps).astype(dt.np), dt, requires_grad)


# Random tensors are the registry's random ops, drawing from one generator (`manual_seed`);
# `trace` records them as random ops, so a traced graph draws fresh values at every run.
def manual_seed(seed) -> None:
    """Seed the generator of rand, randn, randint, dropout... (any int: a negative seed is
    taken modulo 2**64, as PyTorch takes it)."""
    GENERATOR.manual_seed(seed)


def _random(op_type, size, dtype, requires_grad, **attrs) -> Tensor:
    dt = _dt.as_dtype(dtype)
    shape = Tensor._make(np.asarray(as_size(size), np.int32), int32)
    t = run_operation(op_type, [shape], {"dtype": dt, "seed": (None, None), **attrs}).outputs[0]
    return t.requires_grad_(requires_grad)


def rand(*size, dtype=None, requires_grad=False) -> Tensor:
    """Uniform draws in [0, 1)."""
    return _random("RandomUniform", size, dtype or float32, requires_grad, low=0.0, high=1.0)


def randn(*size, dtype=None, requires_grad=False) -> Tensor:
    """Standard normal draws."""
    return _random("RandomStandardNormal", size, dtype or float32, requires_grad)


def randint(low=0, high=None, size=None, dtype=None) -> Tensor:
    """Integers drawn uniformly from [low, high)."""
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    return _random("RandomUniform", (size,), dtype or int64, False, low=builtins.int(low),
                   high=builtins.int(high))


def rand_like(input, dtype=None, requires_grad=False) -> Tensor:  # noqa: A002
    """Uniform draws in [0, 1) in input's shape."""
    return rand(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input, dtype=None, requires_grad=False) -> Tensor:  # noqa: A002
    """Standard normal draws in input's shape."""
    return randn(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def is_tensor(obj) -> builtins.bool:
    """Whether `obj` is a dynamic tensor."""
    return isinstance(obj, Tensor)


def numel(input) -> builtins.int:  # noqa: A002
    """The number of elements of input."""
    return input.numel()
