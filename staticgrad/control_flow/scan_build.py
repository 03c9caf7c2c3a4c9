"""Building Scan ops (scan_op.py defines the op): a step function traced into a closed
sub-graph (`trace_step`), and the Scan op running it (`scan_op`, `make_scan`); what
`scan`, `map_fn`, the folds, `dynamic_rnn` and the Scan's own gradient (scan_grad.py)
build with."""

from __future__ import annotations

import dataclasses

from ..graph import Tensor, get_default_graph
from ..ops.creation import apply
from ..shapes import TensorShape
from .branches import Branch, BranchGraph, branch_tensor, check_stateless, placeholder


def _split(attrs, items: list) -> tuple[list, list, list]:
    """A Scan's inputs as (initial carried values, elems, captured tensors)."""
    c, e = attrs["carries"], attrs["elems"]
    return items[:c], items[c:c + e], items[c + e:]


def _row(shape: TensorShape) -> TensorShape:
    return TensorShape(None) if shape.dims is None else TensorShape(shape.dims[1:])


@dataclasses.dataclass
class Step:
    """A scan's function, built once into a closed sub-graph: its graph, the placeholders of
    the carried values and of one row of each elems, and what it gives (the next carried
    values and this step's outputs)."""

    graph: BranchGraph
    carried: list[Tensor]
    rows: list[Tensor]
    nexts: list[Tensor]
    ys: list[Tensor]


def trace_step(fn, carried: list[Tensor], elems: list[Tensor], where: str,
               row_names: list[str] | None = None) -> Step:
    """`fn(carried placeholders, row placeholders) -> (next carried values, this step's
    outputs)` (lists of tensors), called once into a sub-graph of the default graph. The row
    placeholders are named `row_names` (by default elem_0, elem_1...)."""
    outer = get_default_graph()
    g = BranchGraph(outer, "fn", where)
    names = row_names or [f"elem_{i}" for i in range(len(elems))]
    with g.as_default():
        c_ph = [placeholder(t.dtype, t.shape, f"carried_{i}") for i, t in enumerate(carried)]
        e_ph = [placeholder(t.dtype, _row(t.shape), name) for t, name in zip(elems, names)]
        nexts, ys = fn(c_ph, e_ph)
        nexts = [branch_tensor(v, g, "fn", where) for v in nexts]
        ys = [branch_tensor(v, g, "fn", where) for v in ys]
    check_stateless(g, "fn", where, "the function of a scan, map_fn or fold")
    for i, (t, after) in enumerate(zip(carried, nexts)):
        if after.dtype is not t.dtype:
            raise TypeError(f"{where}: carried value {i} enters as {t.dtype.name} but fn "
                            f"returns {after.dtype.name}")
        if not after.shape.is_compatible_with(t.shape):
            raise ValueError(f"{where}: carried value {i} has shape {t.shape} on entry but "
                             f"{after.shape} after one step; a scan's carried values keep "
                             "their shapes")
    return Step(g, c_ph, e_ph, nexts, ys)


def scan_op(step: Step, carried: list[Tensor], elems: list[Tensor], reverse: bool,
            name: str = "Scan", extends: Branch | None = None) -> list[Tensor]:
    """The outputs of a Scan op running `step` (built by trace_step from these carried values
    and elems) over the rows of elems; its body `extends` another loop's, if given (gives
    its results first: scan_grad.py)."""
    g = step.graph
    captured = list(g.captures)
    body = Branch(g, [*step.carried, *step.rows, *[g.capture(t) for t in captured]],
                  [*step.nexts, *step.ys])
    body.extends = extends
    with g.outer.control_dependencies(g.outer_controls):
        outputs = apply("Scan", [*carried, *elems, *captured],
                        {"body": body, "carries": len(carried), "elems": len(elems),
                         "reverse": reverse}, name=name)
    g.finalize()
    return outputs


def make_scan(fn, carried: list[Tensor], elems: list[Tensor], reverse: bool, where: str,
              name: str = "Scan") -> list[Tensor]:
    """A Scan op of `fn` (see trace_step), built now: its last carried values, then its
    stacked outputs (the history stays behind)."""
    step = trace_step(fn, carried, elems, where)
    return list(scan_op(step, carried, elems, reverse, name)[:len(carried) + len(step.ys)])
