"""`repr` of dynamic tensors in PyTorch's format, so that course material prints what the
articles show: `tensor([0.5000, 0.5000])`, `tensor(-36.)`, `tensor([3.0000e-01, 3.0000e+00])`,
`tensor([1., 2.], requires_grad=True)`, `tensor(6., grad_fn=<MulBackward0>)`.

The rules are PyTorch's `_tensor_str`: floats whose finite non-zero values are all integers
print as `1.`; otherwise with 4 decimals, or in scientific notation when the largest and
smallest magnitudes differ by more than 1000x (or exceed 1e8, or fall below 1e-4); every
element is padded to one width; rows wrap at 80 columns; more than 1000 elements are
summarized with `...`.
"""

from __future__ import annotations

import math

import numpy as np

PRECISION = 4
LINEWIDTH = 80
THRESHOLD = 1000
EDGEITEMS = 3
DEFAULT_DTYPES = ("float32", "int64", "bool")


class _Formatter:
    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        magnitudes = np.abs(finite)
        lo, hi = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
            texts = ([f"{v:.{PRECISION}e}" for v in finite.tolist()] if self.sci_mode
                     else [f"{v:.0f}." for v in finite.tolist()])
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
            fmt = "e" if self.sci_mode else "f"
            texts = [f"{v:.{PRECISION}{fmt}}" for v in finite.tolist()]
        self.max_width = max(len(t) for t in texts)

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{PRECISION}f}"
        return text.rjust(self.max_width)


def _summary(values: np.ndarray) -> np.ndarray:
    """The values that a summarized print shows (the first and last EDGEITEMS per axis)."""
    if values.ndim == 0:
        return values.reshape(1)
    if values.shape[0] > 2 * EDGEITEMS:
        parts = [values[:EDGEITEMS], values[-EDGEITEMS:]]
    else:
        parts = [values]
    return np.concatenate([_summary(row).reshape(-1) for part in parts for row in part] or
                          [np.zeros(0, values.dtype)])


def _body(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if values.ndim == 0:
        return fmt.format(values.item())
    n = values.shape[0]
    cut = summarize and n > 2 * EDGEITEMS
    rows = list(range(EDGEITEMS)) + [None] + list(range(n - EDGEITEMS, n)) if cut \
        else list(range(n))
    if values.ndim == 1:
        items = [" ..." if i is None else fmt.format(values[i].item()) for i in rows]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.max_width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    slices = ["..." if i is None else _body(values[i], indent + 1, summarize, fmt) for i in rows]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def tensor_repr(values: np.ndarray, dtype_name: str, grad_fn_name=None,
                requires_grad=False) -> str:
    """`tensor(...)` for an array, with PyTorch's suffixes (dtype, grad_fn, requires_grad)."""
    prefix = "tensor("
    suffixes = []
    if values.size == 0:
        body = "[]"
        if values.shape != (0,):
            suffixes.append(f"size={tuple(values.shape)}")
    else:
        summarize = values.size > THRESHOLD
        fmt = _Formatter(_summary(values) if summarize else values)
        body = _body(values, len(prefix), summarize, fmt)
    if dtype_name not in DEFAULT_DTYPES:
        suffixes.append(f"dtype=dy.{dtype_name}")
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"
