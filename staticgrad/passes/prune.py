"""Prune a graph to the operations that given fetches need, cut at fed tensors."""

from __future__ import annotations

from ..errors import InvalidArgumentError, format_location
from ..graph import Operation, Tensor


def prune(fetches, fed) -> list[Operation]:
    """The operations needed to compute `fetches` when the tensors in `fed` are given,
    in creation order (which is a topological order). Iterative: no recursion limit."""
    needed: dict[int, Operation] = {}
    waits = _Waits()
    stack = []
    for f in fetches:
        if isinstance(f, Tensor):
            if f not in fed:
                stack.append(f.op)
        else:
            stack.append(f)
    while stack:
        op = stack.pop()
        if op._id in needed:
            continue
        needed[op._id] = op
        shape_inputs = op.opdef.shape_inputs
        for i, t in enumerate(op.inputs):
            if t in fed or t.op._id in needed:
                continue
            # known without running anything: a value folded when the graph was built (a
            # constant, the shape of a tensor of known shape), or an input read only for a
            # shape that is fully known; then whatever produces it need not run (nor be fed),
            # unless it waits on ops (control dependencies): they run, as in TF1
            if t._static is not None and not t.op.opdef.stateful and (
                    not (t.op.inputs or t.op.control_inputs) or not waits(t.op)):
                continue  # (a constant made of nothing waits on nothing: `waits` not asked)
            if shape_inputs and i in shape_inputs and t._shape.is_fully_defined():
                continue
            stack.append(t.op)
        if op.control_inputs:
            stack.extend([c for c in op.control_inputs if c._id not in needed])
    ops = [needed[i] for i in sorted(needed)]
    for op in ops:
        if op.type == "Placeholder" and op.outputs[0] not in fed:
            raise InvalidArgumentError(
                None, op,
                f"you must feed a value for placeholder {op.name!r} (dtype "
                f"{op.outputs[0].dtype.name}, shape {op.outputs[0].shape}), created at "
                f"{format_location(op.location)}; it is needed by "
                f"{_needing(fetches, op, fed)}")
    return ops


class _Waits:
    """Does an op whose value is known before running wait on some op (control
    dependencies), itself or through the known values it is computed from? Then it and what
    it waits on are kept (lowering folds its value and makes its readers wait). Memoized, and
    without recursion."""

    def __init__(self):
        self.known: dict[int, bool] = {}

    def __call__(self, op: Operation) -> bool:
        known = self.known
        if op._id in known:
            return known[op._id]
        stack = [op]
        while stack:
            top = stack[-1]
            if top._id in known:
                stack.pop()
                continue
            if top.control_inputs:
                known[top._id] = True
                stack.pop()
                continue
            sources = [t.op for t in top.inputs if t._static is not None]
            pending = [s for s in sources if s._id not in known]
            if pending:
                stack.extend(pending)
                continue
            known[top._id] = any(known[s._id] for s in sources)
            stack.pop()
        return known[op._id]


def _needing(fetches, target: Operation, fed) -> str:
    """Which fetch needs `target` (for error messages)."""
    for f in fetches:
        root = f.op if isinstance(f, Tensor) else f
        if isinstance(f, Tensor) and f in fed:
            continue
        seen, stack = set(), [root]
        while stack:
            op = stack.pop()
            if op is target:
                return f"fetch {f.name!r}"
            if op._id in seen:
                continue
            seen.add(op._id)
            stack.extend(t.op for t in op.inputs if t not in fed)
            stack.extend(op.control_inputs)
    return "the fetches"
