"""CuPy stood in for on the CPU, for the CUDA backend's tests on machines without a GPU.

Arrays are NumPy's. A RawModule compiles the generated CUDA source as C++ with g++, behind a
few lines that give CUDA's names a meaning on the CPU (SHIM, a precompiled header): a launch
(RUNTIME, a library built once) runs the block's threads as std::threads, each taking the
grid's blocks in turn, `__syncthreads` is a barrier and a warp shuffle an exchange between
two barriers (the kernels shuffle in code every thread of the block runs).

What a GPU alone can show (timing, races, NVRTC itself) it does not; what it does show: that
the host code and its kernels compute what the NumPy backend computes, and that every array
a kernel is given is dense and of the C type its parameter declares. Every array `empty`
makes is filled with NaN (or a pattern) first: a kernel that leaves an element unwritten is
caught.
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
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>
using namespace std;

struct sg_dim3 { unsigned x = 0, y = 0, z = 0; };
extern thread_local sg_dim3 threadIdx, blockIdx;  // (RUNTIME defines the launch's state)
extern sg_dim3 blockDim, gridDim;
extern std::barrier<>* sg_block_barrier;
extern unsigned long long sg_lanes[1024];  // each thread's value in a shuffle

#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(n)

inline void __syncthreads() { sg_block_barrier->arrive_and_wait(); }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }

// every thread of the block reaches each shuffle (the kernels shuffle in uniform code only)
template <typename T> T sg_shuffle_from(T v, unsigned source) {
    static_assert(sizeof(T) <= 8);
    std::memcpy(&sg_lanes[threadIdx.x], &v, sizeof(T));
    __syncthreads();
    T got;
    std::memcpy(&got, &sg_lanes[source], sizeof(T));
    __syncthreads();
    return got;
}
template <typename T> T __shfl_down_sync(unsigned, T v, int delta, int width = 32) {
    const unsigned lane = threadIdx.x % width;
    return sg_shuffle_from(v, lane + delta < unsigned(width) ? threadIdx.x + delta : threadIdx.x);
}
template <typename T> T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    return sg_shuffle_from(v, threadIdx.x ^ mask);
}

// a launch (RUNTIME's): `block` threads, each running the grid's blocks in turn, calling
// `call`, which calls the kernel with its arguments
extern "C" void sg_run_grid(void (*call)(void**), int grid, int block, void** args);
template <typename... A, std::size_t... I>
void sg_call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
    kernel(static_cast<A>(args[I])...);
}
// a launch of any kernel (for a test that builds its own launchers)
template <typename... A> void sg_launch(void (*kernel)(A...), int grid, int block, void** args) {
    static void (*chosen)(A...);
    chosen = kernel;
    sg_run_grid([](void** a) { sg_call(chosen, a, std::index_sequence_for<A...>{}); },
                grid, block, args);
}
"""

# what every launch shares, compiled once into a library the kernels' libraries use
RUNTIME = r"""
#include "sg_shim.h"
#include <condition_variable>
#include <mutex>
thread_local sg_dim3 threadIdx, blockIdx;
sg_dim3 blockDim, gridDim;
std::barrier<>* sg_block_barrier;
unsigned long long sg_lanes[1024];

// the threads, made once and kept: a launch wakes the first `block` of them (what they wait
// on is never destroyed: at the process's exit they are still waiting)
static std::mutex& sg_mutex = *new std::mutex;
static std::condition_variable& sg_wake = *new std::condition_variable;
static std::condition_variable& sg_finished = *new std::condition_variable;
static long sg_launches = 0;
static int sg_running = 0, sg_threads = 0;
static struct { void (*call)(void**); void** args; int grid, block; } sg_job;

static void sg_worker(int t, long seen) {
    std::unique_lock<std::mutex> lock(sg_mutex);
    for (;;) {
        sg_wake.wait(lock, [&] { return sg_launches != seen; });
        seen = sg_launches;
        if (t >= sg_job.block) continue;  // not one of this launch's threads
        auto job = sg_job;
        lock.unlock();
        threadIdx.x = t;
        for (int b = 0; b < job.grid; ++b) {
            blockIdx.x = b;
            job.call(job.args);
            sg_block_barrier->arrive_and_wait();  // the next block reuses the shared memory
        }
        lock.lock();
        if (--sg_running == 0) sg_finished.notify_one();
    }
}

extern "C" void sg_run_grid(void (*call)(void**), int grid, int block, void** args) {
    std::barrier<> barrier(block);
    std::unique_lock<std::mutex> lock(sg_mutex);
    for (; sg_threads < block; ++sg_threads)
        std::thread(sg_worker, sg_threads, sg_launches).detach();
    sg_block_barrier = &barrier;
    blockDim.x = block;
    gridDim.x = grid;
    sg_job = {call, args, grid, block};
    sg_running = block;
    ++sg_launches;
    sg_wake.notify_all();
    sg_finished.wait(lock, [] { return sg_running == 0; });
}
"""

C_DTYPES = {"float": "float32", "double": "float64", "bool": "bool", "int": "int32",
            "long long": "int64", "signed char": "int8", "short": "int16",
            "unsigned char": "uint8"}
_KERNEL = re.compile(r'extern "C" __global__ void __launch_bounds__\(\d+\)\s+(\w+)\(([^)]*)\)')
_built: dict[str, ctypes.CDLL] = {}
_runtime: list[ctypes.CDLL] = []
_folder = tempfile.mkdtemp(prefix="sg-cuda-emulator-")


FLAGS = ["-std=c++20", "-O1", "-fPIC", "-pthread", "-w"]


def load_runtime() -> ctypes.CDLL:
    """SHIM as a header beside the sources, precompiled once (each kernel's compile then
    skips parsing the standard headers it includes), and RUNTIME's library, loaded once for
    every kernel library to use."""
    header = os.path.join(_folder, "sg_shim.h")
    if _runtime:
        return _runtime[0]
    with open(header, "w") as f:
        f.write("#pragma once\n" + SHIM)
    subprocess.run([CXX, *FLAGS, "-x", "c++-header", header, "-o", header + ".gch"],
                   check=True, capture_output=True, text=True)
    source = os.path.join(_folder, "sg_runtime.cpp")
    library = os.path.join(_folder, "sg_runtime.so")
    with open(source, "w") as f:
        f.write(RUNTIME)
    subprocess.run([CXX, *FLAGS, "-shared", "-I", _folder, "-o", library, source],
                   check=True, capture_output=True, text=True)
    _runtime.append(ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL))
    return _runtime[0]


class RawModule:
    def __init__(self, code: str, options=()):
        self.runtime = load_runtime()
        key = hashlib.sha256(code.encode()).hexdigest()[:20]
        if key not in _built:
            source = os.path.join(_folder, f"{key}.cpp")
            library = os.path.join(_folder, f"{key}.so")
            callers = [_caller(name, params) for name, params in _KERNEL.findall(code)]
            with open(source, "w") as f:
                f.write("\n".join(['#include "sg_shim.h"', code, *callers]))
            subprocess.run([CXX, *FLAGS, "-shared", "-I", _folder, "-o", library, source],
                           check=True, capture_output=True, text=True)
            _built[key] = ctypes.CDLL(library)
        self.lib = _built[key]
        self.params = {m.group(1): [_c_dtype(p) for p in m.group(2).split(",")]
                       for m in _KERNEL.finditer(code)}

    def get_function(self, name: str):
        call, dtypes = ctypes.cast(getattr(self.lib, f"call_{name}"), ctypes.c_void_p), \
            self.params[name]
        run_grid = self.runtime.sg_run_grid
        run_grid.restype = None

        def launch(grid, block, args, shared_mem=0):
            assert len(args) == len(dtypes), f"{name}: {len(args)} arguments, {len(dtypes)} " \
                                             "parameters"
            for k, (a, dtype) in enumerate(zip(args, dtypes)):
                assert isinstance(a, np.ndarray) and a.flags.c_contiguous, \
                    f"{name}: argument {k} is not a dense array: {type(a)}"
                assert a.dtype == dtype, f"{name}: argument {k} is {a.dtype}, not {dtype}"
            pointers = (ctypes.c_void_p * len(args))(*[a.ctypes.data for a in args])
            run_grid(call, int(grid[0]), int(block[0]), pointers)
        return launch


def _caller(name: str, params: str) -> str:
    """`call_<name>(args)`: the kernel called with its arguments cast to its parameters'
    types (a plain function: no template for g++ to instantiate a kernel)."""
    types_ = [p.replace("__restrict__", "").rsplit(None, 1)[0].strip()  # ("type name")
              for p in params.split(",")]
    casts = ", ".join(f"({t})args[{k}]" for k, t in enumerate(types_))
    return f'extern "C" void call_{name}(void** args) {{ {name}({casts}); }}'


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
    pool = types.SimpleNamespace(free_all_blocks=lambda: pool.__dict__.update(freed=True),
                                 freed=False)
    cupy.get_default_memory_pool = cupy.get_default_pinned_memory_pool = lambda: pool
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))
    return cupy
