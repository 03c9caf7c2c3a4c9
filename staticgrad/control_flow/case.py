"""`case`: the first of several predicates that holds chooses the function to run (TF1's
tf.case), built as nested conds, so that only the chosen function's ops run.

    y = sg.case([(x < 0, lambda: -x), (x < 1, lambda: x * x)], default=lambda: sg.sqrt(x))

With `exclusive=True`, an Assert checks at run time that at most one predicate holds. With
no `default`, the last pair's function is the default and an Assert checks that its
predicate holds when no other does (TF1's rule); either raises InvalidArgumentError naming
the case's line.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import dtypes as _dt
from ..errors import format_location, user_location
from ..graph import get_default_graph, name_scope
from ..ops import math_ops as M
from ..ops.conversion import convert_to_tensor
from ..ops.debug_ops import Assert
from ..ops.join_ops import stack
from ..ops.math_ops import identity
from ..ops.reduction_ops import reduce_any, reduce_sum
from . import structure as nest
from .cond import cond


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The result of the function paired with the first predicate that is true, else of
    `default` (TF1's tf.case); every function returns the same structure of tensors."""
    where = f"case at {format_location(user_location())}"
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, Mapping) \
        else list(pred_fn_pairs)
    if not pairs:
        raise ValueError(f"{where}: pred_fn_pairs is empty")
    preds = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"{where}: pair {i} must be a (predicate, function) pair, got "
                            f"{pair!r}")
        pred, fn = pair
        if not callable(fn):
            raise TypeError(f"{where}: the function of pair {i} must be callable, got {fn!r}")
        p = convert_to_tensor(pred)
        if p.dtype is not _dt.bool_ or p.shape.ndims not in (None, 0):
            raise TypeError(f"{where}: the predicate of pair {i} must be a bool scalar, got "
                            f"{p.dtype.name}{p.shape}")
        preds.append(p)
    if default is not None and not callable(default):
        raise TypeError(f"{where}: default must be callable, got {default!r}")
    fns = [fn for _, fn in pairs]
    with name_scope(name, "case"):
        checks = []
        if exclusive and len(preds) > 1:
            count = reduce_sum(M.cast(stack(preds), _dt.int32))
            checks.append(Assert(count <= 1, [f"more than one condition evaluated as True "
                                              f"but exclusive=True ({where}); conditions:",
                                              stack(preds)]))
        if default is None:  # the last function is the default, its predicate checked
            *preds, last = preds
            default = fns.pop()
            others = M.logical_or(last, reduce_any(stack(preds))) if preds else last
            checks.append(Assert(others, [f"none of the conditions evaluated as True ({where})"
                                          "; conditions:", stack([*preds, last])]))
        return _chain(list(zip(preds, fns)), default, strict, checks)


def _chain(pairs, default, strict, checks):
    """cond(p0, f0, lambda: cond(p1, f1, ... default)), the outermost op waiting on the
    checks (ops the functions build are in their branches: they do not)."""
    checks = [c for c in checks if c is not None]  # (the dynamic mode checked at once)
    with get_default_graph().control_dependencies(checks):
        if not pairs:  # only the default: its result waits on the checks
            out = default()
            return nest.pack(out, iter([identity(convert_to_tensor(t))
                                        for t in nest.flatten(out)]))
        (pred, fn), rest = pairs[0], pairs[1:]
        return cond(pred, fn, lambda: _chain(rest, default, strict, []), strict=strict)
