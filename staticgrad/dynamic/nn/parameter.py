"""`Parameter`: a tensor that a `Module` registers as one of its parameters (PyTorch's
`torch.nn.Parameter`).

>>> w = nn.Parameter(dy.randn(3, 2))        # doctest: +SKIP
>>> w.requires_grad, w.is_leaf              # doctest: +SKIP
(True, True)
"""

from __future__ import annotations

from ..creation import empty
from ..tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad (unless `requires_grad=False`), sharing `data`'s memory;
    assigned to a Module's attribute, it joins the module's `parameters()`. Ops on it give
    plain tensors, as in PyTorch."""

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(data): data must be a dynamic tensor, got "
                            f"{type(data).__name__}")
        param = cls._make(data._data, data.dtype, data._version)
        return param.requires_grad_(requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass  # all done in __new__ (Tensor.__init__ would make a new array)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__
