"""Vector exp, log, tanh and sigmoid for fused float32 blocks: glibc's libmvec, from numba.

NumPy's float32 exp, log and tanh take 1.3, 1.7 and 2.7 ns an element on this project's
machine (AVX2), sigmoid's four NumPy passes 1.8. glibc ships 8-wide versions of expf, logf
and tanhf in libmvec (`_ZGVdN8v_expf`...); the loops of _vector_kernels.py, compiled by
numba (the `[fast]` extra), call them eight elements at a time: 0.5-0.6 ns an element (tanh
1.0, sigmoid 0.6). W3 of the benchmark suite: benchmarks/README.md.

What stays as NumPy has it:
- **Errors and warnings.** exp and log compute a block here only when no element can
  overflow, underflow or fall outside the domain (exp of x in [-87, 88], log of a normal
  positive finite x), checked first in a loop of its own (0.09 ns an element); otherwise
  NumPy's ufunc computes the block, so its warnings, `np.errstate` and special values are
  NumPy's own. tanh reports nothing in NumPy, for any x (NaN, infinities, subnormals), nor
  does `rt.sigmoid` (1 / (1 + exp(-x)), whose overflow to 0 is expected): computed here
  for every x.
- **Accuracy.** Against a long-double reference on a million or more float32 values (the
  tests): expf 2.5 ulp at worst (NumPy's 2.5), logf 3.7 (3.0), tanhf 1.0 (1.4), sigmoid
  3.5 (3.4). A result may differ from NumPy's in the last bits. float64 is left to NumPy:
  libmvec's double functions are less accurate than NumPy's (3 ulp against 0.5).

Used only where all of this holds, checked once (`available()`, `why_not()`): numba
imports, the machine is x86-64 Linux, the CPU has AVX2 and FMA, glibc's libmvec.so.1 loads,
and the environment variable STATICGRAD_FAST is not "0". The kernels are compiled on first
use (about 5 s) and cached by numba (under a second in a new process); loading libmvec
into the process is their only side effect.

Arrays: 1-D, C-contiguous float32, `out` writeable, of x's length, and either `x` itself or
not overlapping it (a fused kernel's rows); anything else goes to NumPy.
"""

from __future__ import annotations

import os
import platform
import threading

import numpy as np

from .runtime import sigmoid as _numpy_sigmoid

_state: dict = {}  # "kernels" (a dict) or "why" (a str), once _load() has run
_loading = threading.Lock()


def available() -> bool:
    """Are the vector kernels usable here (compiling them the first time)?"""
    return _load() is not None


def why_not() -> str | None:
    """Why the kernels are not used here, or None when they are."""
    _load()
    return _state.get("why")


def exp(x, out):
    """np.exp(x, out=out)."""
    return _call("exp", np.exp, x, out)


def log(x, out):
    """np.log(x, out=out)."""
    return _call("log", np.log, x, out)


def tanh(x, out):
    """np.tanh(x, out=out)."""
    return _call("tanh", np.tanh, x, out)


def sigmoid(x, out):
    """rt.sigmoid(x, out=out): 1 / (1 + exp(-x))."""
    return _call("sigmoid", _numpy_sigmoid, x, out)


def _call(name, numpy_fn, x, out):
    kernels = _state.get("kernels") or _load()
    if kernels is None or not _fits(x, out) or \
            (out is not x and np.may_share_memory(x, out)):
        return numpy_fn(x, out=out)
    check, loop = kernels[name]
    if check is not None and not check(x):
        return numpy_fn(x, out=out)  # NumPy reports (or raises) what it finds
    loop(x, out)
    return out


_F32 = np.dtype(np.float32)


def _fits(x, out) -> bool:
    """Both plain 1-D C-contiguous float32 arrays of one length, `out` writeable: checked
    here, not left to numba's dispatch (which runs a float32 kernel on float64 arrays)."""
    return (type(x) is np.ndarray and type(out) is np.ndarray and x.dtype is _F32
            and out.dtype is _F32 and x.ndim == 1 and out.shape == x.shape
            and x.flags.c_contiguous and out.flags.c_contiguous and out.flags.writeable)


def _load():
    if "kernels" in _state or "why" in _state:
        return _state.get("kernels")
    with _loading:
        if "kernels" not in _state and "why" not in _state:
            try:
                _state["kernels"] = _compile()
            except _Unavailable as e:
                _state["why"] = str(e)
            except Exception as e:  # noqa: BLE001 -- a broken install falls back to NumPy
                _state["why"] = f"compiling the kernels failed: {type(e).__name__}: {e}"
    return _state.get("kernels")


class _Unavailable(Exception):
    pass


def _compile() -> dict:
    if os.environ.get("STATICGRAD_FAST", "") == "0":
        raise _Unavailable("switched off by STATICGRAD_FAST=0")
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise _Unavailable(f"libmvec is glibc's, for x86-64 Linux; this is "
                           f"{platform.system()} on {platform.machine()}")
    try:
        import llvmlite.binding as llvm
        import numba  # noqa: F401
    except ImportError as e:
        raise _Unavailable(f"numba is not installed (pip install 'staticgrad[fast]'): "
                           f"{e}") from None
    features = llvm.get_host_cpu_features()
    if not (features.get("avx2") and features.get("fma")):
        raise _Unavailable("the CPU lacks AVX2 or FMA, which libmvec's 8-wide functions need")
    try:
        llvm.load_library_permanently("libmvec.so.1")  # (again in _vector_kernels: harmless)
    except RuntimeError as e:
        raise _Unavailable(f"glibc's libmvec.so.1 did not load: {e}") from None

    from . import _vector_kernels as k

    return {"exp": (k.exp_in_range, k.exp), "log": (k.log_in_domain, k.log),
            "sigmoid": (None, k.sigmoid), "tanh": (None, k.tanh)}
