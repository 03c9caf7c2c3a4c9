"""The rules of the reductions (sum, mean, max, min, prod, any, all, argmax, argmin), and
`reduce_node`, the one ONNX reduction that other rules (losses, SumTo) build on."""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt


def reduce_node(b, op, onnx_type: str, x: str, out: str, name: str, axis, keepdims) -> None:
    """One ONNX reduction of x over `axis` (None: every axis; []: none, as in TF)."""
    axes = None if axis is None else [int(a) for a in np.reshape(axis, -1)]
    if axes == []:  # ONNX reads no axes as all of them
        b.node("Identity", [x], [out], name)
        return
    inputs, attrs = [x], {"keepdims": int(bool(keepdims))}
    if axes is not None:
        # ReduceSum takes its axes as an input from opset 13, the others from opset 18
        if b.opset >= (13 if onnx_type == "ReduceSum" else 18):
            inputs.append(b.ints(f"{op.name}/axes", axes))
        else:
            attrs["axes"] = axes
    b.node(onnx_type, inputs, [out], name, **attrs)


def _reduce(onnx_type: str):
    def rule(b, op):
        reduce_node(b, op, onnx_type, b.x(op.inputs[0]), b.y(op), op.name, op.attrs["axis"],
                     op.attrs["keepdims"])
    return rule


def _any_all(b, op):
    """Any: a count of true elements above 0; All: a count of false ones equal to 0 (ONNX's
    ReduceMax and ReduceMin take booleans only from opset 20; a count is 0 where the axes are
    empty, as reduce_any's False and reduce_all's True want)."""
    x = b.x(op.inputs[0])
    if op.type == "All":
        x = b.step(op, "not", "Not", [x])
    ones = b.step(op, "ones", "Cast", [x], to=b.onnx.TensorProto.INT64)
    count = b.tmp(op, "count")
    reduce_node(b, op, "ReduceSum", ones, count, count, op.attrs["axis"], op.attrs["keepdims"])
    b.node("Greater" if op.type == "Any" else "Equal",
           [count, b.number(op, "zero", 0, np.int64)], [b.y(op)], op.name)


def _arg(onnx_type: str):
    """ArgMax/ArgMin: ONNX's gives int64, the first index of a tie, as NumPy's does."""
    def rule(b, op):
        attrs = {"axis": int(op.attrs["axis"]), "keepdims": 0}
        if op.attrs["output_type"] is _dt.int64:
            b.node(onnx_type, [b.x(op.inputs[0])], [b.y(op)], op.name, **attrs)
            return
        index = b.step(op, "int64", onnx_type, [b.x(op.inputs[0])], **attrs)
        b.node("Cast", [index], [b.y(op)], op.name, to=b.elem_type(op.attrs["output_type"]))
    return rule


RULES = {
    "Sum": _reduce("ReduceSum"), "Mean": _reduce("ReduceMean"), "Max": _reduce("ReduceMax"),
    "Min": _reduce("ReduceMin"), "Prod": _reduce("ReduceProd"), "Any": _any_all, "All": _any_all,
    "ArgMax": _arg("ArgMax"), "ArgMin": _arg("ArgMin"),
}
