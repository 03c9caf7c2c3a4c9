"""Vector exp, log, log1p, tanh and sigmoid for fused float32 blocks: glibc's libmvec, from
numba.

NumPy's float32 exp, log and tanh take 1.3, 1.7 and 2.7 ns an element on this project's
machine (AVX2), sigmoid's four NumPy passes 1.8, rt.log1p's seven steps about twice
libmvec's log1pf. glibc ships 8-wide versions of expf, logf, log1pf and tanhf in libmvec
(`_ZGVdN8v_expf`...); the loops of _vector_kernels.py, compiled by numba (the `[fast]`
extra), call them eight elements at a time: 0.5-0.6 ns an element (tanh 1.0, sigmoid 0.6).
W3 of the benchmark suite: benchmarks/README.md.

What stays as NumPy has it:
- **Errors and warnings.** A block is computed here only where NumPy would report nothing
  and produce no NaN, checked first in a loop of its own (0.09 ns an element): exp of x in
  [-87, 88], zero or normal (NumPy's SIMD exp reports underflow for subnormal x), log of a
  normal positive finite x, log1p of a finite x above -1, zero or normal, tanh and sigmoid
  (`rt.sigmoid`'s 1 / (1 + exp(-x)), whose overflow to 0 is expected and not reported) of
  anything but NaN. Otherwise NumPy's ufunc (log1p: `rt.log1p`'s NumPy steps) computes the
  block, so warnings, `np.errstate` and special values (NaN payloads and signs, signalling
  NaNs) are NumPy's own.
- **Accuracy.** Against a long-double reference on a million or more float32 values (the
  tests): expf 2.5 ulp at worst (NumPy's 2.5), logf 3.7 (3.0), log1pf 1.8 (rt.log1p's
  3.2), tanhf 1.0 (1.4), sigmoid 3.5 (3.4). A result may differ from NumPy's in the last
  bits. float64 is left to NumPy: libmvec's double functions are less accurate than NumPy's
  (3 ulp against 0.5).

Used only where all of this holds, checked once (`available()`, `why_not()`): numba
imports, with its JIT on and compiling for this CPU (no NUMBA_DISABLE_JIT, NUMBA_CPU_NAME or
NUMBA_CPU_FEATURES), the machine is x86-64 Linux, the CPU has AVX2 and FMA, glibc's
libmvec.so.1 loads, the kernels give NumPy's results on known values, and the environment
variable STATICGRAD_FAST is not 0, false, no or off. The kernels are compiled on first use
(about 10 s, under the session's compile lock) and cached by numba (about a second in a new
process); where numba can write no cache, they are not used (`why_not()` says so). Loading
libmvec into the process is their only other side effect.

Arrays: 1-D, C-contiguous float32, `out` writeable, of x's length, and either `x` itself or
not overlapping it (a fused kernel's rows); anything else goes to NumPy.
"""

from __future__ import annotations

import logging
import os
import platform
import threading

import numpy as np

from ..._namespace import missing_name, public_dir
from ...runtime import log1p as _numpy_log1p
from ...runtime import sigmoid as _numpy_sigmoid

_state: dict = {}  # "kernels" (a dict) or "why" (a str), once _load() has run
_loading = threading.Lock()

# (sg.runtime_fast: a namespace of its own; see staticgrad/_namespace.py)
__all__ = ["available", "why_not", "exp", "log", "log1p", "tanh", "sigmoid"]
__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.runtime_fast", None, globals())


def available() -> bool:
    """Are the vector kernels usable here (compiling them the first time)?"""
    return _load() is not None


def why_not() -> str | None:
    """Why the kernels are not used here, or None when they are."""
    _load()
    return _state.get("why")


# each function's NumPy form: what computes a block the kernels do not take
_NUMPY = {"exp": np.exp, "log": np.log, "log1p": _numpy_log1p, "tanh": np.tanh,
          "sigmoid": _numpy_sigmoid}


def exp(x, out):
    """np.exp(x, out=out)."""
    return _call("exp", x, out)


def log(x, out):
    """np.log(x, out=out)."""
    return _call("log", x, out)


def log1p(x, out):
    """rt.log1p(x, out=out): log(1 + x), accurate for small |x|."""
    return _call("log1p", x, out)


def tanh(x, out):
    """np.tanh(x, out=out)."""
    return _call("tanh", x, out)


def sigmoid(x, out):
    """rt.sigmoid(x, out=out): 1 / (1 + exp(-x))."""
    return _call("sigmoid", x, out)


def _call(name, x, out):
    numpy_fn = _NUMPY[name]
    kernels = _state.get("kernels") or _load()
    if kernels is None or not _fits(x, out) or \
            (out is not x and np.may_share_memory(x, out)):
        return numpy_fn(x, out=out)
    check, kind = kernels[name]
    if not check(x):
        return numpy_fn(x, out=out)  # NumPy reports (or raises) what it finds
    kernels["apply"](x, out, kind)
    return out


_F32 = np.dtype(np.float32)


def _fits(x, out) -> bool:
    """Both plain 1-D C-contiguous float32 arrays of one length, `out` writeable: what the
    kernels take, checked here (numba's dispatch would raise TypeError for the rest, and
    nothing would check the lengths)."""
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
    if os.environ.get("STATICGRAD_FAST", "").strip().lower() in ("0", "false", "no", "off"):
        raise _Unavailable(f"switched off by STATICGRAD_FAST={os.environ['STATICGRAD_FAST']}")
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise _Unavailable(f"libmvec is glibc's, for x86-64 Linux; this is "
                           f"{platform.system()} on {platform.machine()}")
    try:
        import llvmlite.binding as llvm
        import numba
    except ImportError as e:
        raise _Unavailable(f"numba is not installed (pip install 'staticgrad[fast]'): "
                           f"{e}") from None
    features = llvm.get_host_cpu_features()
    if not (features.get("avx2") and features.get("fma")):
        raise _Unavailable("the CPU lacks AVX2 or FMA, which libmvec's 8-wide functions need")
    if numba.config.DISABLE_JIT:
        raise _Unavailable("numba's JIT is off (NUMBA_DISABLE_JIT)")
    if numba.config.CPU_NAME or numba.config.CPU_FEATURES:
        # code for another CPU would not pass the eight floats as libmvec's AVX2 functions
        # take them (in one ymm register): half of each eight would come back wrong
        raise _Unavailable("numba compiles for a CPU other than this one (NUMBA_CPU_NAME or "
                           "NUMBA_CPU_FEATURES is set)")
    try:
        llvm.load_library_permanently("libmvec.so.1")  # (again in _vector_kernels: harmless)
    except RuntimeError as e:
        raise _Unavailable(f"glibc's libmvec.so.1 did not load: {e}") from None

    # numba compiles the kernels as their module is imported, or loads them from its cache;
    # a compile (the first in a new install: about 10 s) says so rather than pause in silence
    notice = threading.Timer(NOTICE_AFTER, logging.getLogger("staticgrad").warning,
                             [COMPILING_NOTICE])
    notice.daemon = True
    notice.start()
    try:
        from . import _vector_kernels as k

        kernels = {"exp": (k.exp_in_range, k.EXP), "log": (k.log_in_domain, k.LOG),
                   "log1p": (k.log1p_in_domain, k.LOG1P),
                   "sigmoid": (k.no_nan, k.SIGMOID), "tanh": (k.no_nan, k.TANH),
                   "apply": k.apply}
        _known_answers(kernels)
    finally:
        notice.cancel()
    return kernels


NOTICE_AFTER = 1.0  # seconds: loading the cached kernels takes less
COMPILING_NOTICE = ("staticgrad: compiling the vector-math kernels of the [fast] extra with "
                    "numba, once (about 10 s; numba caches them for later processes)")


def _known_answers(kernels) -> None:
    """Every kernel on 27 values (three full eights and a padded three), against NumPy: the
    last guard against a build whose calls into libmvec do not work as they should."""
    x = np.linspace(-3.0, 3.0, 27, dtype=np.float32)
    for name, numpy_fn in _NUMPY.items():
        arg = np.abs(x) + np.float32(0.5) if name in ("log", "log1p") else x
        got = np.empty_like(arg)
        kernels["apply"](arg, got, kernels[name][1])
        want = numpy_fn(arg)
        if not np.allclose(got, want, rtol=1e-5, atol=0):
            raise _Unavailable(f"the {name} kernel gave wrong results on known values "
                               f"({got[:3]}... against {want[:3]}...)")
