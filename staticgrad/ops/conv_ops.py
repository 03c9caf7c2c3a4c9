"""Convolution and pooling (`sg.nn.conv2d`, `max_pool`, `avg_pool`), NHWC, with TF1's padding.

Kernels are in `runtime_conv` (`rt.conv2d`...). Each gradient is itself an op with a gradient
rule, so derivatives of any order work:

    Conv2D               -> Conv2DBackpropInput, Conv2DBackpropFilter
    Conv2DBackpropInput  -> Conv2D, Conv2DBackpropFilter
    Conv2DBackpropFilter -> Conv2D, Conv2DBackpropInput
    MaxPool -> MaxPoolGrad -> MaxPoolGradGrad -> MaxPoolGrad
    AvgPool -> AvgPoolGrad -> AvgPool

Attrs hold the spatial parts only: `strides`, `dilations`, `ksize` as (height, width) pairs,
`padding` as "SAME", "VALID" or ((top, bottom), (left, right)). The generated line has the
padding resolved to pairs: `conv1 = rt.conv2d(x, w, (1, 1), ((2, 2), (2, 2)), (1, 1))`.
"""

from __future__ import annotations

import numpy as np

from ..errors import here
from ..graph import name_scope
from ..runtime_conv import axis_pads, output_size, resolve_pads
from ..shapes import TensorShape
from . import math_ops as M
from .array_ops import _shape_arg, expand_dims, shape_of, squeeze
from .attr_types import Choice, Ints, OneOf, Pairs
from .conversion import convert_to_tensor
from .creation import apply1
from .table import register

_SIZES = Ints(length=2, lo=1)  # (height, width) of a stride, window or dilation
_SAME_OR_VALID = Choice("SAME", "VALID")
CONV_TYPES = {"strides": _SIZES, "padding": OneOf(_SAME_OR_VALID, Pairs(2)),
              "dilations": _SIZES}
POOL_TYPES = {"ksize": _SIZES, "strides": _SIZES, "padding": _SAME_OR_VALID}
CONV_ATTRS = tuple(CONV_TYPES)
POOL_ATTRS = tuple(POOL_TYPES)


# -- shape rules ---------------------------------------------------------------------------------

def _dims4(ctx, i, what="input"):
    """Input i's dims as a 4-list (Nones where unknown), checking that it is 4-D."""
    shape = ctx.in_shapes[i]
    if shape.dims is None:
        return [None] * 4
    if len(shape.dims) != 4:
        raise ValueError(f"{ctx.type}: {what} must be 4-D, got shape {shape}")
    return list(shape.dims)


def _check_floats(ctx, *inputs):
    for i in inputs:
        M.check_kind(ctx, i, "f")
    dtypes = {ctx.in_dtypes[i] for i in inputs}
    if len(dtypes) > 1:
        names = ", ".join(ctx.in_dtypes[i].name for i in inputs)
        raise TypeError(f"{ctx.type}: inputs must have one dtype, got {names}")
    return ctx.in_dtypes[inputs[0]]


def _sizes(ctx, i, what):
    """The static value of input i (a 4-vector of sizes), or None; checks its dtype and length."""
    M.check_kind(ctx, i, "i")
    value = ctx.value(i)
    if value is None:
        return None
    sizes = [int(d) for d in np.reshape(value, -1)]
    if len(sizes) != 4:
        raise ValueError(f"{ctx.type}: {what} must have 4 entries, got {sizes}")
    return sizes


def _out_hw(ctx, x, k_hw, dilations=(1, 1)):
    """Output height and width for input dims x (None where unknown); an error if a window does
    not fit."""
    out = []
    for axis in range(2):
        size, k = x[1 + axis], k_hw[axis]
        if size is None or k is None:
            out.append(None)
            continue
        padding = ctx.attrs["padding"]
        pads = axis_pads(padding if isinstance(padding, str) else padding[axis], size, k,
                         ctx.attrs["strides"][axis], dilations[axis])
        n = output_size(size, k, ctx.attrs["strides"][axis], dilations[axis], pads)
        if n < 1 and size > 0:
            span = (k - 1) * dilations[axis] + 1
            raise ValueError(f"{ctx.type}: a window of {span} does not fit in the "
                             f"{('height', 'width')[axis]} {size} (+ padding {pads}) of input "
                             f"shape {TensorShape(x)}")
        out.append(max(n, 0))
    return out


def _conv_out(ctx, x, w):
    """Conv2D's output dims for input dims x and filter dims w; checks the channels."""
    if x[3] is not None and w[2] is not None and x[3] != w[2]:
        raise ValueError(f"{ctx.type}: input of shape {TensorShape(x)} has {x[3]} channels but "
                         f"filter of shape {TensorShape(w)} expects {w[2]} (filter is [height, "
                         "width, in_channels, out_channels])")
    return [x[0], *_out_hw(ctx, x, w[0:2], ctx.attrs["dilations"]), w[3]]


def _check_out_backprop(ctx, expected, dy):
    if not TensorShape(expected).is_compatible_with(dy):
        raise ValueError(f"{ctx.type}: out_backprop has shape {TensorShape(dy)}, but the forward "
                         f"op gives shape {TensorShape(expected)}")


def _conv2d_infer(ctx):
    dtype = _check_floats(ctx, 0, 1)
    x, w = _dims4(ctx, 0, "input"), _dims4(ctx, 1, "filter")
    return [(TensorShape(_conv_out(ctx, x, w)), dtype)]


def _backprop_input_infer(ctx):
    dtype = _check_floats(ctx, 1, 2)
    w, dy = _dims4(ctx, 1, "filter"), _dims4(ctx, 2, "out_backprop")
    x = _sizes(ctx, 0, "input_sizes")
    if x is None:
        return [(TensorShape([dy[0], None, None, w[2]]), dtype)]
    _check_out_backprop(ctx, _conv_out(ctx, x, w), dy)
    return [(TensorShape(x), dtype)]


def _backprop_filter_infer(ctx):
    dtype = _check_floats(ctx, 0, 2)
    x, dy = _dims4(ctx, 0, "input"), _dims4(ctx, 2, "out_backprop")
    w = _sizes(ctx, 1, "filter_sizes")
    if w is None:
        return [(TensorShape([None, None, x[3], dy[3]]), dtype)]
    _check_out_backprop(ctx, _conv_out(ctx, x, w), dy)
    return [(TensorShape(w), dtype)]


def _pool_out(ctx, x):
    return [x[0], *_out_hw(ctx, x, ctx.attrs["ksize"]), x[3]]


def _pool_infer(ctx):
    dtype = _check_floats(ctx, 0)
    return [(TensorShape(_pool_out(ctx, _dims4(ctx, 0, "input"))), dtype)]


def _max_pool_grad_infer(ctx):
    dtype = _check_floats(ctx, 0, 1, 2)
    x = _dims4(ctx, 0, "orig_input")
    y, dy = _dims4(ctx, 1, "orig_output"), _dims4(ctx, 2, "grad")
    _check_out_backprop(ctx, _pool_out(ctx, x), y)
    _check_out_backprop(ctx, _pool_out(ctx, x), dy)
    return [(TensorShape(x), dtype)]


def _max_pool_grad_grad_infer(ctx):
    dtype = _check_floats(ctx, 0, 1, 2)
    x, y, g = (_dims4(ctx, i, what) for i, what in enumerate(("orig_input", "orig_output",
                                                              "grad")))
    if not TensorShape(x).is_compatible_with(g):
        raise ValueError(f"{ctx.type}: grad has shape {TensorShape(g)}, but orig_input has "
                         f"shape {TensorShape(x)}")
    _check_out_backprop(ctx, _pool_out(ctx, x), y)
    return [(TensorShape(y), dtype)]


def _avg_pool_grad_infer(ctx):
    dtype = _check_floats(ctx, 1)
    dy = _dims4(ctx, 1, "grad")
    x = _sizes(ctx, 0, "orig_input_shape")
    if x is None:
        return [(TensorShape([dy[0], None, None, dy[3]]), dtype)]
    _check_out_backprop(ctx, _pool_out(ctx, x), dy)
    return [(TensorShape(x), dtype)]


# -- NumPy emitters ------------------------------------------------------------------------------

def _padding_literal(ctx, in_hw, k_hw, dilations=(1, 1)):
    """The padding as ((top, bottom), (left, right)) when the sizes are known, else as given."""
    if None in in_hw or None in k_hw:
        return ctx.lit("padding")
    pads = resolve_pads(ctx.attrs["padding"], in_hw, k_hw, ctx.attrs["strides"], dilations)
    return Pairs(2).literal(pads)


def _sizes_literal(ctx, i, arg):
    """A sizes input as a tuple literal when its value is known (it always is, once the graph is
    specialized to its feeds)."""
    value = ctx.value(i)
    return arg if value is None else repr(tuple(int(d) for d in np.reshape(value, -1)))


def _conv_tail(ctx, in_hw, k_hw):
    d = ctx.attrs["dilations"]
    return f"{ctx.lit('strides')}, {_padding_literal(ctx, in_hw, k_hw, d)}, {ctx.lit('dilations')}"


def _conv2d_numpy(a, ctx):
    tail = _conv_tail(ctx, _dims4(ctx, 0)[1:3], _dims4(ctx, 1)[0:2])
    return f"rt.conv2d({a[0]}, {a[1]}, {tail})"


def _backprop_input_numpy(a, ctx):
    tail = _conv_tail(ctx, ctx.out_dims()[1:3], _dims4(ctx, 1)[0:2])
    return f"rt.conv2d_backprop_input({_sizes_literal(ctx, 0, a[0])}, {a[1]}, {a[2]}, {tail})"


def _backprop_filter_numpy(a, ctx):
    tail = _conv_tail(ctx, _dims4(ctx, 0)[1:3], ctx.out_dims()[0:2])
    return f"rt.conv2d_backprop_filter({a[0]}, {_sizes_literal(ctx, 1, a[1])}, {a[2]}, {tail})"


def _pool_numpy(kernel, input_is_shape=False):
    """Emitter for a pooling kernel whose first input is the pooled tensor, or (AvgPoolGrad)
    that tensor's shape."""
    def emit(a, ctx):
        if input_is_shape:
            a = [_sizes_literal(ctx, 0, a[0]), *a[1:]]
            in_hw = ctx.out_dims()[1:3]
        else:
            in_hw = _dims4(ctx, 0)[1:3]
        pads = _padding_literal(ctx, in_hw, ctx.attrs["ksize"])
        return f"rt.{kernel}({', '.join(a)}, {ctx.lit('ksize')}, {ctx.lit('strides')}, {pads})"
    return emit


# -- gradient rules (each named after the op it differentiates) ---------------------------------

def _attrs(op, keys):
    return {k: op.attrs[k] for k in keys}


def _conv2d_grad(op, g):
    x, w = op.inputs
    attrs = _attrs(op, CONV_ATTRS)
    return [apply1("Conv2DBackpropInput", [shape_of(x), w, g], attrs),
            apply1("Conv2DBackpropFilter", [x, shape_of(w), g], attrs)]


def _conv2d_backprop_input_grad(op, g):
    # dx = B(w, dy) is bilinear: <g, B(w, dy)> = <conv2d(g, w), dy>
    _, w, dy = op.inputs
    attrs = _attrs(op, CONV_ATTRS)
    return [None, apply1("Conv2DBackpropFilter", [g, shape_of(w), dy], attrs),
            apply1("Conv2D", [g, w], attrs)]


def _conv2d_backprop_filter_grad(op, g):
    # dw = B(x, dy) is bilinear: <g, B(x, dy)> = <conv2d(x, g), dy>
    x, _, dy = op.inputs
    attrs = _attrs(op, CONV_ATTRS)
    return [apply1("Conv2DBackpropInput", [shape_of(x), g, dy], attrs), None,
            apply1("Conv2D", [x, g], attrs)]


def _max_pool_grad(op, g):
    return [apply1("MaxPoolGrad", [op.inputs[0], op.outputs[0], g], _attrs(op, POOL_ATTRS))]


def _max_pool_grad_grad(op, g):
    # linear in the incoming gradient; piecewise constant in the pooled input and output
    x, y, _ = op.inputs
    return [None, None, apply1("MaxPoolGradGrad", [x, y, g], _attrs(op, POOL_ATTRS))]


def _max_pool_grad_grad_grad(op, g):
    x, y, _ = op.inputs
    return [None, None, apply1("MaxPoolGrad", [x, y, g], _attrs(op, POOL_ATTRS))]


def _avg_pool_grad(op, g):
    return [apply1("AvgPoolGrad", [shape_of(op.inputs[0]), g], _attrs(op, POOL_ATTRS))]


def _avg_pool_grad_grad(op, g):
    return [None, apply1("AvgPool", [g], _attrs(op, POOL_ATTRS))]


# every kernel (runtime_conv's, conv_fast's, the CUDA library's) returns an array it made, or a
# view of one: new_array, so that the memory plan may write a bias add or a ReLU's gradient
# into it (backends/numpy/memory.py)
register("Conv2D", _conv2d_infer, _conv2d_numpy, _conv2d_grad, saves=("x0", "x1"),
         attrs=CONV_TYPES, arity=2, new_array=True)
register("Conv2DBackpropInput", _backprop_input_infer, _backprop_input_numpy,
         _conv2d_backprop_input_grad, saves=("x1", "x2"), static_inputs=(0,), attrs=CONV_TYPES,
         arity=3, new_array=True)
register("Conv2DBackpropFilter", _backprop_filter_infer, _backprop_filter_numpy,
         _conv2d_backprop_filter_grad, saves=("x0", "x2"), static_inputs=(1,), attrs=CONV_TYPES,
         arity=3, new_array=True)
register("MaxPool", _pool_infer, _pool_numpy("max_pool"), _max_pool_grad, saves=("x0", "y0"),
         attrs=POOL_TYPES, arity=1, new_array=True)
register("MaxPoolGrad", _max_pool_grad_infer, _pool_numpy("max_pool_grad"), _max_pool_grad_grad,
         saves=("x0", "x1"),
         attrs=POOL_TYPES, arity=3, new_array=True)
register("MaxPoolGradGrad", _max_pool_grad_grad_infer, _pool_numpy("max_pool_grad_grad"),
         _max_pool_grad_grad_grad, saves=("x0", "x1"), attrs=POOL_TYPES, arity=3, new_array=True)
register("AvgPool", _pool_infer, _pool_numpy("avg_pool"), _avg_pool_grad, saves=(),
         attrs=POOL_TYPES, arity=1, new_array=True)
register("AvgPoolGrad", _avg_pool_grad_infer, _pool_numpy("avg_pool_grad", input_is_shape=True),
         _avg_pool_grad_grad, saves=(), static_inputs=(0,), attrs=POOL_TYPES, arity=2,
         new_array=True)


# -- public functions ----------------------------------------------------------------------------

def _spatial(value, what: str, fn: str) -> tuple[int, int]:
    """A stride, window size or dilation given TF's ways (an int, [h, w] or [1, h, w, 1]) as
    an (h, w) pair."""
    if value is None:
        raise ValueError(f"{fn}: {what} is required")
    v = [int(d) for d in np.reshape(value, -1)]
    if len(v) == 4:
        if v[0] != 1 or v[3] != 1:
            raise ValueError(f"{fn}: {what} {v} must be 1 in the batch and channel dimensions "
                             "(NHWC)")
        v = v[1:3]
    if len(v) not in (1, 2):
        raise ValueError(f"{fn}: {what} must be an int or a list of 1, 2 or 4 ints, got {value!r}")
    if min(v) < 1:
        raise ValueError(f"{fn}: {what} must be positive, got {value!r}")
    return (v[0], v[-1])


def _padding(padding, fn: str, explicit: bool = False):
    """"SAME", "VALID", or (convolutions only) explicit NHWC pairs as ((top, bottom), (left,
    right))."""
    if isinstance(padding, str) and padding.upper() in ("SAME", "VALID"):
        return padding.upper()
    if explicit and not isinstance(padding, str) and np.shape(padding) == (4, 2):
        pairs = [(int(a), int(b)) for a, b in padding]
        if pairs[0] == pairs[3] == (0, 0) and min(min(p) for p in pairs) >= 0:
            return (pairs[1], pairs[2])
    also = ", or [[0, 0], [top, bottom], [left, right], [0, 0]]" if explicit else ""
    raise ValueError(f"{fn}: padding must be 'SAME' or 'VALID'{also}; got {padding!r}")


def _check_format(data_format, fn: str) -> None:
    if data_format not in (None, "NHWC"):
        raise ValueError(f"{fn}: only data_format 'NHWC' is supported, got {data_format!r}")


def _one_of(value, alias, what: str, alias_name: str, fn: str):
    if value is not None and alias is not None:
        raise ValueError(f"{fn}: pass {what} or {alias_name}, not both")
    if value is None and alias is None:
        raise ValueError(f"{fn}: {what} is required")
    return value if value is not None else alias


def _conv_attrs(fn, strides, padding, dilations, data_format):
    try:
        _check_format(data_format, fn)
        return {"strides": _spatial(strides, "strides", fn),
                "padding": _padding(padding, fn, explicit=True),
                "dilations": _spatial(1 if dilations is None else dilations, "dilations", fn)}
    except ValueError as e:
        raise ValueError(f"{e} ({here()})") from None


def _pool_attrs(fn, ksize, strides, padding, data_format):
    try:
        _check_format(data_format, fn)
        return {"ksize": _spatial(ksize, "ksize", fn),
                "strides": _spatial(strides, "strides", fn), "padding": _padding(padding, fn)}
    except ValueError as e:
        raise ValueError(f"{e} ({here()})") from None


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    """2-D cross-correlation of NHWC `input` with a [height, width, in, out] filter.

    `strides` and `dilations`: an int, [h, w] or [1, h, w, 1]; `padding`: "SAME", "VALID" or
    [[0, 0], [top, bottom], [left, right], [0, 0]].

    >>> y = sg.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME")  # doctest: +SKIP
    """
    w = _one_of(filter, filters, "filter", "filters", "conv2d")
    x = convert_to_tensor(input)
    w = convert_to_tensor(w, dtype_hint=x.dtype)
    attrs = _conv_attrs("conv2d", strides, padding, dilations, data_format)
    return apply1("Conv2D", [x, w], attrs, name=name)


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None,  # noqa: A002
                          strides=None, padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=(1, 1, 1, 1), name=None, filters=None):
    """The gradient of conv2d with respect to its input (of shape `input_sizes`)."""
    fn = "conv2d_backprop_input"
    w = convert_to_tensor(_one_of(filter, filters, "filter", "filters", fn))
    dy = convert_to_tensor(_one_of(out_backprop, None, "out_backprop", "", fn),
                           dtype_hint=w.dtype)
    attrs = _conv_attrs(fn, strides, padding, dilations, data_format)
    return apply1("Conv2DBackpropInput", [_shape_arg(input_sizes, "input_sizes"), w, dy], attrs,
                  name=name)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1),
                           name=None):
    """The gradient of conv2d with respect to its filter (of shape `filter_sizes`)."""
    x = convert_to_tensor(input)
    dy = convert_to_tensor(out_backprop, dtype_hint=x.dtype)
    attrs = _conv_attrs("conv2d_backprop_filter", strides, padding, dilations, data_format)
    return apply1("Conv2DBackpropFilter", [x, _shape_arg(filter_sizes, "filter_sizes"), dy],
                  attrs, name=name)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of conv2d (a "deconvolution"): `value` [N, H, W, out] becomes a tensor of
    `output_shape` [N, OH, OW, in], with a [height, width, in, out] filter."""
    fn = "conv2d_transpose"
    value = _one_of(value, input, "value", "input", fn)
    w = _one_of(filter, filters, "filter", "filters", fn)
    if output_shape is None:
        raise ValueError(f"{fn}: output_shape is required")
    return conv2d_backprop_input(output_shape, w, value, strides, padding,
                                 data_format=data_format, dilations=dilations, name=name)


def _pool(op_type, fn, value, ksize, strides, padding, data_format, name):
    attrs = _pool_attrs(fn, ksize, strides, padding, data_format)
    return apply1(op_type, [convert_to_tensor(value)], attrs, name=name)


def max_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """The maximum of each window of NHWC `value` (padding never wins: it is -inf).

    >>> y = sg.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")  # doctest: +SKIP
    """
    value = _one_of(value, input, "value", "input", "max_pool")
    return _pool("MaxPool", "max_pool", value, ksize, strides, padding, data_format, name)


def avg_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """The mean of each window of NHWC `value`, over its non-padding elements only.

    >>> y = sg.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")  # doctest: +SKIP
    """
    value = _one_of(value, input, "value", "input", "avg_pool")
    return _pool("AvgPool", "avg_pool", value, ksize, strides, padding, data_format, name)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """max_pool with TF2's argument names."""
    return _pool("MaxPool", "max_pool2d", input, ksize, strides, padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """avg_pool with TF2's argument names."""
    return _pool("AvgPool", "avg_pool2d", input, ksize, strides, padding, data_format, name)


# TF's generated op wrappers (gen_nn_ops) for the pooling gradients, for tests and for users who
# build them directly; conv2d_backprop_input/filter above are the convolution ones.
def max_pool_grad(orig_input, orig_output, grad, ksize, strides, padding, data_format="NHWC",
                  name=None):
    """MaxPoolGrad: `grad` (shaped like orig_output) routed to the first maximum of each window."""
    attrs = _pool_attrs("max_pool_grad", ksize, strides, padding, data_format)
    x = convert_to_tensor(orig_input)
    inputs = [x, convert_to_tensor(orig_output, dtype_hint=x.dtype),
              convert_to_tensor(grad, dtype_hint=x.dtype)]
    return apply1("MaxPoolGrad", inputs, attrs, name=name)


def max_pool_grad_grad(orig_input, orig_output, grad, ksize, strides, padding,
                       data_format="NHWC", name=None):
    """MaxPoolGradGrad: `grad` (shaped like orig_input) read at the first maximum of each
    window, giving a tensor shaped like orig_output."""
    attrs = _pool_attrs("max_pool_grad_grad", ksize, strides, padding, data_format)
    x = convert_to_tensor(orig_input)
    inputs = [x, convert_to_tensor(orig_output, dtype_hint=x.dtype),
              convert_to_tensor(grad, dtype_hint=x.dtype)]
    return apply1("MaxPoolGradGrad", inputs, attrs, name=name)


def avg_pool_grad(orig_input_shape, grad, ksize, strides, padding, data_format="NHWC",
                  name=None):
    """AvgPoolGrad: each `grad` shared equally over the non-padding elements of its window."""
    attrs = _pool_attrs("avg_pool_grad", ksize, strides, padding, data_format)
    shape = _shape_arg(orig_input_shape, "orig_input_shape")
    return apply1("AvgPoolGrad", [shape, convert_to_tensor(grad)], attrs, name=name)


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """1-D cross-correlation of [batch, width, in] `value` with a [width, in, out] filter:
    a conv2d of height 1."""
    value = input if value is None else value
    if data_format not in (None, "NWC"):
        raise ValueError(f"conv1d {here()}: only data_format 'NWC' is offered, got "
                         f"{data_format!r}")
    stride = stride[1] if isinstance(stride, list | tuple) and len(stride) == 3 else stride
    dilation = 1 if dilations is None else (dilations[1] if isinstance(dilations, list | tuple)
                                            and len(dilations) == 3 else dilations)
    with name_scope(name, "conv1d"):  # (a conv2d of height one)
        x = expand_dims(convert_to_tensor(value), 1)
        w = expand_dims(convert_to_tensor(filters, dtype_hint=x.dtype), 0)
        out = conv2d(x, w, strides=[1, 1, stride, 1], padding=padding,
                     dilations=[1, 1, dilation, 1])
        return squeeze(out, [1])
