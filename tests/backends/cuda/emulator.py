"""CuPy stood in for on the CPU, for the CUDA backend's tests on machines without a GPU.

Arrays are NumPy's. A RawModule compiles the generated CUDA source as C++ with g++, behind a
few lines that give CUDA's names a meaning on the CPU, and a kernel launch runs the grid's
blocks one after the other with one thread each (the kernels stride by gridDim * blockDim,
so one thread a block still covers every element, and a block's sum of one thread is that
thread's). What a GPU alone can show (timing, races, NVRTC itself) it does not; what it
does show: that the host code and its kernels compute what the NumPy backend computes, and
that every array a kernel is given is dense and of the C type its parameter declares. Every
array `empty` makes is filled with NaN (or a pattern) first: a kernel that leaves an element
unwritten is caught.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import types

import numpy as np

CXX = shutil.which("g++") or shutil.which("c++")

SHIM = r"""
#include <cmath>
#include <cstring>
using namespace std;
struct sg_dim3 { unsigned x, y, z; };
static sg_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0}, blockDim = {1, 1, 1},
               gridDim = {1, 1, 1};
extern "C" void sg_emu_set(unsigned block, unsigned grid) { blockIdx.x = block; gridDim.x = grid; }
#define __global__
#define __device__
#define __launch_bounds__(n)
#define __shared__ static
inline void __syncthreads() {}
template <typename T> inline T __shfl_down_sync(unsigned, T, int) { return T(0); }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline double __longlong_as_double(long long u) { double d; memcpy(&d, &u, 8); return d; }
"""

C_DTYPES = {"float": "float32", "double": "float64", "bool": "bool", "int": "int32",
            "long long": "int64", "signed char": "int8", "short": "int16",
            "unsigned char": "uint8"}
_KERNEL = re.compile(r'extern "C" __global__ void __launch_bounds__\(\d+\) (\w+)\(([^)]*)\)')
_built: dict[str, ctypes.CDLL] = {}
_folder = tempfile.mkdtemp(prefix="sg-cuda-emulator-")


class RawModule:
    def __init__(self, code: str, options=()):
        key = hashlib.sha256(code.encode()).hexdigest()[:20]
        if key not in _built:
            source = os.path.join(_folder, f"{key}.cpp")
            library = os.path.join(_folder, f"{key}.so")
            with open(source, "w") as f:
                f.write(SHIM + code)
            subprocess.run([CXX, "-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-o", library,
                            source], check=True, capture_output=True, text=True)
            _built[key] = ctypes.CDLL(library)
        self.lib = _built[key]
        self.params = {m.group(1): [_c_dtype(p) for p in m.group(2).split(",")]
                       for m in _KERNEL.finditer(code)}

    def get_function(self, name: str):
        fn, dtypes, set_block = getattr(self.lib, name), self.params[name], self.lib.sg_emu_set
        fn.restype = None

        def launch(grid, block, args, shared_mem=0):
            assert len(args) == len(dtypes), f"{name}: {len(args)} arguments, {len(dtypes)} " \
                                             "parameters"
            for k, (a, dtype) in enumerate(zip(args, dtypes)):
                assert isinstance(a, np.ndarray) and a.flags.c_contiguous, \
                    f"{name}: argument {k} is not a dense array: {type(a)}"
                assert a.dtype == dtype, f"{name}: argument {k} is {a.dtype}, not {dtype}"
            pointers = [ctypes.c_void_p(a.ctypes.data) for a in args]
            for b in range(grid[0]):
                set_block(b, grid[0])
                fn(*pointers)
        return launch


def _c_dtype(param: str) -> str:
    ctype = param.replace("const", "").replace("__restrict__", "").split("*")[0].strip()
    return C_DTYPES[ctype]


def _poisoned_empty(shape, dtype=float, order="C"):
    out = np.empty(shape, dtype=dtype, order=order)
    if out.dtype.kind == "f":
        out.fill(np.nan)
    elif out.dtype.kind in "iu":
        out.fill(np.iinfo(out.dtype).max // 3)
    return out


def fake_cupy() -> types.ModuleType:
    """A module with NumPy's API, and CuPy's RawModule, asnumpy and device count."""
    cupy = types.ModuleType("cupy")
    for name in dir(np):
        if not name.startswith("__"):
            setattr(cupy, name, getattr(np, name))
    cupy.empty = _poisoned_empty
    cupy.asnumpy = lambda x: np.array(x)
    cupy.RawModule = RawModule
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))
    return cupy
