"""Initializers: callables `init(shape, dtype=None, partition_info=None)` that build the ops
giving a variable its first value (TF1's `tf.*_initializer` and `tf.initializers.*`).

    w = sg.get_variable("w", [784, 10], initializer=sg.glorot_uniform_initializer(seed=1))

The random ones draw through the graph's random ops, so `set_random_seed` (or `seed=`) makes a
whole program's initial values the same from run to run. The variance-scaling family follows
TF1's published formulas: `scale / fan` with `fan` from the shape (for a convolution kernel
`[h, w, in, out]`, `fan_in = h * w * in`), then a truncated normal with that variance, an
untruncated normal, or a uniform on `[-sqrt(3 * var), sqrt(3 * var)]`.
"""

from __future__ import annotations

import math

import numpy as np

from . import _namespace
from . import dtypes as _dt
from .ops import array_ops, state_ops
from .ops.conversion import constant as _constant

__all__ = [
    "Constant", "Initializer", "Ones", "RandomNormal", "RandomUniform", "TruncatedNormal",
    "VarianceScaling", "Zeros", "constant", "constant_initializer", "glorot_normal",
    "glorot_normal_initializer", "glorot_uniform", "glorot_uniform_initializer", "he_normal",
    "he_uniform", "lecun_normal", "lecun_uniform", "ones", "ones_initializer", "random_normal",
    "random_normal_initializer", "random_uniform", "random_uniform_initializer",
    "truncated_normal", "truncated_normal_initializer", "variance_scaling",
    "variance_scaling_initializer", "zeros", "zeros_initializer",
]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.initializers", "tf.initializers", globals())

# The standard deviation of a unit normal truncated to [-2, 2]: dividing by it makes the
# truncated draws have the variance asked for (TF1's constant).
_TRUNCATED_STDDEV = 0.87962566103423978


class Initializer:
    """Base class: `init(shape, dtype=None)` returns the tensor of initial values."""

    dtype = None

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def _dtype(self, dtype):
        return _dt.as_dtype(dtype or self.dtype or _dt.float32)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _float_dtype(init, dtype):
    dtype = init._dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"{type(init).__name__} makes floating-point values, not {dtype.name}")
    return dtype


def _shape(shape) -> list[int]:
    dims = [shape] if isinstance(shape, int) else list(getattr(shape, "dims", shape) or [])
    if any(d is None for d in dims):
        raise ValueError(f"an initializer needs a fully known shape, got {shape}")
    return [int(d) for d in dims]


class Zeros(Initializer):
    """Zeros of the variable's shape (`sg.zeros_initializer()`)."""

    def __init__(self, dtype=_dt.float32):
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.zeros(_shape(shape), self._dtype(dtype))


class Ones(Initializer):
    """Ones of the variable's shape (`sg.ones_initializer()`)."""

    def __init__(self, dtype=_dt.float32):
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.ones(_shape(shape), self._dtype(dtype))


class Constant(Initializer):
    """A scalar fills the shape; a list fills it in order, its last element repeated to fill
    the rest (TF1's rule); more elements than the shape holds is an error."""

    def __init__(self, value=0, dtype=_dt.float32, verify_shape=False):
        self.value = value
        self.dtype = _dt.as_dtype(dtype)
        self.verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self._dtype(dtype)
        dims = _shape(shape)
        flat = np.asarray(self.value, dtype=dtype.np).ravel()
        n = math.prod(dims)
        if self.verify_shape and list(np.shape(self.value)) != dims:
            raise TypeError(f"constant_initializer: the value's shape {list(np.shape(self.value))}"
                            f" is not the variable's shape {dims}")
        if flat.size > n:
            raise ValueError(f"constant_initializer: {flat.size} values do not fit a tensor of "
                             f"shape {dims} ({n} elements)")
        if flat.size == 0 and n:
            raise ValueError("constant_initializer: the value is empty")
        if flat.size < n:
            flat = np.concatenate([flat, np.full(n - flat.size, flat[-1], dtype.np)])
        return _constant(flat.reshape(dims), dtype=dtype, name="Const")


class RandomNormal(Initializer):
    """Draws from a normal distribution of `mean` and `stddev`.

    >>> init = sg.random_normal_initializer(stddev=0.1)     # doctest: +SKIP
    >>> w = sg.get_variable("w", [3, 4], initializer=init)  # doctest: +SKIP
    """

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dt.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return state_ops.random_normal(_shape(shape), self.mean, self.stddev,
                                       _float_dtype(self, dtype), seed=self.seed)


class TruncatedNormal(RandomNormal):
    """Normal draws more than two standard deviations from the mean drawn again (TF1's)."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return state_ops.truncated_normal(_shape(shape), self.mean, self.stddev,
                                          _float_dtype(self, dtype), seed=self.seed)


class RandomUniform(Initializer):
    """Uniform draws in [minval, maxval) (maxval None: 1 for floats)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=_dt.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return state_ops.random_uniform(_shape(shape), self.minval, self.maxval,
                                        self._dtype(dtype), seed=self.seed)


def _fans(shape) -> tuple[float, float]:
    """(fan_in, fan_out) of a weight shape, as TF1 computes them."""
    dims = _shape(shape)
    if not dims:
        return 1.0, 1.0
    if len(dims) == 1:
        return float(dims[0]), float(dims[0])
    if len(dims) == 2:
        return float(dims[0]), float(dims[1])
    receptive = math.prod(dims[:-2])
    return float(dims[-2] * receptive), float(dims[-1] * receptive)


class VarianceScaling(Initializer):
    """Draws with variance `scale / n`, `n` being fan_in, fan_out or their average."""

    MODES = ("fan_in", "fan_out", "fan_avg")
    DISTRIBUTIONS = ("normal", "truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=_dt.float32):
        if scale <= 0:
            raise ValueError(f"variance_scaling_initializer: scale must be positive, got {scale}")
        if mode not in self.MODES:
            raise ValueError(f"variance_scaling_initializer: mode {mode!r} is not one of "
                             f"{self.MODES}")
        if distribution not in self.DISTRIBUTIONS:
            raise ValueError(f"variance_scaling_initializer: distribution {distribution!r} is "
                             f"not one of {self.DISTRIBUTIONS}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _float_dtype(self, dtype)
        dims = _shape(shape)
        fan_in, fan_out = _fans(dims)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):  # TF1: "normal" is truncated
            stddev = math.sqrt(variance) / _TRUNCATED_STDDEV
            return state_ops.truncated_normal(dims, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return state_ops.random_normal(dims, 0.0, math.sqrt(variance), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * variance)
        return state_ops.random_uniform(dims, -limit, limit, dtype, seed=self.seed)


def glorot_uniform_initializer(seed=None, dtype=_dt.float32):
    """Xavier/Glorot uniform: U(-sqrt(6 / (fan_in + fan_out)), +sqrt(...))."""
    return VarianceScaling(1.0, "fan_avg", "uniform", seed, dtype)


def glorot_normal_initializer(seed=None, dtype=_dt.float32):
    """Xavier/Glorot normal: truncated normal with variance 2 / (fan_in + fan_out)."""
    return VarianceScaling(1.0, "fan_avg", "truncated_normal", seed, dtype)


def he_normal(seed=None):
    """He normal: truncated normal with variance 2 / fan_in (for ReLU layers)."""
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    """He uniform: U(-sqrt(6 / fan_in), +sqrt(6 / fan_in))."""
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed=None):
    """LeCun normal: truncated normal with variance 1 / fan_in."""
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    """LeCun uniform: U(-sqrt(3 / fan_in), +sqrt(3 / fan_in))."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


# TF1's lower-case names for the classes.
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
random_uniform_initializer = RandomUniform
variance_scaling_initializer = VarianceScaling
# `sg.initializers.zeros()` etc., as in tf.initializers
zeros, ones, constant = Zeros, Ones, Constant
random_normal, truncated_normal, random_uniform = RandomNormal, TruncatedNormal, RandomUniform
variance_scaling, glorot_uniform, glorot_normal = (VarianceScaling, glorot_uniform_initializer,
                                                   glorot_normal_initializer)
