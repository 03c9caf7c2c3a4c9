"""Data types, with TF1 names.

A `DType` wraps a NumPy dtype and knows the TF1 spellings (`"float"` is float32,
`"double"` is float64). Every tensor carries one.

`string` is TF1's byte-string type: its arrays are NumPy object arrays whose every element is
`bytes` (a `str` given by the user is encoded as UTF-8), and a fetched rank-0 string is `bytes`,
as in TF1. `string_array` is the one door into such arrays: it checks every element.

>>> as_dtype("float") is float32
True
"""

from __future__ import annotations

import numpy as np

from .runtime_strings import to_strings


class DType:
    """One element type. Compare with `is` or `==`; `as_numpy_dtype` gives the NumPy type."""

    # the kinds are attributes, not properties: shape rules and the dynamic mode's dispatch
    # ask them on every op
    __slots__ = ("name", "np", "is_floating", "is_integer", "is_bool", "is_string",
                 "is_numeric", "is_unsigned")

    def __init__(self, name: str, np_dtype):
        self.name = name
        self.np = np.dtype(np_dtype)
        kind = self.np.kind
        self.is_floating = kind == "f"
        self.is_integer = kind in "iu"
        self.is_bool = kind == "b"
        self.is_string = kind == "O"
        self.is_numeric = kind in "fiu"
        self.is_unsigned = kind == "u"

    @property
    def as_numpy_dtype(self):
        return self.np.type

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def min(self):
        return np.finfo(self.np).min if self.is_floating else np.iinfo(self.np).min

    @property
    def max(self):
        return np.finfo(self.np).max if self.is_floating else np.iinfo(self.np).max

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __eq__(self, other) -> bool:
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
bool_ = DType("bool", np.bool_)
string = DType("string", object)
half, double = float16, float64

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_, string)
_BY_NUMPY = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "bool_": bool_})
_BY_PYTYPE = {float: float32, int: int32, bool: bool_, str: string, bytes: string}


def as_dtype(value) -> DType:
    """Convert a DType, a NumPy dtype or type, a TF1 name or a Python type to a `DType`.

    >>> as_dtype(np.float64) is float64 and as_dtype("int32") is int32
    True
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"unknown dtype name {value!r}; known: {sorted(_BY_NAME)}")
    if value in _BY_PYTYPE:
        return _BY_PYTYPE[value]
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot interpret {value!r} as a dtype") from None
    if npd in _BY_NUMPY:
        return _BY_NUMPY[npd]
    raise TypeError(f"dtype {npd} is not supported by staticgrad; supported: "
                    f"{[d.name for d in ALL]}")


def infer_dtype(value) -> DType:
    """The dtype TF1 gives a Python or NumPy value: Python floats are float32, ints int32."""
    if isinstance(value, str | bytes):
        return string
    if isinstance(value, np.ndarray | np.generic):
        return string if value.dtype.kind in "USO" else as_dtype(value.dtype)
    arr = np.asarray(value)
    if arr.dtype.kind in "USO":
        return string
    if arr.dtype.kind == "f":
        return float32
    if arr.dtype.kind in "iu":
        return int32 if arr.size == 0 or (abs(arr).max() < 2**31) else int64
    return as_dtype(arr.dtype)


def can_cast_value(arr: np.ndarray, dtype: DType) -> bool:
    """Whether `arr` converts to `dtype` without losing meaning (used for feeds and constants).

    Floats go to any float width; integers to floats and to integer types they fit in; bools only
    to bool. A float array goes to an integer type only if every value is integral.
    """
    src = arr.dtype
    if dtype.is_string or src.kind in "USO":
        return False  # strings only through string_array, which checks every element
    if src == dtype.np:
        return True
    if dtype.is_bool:
        return src.kind == "b"
    if src.kind == "b":
        return False
    if dtype.is_floating:
        return src.kind in "fiu"
    if src.kind in "iu":
        if arr.size == 0:
            return True
        info = np.iinfo(dtype.np)
        return bool(info.min <= arr.min() and arr.max() <= info.max)
    if src.kind == "f":
        return bool(np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))) and can_cast_value(
            arr.astype(np.int64), dtype)
    return False


def string_array(value) -> np.ndarray:
    """`value` (a str, bytes, or a nested list or array of them) as a string array: a NumPy
    object array of `bytes`, str encoded as UTF-8. TypeError naming the first element that is
    neither str nor bytes (runtime_strings.to_strings, which exported modules carry too).

    >>> string_array(["a", b"b"]).tolist()
    [b'a', b'b']
    """
    return to_strings(value)
