"""export_onnx: the walk from the fetches back to the feeds, one rule per op, then the model
checked and written."""

from __future__ import annotations

import os

from ..export import _check_feed_shape, _given_feed_shapes
from ..graph import Operation, Tensor, get_default_session
from ..ops.attr_types import check_attrs
from ..passes.prune import prune
from ..session import Session
from ..train.atomic_files import atomic_write
from .builder import Builder, OnnxExportError
from .no_form import NO_ONNX
from .rules import RULES


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
    b = Builder(onnx, session, opset)
    for t, shape in zip(feeds, shapes):
        b.add_input(t, shape)
    # an op with no rule whose values were all known when the graph was built (a linspace of
    # constants) needs no node: b.x stores its values as initializers where they are read
    ops = [op for op in prune(outputs, set(feeds))
           if op.type in RULES or not _known_when_built(op)]
    missing = [op for op in ops if op.type not in RULES]
    if missing:
        raise OnnxExportError("cannot export to ONNX: these ops have no ONNX form: "
                              + "; ".join(f"{op.where()} ({_why_not(op.type)})"
                                          for op in missing))
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


def _known_when_built(op: Operation) -> bool:
    return not op.opdef.stateful and all(t._static is not None for t in op.outputs)


def _why_not(op_type: str) -> str:
    """Why ops of `op_type` have no ONNX form, as an export error says it."""
    return NO_ONNX.get(op_type, "no ONNX rule has been written for this op type yet")


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
