"""What the CUDA backend's generated host code calls, as `crt`: compiled kernels, the copies
between host and GPU memory, and the library of ops run through CuPy (library.py).

Importing it imports CuPy: only a run needs it (rendering a plan needs neither CuPy nor a
GPU). Kernels are compiled by NVRTC through `cupy.RawModule`, once per source text (by its
SHA-256), and CuPy keeps the compiled code on disk (in STATICGRAD_CUDA_CACHE when that is
set, else CuPy's CUPY_CACHE_DIR, by default ~/.cupy/kernel_cache), so a new process finds it.
"""

from __future__ import annotations

import hashlib
import os
import threading

if os.environ.get("STATICGRAD_CUDA_CACHE"):  # (before CuPy reads it)
    os.environ["CUPY_CACHE_DIR"] = os.environ["STATICGRAD_CUDA_CACHE"]

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

from .library import make_library  # noqa: E402

# NVRTC's options: C++17 for the preamble's templates; fast math stays off (NaN and the
# infinities must behave as NumPy's do)
OPTIONS = ("--std=c++17",)

_modules: dict[str, cp.RawModule] = {}
_lock = threading.Lock()


def kernel(source: str, name: str):
    """The kernel `name` of the CUDA source `source`, compiled once per source."""
    key = hashlib.sha256(source.encode()).hexdigest()
    with _lock:
        module = _modules.get(key)
        if module is None:
            module = _modules[key] = cp.RawModule(code=source, options=OPTIONS)
    return module.get_function(name)


def to_device(x):
    """x (a NumPy array or number, or a CuPy array) as a C-contiguous CuPy array of its
    shape: a dense CuPy array as it is (a fed one too), a view made dense, a host value copied
    over (a scalar as a 0-d array: np.ascontiguousarray would make it 1-d)."""
    if isinstance(x, cp.ndarray):
        return x if x.flags.c_contiguous else cp.ascontiguousarray(x)
    return cp.asarray(np.asarray(x, order="C"))


dense = to_device  # (what a kernel's argument must be: the same conversion)


def updated(kernel, grid: tuple, block: tuple, args: tuple, shape: tuple):
    """Launch `kernel`, which writes a variable's new value into the variable's own array,
    args[0]; that array (the update's result: render.py's fused updates). The kernel indexes
    it as dense, of the delta's `shape`: a variable's array that is not dense (an Assign's
    transposed value, kept as it came) is copied dense first, and the copy is the result;
    one of another shape (an Assign with validate_shape=False) gets the delta by broadcasting,
    as `var + delta` would (the kernel adds it to zeros: var + (0 - d) is var - d), or its
    ValueError."""
    if args[0].shape != shape:
        delta = cp.zeros(shape, dtype=args[0].dtype)
        kernel(grid, block, (delta, *args[1:]))
        return args[0] + delta
    var = args[0] if args[0].flags.c_contiguous else cp.ascontiguousarray(args[0])
    kernel(grid, block, (var, *args[1:]))
    return var


def to_host(x):
    """x as a NumPy array (a new one): the copy from the GPU, which waits for its work."""
    if isinstance(x, cp.ndarray):
        return cp.asnumpy(x)
    return np.array(x)


def copy(x):
    """A copy of a fetch the run shares (a variable's value, a constant), where it is."""
    return x.copy() if isinstance(x, cp.ndarray) else np.array(x)


def free_pools() -> None:
    """Give the blocks CuPy's memory pools hold for reuse back to the device (a session
    closed: its arrays are gone, and the pool would keep their memory)."""
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


# the library: each op the device runs through CuPy, with staticgrad.runtime's names
_library = make_library(cp)
_clashes = set(vars(_library)) & set(globals())
assert not _clashes, f"library functions clash with the runtime's own: {_clashes}"
globals().update({k: v for k, v in vars(_library).items() if not k.startswith("_")})
