"""A reference interpreter for staticgrad graphs, for the differential fuzzing tests.

It evaluates a graph op by op, as the dynamic mode does (`staticgrad/dynamic/dispatch.py`):
each op's shape rule on the concrete input shapes, then its registry kernel
(`kernels.run_kernel`, the op's NumPy expression alone) on the input arrays. It uses nothing
of the compiler: no pruning, specialization, passes, scheduling, code generation, fusion or
memory plan. Floating-point errors raise (`np.errstate(all="raise")`, underflow aside): the
fuzzing generator keeps every value in its op's domain, so one is a generator bug.

Also here: central differences of a scalar through the interpreter, with StopGradient nodes
held at their values (their gradient is zero by definition), and the distance of a point to
the nearest kink of a non-smooth op (relu at 0, floor at an integer, max at a tie...), so that
gradient checks run only where the function is smooth.
"""

from __future__ import annotations

import numpy as np

from staticgrad.ops.kernels import run_kernel
from staticgrad.ops.table import REGISTRY, NodeCtx
from staticgrad.shapes import TensorShape


class ReferenceError_(AssertionError):
    """The interpreter found the graph's static information wrong (a shape or dtype)."""


def topo_ops(fetches) -> list:
    """The ops the fetches need, inputs first (iterative: graphs may be deep)."""
    order, seen = [], set()
    stack = [(t.op, False) for t in reversed(fetches)]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            order.append(op)
            continue
        if op in seen:
            continue
        seen.add(op)
        stack.append((op, True))
        for t in reversed(op.inputs):
            if t.op not in seen:
                stack.append((t.op, False))
    return order


def evaluate(fetches, feeds: dict, frozen: dict | None = None, values: dict | None = None):
    """The values of `fetches` (tensors) given `feeds` ({tensor: array}); `frozen` holds
    tensors whose values are given (for finite differences); `values` receives every tensor
    computed. A fed tensor's producer does not run."""
    values = {} if values is None else values
    values.update(feeds)
    if frozen:
        values.update(frozen)
    with np.errstate(all="raise", under="ignore"):
        for op in topo_ops(fetches):
            if all(t in values for t in op.outputs):
                continue
            for t, v in zip(op.outputs, _run(op, values)):
                values[t] = v
    return [values[t] for t in fetches]


def _run(op, values) -> list:
    if op.type == "Placeholder":
        raise ReferenceError_(f"placeholder {op.name} is not fed")
    if op.type == "Const":
        outs = [np.asarray(op.attrs["value"])]
    else:
        opdef = REGISTRY[op.type]
        arrays = [values[t] for t in op.inputs]
        ctx = NodeCtx(op.type, op.attrs, [TensorShape(a.shape) for a in arrays],
                      [t.dtype for t in op.inputs], arrays, op.name)
        inferred = opdef.infer(ctx)
        ctx.out_shapes = [shape for shape, _ in inferred]
        ctx.out_dtypes = [dtype for _, dtype in inferred]
        outs = run_kernel(opdef, ctx, arrays)
    for t, v in zip(op.outputs, outs):
        if v.dtype != t.dtype.np:
            raise ReferenceError_(f"{op.type} {op.name}: the graph says dtype {t.dtype.name}, "
                                  f"the kernel made {v.dtype}")
        if not t.shape.is_compatible_with(v.shape):
            raise ReferenceError_(f"{op.type} {op.name}: the graph says shape {t.shape}, the "
                                  f"kernel made {v.shape}")
    return outs


# -- kinks ----------------------------------------------------------------------------------------
def _gap_to_integer(x):
    x = np.asarray(x, dtype=np.float64)
    return np.abs(x - np.round(x))


def _pairwise(a, b):
    return np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))


def _top_gap(x, axes):
    """Per reduced slice, the gap between the largest and the second-largest element (and
    the same for the smallest), where the slice has two or more elements."""
    x = np.asarray(x, np.float64)
    if x.ndim == 0:
        return np.array([np.inf])
    axes = tuple(range(x.ndim)) if axes is None else tuple(int(a) % x.ndim for a in axes)
    rest = [i for i in range(x.ndim) if i not in axes]
    flat = np.transpose(x, rest + list(axes)).reshape(
        int(np.prod([x.shape[i] for i in rest], dtype=int)), -1)
    if flat.shape[1] < 2:
        return np.array([np.inf])
    s = np.sort(flat, axis=1)
    return np.minimum(s[:, -1] - s[:, -2], s[:, 1] - s[:, 0])


def _any_gap(x, axes):
    """The smallest gap between two elements of a slice over `axes` (any two may meet in a
    window of a max pool)."""
    x = np.asarray(x, np.float64)
    rest = [i for i in range(x.ndim) if i not in axes]
    flat = np.transpose(x, rest + list(axes)).reshape(
        int(np.prod([x.shape[i] for i in rest], dtype=int)), -1)
    if flat.shape[1] < 2:
        return np.array([np.inf])
    return np.diff(np.sort(flat, axis=1), axis=1)


def _kinks(op, ins) -> np.ndarray | None:
    t = op.type
    if t in ("Abs", "Relu", "Sign", "Elu", "LeakyRelu"):
        return np.abs(ins[0])
    if t == "Relu6":
        return np.minimum(np.abs(ins[0]), np.abs(ins[0] - 6))
    if t == "Floor" or (t == "Cast" and op.outputs[0].dtype.is_integer and
                        np.asarray(ins[0]).dtype.kind == "f"):
        return _gap_to_integer(ins[0])
    if t in ("FloorMod", "FloorDiv") and np.asarray(ins[0]).dtype.kind == "f":
        return _gap_to_integer(np.asarray(ins[0]) / np.asarray(ins[1])) * np.abs(ins[1])
    if t in ("Maximum", "Minimum", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
             "GreaterEqual"):
        return _pairwise(ins[0], ins[1])
    if t == "ClipByValue":
        return np.minimum(_pairwise(ins[0], ins[1]), _pairwise(ins[0], ins[2]))
    if t in ("Max", "Min"):
        return _top_gap(ins[0], op.attrs["axis"])
    if t == "MaxPool":
        return _any_gap(ins[0], [1, 2])
    if t in ("ArgMax", "ArgMin"):
        return _top_gap(ins[0], [op.attrs["axis"]])
    return None


def kink_distance(fetches, values: dict) -> tuple[float, str]:
    """The smallest nonzero distance of an input of a non-smooth float op to its kink, over the
    ops the fetches need (values from `evaluate`), and that op's name. An exact zero is taken as
    a structural tie (relu(x - x), max(x, x)): it stays a tie under any perturbation."""
    best, where = np.inf, ""
    for op in topo_ops(fetches):
        if op.type in ("Placeholder", "Const") or not op.inputs:
            continue
        ins = [values[t] for t in op.inputs]
        if not any(np.asarray(a).dtype.kind == "f" for a in ins):
            continue
        d = _kinks(op, ins)
        if d is None:
            continue
        d = np.asarray(d, np.float64)
        d = d[d > 0]
        if d.size and d.min() < best:
            best, where = float(d.min()), f"{op.type} {op.name}"
    return best, where


# -- finite differences ---------------------------------------------------------------------------
def frozen_stop_gradients(fetches, values: dict) -> dict:
    """{output of each StopGradient the fetches need: its value}, to hold it fixed."""
    return {op.outputs[0]: values[op.outputs[0]] for op in topo_ops(fetches)
            if op.type == "StopGradient"}


def directional_derivative(loss, feeds: dict, x, direction, frozen: dict,
                           eps: float = 1e-6) -> float:
    """d loss / d x along `direction`, by central differences through the interpreter."""
    def at(step):
        moved = dict(feeds)
        moved[x] = feeds[x] + step * direction
        return float(evaluate([loss], moved, frozen)[0])
    return (at(eps) - at(-eps)) / (2 * eps)
