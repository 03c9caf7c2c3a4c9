"""Export the forward graph of some fetches to an ONNX model (optional extra `[onnx]`).

    import staticgrad.onnx
    staticgrad.onnx.export_onnx([probs], [x], "mlp.onnx", session=sess)

The model opens in Netron and runs in ONNX Runtime with the results `Session.run` gives:

- the fed tensors (placeholders, usually) become the graph's inputs, with their static shapes
  (or `feed_shapes`); an unknown dimension becomes a symbolic one named `<input>_d<axis>`;
- variables become initializers holding the session's current values; constants and other
  values known when the graph was built become initializers too;
- each op becomes one ONNX node named after it (a few ops take helper nodes named
  `<op name>/<what>`, e.g. the NHWC <-> NCHW transposes around a convolution); values are
  named after the graph's tensors (`dense/MatMul:0`).

Ops with no ONNX form (random draws, assignments, gradient-only kernels...) raise
`OnnxExportError` naming the op, its type and where it was created.
"""

from __future__ import annotations

import os

import numpy as np

from .export import _check_feed_shape, _given_feed_shapes
from .graph import Operation, Tensor
from .ops.attr_types import check_attrs
from .passes.prune import prune
from .runtime_conv import resolve_pads
from .session import Session, get_default_session
from .train.atomic_files import atomic_write

__all__ = ["export_onnx", "OnnxExportError"]


class OnnxExportError(ValueError):
    """A graph that cannot be written as ONNX (an op with no ONNX form, a missing value...)."""


def _require_onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError("ONNX export needs the onnx package: "
                          "pip install 'staticgrad[onnx]'") from e
    return onnx


def export_onnx(fetches, feed_list, path, session: Session | None = None, feed_shapes=None,
                opset: int = 17) -> str:
    """Write the forward graph computing `fetches` from `feed_list` as an ONNX model; return
    the path written.

    `fetches`: a tensor or name, or a list of them (the model's outputs, in order).
    `feed_list`: the tensors (or names) fed, in the order of the model's inputs.
    `feed_shapes`: a shape per feed (a list aligned with `feed_list`, or a dict keyed by
    tensor or name) to use instead of its static shape; None dimensions stay symbolic.
    `session`: whose variable values to store (the default session if None). `opset`: the
    ONNX opset (13 or later). The file is written atomically and checked with
    `onnx.checker.check_model`.

    >>> staticgrad.onnx.export_onnx(y, [x], "model.onnx", session=sess)  # doctest: +SKIP
    >>> onnxruntime.InferenceSession("model.onnx").run(None, {"x": x_value})  # doctest: +SKIP
    """
    onnx = _require_onnx()
    if opset < 13:
        raise ValueError(f"opset {opset} is not supported; use 13 or later")
    session = session or get_default_session() or Session()
    graph = session.graph
    single = not isinstance(fetches, list | tuple)
    fetch_list = [fetches] if single else list(fetches)
    outputs = []
    for f in fetch_list:
        t = f if isinstance(f, Tensor) else graph.as_graph_element(f, allow_operation=False)
        if not isinstance(t, Tensor):
            raise TypeError(f"ONNX fetches must be tensors, got {f!r}")
        outputs.append(t)
    feeds = [session._feed_tensor(k) for k in (feed_list or ())]
    shapes = _feed_shapes(graph, feeds, feed_shapes)

    session._check_open("export_onnx")
    b = _Builder(onnx, session, opset)
    for t, shape in zip(feeds, shapes):
        b.add_input(t, shape)
    ops = prune(outputs, set(feeds))
    missing = [op for op in ops if op.type not in RULES]
    if missing:
        raise OnnxExportError("cannot export to ONNX: these ops have no ONNX form: "
                              + "; ".join(op.where() for op in missing))
    for op in ops:
        try:  # attrs changed since the op was made are refused as at creation
            check_attrs(op.type, op.opdef.attrs, op.attrs)
        except (TypeError, ValueError) as e:
            raise OnnxExportError(f"cannot export {op.where()} to ONNX: {e}") from None
        RULES[op.type](b, op)
    for t in outputs:
        b.add_output(t)

    helper = onnx.helper
    model = helper.make_model(
        helper.make_graph(b.nodes, "staticgrad", b.inputs, b.outputs, b.initializers),
        opset_imports=[helper.make_opsetid("", opset)], producer_name="staticgrad")
    onnx.checker.check_model(model)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot export to {path!r}: folder {folder!r} does not exist")
    data = model.SerializeToString()
    atomic_write(os.path.abspath(path), lambda f: f.write(data))
    return os.path.abspath(path)


def _feed_shapes(graph, feeds, feed_shapes) -> list[list]:
    """Each feed's shape (None for an unknown dimension): given, or its static one."""
    shapes = []
    for t, shape in zip(feeds, _given_feed_shapes(graph, feeds, feed_shapes)):
        if shape is None:
            if t.shape.ndims is None:
                raise ValueError(f"cannot export feed {t.name} of unknown rank; pass "
                                 f"feed_shapes ({t.op.where()})")
            shape = t.shape.as_list()
        shape = [None if d is None else int(d) for d in shape]
        _check_feed_shape(t, shape)
        shapes.append(shape)
    return shapes


class _Builder:
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

    def static(self, op: Operation, i: int, what: str):
        """Input i of `op`, which ONNX needs as a value known when exporting."""
        value = op.inputs[i]._static
        if value is None:
            raise OnnxExportError(f"cannot export to ONNX: {op.where()} needs {what} known when "
                                  "the graph is built")
        return np.asarray(value)


# -- the rules: one per op type, each adding the nodes that compute the op ------------------------
RULES: dict = {}


def _simple(onnx_type: str, **attrs):
    """An op that is one ONNX node with the same inputs."""
    def rule(b, op):
        b.node(onnx_type, [b.x(t) for t in op.inputs], [b.y(op)], op.name, **attrs)
    return rule


for _ours, _theirs in {
        "Add": "Add", "AddN": "Sum", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div",
        "Neg": "Neg", "Abs": "Abs", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Pow": "Pow",
        "Tanh": "Tanh", "Sigmoid": "Sigmoid", "Relu": "Relu", "Sign": "Sign", "Floor": "Floor",
        "Sin": "Sin", "Cos": "Cos", "Tan": "Tan", "Erf": "Erf", "Reciprocal": "Reciprocal",
        "Softplus": "Softplus", "Maximum": "Max", "Minimum": "Min", "Select": "Where",
        "Identity": "Identity", "StopGradient": "Identity", "PlaceholderWithDefault": "Identity",
        "Equal": "Equal", "Greater": "Greater", "GreaterEqual": "GreaterOrEqual",
        "Less": "Less", "LessEqual": "LessOrEqual", "LogicalAnd": "And", "LogicalOr": "Or",
        "LogicalNot": "Not"}.items():
    RULES[_ours] = _simple(_theirs)


def _clip(b, op):
    """ClipByValue as np.clip computes it, min(max(t, lo), hi): bounds may be tensors of t's
    shape, where ONNX's Clip takes only scalars."""
    t, lo, hi = (b.x(v) for v in op.inputs)
    low = b.tmp(op, "max")
    b.node("Max", [t, lo], [low], low)
    b.node("Min", [low, hi], [b.y(op)], op.name)


def _square(b, op):
    x = b.x(op.inputs[0])
    b.node("Mul", [x, x], [b.y(op)], op.name)


def _activation_grad(b, op):
    """ReluGrad(dy, y) = dy * (y > 0); TanhGrad(y, dy) = dy * (1 - y*y);
    SigmoidGrad(y, dy) = dy * (y * (1 - y)): in the order the generated code computes them."""
    dtype = op.outputs[0].dtype.np
    if op.type == "ReluGrad":
        dy, y = (b.x(v) for v in op.inputs)
        positive, mask = b.tmp(op, "positive"), b.tmp(op, "mask")
        b.node("Greater", [y, b.const(f"{op.name}/zero", np.zeros((), dtype))], [positive],
               positive)
        b.node("Cast", [positive], [mask], mask, to=b.elem_type(op.outputs[0].dtype))
        b.node("Mul", [dy, mask], [b.y(op)], op.name)
        return
    y, dy = (b.x(v) for v in op.inputs)
    one = b.const(f"{op.name}/one", np.ones((), dtype))
    factor = b.tmp(op, "factor")
    if op.type == "TanhGrad":
        square = b.tmp(op, "square")
        b.node("Mul", [y, y], [square], square)
        b.node("Sub", [one, square], [factor], factor)
    else:
        rest = b.tmp(op, "one_minus")
        b.node("Sub", [one, y], [rest], rest)
        b.node("Mul", [y, rest], [factor], factor)
    b.node("Mul", [dy, factor], [b.y(op)], op.name)


def _const(b, op):
    b.names[op.outputs[0]] = b.const(op.outputs[0].name, op.attrs["value"])


def _variable(b, op):
    value = b.session._vars.get(op.name)
    if value is None:
        raise OnnxExportError(f"cannot export to ONNX: variable {op.name!r} has no value in the "
                              f"session; run its initializer first ({op.where()})")
    b.names[op.outputs[0]] = b.const(op.outputs[0].name, value)


def _cast(b, op):
    b.node("Cast", [b.x(op.inputs[0])], [b.y(op)], op.name, to=b.elem_type(op.attrs["dtype"]))


def _swap_last(b, op, i):
    """Input i of a MatMul, transposed in its last two axes (a helper Transpose node)."""
    rank = op.inputs[i].shape.ndims
    if rank is None:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} transposes an input of "
                              "unknown rank")
    out = b.tmp(op, f"transpose_{'ab'[i]}")
    b.node("Transpose", [b.x(op.inputs[i])], [out], out,
           perm=[*range(rank - 2), rank - 1, rank - 2])
    return out


def _matmul(b, op):
    a = _swap_last(b, op, 0) if op.attrs["transpose_a"] else b.x(op.inputs[0])
    c = _swap_last(b, op, 1) if op.attrs["transpose_b"] else b.x(op.inputs[1])
    b.node("MatMul", [a, c], [b.y(op)], op.name)


def _reduce_node(b, op, onnx_type: str, x: str, out: str, name: str, axis, keepdims) -> None:
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
        _reduce_node(b, op, onnx_type, b.x(op.inputs[0]), b.y(op), op.name, op.attrs["axis"],
                     op.attrs["keepdims"])
    return rule


def _reshape(b, op):
    shape = b.static(op, 1, "the target shape").astype(np.int64).reshape(-1)
    attrs = {"allowzero": 1} if 0 in shape else {}
    b.node("Reshape", [b.x(op.inputs[0]), b.ints(f"{op.name}/shape", shape)], [b.y(op)],
           op.name, **attrs)


def _transpose(b, op):
    perm = op.attrs["perm"]
    attrs = {} if perm is None else {"perm": [int(p) for p in perm]}
    b.node("Transpose", [b.x(op.inputs[0])], [b.y(op)], op.name, **attrs)


def _softmax(onnx_type: str):
    def rule(b, op):
        b.node(onnx_type, [b.x(op.inputs[0])], [b.y(op)], op.name, axis=int(op.attrs["axis"]))
    return rule


def _broadcast_to(b, op):
    shape = b.static(op, 1, "the target shape")
    b.node("Expand", [b.x(op.inputs[0]), b.ints(f"{op.name}/shape", shape)], [b.y(op)], op.name)


def _concat(b, op):
    b.node("Concat", [b.x(t) for t in op.inputs], [b.y(op)], op.name,
           axis=int(op.attrs["axis"]))


def _expand_dims(b, op):
    axes = b.ints(f"{op.name}/axes", op.attrs["axis"])
    b.node("Unsqueeze", [b.x(op.inputs[0]), axes], [b.y(op)], op.name)


def _squeeze(b, op):
    inputs = [b.x(op.inputs[0])]
    if op.attrs["axis"] is not None:
        inputs.append(b.ints(f"{op.name}/axes", op.attrs["axis"]))
    b.node("Squeeze", inputs, [b.y(op)], op.name)


def _shape(b, op):
    out = b.tmp(op, "int64")
    b.node("Shape", [b.x(op.inputs[0])], [out], out)
    b.node("Cast", [out], [b.y(op)], op.name, to=b.elem_type(op.attrs["out_type"]))


def _like(fill: float):
    def rule(b, op):
        x = op.inputs[0]
        shape = b.tmp(op, "shape")
        b.node("Shape", [b.x(x)], [shape], shape)
        value = np.array([fill], dtype=op.outputs[0].dtype.np)
        b.node("ConstantOfShape", [shape], [b.y(op)], op.name,
               value=b.onnx.numpy_helper.from_array(value, "value"))
    return rule


# -- convolution and pooling: NHWC here, NCHW in ONNX -------------------------------------------
def _window_attrs(op, k_hw, dilations=(1, 1)):
    """strides, dilations and pads (or auto_pad where the spatial sizes are unknown)."""
    in_hw = op.inputs[0].shape.as_list()[1:3] if op.inputs[0].shape.ndims == 4 else [None] * 2
    attrs = {"strides": list(op.attrs["strides"])}
    padding = op.attrs["padding"]
    if None in in_hw or None in k_hw:
        if not isinstance(padding, str):
            raise OnnxExportError(f"cannot export to ONNX: {op.where()} has explicit padding "
                                  "and unknown spatial sizes")
        # TF's SAME puts the odd pixel at the end, as ONNX's SAME_UPPER does
        attrs["auto_pad"] = "SAME_UPPER" if padding == "SAME" else "VALID"
    else:
        (top, bottom), (left, right) = resolve_pads(padding, in_hw, k_hw, op.attrs["strides"],
                                                    dilations)
        attrs["pads"] = [int(top), int(left), int(bottom), int(right)]
    return attrs


def _nchw(b, op, onnx_type, inputs, **attrs):
    """`onnx_type` on input 0 transposed to NCHW, its result transposed back to NHWC."""
    x = b.tmp(op, "nchw")
    b.node("Transpose", [b.x(op.inputs[0])], [x], x, perm=[0, 3, 1, 2])
    y = b.tmp(op, "nchw_out")
    b.node(onnx_type, [x, *inputs], [y], op.name, **attrs)
    b.node("Transpose", [y], [b.y(op)], f"{op.name}/nhwc", perm=[0, 2, 3, 1])


def _conv2d(b, op):
    w_hwio = op.inputs[1]
    w = b.tmp(op, "filter_oihw")
    b.node("Transpose", [b.x(w_hwio)], [w], w, perm=[3, 2, 0, 1])
    k_hw = w_hwio.shape.as_list()[0:2] if w_hwio.shape.ndims == 4 else [None] * 2
    dilations = op.attrs["dilations"]
    attrs = _window_attrs(op, k_hw, dilations)
    if None not in k_hw:
        attrs["kernel_shape"] = [int(k) for k in k_hw]
    _nchw(b, op, "Conv", [w], dilations=list(dilations), **attrs)


def _pool(onnx_type: str, **extra):
    def rule(b, op):
        k_hw = list(op.attrs["ksize"])
        _nchw(b, op, onnx_type, [], kernel_shape=k_hw, **_window_attrs(op, k_hw), **extra)
    return rule


RULES.update({
    "Square": _square, "ClipByValue": _clip, "Const": _const, "VariableV2": _variable,
    "Cast": _cast, "ReluGrad": _activation_grad, "TanhGrad": _activation_grad,
    "SigmoidGrad": _activation_grad,
    "MatMul": _matmul, "Sum": _reduce("ReduceSum"), "Mean": _reduce("ReduceMean"),
    "Max": _reduce("ReduceMax"), "Min": _reduce("ReduceMin"), "Prod": _reduce("ReduceProd"),
    "Reshape": _reshape, "Transpose": _transpose, "Softmax": _softmax("Softmax"),
    "LogSoftmax": _softmax("LogSoftmax"), "BroadcastTo": _broadcast_to, "ConcatV2": _concat,
    "ExpandDims": _expand_dims, "Squeeze": _squeeze, "Shape": _shape,
    "ZerosLike": _like(0), "OnesLike": _like(1),
    "Conv2D": _conv2d, "MaxPool": _pool("MaxPool"),
    # TF's average leaves the padding out of the count
    "AvgPool": _pool("AveragePool", count_include_pad=0),
})
