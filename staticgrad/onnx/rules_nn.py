"""The rules of the neural-network ops: softmax, the softmax cross-entropy losses, and
convolution and pooling (NHWC here, NCHW in ONNX)."""

from __future__ import annotations

from ..runtime_conv import output_size, resolve_pads
from .builder import OnnxExportError
from .rules_reduce import reduce_node


# -- softmax ---------------------------------------------------------------------------------------
def _softmax(onnx_type: str):
    def rule(b, op):
        b.node(onnx_type, [b.x(op.inputs[0])], [b.y(op)], op.name, axis=int(op.attrs["axis"]))
    return rule


# -- losses ----------------------------------------------------------------------------------------
def _softmax_xent(b, op):
    """-sum(labels * log_softmax(logits)) along the axis, as rt.softmax_xent."""
    labels, logits = (b.x(t) for t in op.inputs)
    axis = int(op.attrs["axis"])
    log_p = b.step(op, "log_softmax", "LogSoftmax", [logits], axis=axis)
    product = b.step(op, "mul", "Mul", [labels, log_p])
    total = b.tmp(op, "sum")
    reduce_node(b, op, "ReduceSum", product, total, total, [axis], keepdims=False)
    b.node("Neg", [total], [b.y(op)], op.name)


def _sparse_softmax_xent(b, op):
    """-log_softmax(logits) at each label, as rt.sparse_softmax_xent."""
    labels, logits = (b.x(t) for t in op.inputs)
    log_p = b.step(op, "log_softmax", "LogSoftmax", [logits], axis=-1)
    last = b.ints(f"{op.name}/last_axis", [-1])
    index = b.step(op, "index", "Unsqueeze", [
        b.step(op, "int64", "Cast", [labels], to=b.onnx.TensorProto.INT64), last])
    picked = b.step(op, "picked", "GatherElements", [log_p, index], axis=-1)
    b.node("Neg", [b.step(op, "squeezed", "Squeeze", [picked, last])], [b.y(op)], op.name)


# -- convolution and pooling: NHWC here, NCHW in ONNX ----------------------------------------------
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


def _nchw(b, op, onnx_type, inputs, data=0, **attrs):
    """`onnx_type` on input `data` transposed to NCHW, its result transposed back to NHWC."""
    x = b.tmp(op, "nchw")
    b.node("Transpose", [b.x(op.inputs[data])], [x], x, perm=[0, 3, 1, 2])
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


def _conv2d_backprop_input(b, op):
    """conv2d_transpose: ONNX's ConvTranspose, with the pads of the forward convolution from an
    input of the output's size, and the output_padding that gives back the rows and columns
    its stride skipped."""
    w_hwio = op.inputs[1]
    out_hw = op.outputs[0].shape.as_list()[1:3] if op.outputs[0].shape.ndims == 4 else [None] * 2
    k_hw = w_hwio.shape.as_list()[0:2] if w_hwio.shape.ndims == 4 else [None] * 2
    if None in out_hw or None in k_hw:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} needs its output's height "
                              "and width and its filter's size known when the graph is built")
    strides, dilations = op.attrs["strides"], op.attrs["dilations"]
    pads = resolve_pads(op.attrs["padding"], out_hw, k_hw, strides, dilations)
    extra = []
    for size, k, stride, dilation, (before, after) in zip(out_hw, k_hw, strides, dilations,
                                                          pads):
        n = output_size(size, k, stride, dilation, (before, after))  # out_backprop's size
        extra.append(size - (stride * (n - 1) + (k - 1) * dilation + 1 - before - after))
    w = b.step(op, "filter_oihw", "Transpose", [b.x(w_hwio)], perm=[3, 2, 0, 1])
    (top, bottom), (left, right) = pads
    _nchw(b, op, "ConvTranspose", [w], data=2, kernel_shape=[int(k) for k in k_hw],
          strides=list(strides), dilations=list(dilations),
          pads=[int(top), int(left), int(bottom), int(right)], output_padding=extra)


def _pool(onnx_type: str, **extra):
    def rule(b, op):
        k_hw = list(op.attrs["ksize"])
        _nchw(b, op, onnx_type, [], kernel_shape=k_hw, **_window_attrs(op, k_hw), **extra)
    return rule


RULES = {
    "Softmax": _softmax("Softmax"), "LogSoftmax": _softmax("LogSoftmax"),
    "SoftmaxCrossEntropyWithLogits": _softmax_xent,
    "SparseSoftmaxCrossEntropyWithLogits": _sparse_softmax_xent,
    "Conv2D": _conv2d, "Conv2DBackpropInput": _conv2d_backprop_input, "MaxPool": _pool("MaxPool"),
    # TF's average leaves the padding out of the count
    "AvgPool": _pool("AveragePool", count_include_pad=0),
}
