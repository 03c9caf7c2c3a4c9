"""TF1's `IndexedSlices`: a gradient that is zero except on some rows, kept as those rows.

    emb = sg.Variable(sg.random_uniform([1_000_000, 128]))
    rows = sg.nn.embedding_lookup(emb, word_ids)
    d_emb, = sg.gradients(loss, [emb])      # IndexedSlices(values, indices, dense_shape)
    sg.train.GradientDescentOptimizer(0.1).apply_gradients([(d_emb, emb)])  # updates the rows

The gradient of `gather` along axis 0 (and so of `embedding_lookup`) is one: `values[i]` is
the gradient of row `indices[i]` of a tensor of shape `dense_shape` (an index may repeat: its
rows add up). `sg.gradients` returns it as it is; the optimizers apply it as a sparse update
(`scatter_sub`...), so a step costs the rows looked up, not the table. It becomes a dense
tensor only on request: `sg.convert_to_tensor(slices)`, or any op given it, which warns as
TF1 does when the dense tensor would be large or of unknown size. A session fetches one as
an `IndexedSlicesValue` (values, indices, dense_shape), as TF1's does.
"""

from __future__ import annotations

import collections
import math
import warnings

from ..errors import user_location
from .creation import apply1

# TF1 warns when a conversion to dense makes more elements than this
LARGE_SPARSE_NUM_ELEMENTS = 100_000_000

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])
IndexedSlicesValue.__doc__ = "What a session fetches for an IndexedSlices: three arrays."


class IndexedSlices:
    """Rows `values` of a tensor of shape `dense_shape` at `indices`, zero elsewhere."""

    __slots__ = ("values", "indices", "dense_shape", "_dense")

    def __init__(self, values, indices, dense_shape=None):
        self.values = values
        self.indices = indices
        self.dense_shape = dense_shape
        self._dense = None

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def name(self) -> str:
        return self.values.name

    @property
    def op(self):
        return self.values.op

    @property
    def graph(self):
        return self.values.graph

    @property
    def device(self) -> str:
        return self.values.device

    def __neg__(self) -> IndexedSlices:
        from .math_ops import negative
        return IndexedSlices(negative(self.values), self.indices, self.dense_shape)

    def _as_graph_element(self):
        """The dense tensor, made once (what `convert_to_tensor` and every op take)."""
        if self._dense is None:
            self._dense = to_dense(self)
        return self._dense

    def __repr__(self) -> str:
        shape = "unknown" if self.dense_shape is None else self.dense_shape.name
        return (f"IndexedSlices(indices={self.indices.name}, values={self.values.name}, "
                f"dense_shape={shape})")


def to_dense(slices: IndexedSlices, warn: bool = True, name=None):
    """The dense tensor of `slices`: zeros, plus each row of values added at its index. With
    `warn`, TF1's warning where that tensor's size is unknown or above 100M elements."""
    if slices.dense_shape is None:
        raise ValueError(f"cannot convert {slices!r} to a dense tensor: its dense_shape is "
                         "unknown")
    if warn:
        dims = static_dense_shape(slices)
        message = None
        if dims is None:
            message = ("Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
                       "This may consume a large amount of memory.")
        elif math.prod(dims) > LARGE_SPARSE_NUM_ELEMENTS:
            message = (f"Converting sparse IndexedSlices({slices.name}) to a dense Tensor "
                       f"with {math.prod(dims)} elements. This may consume a large amount of "
                       "memory.")
        if message is not None:  # (shown at the user's line that asked for it)
            filename, lineno = user_location()
            warnings.warn_explicit(message, UserWarning, filename, lineno)
    return apply1("GatherGrad", [slices.values, slices.indices, slices.dense_shape],
                  {"axis": 0}, name=name or "IndexedSlicesToDense")


def static_dense_shape(slices: IndexedSlices) -> tuple | None:
    """The dense shape, if the graph knows it before running."""
    shape = slices.dense_shape
    if shape.op.type == "Shape" and shape.op.inputs[0].shape.is_fully_defined():
        return tuple(shape.op.inputs[0].shape.dims)
    if shape.op.type == "Const":
        return tuple(int(d) for d in shape.op.attrs["value"])
    return None
