"""The ONNX graph being built (`Builder`), which the rules add nodes to, and the error for a
graph that cannot be written as ONNX."""

from __future__ import annotations

import numpy as np

from ..graph import Operation, Tensor


class OnnxExportError(ValueError):
    """A graph that cannot be written as ONNX (an op with no ONNX form, a missing value...)."""


class Builder:
    """The ONNX graph being built: nodes, inputs, outputs, initializers, and the ONNX name of
    each graph tensor."""

    def __init__(self, onnx, session, opset):
        self.onnx, self.session, self.opset = onnx, session, opset
        self.nodes, self.inputs, self.outputs, self.initializers = [], [], [], []
        self.names: dict[Tensor, str] = {}
        self.taken: set[str] = set()

    def elem_type(self, dtype) -> int:
        return self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype.np))

    def unique(self, name: str) -> str:
        out, i = name, 1
        while out in self.taken:
            out, i = f"{name}_{i}", i + 1
        self.taken.add(out)
        return out

    def add_input(self, t: Tensor, shape) -> None:
        name = self.unique(t.op.name if t.value_index == 0 else t.name)
        dims = [f"{name}_d{i}" if d is None else d for i, d in enumerate(shape)]
        self.inputs.append(self.onnx.helper.make_tensor_value_info(
            name, self.elem_type(t.dtype), dims))
        self.names[t] = name

    def add_output(self, t: Tensor) -> None:
        name = self.x(t)
        if name in {i.name for i in self.inputs} | {i.name for i in self.initializers} \
                or name in {o.name for o in self.outputs}:
            out = self.unique(f"{t.op.name}/output")
            self.node("Identity", [name], [out], out)
            name = out
        dims = None if t.shape.ndims is None else t.shape.as_list()
        self.outputs.append(self.onnx.helper.make_tensor_value_info(
            name, self.elem_type(t.dtype), dims))

    def const(self, name: str, value) -> str:
        """An initializer holding `value`; returns its name."""
        name = self.unique(name)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(value), name))
        return name

    def ints(self, name: str, values) -> str:
        """An int64 vector initializer (axes, shapes: what ONNX wants as int64 inputs)."""
        return self.const(name, np.asarray(values, dtype=np.int64).reshape(-1))

    def x(self, t: Tensor) -> str:
        """The ONNX name of graph tensor `t`; a value known when built becomes an initializer."""
        name = self.names.get(t)
        if name is None:
            value = t._static
            if value is None or t.op.opdef.stateful:
                raise OnnxExportError(f"cannot export to ONNX: no value for {t.name} "
                                      f"({t.op.where()})")
            name = self.names[t] = self.const(t.name, value)
        return name

    def y(self, op: Operation, i: int = 0) -> str:
        """The ONNX name of output i of `op` (the graph tensor's name)."""
        name = self.names[op.outputs[i]] = self.unique(op.outputs[i].name)
        return name

    def node(self, op_type: str, inputs, outputs, name: str, **attrs) -> None:
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), list(outputs),
                                                     name=name, **attrs))

    def tmp(self, op: Operation, what: str) -> str:
        """A helper value belonging to `op`, named `<op name>/<what>`."""
        return self.unique(f"{op.name}/{what}")

    def step(self, op: Operation, what: str, onnx_type: str, inputs, **attrs) -> str:
        """A helper node of `op` named `<op name>/<what>`; returns the name of its output."""
        out = self.tmp(op, what)
        self.node(onnx_type, inputs, [out], out, **attrs)
        return out

    def number(self, op: Operation, what: str, value, dtype=None) -> str:
        """A scalar initializer `<op name>/<what>` of NumPy `dtype` (op's output dtype if None)."""
        dtype = op.outputs[0].dtype.np if dtype is None else dtype
        return self.const(f"{op.name}/{what}", np.asarray(value, dtype))

    def shape_of(self, op: Operation, i: int) -> str:
        """The shape of input i of `op` as an int64 vector: a constant where it is fully known
        (then whatever computes the input may not be exported: the shape is all that is
        read), else a Shape node."""
        t = op.inputs[i]
        if t.shape.is_fully_defined():
            return self.ints(f"{op.name}/shape_{i}", t.shape.as_list())
        return self.step(op, f"shape_{i}", "Shape", [self.x(t)])

    def static(self, op: Operation, i: int, what: str):
        """Input i of `op`, which ONNX needs as a value known when exporting."""
        value = op.inputs[i]._static
        if value is None:
            raise OnnxExportError(f"cannot export to ONNX: {op.where()} needs {what} known when "
                                  "the graph is built")
        return np.asarray(value)
