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

Its device arrays (DeviceArray) keep CuPy's manners where a host/device mix-up would show
only on a GPU: the host reaches one only through `.get()` or `cupy.asnumpy` (np.asarray of
one is CuPy's TypeError), a cupy function refuses a NumPy array (TypeError), int() and
float() take a 0-d array alone, `ufunc.at` takes the dtypes CuPy's does, and where an
assignment's index repeats a place, the first of its values stays (NumPy keeps the last,
CuPy any one). A NumPy function given a device array runs the cupy function of its name,
as CuPy's __array_function__ and __array_ufunc__ do. A kernel launch gets the raw buffers.
Streams, their capture and CUDA graphs are emulator_capture.py's.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import types

import numpy as np

from tests.backends.cuda import emulator_capture as capture

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
// CUDA's: the lane (lane id ^ mask) of the warp, but one in a later group of `width` lanes
// than the caller's gives the caller its own value
template <typename T> T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    const unsigned lane = threadIdx.x % 32, source = (lane ^ unsigned(mask)) % 32;
    return sg_shuffle_from(v, source / width > lane / width ? threadIdx.x
                                                              : threadIdx.x - lane + source);
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
        self.read_only = {m.group(1): ["const" in p for p in m.group(2).split(",")]
                          for m in _KERNEL.finditer(code)}

    def get_function(self, name: str):
        call, dtypes = ctypes.cast(getattr(self.lib, f"call_{name}"), ctypes.c_void_p), \
            self.params[name]
        read_only = self.read_only[name]
        run_grid = self.runtime.sg_run_grid
        run_grid.restype = None

        def launch(grid, block, args, shared_mem=0):
            assert len(args) == len(dtypes), f"{name}: {len(args)} arguments, {len(dtypes)} " \
                                             "parameters"
            for k, (a, dtype) in enumerate(zip(args, dtypes)):
                assert isinstance(a, DeviceArray), \
                    f"{name}: argument {k} is not a device array: {type(a)}"
                assert a.memory.flags.c_contiguous, f"{name}: argument {k} is not dense"
                assert a.dtype == dtype, f"{name}: argument {k} is {a.dtype}, not {dtype}"
            pointers = (ctypes.c_void_p * len(args))(*[a.memory.ctypes.data for a in args])
            run = functools.partial(run_grid, call, int(grid[0]), int(block[0]), pointers)
            steps = capture.capturing()
            if steps is None:
                capture.COUNTS["kernels"] += 1
                sizes = [(a.nbytes, r) for a, r in zip(args, read_only)]
                capture.LAUNCHES.append((name, sum(n for n, r in sizes if r),
                                         sum(n for n, r in sizes if not r)))
                run()
            else:  # recorded (with the arrays, which the graph keeps alive), not run
                steps.append(capture.Step(run, args))
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



# -- device arrays: NumPy's, behind CuPy's manners ------------------------------------------------

IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
            "construct a NumPy array explicitly.")  # (CuPy's words)
# the dtypes (the array's) each ufunc's `at` takes in CuPy, by an integer index array: its
# atomic operations' (cupy/_core/_routines_indexing.pyx, _scatter_op_single)
AT_DTYPES = {
    "add": {"float16", "float32", "float64", "int32", "uint32", "uint64"},
    "subtract": {"int32", "uint32"},
    "maximum": {"float32", "float64", "int32", "uint32", "uint64"},
    "minimum": {"float32", "float64", "int32", "uint32", "uint64"},
    "bitwise_and": {"int32", "int64", "uint32", "uint64"},
    "bitwise_or": {"int32", "int64", "uint32", "uint64"},
    "bitwise_xor": {"int32", "int64", "uint32", "uint64"},
}


class DeviceArray:
    """An array in the emulated GPU's memory (`memory`, a NumPy array), as cupy.ndarray:
    to the host by `.get()` alone, a 0-d array where NumPy would give a scalar."""

    __slots__ = ("memory", "__weakref__")

    def __init__(self, memory: np.ndarray):
        self.memory = memory
        capture.live[id(self)] = self

    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        """A copy on the host (the one way there, with cupy.asnumpy)."""
        capture.no_sync("a copy to the host")
        if out is not None:
            out[...] = self.memory
            return out
        return np.array(self.memory, order=order)

    def set(self, arr, stream=None) -> None:
        """A host array of this shape and dtype copied in (CuPy's, which takes no other)."""
        capture.no_sync("a copy from the host")
        if not isinstance(arr, np.ndarray) or arr.shape != self.shape or \
                arr.dtype != self.dtype or not arr.flags.c_contiguous:
            raise ValueError("set: a C-contiguous numpy array of the same shape and dtype only")
        self.memory[...] = arr

    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self.memory.ctypes.data, False),
                "strides": None if self.memory.flags.c_contiguous else self.strides}

    # a NumPy ufunc or function given a device array runs cupy's of its name, as in CuPy
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        cupy_ufunc = _Ufunc(ufunc)
        fn = cupy_ufunc if method == "__call__" else getattr(cupy_ufunc, method)
        return fn(*inputs, **kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        return _on_device(func)(*args, **kwargs)

    def __getattr__(self, name):  # NumPy's attributes and methods, on the device
        if name.startswith("__"):  # (NumPy's protocols: __array_interface__ reads memory)
            raise AttributeError(name)
        if name in ("item", "tolist", "nonzero"):
            capture.no_sync(f"ndarray.{name}")
        value = getattr(self.memory, name)
        if name == "dot":
            return _cublas(_on_device(value), "ndarray.dot")
        return _on_device(value) if callable(value) else _device_value(value)

    def __getitem__(self, key):
        key = _memory(key, host_ok=True)
        if any(isinstance(k, np.ndarray) and k.dtype == bool
               for k in (key if type(key) is tuple else (key,))):
            capture.no_sync("a boolean mask's count")  # (CuPy reads it back for the shape)
        got = _device_value(self.memory[key])
        capture.record(lambda: self.memory[key], got, (self,))
        return got

    def __setitem__(self, key, value):
        capture.record(functools.partial(self._set, key, value), None, (self, value))
        self._set(key, value)

    def _set(self, key, value):
        key = _memory(key, host_ok=True)
        if not _advanced(key):
            if isinstance(value, np.ndarray) and value.ndim:  # (CuPy's fill)
                raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
            self.memory[key] = _memory(value, host_ok=True)
            return
        value = _memory(value, host_ok=True)  # (CuPy copies a host array here)
        places = np.arange(self.memory.size).reshape(self.shape)[key]
        if np.unique(places).size == places.size:
            self.memory[key] = value
            return
        # a place written twice keeps the first value: CuPy's may be any one, NumPy's the last
        values = np.broadcast_to(np.asarray(value, self.dtype), places.shape)
        self.memory.flat[places.reshape(-1)[::-1]] = values.reshape(-1)[::-1]

    def __len__(self):
        return len(self.memory)

    def __iter__(self):
        return (_device_value(row) for row in self.memory)

    def __bool__(self):
        capture.no_sync("bool()")
        return bool(self.memory)

    def __int__(self):
        return int(self._scalar())

    def __float__(self):
        return float(self._scalar())

    def __complex__(self):
        return complex(self._scalar())

    def _scalar(self):
        capture.no_sync("a scalar read back")
        if self.ndim:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        return self.memory[()]

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __repr__(self):
        return f"DeviceArray({self.memory!r})"


# CuPy's words where a cuBLAS call meets a capturing stream: each of its cuBLAS wrappers sets
# the handle's stream first, and its setStream refuses a capturing one
# (cupy_backends/cuda/libs/cublas.pyx)
CUBLAS_IN_CAPTURE = "calling cuBLAS API during stream capture is currently unsupported"
# the cupy functions that reach cuBLAS for arrays of floating or complex numbers
CUBLAS = ("matmul", "dot", "tensordot", "inner", "vdot", "einsum")


def _cublas(fn, what: str):
    """`fn` (a cupy function that reaches cuBLAS for floating or complex arrays), refusing a
    capture as CuPy's does: NotImplementedError, before any work (the capture goes on)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if capture.capturing() is not None and any(
                isinstance(a, DeviceArray) and a.dtype.kind in "fc"
                for a in (*args, *kwargs.values())):
            raise NotImplementedError(f"{CUBLAS_IN_CAPTURE} ({what})")
        return fn(*args, **kwargs)
    return call


def _operator(name: str):
    method = getattr(np.ndarray, name)
    return lambda self, *other: _on_device(method)(self, *other)


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lshift", "rshift"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        setattr(DeviceArray, _form.format(_name), _operator(_form.format(_name)))
for _form in ("__matmul__", "__rmatmul__", "__imatmul__"):
    setattr(DeviceArray, _form, _cublas(getattr(DeviceArray, _form), f"ndarray.{_form}"))
for _name in ("__divmod__", "__rdivmod__", "__neg__", "__pos__", "__abs__", "__invert__",
              "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(DeviceArray, _name, _operator(_name))
DeviceArray.__hash__ = None


def _memory(value, host_ok=False):
    """An argument as NumPy takes it: a device array's memory (lists and tuples looked into).
    A NumPy array is CuPy's TypeError, except where CuPy copies one over (`host_ok`)."""
    if isinstance(value, DeviceArray):
        return value.memory
    if isinstance(value, np.ndarray) and not host_ok:
        raise TypeError(f"Unsupported type {type(value)} (a host array given to a cupy "
                        "function: CuPy takes device arrays and scalars)")
    if type(value) in (list, tuple):
        return type(value)(_memory(v, host_ok) for v in value)
    return value


def _device_value(value):
    """What a cupy function returns for NumPy's `value`: arrays (and scalars: 0-d arrays)
    in device memory, a generator that draws there."""
    if isinstance(value, np.ndarray | np.generic):
        return DeviceArray(np.asarray(value))
    if type(value) in (list, tuple):
        return type(value)(_device_value(v) for v in value)
    if isinstance(value, np.random.Generator):
        return _OnDevice(value)
    return value


def _on_device(fn):
    """NumPy's function `fn` as the cupy function of its name: device arrays in, device
    arrays out (an argument it returns, as the same array)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        given = {id(a.memory): a for a in (*args, *kwargs.values())
                 if isinstance(a, DeviceArray)}

        def compute():
            return fn(*_memory(args), **{k: _memory(v) for k, v in kwargs.items()})
        result = compute()
        made = given[id(result)] if id(result) in given else _device_value(result)
        capture.record(compute, made, (*args, *kwargs.values()))
        return made
    return call


def _advanced(key) -> bool:
    """Does the index `key` hold an array or a list (advanced indexing)?"""
    parts = key if type(key) is tuple else (key,)
    return any(isinstance(p, np.ndarray | list) for p in parts)


class _Ufunc:
    """A NumPy ufunc as CuPy's: on device arrays, and `at` for CuPy's dtypes alone."""

    def __init__(self, ufunc: np.ufunc):
        self.ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _on_device(self.ufunc)(*args, **kwargs)

    def __getattr__(self, name):  # reduce, accumulate, outer, nin...
        value = getattr(self.ufunc, name)
        return _on_device(value) if callable(value) else value

    def at(self, a, indices, b=None):
        name, indices = self.__name__, _memory(indices, host_ok=True)
        if name not in AT_DTYPES:
            raise NotImplementedError(f"`{name}.at` is not supported yet")
        if _advanced(indices) and a.dtype.name not in AT_DTYPES[name]:
            raise TypeError(f"cupy.{name}.at only supports "
                            f"{', '.join(sorted(AT_DTYPES[name]))}, as data type")

        def compute():
            self.ufunc.at(_memory(a), indices, _memory(b, host_ok=True))
        compute()
        capture.record(compute, None, (a, indices, b))


class _OnDevice:
    """A NumPy module or object (np.random, np.linalg, a Generator...) whose functions
    compute on device arrays."""

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        return _cupy_name(getattr(self._target, name))


def _cupy_name(value):
    """What cupy's name for NumPy's `value` is here."""
    if isinstance(value, np.ufunc):
        return _Ufunc(value)
    if isinstance(value, types.ModuleType):
        return _OnDevice(value)
    if callable(value) and not isinstance(value, type):
        return _on_device(value)
    return value  # a type (np.float32), a constant


def _to_device(convert):
    """cupy.array / asarray / asanyarray: a host value copied to the device; a device array
    as `convert` leaves it (itself, where it needs no conversion). A 0-d host value is no
    copy: CuPy fills the new array with it by a kernel, which a capture records, the value
    with it."""
    @functools.wraps(convert)
    def call(a, *args, **kwargs):
        if isinstance(a, DeviceArray):
            made = convert(a.memory, *args, **kwargs)
            if made is a.memory:
                return a
            out = DeviceArray(made)
            capture.record(lambda: convert(a.memory, *args, **kwargs), out, (a,))
            return out
        host = np.array(convert(_memory(a, host_ok=True), *args, **kwargs))
        if host.ndim == 0:
            out = DeviceArray(host.copy())
            capture.record(lambda: host, out, ())
            return out
        capture.no_sync("a copy from the host")
        return DeviceArray(host)
    return call


def _poisoned_empty(shape, dtype=float, order="C"):
    if np.dtype(dtype) == object:  # (CuPy's words: its arrays hold numbers alone)
        raise ValueError("Unsupported dtype object")
    if capture.allocators:  # (a test reads which pool served it)
        capture.allocators[-1].allocations += 1
    out = np.empty(shape, dtype=dtype, order=order)
    if out.dtype.kind == "f":
        out.fill(np.nan)
    elif out.dtype.kind in "iu":
        out.fill(np.iinfo(out.dtype).max // 3)
    return out


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True) -> np.ndarray:
    capture.no_sync("cupy.asnumpy")
    if isinstance(a, DeviceArray):
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


# cupy functions whose result's shape CuPy reads back from the GPU (a count of its values):
# a wait for the GPU, CUDA's error while the stream captures
SYNCING = ("unique", "nonzero", "argwhere", "flatnonzero", "extract", "compress")


def _syncing(fn, what: str):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        capture.no_sync(what)
        return fn(*args, **kwargs)
    return call


def fake_cupy() -> types.ModuleType:
    """A module with NumPy's API on DeviceArrays, and CuPy's ndarray, RawModule, asnumpy and
    device count."""
    cupy = types.ModuleType("cupy")
    for name in dir(np):
        if not name.startswith("__"):
            setattr(cupy, name, _cupy_name(getattr(np, name)))
    for name in ("array", "asarray", "asanyarray"):
        setattr(cupy, name, _to_device(getattr(np, name)))
    for name in SYNCING:
        setattr(cupy, name, _syncing(getattr(cupy, name), f"cupy.{name}"))
    for name in CUBLAS:
        setattr(cupy, name, _cublas(getattr(cupy, name), f"cupy.{name}"))
    cupy.ndarray = DeviceArray
    cupy.empty = _on_device(_poisoned_empty)
    cupy.asnumpy = asnumpy
    cupy.RawModule = RawModule
    pool = types.SimpleNamespace(free_all_blocks=lambda: pool.__dict__.update(freed=True),
                                 freed=False)
    cupy.get_default_memory_pool = cupy.get_default_pinned_memory_pool = lambda: pool
    cupy.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1,
                                      CUDARuntimeError=capture.CUDARuntimeError),
        Stream=capture.Stream, Event=capture.Event, Graph=capture.Graph,
        MemoryPool=capture.MemoryPool,
        using_allocator=capture.using_allocator,
        get_current_stream=lambda: capture.current_streams()[-1])
    capture.current_streams()[1:] = []
    return cupy
