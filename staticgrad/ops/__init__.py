"""Op families, one module each; importing this package registers every op type.

Also binds Python operators (`+ - * / // % ** @`, unary `-`, `abs`, `< <= > >=`, `[]`) to
`Tensor` (and `bind_operators` to `Variable`, in variables.py).
"""

from __future__ import annotations

from ..graph import Tensor
from . import (  # noqa: F401
    array_ops,
    conv_ops,
    conversion,
    creation,
    cumulative_ops,
    debug_ops,
    einsum_ops,
    indexing_ops,
    join_ops,
    kernels,
    math_ops,
    nd_ops,
    nn_ops,
    print_ops,
    py_func_ops,
    reduction_ops,
    sampled_losses,
    sort_ops,
    state_ops,
    string_ops,
    summary_ops,
    table,
    transfer_ops,
)
from .math_ops import (
    abs,
    add,
    floordiv,
    greater,
    greater_equal,
    less,
    less_equal,
    matmul,
    mod,
    multiply,
    negative,
    pow,
    subtract,
    truediv,
)


def _swap(fn):
    return lambda self, other: fn(other, self)


_OPERATORS = {
    "__add__": add, "__radd__": _swap(add),
    "__sub__": subtract, "__rsub__": _swap(subtract),
    "__mul__": multiply, "__rmul__": _swap(multiply),
    "__truediv__": truediv, "__rtruediv__": _swap(truediv),
    "__floordiv__": floordiv, "__rfloordiv__": _swap(floordiv),
    "__mod__": mod, "__rmod__": _swap(mod),
    "__pow__": pow, "__rpow__": _swap(pow),
    "__matmul__": matmul, "__rmatmul__": _swap(matmul),
    "__lt__": less, "__le__": less_equal, "__gt__": greater, "__ge__": greater_equal,
    "__neg__": lambda self: negative(self),
    "__abs__": lambda self: abs(self),
    "__getitem__": indexing_ops.getitem,
}

def bind_operators(cls) -> None:
    """Give `cls` (Tensor; Variable, from variables.py) Python's operators on tensors."""
    for name, fn in _OPERATORS.items():
        setattr(cls, name, fn)
    cls.__array_priority__ = 100


bind_operators(Tensor)
