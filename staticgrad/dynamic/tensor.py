"""`Tensor`: a NumPy array that knows how it was computed, with PyTorch's autograd attributes.

A dynamic tensor is also a graph `Tensor` (a subclass, as TF2's EagerTensor is a tf.Tensor)
whose graph is the eager context (`mode.EAGER`), so every graph-API function and every
gradient rule accepts it; its `_static` value is its data, its `.shape` a `Size` that both
PyTorch users and the rules can read. Ops and operators are bound in `functions.py`.

What a tensor holds:
- `_data`: its value, a NumPy array (shared with `detach()` and with view ops' results);
- `op`: the tape node that computed it (its `grad_fn`), or NO_NODE for a leaf or a result
  computed without recording; `value_index`: which output of that node it is;
- `_grad`, `_requires_grad`, `_hooks` (a leaf's), `_retains` (retain_grad was called), `_acc`
  (a weak reference to a leaf's AccumulateGrad node);
- `_version`: a one-item list counting in-place writes, shared by tensors that share data, so
  that backward can tell that a value it saved was overwritten.
"""

from __future__ import annotations

import itertools
import warnings
import weakref

import numpy as np

from .. import dtypes as _dt
from ..graph import Tensor as GraphTensor
from ..shapes import TensorShape
from . import printing
from .mode import EAGER, STATE


class Size(tuple):
    """A tensor's shape: a tuple of ints (PyTorch's `torch.Size`) that also answers what a
    gradient rule asks a graph `TensorShape` (`dims`, `ndims`, `num_elements`...)."""

    __slots__ = ()

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item

    def numel(self) -> int:
        return int(np.prod(self, dtype=np.int64))

    @property
    def dims(self) -> tuple:
        return tuple(self)

    @property
    def ndims(self) -> int:
        return len(self)

    rank = ndims

    def num_elements(self) -> int:
        return self.numel()

    def is_fully_defined(self) -> bool:
        return True

    def as_list(self) -> list:
        return list(self)

    def is_compatible_with(self, other) -> bool:
        if isinstance(other, Size):
            return tuple.__eq__(self, other)
        return TensorShape(self).is_compatible_with(other)

    def merge_with(self, other):
        return TensorShape(self).merge_with(other)

    def __repr__(self):
        return f"dy.Size({list(self)})"


def tensor_shape(dims: tuple) -> TensorShape:
    """A TensorShape of known int dims, built without re-checking them (one per op result)."""
    shape = object.__new__(TensorShape)
    shape.dims = dims
    return shape


class _NoNode:
    """The `op` of a tensor that no recorded op computed: it looks like an op with no inputs,
    so graph-side code that walks `t.op.inputs` stops there."""

    __slots__ = ()
    type = None
    inputs = ()
    outputs = ()
    attrs = {}
    graph = EAGER

    def name(self) -> str:
        return "tensor"

    def where(self) -> str:
        return "a dynamic tensor"


NO_NODE = _NoNode()

NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during backward(). If you indeed want the .grad field to be "
    "populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access "
    "the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.")


class TracerWarning(UserWarning):
    """A Python value was read from a tensor while `trace` recorded: the traced graph holds it
    as a constant, and any Python control flow that depended on it is frozen."""


class Tensor(GraphTensor):
    """A dynamic tensor (PyTorch's `torch.Tensor`). Make one with `dy.tensor(data,
    requires_grad=...)`; `Tensor(data)` gives float32 as PyTorch's legacy constructor does.

    >>> w = dy.tensor([2.0, 3.0], requires_grad=True)      # doctest: +SKIP
    >>> (w * w).sum().backward(); w.grad                    # doctest: +SKIP
    tensor([4., 6.])
    """

    __slots__ = ("_data", "_grad", "_requires_grad", "_version", "_hooks", "_acc", "_retains",
                 "_tshape")
    __hash__ = object.__hash__  # `==` is elementwise (bound in functions.py); hash by identity

    def __init__(self, *args):
        if len(args) == 1 and not isinstance(args[0], int | np.integer):
            data = np.array(args[0], dtype=np.float32)
        else:
            data = np.empty(tuple(int(a) for a in args), dtype=np.float32)
        self._init(data, _dt.float32, [0])

    @classmethod
    def _make(cls, data: np.ndarray, dtype: _dt.DType, version=None) -> Tensor:
        """A new tensor around `data` (not copied); shares `version` with its data's owner."""
        return make_tensor(data, dtype, version if version is not None else [0], _new(cls))

    def _init(self, data, dtype, version):
        make_tensor(data, dtype, version, self)

    # -- what the graph side reads ------------------------------------------------------------
    @property
    def graph(self):
        return EAGER

    @property
    def _static(self):
        return self._data

    @property
    def _shape(self) -> TensorShape:
        """What the graph side reads as the static shape: always the data's (made when first
        asked for; whatever gives the tensor another array sets `_tshape` back to None)."""
        shape = self._tshape
        if shape is None:
            shape = self._tshape = tensor_shape(self._data.shape)
        return shape

    @_shape.setter
    def _shape(self, shape):  # set_shape's merge: it can only agree with the data
        if not shape.is_compatible_with(self._data.shape):
            raise ValueError(f"a dynamic tensor of shape {tuple(self._data.shape)} cannot take "
                             f"the shape {shape}")

    @property
    def name(self) -> str:
        return f"<dynamic tensor {printing.tensor_repr(self._data, self.dtype.name)}>" \
            if self._data.size <= 6 else f"<dynamic tensor of shape {tuple(self.shape)}>"

    # -- shape and dtype ----------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        """The shape (a `Size`), or the size of axis `dim`."""
        return Size(self._data.shape) if dim is None else self._data.shape[dim]

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating

    @property
    def device(self) -> str:
        return "cpu"

    # -- autograd attributes ----------------------------------------------------------------
    @property
    def grad_fn(self):
        """The node that computed this tensor (e.g. `<MulBackward0>`), None for a leaf."""
        return None if self.op is NO_NODE else self.op

    @property
    def is_leaf(self) -> bool:
        """True for tensors no recorded op computed (those made by the user, or under no_grad)."""
        return self.op is NO_NODE

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Make this leaf record the ops that use it (so that it gets a `.grad`)."""
        if self.op is not NO_NODE:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and not self.dtype.is_floating:
            raise RuntimeError("only Tensors of floating point dtype can require gradients, "
                               f"not {self.dtype.name}")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient accumulated by backward(): a leaf's (or a retain_grad() tensor's)."""
        if self._grad is None and self.op is not NO_NODE and not self._retains:
            warnings.warn(NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad must be a dynamic tensor or None, got "
                                f"{type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: "
                                   f"{value.shape} vs. {self.shape}")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"assigned grad has dtype {value.dtype.name}, but the tensor "
                                   f"has dtype {self.dtype.name}")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in `.grad` when backward() runs."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.op is not NO_NODE and not self._retains:
            self._retains = True
            self.op.retain(self.value_index, weakref.ref(self))

    @property
    def retains_grad(self) -> bool:
        return self._retains

    def register_hook(self, hook) -> RemovableHandle:
        """Call `hook(grad)` when this tensor's gradient is computed; if it returns a tensor,
        that replaces the gradient. Returns a handle whose `.remove()` unregisters it.

        >>> h = y.register_hook(lambda g: print("grad at y:", g))   # doctest: +SKIP
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.op is NO_NODE:
            if self._hooks is None:
                self._hooks = {}
            hooks = self._hooks
        else:
            hooks = self.op.hooks_for(self.value_index)
        return RemovableHandle(hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's `.grad` (weighted by `gradient` when self
        is not a scalar), then free the graph unless `retain_graph=True`."""
        from .autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """A tensor sharing this one's data, cut from the graph (a leaf that needs no grad).
        Under `dy.trace` it is a StopGradient of this tensor's node."""
        result = Tensor._make(self._data, self.dtype, self._version)
        if STATE.tracer is not None:
            STATE.tracer.stop_gradient(self, result)
        return result

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place: it becomes a leaf that needs no grad."""
        if STATE.tracer is not None:
            STATE.tracer.stop_gradient(self, self)
        self.op, self.value_index, self._requires_grad, self._retains = NO_NODE, 0, False, False
        return self

    @property
    def data(self) -> Tensor:
        """The same values as a tensor that records nothing (updating it is not versioned).
        Under `dy.trace` it is a StopGradient of this tensor's node."""
        result = Tensor._make(self._data, self.dtype)
        if STATE.tracer is not None:
            STATE.tracer.stop_gradient(self, result)
        return result

    @data.setter
    def data(self, value):
        array = value._data if isinstance(value, Tensor) else np.asarray(value, self.dtype.np)
        self._data = array
        self._tshape = None
        self.dtype = _dt.as_dtype(array.dtype)
        if STATE.tracer is not None:
            STATE.tracer.written(self, value if isinstance(value, Tensor) else None, 3)

    # -- Python values ------------------------------------------------------------------------
    def _python_value(self, what: str):
        if STATE.tracer is not None:
            warnings.warn(TracerWarning(
                f"{what} reads a Python value from a tensor while dy.trace records: the traced "
                "graph holds this value as a constant, and Python control flow that depends on "
                "it follows the traced path only"), stacklevel=3)

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        self._python_value("item()")
        return self._data.item()

    def tolist(self):
        self._python_value("tolist()")
        return self._data.tolist()

    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (shared, not copied)."""
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        self._python_value("numpy()")
        return self._data

    def __array__(self, dtype=None, copy=None):
        self._python_value("np.asarray(tensor)")
        return np.array(self._data, dtype=dtype, copy=copy) if copy else \
            np.asarray(self._data, dtype=dtype)

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous "
                               f"(shape {tuple(self._data.shape)})")
        self._python_value("bool()")
        return bool(self._data)

    def __int__(self):
        return int(self.item())

    def __float__(self):
        return float(self.item())

    def __index__(self):
        if not self.dtype.is_integer or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)  # as PyTorch: f"{t}" of a scalar prints its value
        return format(repr(self), spec)

    def __repr__(self):
        node = self.op
        return printing.tensor_repr(self._data, self.dtype.name,
                                    None if node is NO_NODE else node.name(),
                                    self._requires_grad)

    __str__ = __repr__

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __getstate__(self):
        raise TypeError("dynamic tensors are not picklable; save t.detach().numpy()")

    # -- writing in place ------------------------------------------------------------------
    def _check_writable(self, others=()) -> None:
        """In-place writes are allowed where they need not be recorded: under no_grad(), or
        when neither this tensor nor what is written requires grad."""
        if STATE.grad_enabled and (self._requires_grad or any(
                isinstance(o, Tensor) and o._requires_grad for o in others)):
            if self.op is NO_NODE and self._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an "
                                   "in-place operation.")
            raise RuntimeError("the dynamic mode does not record in-place operations: write "
                               "y = y + x instead of y += x, or update under dy.no_grad()")
        if not self._data.flags.writeable:
            raise RuntimeError("this tensor's data is read-only (a constant, or a broadcast view "
                               "as made by expand()): copy it with .clone() before writing to "
                               "it in place")

    def _write(self, value, key=None) -> Tensor:
        """Write `value` (a tensor or array) into this tensor's data (at `key`), counting the
        write in the version counter."""
        array = value._data if isinstance(value, Tensor) else value
        try:
            if key is None:
                np.copyto(self._data, array, casting="same_kind")
            else:
                self._data[key] = array
        except (ValueError, TypeError) as e:
            raise RuntimeError(f"cannot write a value of shape {np.shape(array)} and dtype "
                               f"{np.result_type(array)} into a tensor of shape "
                               f"{tuple(self._data.shape)} and dtype {self.dtype.name} in "
                               f"place: {e}") from None
        self._version[0] += 1
        if STATE.tracer is not None:
            STATE.tracer.written(self, value if key is None and isinstance(value, Tensor)
                                 else None)
        return self

    def zero_(self) -> Tensor:
        """Set every element to 0 in place (as for `w.grad.zero_()`)."""
        self._check_writable()
        return self._write(np.zeros((), self.dtype.np))

    def fill_(self, value) -> Tensor:
        self._check_writable((value,))
        return self._write(value if isinstance(value, Tensor) else np.asarray(value))

    def copy_(self, src) -> Tensor:
        self._check_writable((src,))
        return self._write(src if isinstance(src, Tensor) else np.asarray(src))

    def __setitem__(self, key, value):
        self._check_writable((value,))
        if isinstance(key, Tensor):
            key = key._data
        elif isinstance(key, tuple):
            key = tuple(k._data if isinstance(k, Tensor) else k for k in key)
        self._write(value._data if isinstance(value, Tensor) else np.asarray(value), key)


_HOOK_IDS = itertools.count()


class RemovableHandle:
    """What `register_hook` returns: `.remove()` unregisters the hook (also on leaving a
    `with` block)."""

    def __init__(self, hooks: dict, hook):
        self._hooks = hooks
        self.id = next(_HOOK_IDS)
        hooks[self.id] = hook

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_new = object.__new__


def make_tensor(data: np.ndarray, dtype: _dt.DType, version: list, t=None) -> Tensor:
    """A tensor around `data`, with `version` its counter of in-place writes (shared with its
    data's owner); `t`: an allocated tensor to fill, else a new one (the dispatcher's hot
    path, hence no method calls)."""
    if t is None:
        t = _new(Tensor)
    t._data = data
    t._tshape = None
    t.dtype = dtype
    t.op = NO_NODE
    t.value_index = 0
    t._grad = None
    t._requires_grad = False
    t._version = version
    t._hooks = None
    t._acc = None
    t._retains = False
    return t
