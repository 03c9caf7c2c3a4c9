"""The rules of the ops that hold or pass on values (constants, variables, a custom gradient's
function), that read or change shapes, and that join or split tensors."""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .builder import OnnxExportError
from .rules_reduce import reduce_node


# -- values: constants, variables, a custom gradient's function ------------------------------------
def _const(b, op):
    b.names[op.outputs[0]] = b.const(op.outputs[0].name, op.attrs["value"])


def _variable(b, op):
    if op.name not in b.session.variable_names():
        raise OnnxExportError(f"cannot export to ONNX: variable {op.name!r} has no value in the "
                              f"session; run its initializer first ({op.where()})")
    b.names[op.outputs[0]] = b.const(op.outputs[0].name, b.session.read_variable(op.name))


def _custom_gradient(b, op):
    """The identity on the function's outputs (its last n_out inputs): the custom gradient
    rule is no part of a forward model."""
    n = op.attrs["n_out"]
    for i, t in enumerate(op.inputs[-n:]):
        b.node("Identity", [b.x(t)], [b.y(op, i)], op.name if i == 0 else f"{op.name}/{i}")


# -- shapes ----------------------------------------------------------------------------------------
def _reshape(b, op):
    shape = b.static(op, 1, "the target shape").astype(np.int64).reshape(-1)
    attrs = {"allowzero": 1} if 0 in shape else {}
    b.node("Reshape", [b.x(op.inputs[0]), b.ints(f"{op.name}/shape", shape)], [b.y(op)],
           op.name, **attrs)


def _transpose(b, op):
    perm = op.attrs["perm"]
    attrs = {} if perm is None else {"perm": [int(p) for p in perm]}
    b.node("Transpose", [b.x(op.inputs[0])], [b.y(op)], op.name, **attrs)


def _broadcast_to(b, op):
    shape = b.static(op, 1, "the target shape")
    b.node("Expand", [b.x(op.inputs[0]), b.ints(f"{op.name}/shape", shape)], [b.y(op)], op.name)


def _expand_dims(b, op):
    axes = b.ints(f"{op.name}/axes", op.attrs["axis"])
    b.node("Unsqueeze", [b.x(op.inputs[0]), axes], [b.y(op)], op.name)


def _squeeze(b, op):
    inputs = [b.x(op.inputs[0])]
    if op.attrs["axis"] is not None:
        inputs.append(b.ints(f"{op.name}/axes", op.attrs["axis"]))
    b.node("Squeeze", inputs, [b.y(op)], op.name)


def _shape(b, op):
    b.node("Cast", [b.shape_of(op, 0)], [b.y(op)], op.name, to=b.elem_type(op.attrs["out_type"]))


def _like(fill: float):
    def rule(b, op):
        value = np.array([fill], dtype=op.outputs[0].dtype.np)
        b.node("ConstantOfShape", [b.shape_of(op, 0)], [b.y(op)], op.name,
               value=b.onnx.numpy_helper.from_array(value, "value"))
    return rule


def _size(b, op):
    """The element count: a constant where the shape is known, else ONNX's Size."""
    t = op.inputs[0]
    if t.shape.is_fully_defined():
        count = b.number(op, "count", t.shape.num_elements(), np.int64)
    else:
        count = b.step(op, "count", "Size", [b.x(t)])
    b.node("Cast", [count], [b.y(op)], op.name, to=b.elem_type(op.attrs["out_type"]))


def _rank(b, op):
    rank = b.step(op, "rank", "Size", [b.shape_of(op, 0)])
    b.node("Cast", [rank], [b.y(op)], op.name, to=b.elem_type(_dt.int32))


def _fill(b, op):
    shape = b.static(op, 0, "the shape to fill")
    b.node("Expand", [b.x(op.inputs[1]), b.ints(f"{op.name}/shape", shape)], [b.y(op)], op.name)


def _sum_to(b, op):
    """A sum over the leading axes and those that are 1 in the target (summing an axis that
    is already 1 changes nothing), reshaped to the target: the adjoint of a broadcast."""
    target = [int(d) for d in b.static(op, 1, "the target shape").reshape(-1)]
    rank = op.inputs[0].shape.ndims
    if rank is None:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} sums a gradient of unknown "
                              "rank")
    lead = rank - len(target)
    axes = [*range(lead), *(lead + i for i, d in enumerate(target) if d == 1)]
    x = b.x(op.inputs[0])
    if axes:
        total = b.tmp(op, "sum")
        reduce_node(b, op, "ReduceSum", x, total, total, axes, keepdims=True)
        x = total
    attrs = {"allowzero": 1} if 0 in target else {}
    b.node("Reshape", [x, b.ints(f"{op.name}/shape", target)], [b.y(op)], op.name, **attrs)


# -- joining and splitting -------------------------------------------------------------------------
def _concat(b, op):
    b.node("Concat", [b.x(t) for t in op.inputs], [b.y(op)], op.name,
           axis=int(op.attrs["axis"]))


def _pack(b, op):
    axis = int(op.attrs["axis"])
    new_axis = b.ints(f"{op.name}/axis", [axis])
    parts = [b.step(op, f"expanded_{i}", "Unsqueeze", [b.x(t), new_axis])
             for i, t in enumerate(op.inputs)]
    b.node("Concat", parts, [b.y(op)], op.name, axis=axis)


def _unpack(b, op):
    axis, num = int(op.attrs["axis"]), op.attrs["num"]
    squeezed = b.ints(f"{op.name}/axis", [axis])
    if num == 1:
        b.node("Squeeze", [b.x(op.inputs[0]), squeezed], [b.y(op)], op.name)
        return
    parts = [b.tmp(op, f"part_{i}") for i in range(num)]
    b.node("Split", [b.x(op.inputs[0]), b.ints(f"{op.name}/sizes", [1] * num)], parts, op.name,
           axis=axis)
    for i, part in enumerate(parts):
        b.node("Squeeze", [part, squeezed], [b.y(op, i)], f"{op.name}/squeeze_{i}")


def _split(b, op):
    axis = int(op.attrs["axis"])
    sizes = [None if t.shape.dims is None else t.shape.dims[axis] for t in op.outputs]
    if None in sizes:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} needs its sizes known when "
                              "the graph is built")
    x = b.x(op.inputs[0])
    if len(sizes) == 1:
        b.node("Identity", [x], [b.y(op)], op.name)
        return
    b.node("Split", [x, b.ints(f"{op.name}/sizes", sizes)],
           [b.y(op, i) for i in range(len(sizes))], op.name, axis=axis)


def _tile(b, op):
    b.node("Tile", [b.x(op.inputs[0]), b.ints(f"{op.name}/multiples", op.attrs["multiples"])],
           [b.y(op)], op.name)


_PAD_MODES = {"CONSTANT": "constant", "REFLECT": "reflect"}  # ONNX has no SYMMETRIC


def _pad(b, op):
    mode = op.attrs["mode"]
    if mode not in _PAD_MODES:
        raise OnnxExportError(f"cannot export {op.where()} to ONNX: ONNX's Pad has no {mode} "
                              "mode (it has CONSTANT and REFLECT)")
    pads = b.static(op, 1, "the paddings").astype(np.int64).reshape(-1, 2)
    inputs = [b.x(op.inputs[0]), b.ints(f"{op.name}/pads", [*pads[:, 0], *pads[:, 1]])]
    if mode == "CONSTANT":
        inputs.append(b.number(op, "value", op.attrs["constant_values"]))
    b.node("Pad", inputs, [b.y(op)], op.name, mode=_PAD_MODES[mode])


RULES = {
    "Const": _const, "VariableV2": _variable, "CustomGradient": _custom_gradient,
    "Reshape": _reshape, "Transpose": _transpose, "BroadcastTo": _broadcast_to,
    "ExpandDims": _expand_dims, "Squeeze": _squeeze, "Shape": _shape, "ZerosLike": _like(0),
    "OnesLike": _like(1), "Size": _size, "Rank": _rank, "Fill": _fill, "SumTo": _sum_to,
    "ConcatV2": _concat, "Pack": _pack, "Unpack": _unpack, "Split": _split, "Tile": _tile,
    "Pad": _pad,
}
