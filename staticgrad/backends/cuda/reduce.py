"""CUDA kernels of the reductions and the softmax family, as plans of launches.

A plan holds the CUDA C of its kernels (extern "C", named from the caller's prefix), the
launches that run them in order on one stream, the scratch arrays they need and the shapes
and dtypes of what they write. Shapes are concrete: extents and strides are integer literals
of the kernel text, so its index arithmetic divides by constants.

    plan = reduce_plan("y", "Sum", (1024, 4096), (1,), False, "float32", "float32")
    plan.launches  ->  [Launch(kernel="y", grid=1024, block=256, shared=0, args=["in0", "out0"])]

The answers are those of the ops' NumPy reference kernels (ops/reduction_ops.py, runtime's
softmax family): NaN wins in Max, Min, ArgMax and ArgMin; sums and means of floats add in
double; integer sums and products wrap in the output's width.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...codegen.c_expr import C_TYPES
from ...codegen.templates import render_template

__all__ = ["KernelPlan", "Launch", "Scratch", "reduce_plan", "softmax_plan", "xent_plan"]


@dataclasses.dataclass
class Launch:
    kernel: str             # the __global__ function's name (extern "C")
    grid: int               # blocks (1-D)
    block: int              # threads a block (1-D)
    shared: int             # dynamic shared-memory bytes (0 if none)
    args: list[str]         # symbolic arguments in order: "in0"..., "out0"..., "scratch0"...


@dataclasses.dataclass
class Scratch:
    shape: tuple[int, ...]
    dtype: str              # NumPy dtype name, e.g. "float32"


@dataclasses.dataclass
class KernelPlan:
    source: str             # CUDA C of every kernel it launches
    launches: list[Launch]  # run in order on one stream
    scratch: list[Scratch]  # temporaries the launches use (allocated by the host, uninitialised)
    outputs: list[tuple[tuple[int, ...], str]]  # (shape, NumPy dtype name) of out0, out1...


# -- launch sizes, for an H100/H200 (132 multiprocessors) -----------------------------------------
BLOCK = 256            # threads of a reduction's block
TARGET_BLOCKS = 1024   # about 8 resident blocks on each multiprocessor
MIN_PER_THREAD = 32    # elements a thread reduces before splitting a reduction across blocks

# C types of accumulators that C_TYPES does not name, by NumPy dtype
_SCRATCH_DTYPES = {c: d for d, c in C_TYPES.items()} | {"unsigned int": "uint32",
                                                       "unsigned long long": "uint64"}
_REDUCE_OPS = ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin")


# -- what each reduction accumulates ---------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Algebra:
    acc: str        # C type of the accumulator (the compared value's for ArgMax, ArgMin)
    identity: str   # C expression: the accumulator before any element
    combine: str    # sgr_ helper combining two accumulators (reduce_helpers.cu.j2)
    arg: str | None = None  # "argmax" or "argmin": the accumulator is a value and its index


def _c_type(dtype: str) -> str:
    if dtype not in C_TYPES or dtype == "float16":
        raise ValueError(f"the CUDA reductions take float32, float64, integers and bool, "
                         f"not {dtype}")
    return C_TYPES[dtype]


def _infinity(c_type: str, sign: int) -> str:
    if c_type == "float":
        return f"{'-' if sign < 0 else ''}__int_as_float(0x7f800000)"
    return f"{'-' if sign < 0 else ''}__longlong_as_double(0x7ff0000000000000LL)"


def _nan(c_type: str) -> str:
    if c_type == "float":
        return "__int_as_float(0x7fffffff)"
    return "__longlong_as_double(0x7fffffffffffffffLL)"


def _extreme(dtype: str, c_type: str, largest: bool) -> str:
    """The largest (or lowest) value of a dtype as a C expression: infinity for floats."""
    if np.dtype(dtype).kind == "f":
        return _infinity(c_type, 1 if largest else -1)
    if np.dtype(dtype).kind == "b":
        return "true" if largest else "false"
    info = np.iinfo(dtype)
    value = int(info.max if largest else info.min)
    if value == -2**63:
        return f"({c_type})(-9223372036854775807LL - 1)"  # its literal would be unsigned
    return f"({c_type})({value}LL)"


def _algebra(op_type: str, in_dtype: str, out_dtype: str) -> _Algebra:
    out_kind, width = np.dtype(out_dtype).kind, np.dtype(out_dtype).itemsize
    if op_type in ("Sum", "Prod"):
        identity = "0" if op_type == "Sum" else "1"
        combine = "sgr_sum" if op_type == "Sum" else "sgr_prod"
        if out_kind == "f":
            return _Algebra("double", identity, combine)
        # unsigned: wraps in the output's width as NumPy's integer sum does, with no C overflow
        return _Algebra("unsigned long long" if width == 8 else "unsigned int", identity, combine)
    if op_type == "Mean":
        return _Algebra("double", "0", "sgr_sum")  # NumPy's mean of integers is float64's too
    if op_type in ("Max", "Min"):
        acc = _c_type(out_dtype)
        return _Algebra(acc, _extreme(out_dtype, acc, largest=op_type == "Min"),
                        "sgr_max" if op_type == "Max" else "sgr_min")
    if op_type in ("All", "Any"):
        return _Algebra("bool", "true" if op_type == "All" else "false",
                        "sgr_all" if op_type == "All" else "sgr_any")
    value = _c_type(in_dtype)
    return _Algebra(value, f"({value})0", "", arg=op_type.lower())


def _finalize(op_type: str, out_dtype: str, count: int) -> str:
    """The output element made of the accumulator `acc` (and index `at`)."""
    out_c = _c_type(out_dtype)
    if op_type in ("ArgMax", "ArgMin"):
        return f"({out_c})at"
    if op_type == "Mean" and count == 0:  # NumPy's NaN, and the integer x86 makes of it
        return _nan(out_c) if out_c in ("float", "double") else _extreme(out_dtype, out_c, False)
    if op_type == "Mean":
        return f"({out_c})(acc / {float(count)!r})"
    return f"({out_c})acc"


# -- the iteration space ---------------------------------------------------------------------------
def _merged_dims(shape: tuple[int, ...], axes: tuple[int, ...]):
    """(kept, reduced): the input's dims as (extent, stride) pairs, outermost first, with
    extents of 1 dropped and neighbours of one kind merged."""
    strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]
    runs: list[list] = []  # [extent, stride, reduced]
    for i, (extent, stride) in enumerate(zip(shape, strides)):
        if extent == 1:
            continue
        if runs and runs[-1][2] == (i in axes):
            runs[-1][0] *= extent
            runs[-1][1] = stride
        else:
            runs.append([extent, stride, i in axes])
    kept = [(e, s) for e, s, r in runs if not r]
    reduced = [(e, s) for e, s, r in runs if r]
    innermost_reduced = bool(runs) and runs[-1][2]
    return kept, reduced, innermost_reduced


def _drop_blank_lines(kernel: str) -> str:
    """The kernel's text without the blank lines that its template's macros leave."""
    return "".join(line + "\n" for line in kernel.splitlines() if line.strip())


def _pow2_floor(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


@dataclasses.dataclass(frozen=True)
class _Pass:
    """How one reduction kernel spreads its work: X outputs a block, Y threads an output (in
    one block), S blocks an output, each reducing a chunk of `chunk` elements. order "r":
    the Y threads of an output are neighbours (the reduced elements are contiguous); "o":
    the X threads at one y are (the outputs are)."""
    order: str
    X: int
    Y: int
    S: int
    chunk: int

    def grid(self, n_out: int) -> int:
        return -(-n_out // self.X) * self.S


def _choose_pass(n_out: int, n_reduced: int, innermost_reduced: bool, innermost_kept: int,
                 may_split: bool) -> _Pass:
    """Threads along the reduced elements when they are contiguous, along the outputs when
    they are; several blocks an output when the outputs alone would leave the GPU idle."""
    if innermost_reduced:
        Y = min(_pow2_floor(n_reduced // 4), BLOCK)
        X = BLOCK // Y
        while X > 1 and X // 2 >= n_out and (X // 2) * Y >= 32:  # shuffles need whole warps
            X //= 2
        order = "r"
    else:
        x_min = min(32, innermost_kept, n_out)
        Y = min(_pow2_floor(n_reduced // 4), _pow2_floor(BLOCK // max(x_min, 1)))
        X = max(BLOCK // Y // x_min * x_min, x_min, 1)
        X = min(X, max(n_out, 32 // Y, 1))
        order = "o"
    tiles = -(-n_out // X)
    S = 1
    if may_split and tiles * 4 < TARGET_BLOCKS:
        S = min(TARGET_BLOCKS // tiles, n_reduced // (Y * MIN_PER_THREAD))
    if S < 2:
        return _Pass(order, X, Y, 1, n_reduced)
    chunk = -(-n_reduced // S)
    chunk = -(-chunk // Y) * Y
    return _Pass(order, X, Y, -(-n_reduced // chunk), chunk)


def _render_pass(kernel: str, comment: str, params: list[str], p: _Pass, kept, reduced,
                 n_out: int, n_reduced: int, algebra: _Algebra, element: str, element_index: str,
                 finalize: str | None, index_t: str) -> str:
    if p.S > 1:  # partials: [O, S] when an output's threads are neighbours, else [S, O]
        partial = f"o * {p.S} + split" if p.order == "r" else f"split * {n_out} + o"
    else:
        partial = None
    return _drop_blank_lines(render_template(
        "cuda/reduce.cu.j2", kernel=kernel, comment=comment, params=params, order=p.order,
        X=p.X, Y=p.Y, S=p.S, chunk=p.chunk, O=n_out, R=n_reduced, kept=kept, reduced=reduced,
        acc_t=algebra.acc, identity=algebra.identity, combine=algebra.combine, arg=algebra.arg,
        element=element, element_index=element_index, partial=partial, finalize=finalize,
        index_t=index_t))


def _reduced_shape(in_shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else int(d) for i, d in enumerate(in_shape))
    return tuple(int(d) for i, d in enumerate(in_shape) if i not in axes)


def reduce_plan(name: str, op_type: str, in_shape: tuple, axes: tuple, keepdims: bool,
                in_dtype: str, out_dtype: str, load: str | None = None,
                arrays: list[tuple[str, str]] | None = None) -> KernelPlan:
    """The kernels of a reduction op (Sum, Mean, Max, Min, Prod, All, Any, ArgMax, ArgMin) of
    in0, of shape `in_shape`, over the sorted non-negative `axes` (none: a copy or cast).

    `load`, a C expression of the element at flat input index `idx` (a long long), replaces
    `in0[idx]`; it reads the pointers `arrays` names, (C type, name) pairs, the kernel's
    inputs in order (by default in0 alone, of in_dtype: with `load`, in0 may be of any type,
    or be no input at all).

    >>> plan = reduce_plan("total", "Sum", (1 << 24,), (0,), False, "float32", "float32")
    >>> [(launch.kernel, launch.grid, launch.block) for launch in plan.launches]
    [('total', 1024, 256), ('total_final', 1, 256)]
    """
    if op_type not in _REDUCE_OPS:
        raise ValueError(f"reduce_plan does not know the op type {op_type!r}")
    in_shape = tuple(int(d) for d in in_shape)
    axes = tuple(int(a) for a in axes)
    if list(axes) != sorted(set(axes)) or any(not 0 <= a < len(in_shape) for a in axes):
        raise ValueError(f"{op_type}: axes {axes} must be sorted, distinct and in "
                         f"[0, {len(in_shape)})")
    if op_type in ("ArgMax", "ArgMin") and (len(axes) != 1 or out_dtype not in ("int32",
                                                                                "int64")):
        raise ValueError(f"{op_type} reduces one axis into int32 or int64, got axes {axes} "
                         f"and {out_dtype}")
    in_c, out_c = _c_type(in_dtype), _c_type(out_dtype)
    arrays = [(f"const {in_c}*", "in0")] if arrays is None else list(arrays)
    for c_type, arg in arrays:
        if not arg.isidentifier() or not c_type.rstrip().endswith("*"):
            raise ValueError(f"input {(c_type, arg)} is no (pointer type, name) pair")
    out_shape = _reduced_shape(in_shape, axes, keepdims)
    n_out = math.prod(out_shape)
    n_reduced = math.prod(in_shape[a] for a in axes)
    if n_reduced == 0 and n_out and op_type in ("Max", "Min", "ArgMax", "ArgMin"):
        raise ValueError(f"{op_type} of an empty axis: shape {in_shape}, axes {axes} (NumPy "
                         "has no identity for it either)")
    outputs = [(out_shape, out_dtype)]
    comment = (f"{name}: {op_type} of {in_dtype}{list(in_shape)} over axes {list(axes)} -> "
               f"{out_dtype}{list(out_shape)}")
    helpers = render_template("cuda/reduce_helpers.cu.j2")
    if n_out == 0:
        return KernelPlan(helpers, [], [], outputs)

    algebra = _algebra(op_type, in_dtype, out_dtype)
    kept, reduced, innermost_reduced = _merged_dims(in_shape, axes)
    if n_reduced == 0:
        reduced = []
    # 32-bit index arithmetic where every index fits (with room for a chunk's overshoot)
    index_t = "int" if max(math.prod(in_shape), n_out) < 2**31 - 2**24 else "long long"
    p1 = _choose_pass(n_out, n_reduced, innermost_reduced, kept[-1][0] if kept else 1,
                      may_split=True)
    load = load or "in0[idx]"
    element = f"({algebra.acc})({load})"
    inputs = [f"{c_type} __restrict__ {arg}" for c_type, arg in arrays]
    in_args = [arg for _, arg in arrays]
    finalize = _finalize(op_type, out_dtype, n_reduced)
    if p1.S == 1:
        source = _render_pass(name, comment, inputs + [f"{out_c}* __restrict__ out0"], p1, kept,
                              reduced, n_out, n_reduced, algebra, element, "r", finalize,
                              index_t)
        launch = Launch(name, p1.grid(n_out), p1.X * p1.Y, 0, in_args + ["out0"])
        return KernelPlan(helpers + "\n" + source, [launch], [], outputs)

    # two passes: partials of S chunks into scratch, then a pass over them
    partials = [(algebra.acc, "scratch0")] + ([("long long", "scratch1")] if algebra.arg else [])
    scratch = [Scratch((n_out * p1.S,), _SCRATCH_DTYPES[c_type]) for c_type, _ in partials]
    first = _render_pass(name, comment + f" (partials of {p1.S} chunks)",
                         inputs + [f"{c_type}* __restrict__ {arg}" for c_type, arg in partials],
                         p1, kept, reduced, n_out, n_reduced, algebra, element, "r", None,
                         index_t)
    if p1.order == "r":  # partials [O, S]
        kept2, reduced2, inner2, inner_kept2 = [(n_out, p1.S)], [(p1.S, 1)], True, 1
    else:                # partials [S, O]
        kept2, reduced2, inner2, inner_kept2 = [(n_out, 1)], [(p1.S, n_out)], False, n_out
    kept2 = [d for d in kept2 if d[0] > 1]
    p2 = _choose_pass(n_out, p1.S, inner2, inner_kept2, may_split=False)
    final_params = [f"const {c_type}* __restrict__ {arg}" for c_type, arg in partials] + [
        f"{out_c}* __restrict__ out0"]
    second = _render_pass(f"{name}_final", comment + " (the partials combined)", final_params,
                          p2, kept2, reduced2, n_out, p1.S, algebra, "scratch0[idx]",
                          "scratch1[idx]", finalize, "int")
    scratch_args = [arg for _, arg in partials]
    launches = [Launch(name, p1.grid(n_out), p1.X * p1.Y, 0, in_args + scratch_args),
                Launch(f"{name}_final", p2.grid(n_out), p2.X * p2.Y, 0, scratch_args + ["out0"])]
    return KernelPlan("\n".join([helpers, first, second]), launches, scratch, outputs)


# -- softmax and the cross-entropies --------------------------------------------------------------
def _row_layout(n: int) -> tuple[int, int, int]:
    """(G, threads, E) for rows of n contiguous elements: G threads a row (a part of a warp up
    to 1024 elements, else a block), `threads` a block, E elements each thread keeps in
    registers (0: it reads them again from memory)."""
    if n == 0:
        return 1, 128, 0
    if n <= 1024:
        G = min(32, 1 << (max(-(-n // 4), 1) - 1).bit_length())
    else:
        G = min(1024, 1 << (-(-n // 16) - 1).bit_length())
    E = -(-n // G)
    return G, max(G, 128), E if E <= (32 if G <= 32 else 16) else 0


def _column_layout(rows: int, n: int, inner: int) -> tuple[int, int, int]:
    """(G, X, 0) for rows of n elements `inner` apart: X neighbouring rows a block, a thread
    each where they are many, else G threads a row (a shared-memory tree combines them)."""
    if rows >= 32 * BLOCK * 4:  # enough to fill the GPU at a thread a row
        return 1, BLOCK, 0
    X = min(32, inner)
    G = min(_pow2_floor(n // 8), _pow2_floor(BLOCK // X))
    return G, max(X, BLOCK // G // X * X), 0


def _softmax_source(kernel: str, comment: str, mode: str, shape: tuple[int, ...], axis: int,
                    dtype: str, params: list[str], backprop: bool = False) -> tuple[str, Launch]:
    val_t = C_TYPES[dtype]
    n = shape[axis]
    rows = math.prod(shape) // n if n else math.prod(shape[:axis] + shape[axis + 1:])
    inner = math.prod(shape[axis + 1:])
    if inner == 1:
        G, threads, E = _row_layout(n)
        X, layout, grid = threads // G, "rows", -(-rows // (threads // G))
        # a row of more than a warp is a block's: the template's shared parts[G // 32] hold
        # one row's warps (two rows a block would write past them and read each other's)
        if G > 32 and (X != 1 or G % 32):
            raise AssertionError(f"softmax rows layout: {G} threads a row, {X} rows a block")
    else:
        G, X, E = _column_layout(rows, n, inner)
        threads, layout, grid = X * G, "columns", -(-rows // X)
    source = _drop_blank_lines(render_template(
        "cuda/softmax.cu.j2", kernel=kernel, comment=comment, mode=mode, layout=layout, G=G,
        threads=threads, E=E, X=X, N=n, ROWS=rows, INNER=inner, val_t=val_t, params=params,
        logits="in0" if mode in ("softmax", "log_softmax") else "in1", backprop=backprop,
        neg_inf=_infinity(val_t, -1), nan=_nan(val_t)))
    args = [p.split()[-1] for p in params]
    return source, Launch(kernel, grid, threads, 0, args)


def _float_type(op_type: str, dtype: str) -> str:
    if dtype not in ("float32", "float64"):
        raise ValueError(f"{op_type} on CUDA takes float32 or float64, not {dtype}")
    return C_TYPES[dtype]


def softmax_plan(name: str, op_type: str, shape: tuple, axis: int, dtype: str) -> KernelPlan:
    """The kernel of Softmax or LogSoftmax of in0 along `axis`, into out0 of the same shape:
    a warp's part (rows up to 1024 elements) or a block a row when the axis is the last, a
    thread a row otherwise.

    >>> softmax_plan("p", "Softmax", (64, 1000), -1, "float32").launches[0].block
    128
    """
    modes = {"Softmax": "softmax", "LogSoftmax": "log_softmax"}
    if op_type not in modes:
        raise ValueError(f"softmax_plan does not know the op type {op_type!r}")
    val_t = _float_type(op_type, dtype)
    shape = tuple(int(d) for d in shape)
    if not shape or not -len(shape) <= axis < len(shape):
        raise ValueError(f"{op_type}: axis {axis} is out of range for shape {shape}")
    axis = int(axis) % len(shape)
    outputs = [(shape, dtype)]
    helpers = render_template("cuda/reduce_helpers.cu.j2")
    if math.prod(shape) == 0:
        return KernelPlan(helpers, [], [], outputs)
    comment = f"{name}: {op_type} of {dtype}{list(shape)} along axis {axis}"
    params = [f"const {val_t}* __restrict__ in0", f"{val_t}* __restrict__ out0"]
    source, launch = _softmax_source(name, comment, modes[op_type], shape, axis, dtype, params)
    return KernelPlan(helpers + "\n" + source, [launch], [], outputs)


def xent_plan(name: str, op_type: str, logits_shape: tuple, dtype: str,
              labels_dtype: str | None = None, axis: int = -1, *,
              backprop: bool = False) -> KernelPlan:
    """The kernel of SoftmaxCrossEntropyWithLogits or SparseSoftmaxCrossEntropyWithLogits. As
    the ops take them: in0 the labels (of the logits' shape and dtype, or integer class
    indices of shape logits_shape[:-1] in `labels_dtype`, int32 unless given), in1 the
    logits; out0 the loss, of the logits' shape without `axis` (the sparse op's is the last).
    A sparse label outside [0, classes) gives NaN, as TF1's GPU kernel does (NumPy's
    reference raises). With `backprop`, out1 is also the loss's gradient with respect to the
    logits, softmax(logits) - labels, made in the same kernel.

    >>> plan = xent_plan("loss", "SparseSoftmaxCrossEntropyWithLogits", (32, 10), "float32")
    >>> plan.outputs
    [((32,), 'float32')]
    """
    val_t = _float_type(op_type, dtype)
    shape = tuple(int(d) for d in logits_shape)
    if op_type == "SoftmaxCrossEntropyWithLogits":
        mode, label_t = "xent", val_t
        if labels_dtype not in (None, dtype):
            raise ValueError(f"{op_type}: labels of {labels_dtype} but logits of {dtype}")
    elif op_type == "SparseSoftmaxCrossEntropyWithLogits":
        mode, labels_dtype = "sparse_xent", labels_dtype or "int32"
        if np.dtype(labels_dtype).kind not in "iu" or labels_dtype not in C_TYPES:
            raise ValueError(f"{op_type}: labels must be integers, not {labels_dtype}")
        label_t, axis = C_TYPES[labels_dtype], -1
    else:
        raise ValueError(f"xent_plan does not know the op type {op_type!r}")
    if not shape or not -len(shape) <= axis < len(shape):
        raise ValueError(f"{op_type}: axis {axis} is out of range for logits of shape {shape}")
    axis = int(axis) % len(shape)
    loss_shape = shape[:axis] + shape[axis + 1:]
    outputs = [(loss_shape, dtype)] + ([(shape, dtype)] if backprop else [])
    helpers = render_template("cuda/reduce_helpers.cu.j2")
    if math.prod(loss_shape) == 0:
        return KernelPlan(helpers, [], [], outputs)
    comment = f"{name}: {op_type} of {dtype} logits{list(shape)} along axis {axis}"
    params = [f"const {label_t}* __restrict__ in0", f"const {val_t}* __restrict__ in1",
              f"{val_t}* __restrict__ out0"] + ([f"{val_t}* __restrict__ out1"] if backprop
                                                else [])
    source, launch = _softmax_source(name, comment, mode, shape, axis, dtype, params, backprop)
    return KernelPlan(helpers + "\n" + source, [launch], [], outputs)
