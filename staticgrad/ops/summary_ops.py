"""Summary ops: TF1's `tf.summary.scalar`, `histogram`, `image`, `text`, `merge` and
`merge_all`. Each is a graph op whose fetched value is a serialized TensorBoard `Summary`
(bytes), which `sg.summary.FileWriter.add_summary` writes to an event file:

    tf.summary.scalar("loss", loss)
    tf.summary.histogram("weights", w)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter("logs", sess.graph)
    summary, _ = sess.run([merged, train_op], feed)
    writer.add_summary(summary, step)

A summary's tag is its name in the name scope where it is made (`train/loss`), under
`family` if given, as TF1 names them; the ops go to the `GraphKeys.SUMMARIES` collection (or
`collections`). They run in the Python process and serialize through tensorboardX (the
`[tensorboard]` extra; runtime_summary.py), which a builder asks for before it makes the op.
The tag is an attribute of a declared type (`Text`): it reaches generated code as a literal.
"""

from __future__ import annotations

from .. import dtypes as _dt
from .. import runtime_summary
from ..graph import GraphKeys, get_default_graph, name_scope
from ..shapes import TensorShape
from . import math_ops as M
from .attr_types import Int, Text
from .conversion import convert_to_tensor
from .creation import apply1
from .table import register

_SCALAR = TensorShape([])


# stateful: never folded or merged by the compiler, whose code must not depend on whether the
# optional tensorboardX (which their kernels need) is installed where it compiles
def _summary_op(op_type, infer, numpy, doc, attrs=None, arity=1):
    register(op_type, infer, numpy, None, differentiable=False, host_only=True, stateful=True,
             new_array=True, attrs={"tag": Text(max_length=1000), **(attrs or {})},
             arity=arity, doc=doc)


def _scalar_infer(ctx):
    M.check_kind(ctx, 0, "fib")
    if not ctx.in_shapes[0].is_compatible_with(_SCALAR):
        raise ValueError(f"the value of scalar summary {ctx.attrs['tag']!r} must be a scalar, "
                         f"got shape {ctx.in_shapes[0]}")
    return [(_SCALAR, _dt.string)]


def _histogram_infer(ctx):
    M.check_kind(ctx, 0, "fib")
    return [(_SCALAR, _dt.string)]


def _image_infer(ctx):
    M.check_kind(ctx, 0, "fi")
    dims, dtype = ctx.in_shapes[0].dims, ctx.in_dtypes[0]
    if not (dtype.is_floating or dtype is _dt.uint8):
        raise TypeError(f"images must be uint8 or floats, got {dtype.name}")
    if dims is not None and (len(dims) != 4 or dims[3] not in (None, 1, 3, 4)):
        raise ValueError(f"images must have shape [batch, height, width, channels] with 1, 3 "
                         f"or 4 channels, got {ctx.in_shapes[0]}")
    return [(_SCALAR, _dt.string)]


def _text_infer(ctx):
    if not ctx.in_dtypes[0].is_string:
        raise TypeError(f"a text summary takes strings, got {ctx.in_dtypes[0].name} (make "
                        "them with sg.as_string)")
    return [(_SCALAR, _dt.string)]


def _merge_infer(ctx):
    for i, dtype in enumerate(ctx.in_dtypes):
        if not dtype.is_string:
            raise TypeError(f"input {i} has dtype {dtype.name}: merge takes summaries")
    return [(_SCALAR, _dt.string)]


_summary_op("ScalarSummary", _scalar_infer, "rt.summary_scalar({tag}, {0})",
            "a Summary of a scalar")
_summary_op("HistogramSummary", _histogram_infer, "rt.summary_histogram({tag}, {0})",
            "a Summary of a histogram of the values")
_summary_op("ImageSummary", _image_infer, "rt.summary_image({tag}, {0}, {max_images})",
            "a Summary of images as PNGs", attrs={"max_images": Int(lo=1, hi=1 << 16)})
_summary_op("TensorSummaryV2", _text_infer, "rt.summary_text({tag}, {0})",
            "a Summary of strings, for the text dashboard")
register("MergeSummary", _merge_infer, lambda a, ctx: f"rt.merge_summary({', '.join(a)})",
         None, differentiable=False, host_only=True, stateful=True, new_array=True,
         arity=(1, None),
         doc="one Summary of the values of several")


def _make(op_type, builder, name, tensor, collections, family, attrs=None):
    """The summary op `op_type` of `tensor`, tagged by its name scope, in `collections`."""
    runtime_summary.require(f"sg.summary.{builder}")
    scoped = name if family is None else f"{family}/{name}"
    with name_scope(scoped) as scope:
        tag = scope.rstrip("/")
        x = convert_to_tensor(tensor)
        out = apply1(op_type, [x], {"tag": tag, **(attrs or {})}, name=op_type)
    _collect(out, collections)
    return out


def _collect(summary, collections) -> None:
    keys = [GraphKeys.SUMMARIES] if collections is None else list(collections)
    summary.graph.add_to_collections(keys, summary)


def scalar(name, tensor, collections=None, family=None):
    """A Summary of the scalar `tensor`, tagged `name` in the current name scope."""
    return _make("ScalarSummary", "scalar", name, tensor, collections, family)


def histogram(name, values, collections=None, family=None):
    """A Summary of the histogram of `values` (TF1's buckets; NaN or infinity is an error
    when it runs)."""
    return _make("HistogramSummary", "histogram", name, values, collections, family)


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """A Summary of the first `max_outputs` images of `tensor` ([batch, height, width,
    channels], uint8, or floats scaled as TF1 scales them), tagged `name/image/i`."""
    return _make("ImageSummary", "image", name, tensor, collections, family,
                 {"max_images": int(max_outputs)})


def text(name, tensor, collections=None):
    """A Summary of the strings `tensor`, for TensorBoard's text dashboard."""
    return _make("TensorSummaryV2", "text", name, tensor, collections, None)


def merge(inputs, collections=None, name=None):
    """One Summary of all the values of the summaries `inputs` (two with one tag: an error
    when it runs, as TF1)."""
    runtime_summary.require("sg.summary.merge")
    tensors = [convert_to_tensor(x) for x in inputs]
    if not tensors:
        raise ValueError("merge needs at least one summary")
    out = apply1("MergeSummary", tensors, name=name or "Merge/MergeSummary")
    if collections:
        _collect(out, collections)
    return out


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """The merge of the summaries in collection `key` (those whose names match `scope`), or
    None when there are none, as TF1."""
    found = get_default_graph().get_collection(key, scope)
    return merge(found, name=name) if found else None
