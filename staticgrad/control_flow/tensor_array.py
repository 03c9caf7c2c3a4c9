"""`TensorArray`: TF1's array of tensors of one shape, written and read by index, most often
inside a while_loop, where each iteration writes one element:

    ta = sg.TensorArray(sg.float32, size=n)
    _, ta = sg.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, x[i] * 2.0)),
                          (0, ta))
    doubled = ta.stack()                                   # x * 2.0, for x of shape [n, 3]

Here a TensorArray is a value, not a resource: its one tensor (its `flow`) is a buffer of
shape [size, *element_shape], and `write` gives a new TensorArray whose buffer is a copy with
that row set (a TensorArrayWrite op: one copy of the buffer a write, O(n^2) elements moved by
a loop of n writes, where TF1 keeps a list), so a TensorArray passes through while_loop, cond
and scan as the loop variable its buffer is, and has an ordinary gradient. A write or read
out of range raises InvalidArgumentError naming the user's line, as TF1's does. With
`dynamic_size`, a write past the end grows the buffer with rows of zeros; in a while_loop
such an array's first dim may change (its invariant is relaxed for it), and gradients flow
through its writes all the same.

The element shape comes from `element_shape`, or from the first write or `unstack`; an array
that enters a while_loop before either waits for the body's first write to say it, as in
TF1 (the loop then makes its buffer). A row never written reads as zeros, as in TF1 when the
element shape is fully defined (here it always is: TF1 raises when it is not). Departures
from TF1: an array with no element shape yet cannot enter a cond or a scan (give
`element_shape`); and two of TF1's checks are not made: writing one index twice (TF1 raises;
here the last write stands) and reading one element twice while `clear_after_read` (TF1's
default) is on (TF1 raises; here a read changes nothing). A program that TF1 runs gives the
same values here; keeping the written and read rows would mean a mask carried beside every
buffer through every loop.
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..errors import format_location, user_location
from ..graph import Operation, Tensor, name_scope
from ..ops import math_ops as M
from ..ops.array_ops import dims_of, reshape, shape, zeros, zeros_like
from ..ops.attr_types import Bool
from ..ops.conversion import convert_to_tensor
from ..ops.creation import apply, apply1
from ..ops.indexing_ops import gather
from ..ops.join_ops import unstack
from ..ops.table import register
from ..shapes import TensorShape


# -- the ops: a write, and its gradient -----------------------------------------------------------
def _write_infer(ctx):
    flow, index, value = ctx.in_shapes
    if flow.ndims == 0:
        raise ValueError("its buffer must have a first axis (one row an element)")
    if index.ndims not in (None, 0) or not ctx.in_dtypes[1].is_integer:
        raise TypeError(f"its index must be an integer scalar, got "
                        f"{ctx.in_dtypes[1].name}{index}")
    if ctx.in_dtypes[2] is not ctx.in_dtypes[0]:
        raise TypeError(f"the value is {ctx.in_dtypes[2].name}, the TensorArray's elements "
                        f"{ctx.in_dtypes[0].name}")
    elements = TensorShape(None) if flow.dims is None else TensorShape(flow.dims[1:])
    if not value.is_compatible_with(elements):
        raise ValueError(f"the value has shape {value}, the TensorArray's elements {elements}")
    rows = None if flow.dims is None else flow.dims[0]
    i = ctx.value(1)
    if ctx.attrs["grow"]:  # (as many rows as known to be needed: unknown unless both known)
        rows = max(rows, int(i) + 1) if rows is not None and i is not None else None
    if flow.dims is None:  # (a buffer whose element shape a loop learns from this write)
        dims = None if value.dims is None else [None, *value.dims]
    else:
        dims = [rows, *elements.merge_with(value).dims]
    return [(TensorShape(dims), ctx.in_dtypes[0])]


def _write_grad(op: Operation, dy):
    d_flow, d_value = apply("TensorArrayWriteGrad", [dy, op.inputs[0], op.inputs[1]],
                            {"grow": op.attrs["grow"]})
    return [d_flow, None, d_value]


register("TensorArrayWrite", _write_infer, "rt.tensor_array_write({0}, {1}, {2}, {grow})",
         _write_grad, saves=("x0", "x1"), attrs={"grow": Bool()}, arity=3, new_array=True,
         doc="a copy of a TensorArray's buffer (input 0) with row `index` (input 1) set to "
             "`value` (input 2); with `grow` (dynamic_size), grown with rows of zeros to "
             "hold it, as a TensorArray's write")


def _write_grad_infer(ctx):
    dy, flow, _ = ctx.in_shapes
    row = TensorShape(None) if dy.dims is None else TensorShape(dy.dims[1:])
    return [(flow, ctx.in_dtypes[0]), (row, ctx.in_dtypes[0])]


def _write_grad_grad(op: Operation, d_flow, d_value):
    """The gradient of a write's gradient: a write of the two back into one, grown to dy's
    rows as the write grew (`grow`: its index may lie past the buffer's rows)."""
    if d_flow is None and d_value is None:
        return [None, None, None]
    flow_grad, value_grad = op.outputs
    d_flow = zeros_like(flow_grad) if d_flow is None else d_flow
    d_value = zeros_like(value_grad) if d_value is None else d_value
    return [apply1("TensorArrayWrite", [d_flow, op.inputs[2], d_value],
                   {"grow": op.attrs["grow"]}), None, None]


register("TensorArrayWriteGrad", _write_grad_infer,
         "rt.tensor_array_write_grad({0}, {1}, {2})", _write_grad_grad, saves=("x2",), arity=3,
         attrs={"grow": Bool()},
         doc="the gradients of a TensorArrayWrite for its buffer and its value, from the "
             "gradient `dy` (input 0) of its result; input 1 is the buffer written into "
             "(for its rows), input 2 the index; `grow` as the write's")


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
        self._flow = self._buffer(element_shape)
        self._element_shape = element_shape

    def _buffer(self, element_shape: TensorShape) -> Tensor:
        """A buffer of zeros for `size` elements of `element_shape`."""
        with name_scope(None, self._name):
            return zeros([self._size, *element_shape.dims], self.dtype)

    @property
    def flow(self) -> Tensor:
        """The buffer [size, *element_shape] that stands for the array."""
        if self._flow is None:
            raise ValueError(f"{self._where}: its element shape is not known yet; give "
                             "element_shape, or write or unstack it first")
        return self._flow

    @property
    def waiting(self) -> bool:
        """Is its buffer still to be made (its element shape not known yet)? A while_loop
        learns the shape from what its body writes."""
        return self._flow is None

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
            index = M.cast(convert_to_tensor(index, dtype_hint=_dt.int32), _dt.int32)
            # (an index out of range: an InvalidArgumentError naming this line, at run time)
            return self._with(apply1("TensorArrayWrite", [self.flow, index, value],
                                     {"grow": self._dynamic}))

    def read(self, index, name=None) -> Tensor:
        """The element at `index`."""
        with name_scope(name, f"{self._name}_read"):
            index = M.cast(convert_to_tensor(index, dtype_hint=_dt.int32), _dt.int32)
            return gather(self.flow, index)  # (an index out of range: gather's error)

    def gather(self, indices, element_shape=None, name=None) -> Tensor:
        """The elements at `indices`, stacked."""
        with name_scope(name, f"{self._name}_gather"):
            return gather(self.flow, convert_to_tensor(indices, dtype_hint=_dt.int32))

    def stack(self, name=None) -> Tensor:
        """Every element, stacked along a new first axis: the buffer itself."""
        return M.identity(self.flow, name=name)

    def concat(self, name=None) -> Tensor:
        """Every element, joined along their first axis."""
        dims = dims_of(self.flow)
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
        return self._with(reshape(value, [len(lengths), lengths[0], *dims_of(value)[1:]]))

    def identity(self) -> TensorArray:
        return self._with(M.identity(self.flow))

    def close(self, name=None):
        """Nothing to free: the array is a tensor."""
        return None

    def __repr__(self):
        return f"<sg TensorArray {self.dtype.name} elements {self._element_shape}>"


def _first_dim(t: Tensor):
    dims = t.shape.dims
    return dims[0] if dims and dims[0] is not None else None
