"""Turning Python values into tensors: `constant`, `convert_to_tensor`."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dt
from ..errors import format_location, user_location
from ..graph import Tensor, _graph_element, get_default_graph
from .creation import create_operation

# -- converting Python values to tensors --------------------------------------------------------

def constant(value, dtype=None, shape=None, name=None, graph=None) -> Tensor:
    """A constant tensor holding `value` (converted to `dtype`, broadcast to `shape` if given)."""
    g = graph or get_default_graph()
    if shape is None and type(value) in (float, int) and value == value:
        # a Python number (x * 1.0001): its array, read-only, made once per number and dtype
        key = (dtype if dtype is None else _dt.as_dtype(dtype), type(value), value,
               math.copysign(1.0, value) if type(value) is float else 0)  # (0.0, -0.0 apart;
        #                                                                    NaN not cached)
        found = _NUMBERS.get(key)
        if found is None:
            found = _NUMBERS[key] = _constant_array(value, dtype, None, name)
            if len(_NUMBERS) > NUMBERS_KEPT:
                _NUMBERS.clear()
        arr, dtype = found
    else:
        arr, dtype = _constant_array(value, dtype, shape, name)
    # (on its graph, known: what apply1 would do, without its two calls, nor their two frames
    # for each Const's walk to the user's line)
    op = create_operation(g, "Const", [], {"value": arr, "dtype": dtype}, name or "Const")
    return op.outputs[0]


# (dtype, type, number, sign) -> (read-only array, dtype): constants are never written, so
# the thousands of Const ops of one number in a loop can share one array
_NUMBERS: dict = {}
NUMBERS_KEPT = 4096


def _constant_array(value, dtype, shape, name) -> tuple[np.ndarray, _dt.DType]:
    """`value` as a read-only array of `dtype` (inferred if None), broadcast to `shape`."""
    what = f"constant {name!r}" if name else "a constant"
    if dtype is not None and _dt.as_dtype(dtype).is_string or dtype is None and _is_text(value):
        try:
            arr = _dt.string_array(value)
        except (TypeError, ValueError) as e:
            raise TypeError(f"cannot make {what} of dtype string from {_short_repr(value)} at "
                            f"{format_location(user_location())}: {e}") from None
        return _shaped(arr, shape, what), _dt.string
    try:
        arr = np.asarray(value)
    except ValueError as e:  # a ragged list
        raise ValueError(f"cannot make {what} from {_short_repr(value)} at "
                         f"{format_location(user_location())}: {e}") from None
    if arr.dtype == object or arr.dtype.kind in "USc":
        of = "" if dtype is None else f" of dtype {_dt.as_dtype(dtype).name}"
        raise TypeError(f"cannot make {what}{of} from {type(value).__name__} "
                        f"{_short_repr(value)} at "
                        f"{format_location(user_location())}")
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
        if not _dt.can_cast_value(arr, dtype):
            raise TypeError(f"cannot convert {value!r} (dtype {arr.dtype}) to a {dtype.name} "
                            f"constant without losing information")
        arr = arr.astype(dtype.np)
    else:
        dtype = _dt.infer_dtype(value)
        arr = arr.astype(dtype.np)
    return _shaped(arr, shape, what), dtype


def _is_text(value) -> bool:
    """Whether a constant's value is strings: a str or bytes, an array of them, or a list
    whose first leaf is one."""
    while isinstance(value, list | tuple) and value:
        value = value[0]
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "USO"
    return isinstance(value, str | bytes)


def _shaped(arr: np.ndarray, shape, what: str) -> np.ndarray:
    """A read-only copy of arr, broadcast or reshaped to `shape` if given."""
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        if arr.size == 1:
            arr = np.broadcast_to(arr.reshape(()), shape)
        elif arr.size == int(np.prod(shape)):
            arr = arr.reshape(shape)
        else:
            raise ValueError(f"{what} of {arr.size} elements cannot take shape {shape} (too "
                             f"many or too few elements) at {format_location(user_location())}")
    arr = np.array(arr, copy=True)
    arr.setflags(write=False)
    return arr


def _short_repr(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def convert_to_tensor(value, dtype=None, name=None, graph=None, dtype_hint=None) -> Tensor:
    """A Tensor for `value`: tensors and variables pass through; other values become constants.

    `dtype` is a requirement (TypeError on mismatch); `dtype_hint` is tried first for Python and
    NumPy values (so `x + 1` keeps x's float32).
    """
    if type(value) is not Tensor:
        value = _graph_element(value)  # a Variable: its tensor
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not _dt.as_dtype(dtype):
            raise TypeError(f"tensor {value.name} has dtype {value.dtype.name}, but "
                            f"{_dt.as_dtype(dtype).name} is required "
                            f"(created at {value.op.where()})")
        return value
    if isinstance(value, list | tuple) and any(isinstance(_graph_element(v), Tensor)
                                               for v in value):
        from .join_ops import stack
        return stack(list(value), name=name)
    want = dtype if dtype is not None else dtype_hint
    if want is not None:
        try:
            return constant(value, dtype=want, name=name, graph=graph)
        except TypeError:
            if dtype is not None or _is_text(value) != _dt.as_dtype(want).is_string:
                raise  # (text beside a number: the error names the text)
    return constant(value, name=name, graph=graph)


def is_tensor_like(value) -> bool:
    """A tensor, or what stands for one (a Variable, by TF1's _as_graph_element)."""
    return type(value) is Tensor or isinstance(_graph_element(value), Tensor)


def convert_operands(x, y) -> tuple[Tensor, Tensor]:
    """A two-input op's operands as tensors; a Python value takes the dtype of the tensor
    beside it (`x * 2` with x float32 multiplies by a float32 2)."""
    if type(x) is Tensor:  # (the common case, at every binary op: a tensor needs no converting)
        if type(y) is Tensor:
            return x, y
        return x, convert_to_tensor(y, dtype_hint=x.dtype, graph=x.graph)
    if is_tensor_like(x):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype_hint=x.dtype, graph=x.graph)
    elif is_tensor_like(y):
        y = convert_to_tensor(y)
        x = convert_to_tensor(x, dtype_hint=y.dtype, graph=y.graph)
    else:
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype_hint=x.dtype, graph=x.graph)
    return x, y
