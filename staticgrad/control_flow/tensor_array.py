"""`TensorArray`: TF1's array of tensors of one shape, written and read by index, most often
inside a while_loop, where each iteration writes one element:

    ta = sg.TensorArray(sg.float32, size=n)
    _, ta = sg.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, x[i] * 2.0)),
                          (0, ta))
    doubled = ta.stack()

Here a TensorArray is a value, not a resource: its one tensor (its `flow`) is a buffer of
shape [size, *element_shape], and `write` gives a new TensorArray whose buffer has that row
replaced (`sg.where` on the mask of that row), so every operation is an ordinary op with
an ordinary gradient, and a TensorArray passes through while_loop, cond and scan as the
loop variable its buffer is. A write or read out of range raises InvalidArgumentError
naming the user's line (an Assert), as TF1's does.

Departures from TF1: a row never written reads as zeros (TF1 raises), and writing one index
twice keeps the last value (TF1 raises); the element shape must be known when the buffer is
made: given as `element_shape`, or learned from the first write or `unstack` before the
array enters a loop. Each write copies the buffer (O(size) a write: a loop of n
writes moves O(n^2) elements; TF1 keeps a list). With `dynamic_size`, a write past the end
grows the buffer; in a while_loop such an array's first dim may change (its invariant is
relaxed for it), and the gradient of what such a loop writes cannot be compiled yet (its
ops would need shapes known when compiling: the error names the op); give `size` to
differentiate through the writes.
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..errors import format_location, user_location
from ..graph import Tensor, get_default_graph, name_scope
from ..ops import math_ops as M
from ..ops.array_ops import reshape, shape, zeros
from ..ops.conversion import convert_to_tensor
from ..ops.debug_ops import Assert
from ..ops.indexing_ops import gather
from ..ops.indexing_ops import range as irange
from ..ops.join_ops import concat, unstack
from ..shapes import TensorShape


class TensorArray:
    """An array of `size` tensors of one dtype and shape (see the module docstring)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        self._where = f"TensorArray at {format_location(user_location())}"
        if handle is not None:
            raise ValueError(f"{self._where}: handle is TF1's resource; a staticgrad "
                             "TensorArray is its flow tensor only (pass flow)")
        self.dtype = _dt.as_dtype(dtype)
        self._dynamic = bool(dynamic_size)
        self._infer_shape = bool(infer_shape)
        self._name = name or tensor_array_name or "TensorArray"
        if flow is not None:
            flow = convert_to_tensor(flow)
            self._flow, self._size = flow, _first_dim(flow)
            self._element_shape = TensorShape(flow.shape.dims[1:]) \
                if flow.shape.dims else TensorShape(None)
            return
        if size is None:
            if not self._dynamic:
                raise ValueError(f"{self._where}: give size, or dynamic_size=True")
            size = 0
        self._size = size if isinstance(size, int) else convert_to_tensor(size, _dt.int32)
        self._element_shape = TensorShape(element_shape) if element_shape is not None \
            else TensorShape(None)
        self._flow = None  # made once the element shape is known
        if self._element_shape.is_fully_defined():
            self._make_buffer(self._element_shape)

    # -- the buffer ----------------------------------------------------------------------------
    def _make_buffer(self, element_shape: TensorShape) -> None:
        with name_scope(None, self._name):
            self._flow = zeros([self._size, *element_shape.dims], self.dtype)
        self._element_shape = element_shape

    @property
    def flow(self) -> Tensor:
        """The buffer [size, *element_shape] that stands for the array."""
        if self._flow is None:
            raise ValueError(f"{self._where}: its element shape is not known yet; give "
                             "element_shape, or write or unstack it first")
        return self._flow

    def _with(self, flow: Tensor) -> TensorArray:
        out = TensorArray.__new__(TensorArray)
        out.__dict__.update(self.__dict__)
        out._flow, out._size = flow, _first_dim(flow)
        if flow.shape.dims is not None:
            out._element_shape = TensorShape(flow.shape.dims[1:])
        return out

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic

    def size(self, name=None) -> Tensor:
        return shape(self.flow, name=name)[0] if self._flow is not None else \
            convert_to_tensor(self._size, _dt.int32)

    # -- reading and writing -------------------------------------------------------------------
    def _checked_index(self, index, what: str, limit) -> Tensor:
        """`index` as int32, an Assert making it in [0, limit) (a run-time error naming the
        user's line otherwise)."""
        where = f"{what} at {format_location(user_location())}"
        index = M.cast(convert_to_tensor(index, dtype_hint=_dt.int32), _dt.int32)
        check = Assert(M.logical_and(index >= 0, index < limit),
                       [f"{where}: the index is outside the TensorArray; its size and the "
                        "index:", limit, index])
        with get_default_graph().control_dependencies([check]):
            return M.identity(index)

    def write(self, index, value, name=None) -> TensorArray:
        """A TensorArray with `value` at `index` (the others as they were)."""
        value = convert_to_tensor(value, dtype=self.dtype)
        if self._flow is None:  # the first write says the element shape (TF1's infer_shape)
            if not value.shape.is_fully_defined():
                raise ValueError(f"{self._where}: its element shape is not known and the "
                                 f"value written has shape {value.shape}; give element_shape")
            self._make_buffer(value.shape)
        if not value.shape.is_compatible_with(self._element_shape):
            raise ValueError(f"write at {format_location(user_location())}: the value has "
                             f"shape {value.shape}, the TensorArray's elements "
                             f"{self._element_shape}")
        with name_scope(name, f"{self._name}_write"):
            flow = self.flow
            row = reshape(value, [1, *_dims(value)])
            if self._dynamic:  # grown, with rows of zeros, to hold `index` (a gather of the
                #                rows and one zero row: no shape to know when compiling)
                index = M.cast(convert_to_tensor(index, dtype_hint=_dt.int32), _dt.int32)
                rows = shape(flow)[0]
                picks = M.minimum(irange(M.maximum(rows, index + 1)), rows)
                flow = gather(concat([flow, M.zeros_like(row)], 0), picks)
            limit = shape(flow)[0]
            index = self._checked_index(index, "write", limit)
            rank = flow.shape.ndims
            mask = reshape(M.equal(irange(limit), index), [-1] + [1] * (rank - 1))
            return self._with(M.where(mask, row + M.zeros_like(flow), flow))

    def read(self, index, name=None) -> Tensor:
        """The element at `index`."""
        with name_scope(name, f"{self._name}_read"):
            index = self._checked_index(index, "read", shape(self.flow)[0])
            return gather(self.flow, index)

    def gather(self, indices, element_shape=None, name=None) -> Tensor:
        """The elements at `indices`, stacked."""
        with name_scope(name, f"{self._name}_gather"):
            return gather(self.flow, convert_to_tensor(indices, dtype_hint=_dt.int32))

    def stack(self, name=None) -> Tensor:
        """Every element, stacked along a new first axis: the buffer itself."""
        return M.identity(self.flow, name=name)

    def concat(self, name=None) -> Tensor:
        """Every element, joined along their first axis."""
        dims = _dims(self.flow)
        with name_scope(name, f"{self._name}_concat"):
            return reshape(self.flow, [-1, *dims[2:]])

    def unstack(self, value, name=None) -> TensorArray:
        """A TensorArray of `value`'s rows."""
        value = convert_to_tensor(value, dtype=self.dtype)
        if value.shape.ndims == 0:
            raise ValueError(f"unstack at {format_location(user_location())}: the value must "
                             "have a first axis")
        return self._with(M.identity(value, name=name))

    def scatter(self, indices, value, name=None) -> TensorArray:
        """A TensorArray with the rows of `value` at `indices`."""
        value = convert_to_tensor(value, dtype=self.dtype)
        out = self
        for k, row in enumerate(unstack(value)):
            out = out.write(gather(convert_to_tensor(indices, dtype_hint=_dt.int32), k), row,
                            name=name)
        return out

    def split(self, value, lengths, name=None) -> TensorArray:
        """A TensorArray of `value` cut along its first axis into pieces of `lengths` (all
        equal here: the elements have one shape)."""
        value = convert_to_tensor(value, dtype=self.dtype)
        lengths = list(lengths) if isinstance(lengths, list | tuple) else None
        if not lengths or len(set(lengths)) != 1:
            raise ValueError(f"split at {format_location(user_location())}: the pieces must "
                             "have one length (a TensorArray's elements have one shape), given "
                             "as a list")
        return self._with(reshape(value, [len(lengths), lengths[0], *_dims(value)[1:]]))

    def identity(self) -> TensorArray:
        return self._with(M.identity(self.flow))

    def close(self, name=None):
        """Nothing to free: the array is a tensor."""
        return None

    def __repr__(self):
        return f"<sg TensorArray {self.dtype.name} elements {self._element_shape}>"


def _dims(t: Tensor) -> list:
    """t's dims: ints where known, scalar tensors where not."""
    dims = t.shape.dims
    if dims is None:
        raise ValueError(f"{t.name}: its rank must be known")
    return [d if d is not None else shape(t)[i] for i, d in enumerate(dims)]


def _first_dim(t: Tensor):
    dims = t.shape.dims
    return dims[0] if dims and dims[0] is not None else None
