"""Which nodes the CUDA backend computes with its templates' kernels (reduce.py), and with
what plan: reductions (Sum, Mean, Max, Min, Prod, All, Any, ArgMax, ArgMin), Softmax,
LogSoftmax and SoftmaxCrossEntropyWithLogits, of known shapes and of the kernel dtypes.

The sparse cross-entropy stays with CuPy (library.py): a label out of range must raise, as
the NumPy reference does, where the template's kernel (as TF1's GPU kernel) gives NaN.
"""

from __future__ import annotations

from ...ir import Node
from .reduce import KernelPlan, reduce_plan, softmax_plan, xent_plan

REDUCTIONS = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax",
                        "ArgMin"})
SOFTMAX = frozenset({"Softmax", "LogSoftmax"})
DTYPES = frozenset({"float32", "float64", "int32", "int64", "bool"})


def has_template(node: Node) -> bool:
    """Would `template_plan` make a plan for `node` (not None)?"""
    return template_plan(node, lambda base: base) is not None


def template_plan(node: Node, reserve, load: str | None = None,
                  arrays: list | None = None) -> KernelPlan | None:
    """The plan of `node`'s kernels, or None when no template computes it; `reserve(base)`
    makes the kernels' name prefix (fresh, and with `_final` after it also free). A
    reduction's input may be computed where it is read: `load` and the `arrays` it reads
    (see reduce_plan)."""
    kind = node.type
    if kind not in REDUCTIONS and kind not in SOFTMAX and \
            kind != "SoftmaxCrossEntropyWithLogits":
        return None
    values = (*node.inputs, *node.outputs)
    if any(not v.shape.is_fully_defined() or v.dtype.name not in DTYPES for v in values):
        return None
    x = node.inputs[0]
    shape, dtype = tuple(x.shape.dims), x.dtype.name
    if kind in REDUCTIONS:
        if kind in ("ArgMax", "ArgMin"):
            if not shape or shape[node.attrs["axis"] % len(shape)] == 0:
                return None  # (an empty axis: the reference raises)
            axes, keepdims = (node.attrs["axis"] % len(shape),), False
        else:
            axis = node.attrs["axis"]
            axes = tuple(range(len(shape))) if axis is None else \
                tuple(sorted({a % len(shape) for a in axis})) if shape else ()
            keepdims = node.attrs["keepdims"]
            if kind in ("Max", "Min") and any(shape[a] == 0 for a in axes):
                return None  # (the reference raises)
        return reduce_plan(reserve("reduce"), kind, shape, axes, keepdims, dtype,
                           node.outputs[0].dtype.name, load, arrays)
    if kind in SOFTMAX:
        if dtype not in ("float32", "float64") or not shape:
            return None
        return softmax_plan(reserve(kind.lower()), kind, shape, node.attrs["axis"], dtype)
    logits = node.inputs[1]
    if logits.dtype.name not in ("float32", "float64") or not logits.shape.dims:
        return None
    return xent_plan(reserve("xent"), kind, tuple(logits.shape.dims), logits.dtype.name,
                     axis=node.attrs["axis"])
