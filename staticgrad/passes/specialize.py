"""Specialize pruned operations to concrete feed shapes: every tensor gets a concrete shape,
and shape arithmetic (Shape, Size, and what is computed from them) gets a static value.

The result is a `Spec` table the code generator reads, so generated code holds concrete
shapes, reduce axes and buffer sizes, decided once per feed signature.
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidArgumentError, UnimplementedError
from ..graph import Operation, Tensor
from ..ops.kernels import fold_static
from ..ops.table import NodeCtx
from ..runtime import AssertionFailed
from ..shapes import TensorShape
from .prune import prune


@dataclasses.dataclass
class Spec:
    shapes: dict[Tensor, TensorShape]
    values: dict[Tensor, object]   # static values (NumPy) where known
    ctxs: dict[Operation, NodeCtx]  # the context, with concrete outputs, of each op that the
    #                                 feeds changed (the others: the graph's own shapes
    #                                 stand, and ir.Node.ctx makes a context when asked)
    # op holding sub-graphs (If) -> for each (its opdef.region_attrs, in order): the pruned
    # ops of that sub-graph and their Spec, under the op's concrete input shapes
    regions: dict = dataclasses.field(default_factory=dict)


def specialize(ops: list[Operation], feeds: dict[Tensor, tuple]) -> Spec:
    """Re-run shape inference over `ops` with fed tensors of the given (shape, dtype), or
    (shape, dtype, static value) where the value is known when compiling."""
    shapes, values, ctxs, regions = {}, {}, {}, {}
    changed = set()  # tensors whose shape or value differs from what the graph knows
    for t, (shape, _dtype, *known) in feeds.items():
        shapes[t] = TensorShape(shape)
        if known and known[0] is not None:  # a region's input whose value is static outside
            values[t] = known[0]
            changed.add(t)
        if shapes[t].dims != t._shape.dims or None in shapes[t].dims or t._static is not None:
            changed.add(t)
    fed_ops = {t.op for t in feeds}
    for op in ops:  # (once per graph op: no generator where a test on one set does)
        if op not in fed_ops and (not changed or not any([t in changed for t in op.inputs])) \
                and not op.opdef.region_attrs:
            # nothing new about its inputs: the graph's own shapes and values stand (the IR
            # node makes its context from them when it is first needed)
            continue
        changed.update(op.outputs)
        in_shapes, in_values = [], []
        for t in op.inputs:
            in_shapes.append(shapes.get(t, t._shape))
            in_values.append(values.get(t) if t in shapes else t._static)
        ctx = NodeCtx(op.type, op.attrs, in_shapes, [t.dtype for t in op.inputs], in_values,
                      op.name)
        try:
            outs = op.opdef.infer(ctx)
            if op.opdef.static_check is not None:
                op.opdef.static_check(ctx)
        except AssertionFailed as e:  # (an Assert known to fail: as the run would say it)
            raise InvalidArgumentError(None, op, f"{e} ({op.where()})") from None
        except (ValueError, TypeError) as e:
            raise InvalidArgumentError(
                None, op, f"{op.where()}: with the fed shapes, {e}") from None
        known = None
        if op.opdef.region_attrs:
            regions[op], outs, known = _specialize_regions(op, in_shapes, in_values, outs)
        ctx.out_shapes = []
        for t, (shape, _dtype) in zip(op.outputs, outs):
            if t in feeds:  # a fed intermediate keeps its fed shape
                shape = shapes[t]
            else:
                try:
                    shape = shape.merge_with(t._shape)
                except ValueError:
                    raise InvalidArgumentError(
                        None, op, f"{op.where()}: computes shape {shape} with the fed shapes, "
                                  f"but its output {t.name} was declared as {t._shape}") from None
                shapes[t] = shape
            ctx.out_shapes.append(shape)
        ctx.out_dtypes = [t.dtype for t in op.outputs]
        folded = fold_static(op.opdef, ctx) if known is None else known
        if folded is not None:
            for t, v in zip(op.outputs, folded):
                if t not in feeds and v is not None:
                    values[t] = v
        ctxs[op] = ctx
    return Spec(shapes, values, ctxs, regions)


def _specialize_regions(op: Operation, in_shapes: list, in_values: list, outs: list):
    """Each sub-graph of `op` (an If's branches, a While's condition and body) pruned and
    specialized to what the op's rules say its placeholders are, given the op's input shapes
    and static values (`opdef.region_feeds`); and the op's outputs with what the sub-graphs
    say of their shapes (`opdef.region_results`, which also checks them). Where the concrete
    shapes do not hold (a loop variable whose fed shape changes between iterations within
    what the graph declares), the sub-graphs are specialized again to the shapes the graph
    declares (`loose`), unknown dims and all. Last, the op's outputs' static values where
    its rule (`opdef.region_values`) knows them from the sub-graphs' (or None)."""
    opdef = op.opdef
    try:  # (a sub-graph's own shape error, InvalidArgumentError, is a reason to loosen too)
        return _specialized_regions(op, in_shapes, in_values, outs, False)
    except (ValueError, InvalidArgumentError) as e:
        strict = e
    try:
        if opdef.region_feeds(op.attrs, in_shapes, in_values, True) == \
                opdef.region_feeds(op.attrs, in_shapes, in_values, False):
            loose_error = strict  # (nothing looser to try)
        else:
            return _specialized_regions(op, in_shapes, in_values, outs, True)
    except (ValueError, InvalidArgumentError) as e:
        loose_error = e
    raise UnimplementedError(None, op, f"{op.where()}: with the fed shapes, {loose_error}") \
        from None


def _specialized_regions(op: Operation, in_shapes: list, in_values: list, outs: list,
                         loose: bool):
    opdef = op.opdef
    specs, results, values = [], [], []
    fed = opdef.region_feeds(op.attrs, in_shapes, in_values, loose)
    for attr, sub_feeds in zip(opdef.region_attrs, fed):
        branch = op.attrs[attr]
        feeds = {p: (s.dims, p.dtype, v) for p, (s, v) in zip(branch.inputs, sub_feeds)
                 if s.dims is not None}
        ops = prune(list(branch.outputs), set(branch.inputs))
        spec = specialize(ops, feeds)
        specs.append((ops, spec))
        results.append([spec.shapes.get(t, t._shape) for t in branch.outputs])
        values.append([spec.values.get(t) if t in spec.shapes else t._static
                       for t in branch.outputs])
    shapes = opdef.region_results(op.attrs, in_shapes, results, loose)
    outs = [(s.merge_with(shape) if s.is_compatible_with(shape) else shape, dtype)
            for s, (shape, dtype) in zip(shapes, outs)]
    known = opdef.region_values(op.attrs, [s for s, _ in outs], values) \
        if opdef.region_values is not None else None
    return specs, outs, known
