"""The rules of the indexing ops (slices, gathers, one-hot, argwhere) and of the ranges they
are built from (Range, Eye)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .builder import OnnxExportError

_INT64_MAX = np.iinfo(np.int64).max  # (an end past the last index: ONNX's Slice clamps it)
_INT64_MIN = np.iinfo(np.int64).min


# -- ranges ----------------------------------------------------------------------------------------
def _eye(b, op):
    """The matrix itself, as an initializer."""
    value = np.eye(op.attrs["n"], op.attrs["m"], dtype=op.attrs["dtype"].np)
    b.names[op.outputs[0]] = b.const(op.outputs[0].name, value)


_RANGE_DTYPES = (_dt.float32, _dt.float64, _dt.int16, _dt.int32, _dt.int64)


def _range(b, op):
    """ONNX's Range, with start, limit and delta cast to the op's dtype as np.arange does."""
    dtype = op.attrs["dtype"]
    if dtype not in _RANGE_DTYPES:
        raise OnnxExportError(f"cannot export {op.where()} to ONNX: ONNX's Range takes no "
                              f"{dtype.name}")
    inputs = [b.x(t) if t.dtype is dtype else b.step(op, what, "Cast", [b.x(t)],
                                                     to=b.elem_type(dtype))
              for t, what in zip(op.inputs, ("start", "limit", "delta"))]
    b.node("Range", inputs, [b.y(op)], op.name)


# -- indexing --------------------------------------------------------------------------------------
def _gather(b, op):
    b.node("Gather", [b.x(t) for t in op.inputs], [b.y(op)], op.name,
           axis=int(op.attrs["axis"]))


def _tensor_array_write(b, op):
    """A TensorArray's write of a known size: ONNX's ScatterND of the one row (a write that
    grows the array, dynamic_size, has no ONNX form)."""
    if op.attrs["grow"]:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} writes a dynamic_size "
                              "TensorArray, which grows; give the TensorArray a size")
    flow, index, value = op.inputs
    index = b.step(op, "int64", "Cast", [b.x(index)], to=b.onnx.TensorProto.INT64)
    index = b.step(op, "index", "Reshape", [index, b.ints(f"{op.name}/one", [1, 1])])
    row = b.step(op, "row", "Unsqueeze", [b.x(value), b.ints(f"{op.name}/axis", [0])])
    b.node("ScatterND", [b.x(flow), index, row], [b.y(op)], op.name)


def _top_k(b, op):
    """ONNX's TopK (ties to the lower index, as rt.top_k); its int64 indices cast to
    int32."""
    k = b.ints(f"{op.name}/k", [op.attrs["k"]])
    indices = b.tmp(op, "indices")
    b.node("TopK", [b.x(op.inputs[0]), k], [b.y(op, 0), indices], op.name, axis=-1,
           largest=1, sorted=1)
    b.node("Cast", [indices], [b.y(op, 1)], f"{op.name}/int32", to=b.onnx.TensorProto.INT32)


def _int64(b, op, t, what: str) -> str:
    return b.step(op, what, "Cast", [b.x(t)], to=b.onnx.TensorProto.INT64)


def _gather_nd(b, op):
    b.node("GatherND", [b.x(op.inputs[0]), _int64(b, op, op.inputs[1], "indices")],
           [b.y(op)], op.name)


def _scatter_nd(b, op):
    """ONNX's ScatterND into zeros, adding where indices repeat (opset 16 and later)."""
    if b.opset < 16:
        raise OnnxExportError(f"cannot export {op.where()} to ONNX opset {b.opset}: ScatterND "
                              "adds repeated indices from opset 16 on")
    indices, updates, shape = op.inputs
    zeros = b.step(op, "zeros", "ConstantOfShape", [_int64(b, op, shape, "shape")],
                   value=b.onnx.numpy_helper.from_array(np.zeros(1, updates.dtype.np)))
    b.node("ScatterND", [zeros, _int64(b, op, indices, "indices"), b.x(updates)], [b.y(op)],
           op.name, reduction="add")


def _one_hot(b, op):
    """As rt.one_hot computes it: the indices (as int64) compared with 0..depth-1 along the new
    axis, then on_value or off_value. An index outside [0, depth) gives a row of off_value
    (ONNX's OneHot would count a negative index from the end)."""
    depth, axis = op.attrs["depth"], op.attrs["axis"]
    rank = op.inputs[0].shape.ndims
    if axis != -1 and rank is None:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} has indices of unknown rank")
    classes = np.arange(depth, dtype=np.int64).reshape((depth,) + (1,) * (
        0 if axis == -1 else rank - axis))
    indices = b.step(op, "int64", "Cast", [b.x(op.inputs[0])], to=b.onnx.TensorProto.INT64)
    indices = b.step(op, "expanded", "Unsqueeze", [indices, b.ints(f"{op.name}/axis", [axis])])
    hot = b.step(op, "hot", "Equal", [indices, b.const(f"{op.name}/classes", classes)])
    dtype = op.attrs["dtype"]
    # (ONNX Runtime's Where takes no booleans: it chooses uint8s, then cast)
    values = [b.number(op, what, op.attrs[f"{what}_value"], np.uint8 if dtype.is_bool else None)
              for what in ("on", "off")]
    if dtype.is_bool:
        chosen = b.step(op, "uint8", "Where", [hot, *values])
        b.node("Cast", [chosen], [b.y(op)], op.name, to=b.elem_type(dtype))
    else:
        b.node("Where", [hot, *values], [b.y(op)], op.name)


def _where(b, op):
    """np.argwhere: ONNX's NonZero gives the coordinates as [rank, n]; transposed."""
    coords = b.step(op, "nonzero", "NonZero", [b.x(op.inputs[0])])
    b.node("Transpose", [coords], [b.y(op)], op.name, perm=[1, 0])


def _slice(b, op):
    begin = b.static(op, 1, "begin").astype(np.int64).reshape(-1)
    size = b.static(op, 2, "size").astype(np.int64).reshape(-1)
    end = np.where(size == -1, _INT64_MAX, begin + size)
    b.node("Slice", [b.x(op.inputs[0]), b.ints(f"{op.name}/begin", begin),
                     b.ints(f"{op.name}/end", end), b.ints(f"{op.name}/axes", range(len(begin)))],
           [b.y(op)], op.name)


def _strided_slice(b, op):
    """`x[index]`: one Slice for the slices and integer indices, a Squeeze of the axes an
    integer removes, an Unsqueeze for each None (np.newaxis)."""
    spec = op.attrs["index"]
    consumed = sum(1 for s in spec if s is not None and s is not Ellipsis)
    rank = op.inputs[0].shape.ndims
    if Ellipsis in spec and rank is None:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} has '...' in its index and "
                              "an input of unknown rank")
    starts, ends, axes, steps_, removed, added = [], [], [], [], [], []
    axis = out = 0  # the input axis the next index reads, the output axis it makes
    for s in spec:
        if s is None:
            added.append(out)
            out += 1
        elif s is Ellipsis:
            axis += rank - consumed
            out += rank - consumed
        elif isinstance(s, int):
            starts.append(s)
            ends.append(_INT64_MAX if s == -1 else s + 1)
            axes.append(axis)
            steps_.append(1)
            removed.append(axis)
            axis += 1
        else:
            _, start, stop, step = s
            step = 1 if step is None else step
            if start is None:
                start = 0 if step > 0 else _INT64_MAX
            if stop is None:
                stop = _INT64_MAX if step > 0 else _INT64_MIN  # (ONNX clamps these)
            if (start, stop, step) != (0, _INT64_MAX, 1):
                starts.append(start)
                ends.append(stop)
                axes.append(axis)
                steps_.append(step)
            axis += 1
            out += 1
    steps = []
    if axes:
        steps.append(("slice", "Slice", [b.ints(f"{op.name}/{what}", values) for what, values in
                                         (("starts", starts), ("ends", ends), ("axes", axes),
                                          ("steps", steps_))]))
    if removed:
        steps.append(("squeeze", "Squeeze", [b.ints(f"{op.name}/removed", removed)]))
    if added:
        steps.append(("unsqueeze", "Unsqueeze", [b.ints(f"{op.name}/added", added)]))
    _chain(b, op, b.x(op.inputs[0]), steps)


def _chain(b, op, x: str, steps) -> None:
    """Nodes one after another from x, each step (what, ONNX type, more inputs) reading the
    previous one's output; the last writes op's output (an Identity if there are no steps)."""
    steps = steps or [("identity", "Identity", [])]
    for what, onnx_type, more in steps[:-1]:
        x = b.step(op, what, onnx_type, [x, *more])
    _, onnx_type, more = steps[-1]
    b.node(onnx_type, [x, *more], [b.y(op)], op.name)


RULES = {
    "Eye": _eye, "Range": _range, "GatherV2": _gather, "OneHot": _one_hot, "Where": _where,
    "Slice": _slice, "StridedSlice": _strided_slice, "TensorArrayWrite": _tensor_array_write,
    "TopKV2": _top_k, "GatherNd": _gather_nd, "ScatterNd": _scatter_nd,
}
