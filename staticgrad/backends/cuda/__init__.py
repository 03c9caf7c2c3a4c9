"""The CUDA backend: generated CUDA C kernels and CuPy calls, run on an NVIDIA GPU.

    render.py       the host module: the NumPy backend's walk, with what runs on the GPU
                    as kernel launches and CuPy calls, and the kernels' source inside it
    elementwise.py  an elementwise node or a fused group as one kernel
    reduce.py       reductions, softmax and the softmax cross-entropies: their templates
    library.py      every other op the GPU runs: its reference kernel's text on CuPy
    runtime.py      `crt` of the generated code (imports CuPy: only a run needs it)
    graphs.py       a plan's run captured as a CUDA graph and replayed (cuda_graph=True)

Rendering needs neither CuPy nor a GPU: `Session(backend="cuda").source(...)` works
anywhere. Running does: the first run of a plan imports CuPy and compiles its kernels
(NVRTC), and raises BackendUnavailableError, saying why, where either is missing.

Its plans are partitioned (passes/partition.py): host-only ops (strings, summaries, Print,
py_func) and ops placed on the CPU (`with sg.device("/cpu:0")`) run on its host, the NumPy
backend, in the same run(), with a Transfer on every edge between the two. Variables live
on the GPU, as CuPy arrays, between runs.

Its policies: fusion of elementwise chains of any size, with broadcasting, into one kernel
each (FUSE); a sum of a whole value inside its group; every intermediate freed after its
last use (back to CuPy's memory pool); a variable's update written into its own array where
the NumPy backend's rule allows it, at any size.
"""

from __future__ import annotations

import copy
import functools
import importlib
import linecache
import sys
import types

import numpy as np

from ... import runtime as host_runtime
from ...codegen.pycompile import compile_module
from ...devices import parse
from ...errors import InternalError, UnimplementedError
from ...ir import Node, Program, Value, bodies
from ...ops.table import REGISTRY
from ...passes.fuse import FusePolicy
from ...passes.liveness import liveness
from ...passes.partition import partition
from ..base import Backend, BackendUnavailableError, Rendered
from ..numpy.memory import MemoryPlan, updates_in_place
from . import export, library
from .elementwise import kernel_ok
from .graphs import GraphRunner
from .render import render

# ops of regions, written as Python control flow around the kernels (the NumPy backend's)
REGION_OPS = frozenset({"If", "While", "WhileGrad", "Scan"})
# the most arrays a fused group's kernel reads: 8-byte pointers within the 4 KB of
# parameters every CUDA version and GPU allows (newer ones allow 32 KB), its outputs beside
MAX_KERNEL_INPUTS = 400
# ops the GPU runs by their reference kernel's text on CuPy where no template of reduce.py
# computes them (templates.py says which do: shapes known, kernel dtypes), cuBLAS for
# matmul; and a variable's read (V['w'])
THROUGH_CUPY = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax",
                          "ArgMin", "Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
                          "SparseSoftmaxCrossEntropyWithLogits", "MatMul", "VariableV2"})


class CudaBackend(Backend):
    name = "cuda"
    description = "generated CUDA C kernels and CuPy calls, on an NVIDIA GPU"
    host = "numpy"
    device_types = ("GPU",)
    captures_graphs = True
    export_helpers = export  # sg.export's for this backend's form (export.py, library.py)
    library = library

    def __init__(self):
        self.fuse_policy = FusePolicy(min_elements=1, scalar_broadcasts=True, broadcasts=True,
                                      reductions={"Sum"}, integers=True, admits=self._fusable,
                                      max_inputs=MAX_KERNEL_INPUTS)

    @property
    def late_passes(self) -> tuple:
        return (
            ("partition", self.partition),  # host-only ops to the host, with Transfers
            ("fuse", self.fuse),            # elementwise chains -> one kernel each
            ("memory", _free_after_last_use),
        )

    def supports(self, op_type: str) -> bool:
        opdef = REGISTRY.get(op_type)
        if opdef is None or opdef.host_only:
            return False
        return (not opdef.computes or opdef.expr is not None or op_type in REGION_OPS
                or op_type in library.LIBRARY_OPS or op_type in THROUGH_CUPY)

    def place(self, node: Node) -> str:
        """The host for an op placed on the CPU (`sg.device("/cpu:0")`) and for what touches
        strings (object arrays: never on a GPU), else as the base class says."""
        op = node.origin
        if (op is not None and op.device and _on_cpu(op.device)) or \
                any(v.dtype.is_string for v in (*node.inputs, *node.outputs)):
            if self.host_backend is not None and self.host_backend.supports(node.type):
                return self.host
        return super().place(node)

    fetch_on: str | None = None  # where its fetches are handed back (None: on the host)

    def partition(self, program: Program) -> Program:
        return partition(program, self.place, self.host, fetch_on=self.fetch_on)

    def fetching_on_device(self) -> CudaBackend:
        twin = copy.copy(self)
        twin.fetch_on = self.name
        return twin

    def _fusable(self, node: Node) -> bool:
        if self.place(node) != self.name:
            return False
        if node.type == "Sum":
            return node.outputs[0].dtype.name in ("float32", "float64")
        return kernel_ok(node)

    def render(self, program, title: str, options) -> Rendered:
        return render(program, self.place, self.name, title, self.fetch_on)

    def load(self, rendered: Rendered, filename: str, state: dict, rngs: dict, locks: dict):
        """run(), which loads the module at its first call: CuPy imported, the kernels
        compiled (BackendUnavailableError without CuPy or a GPU)."""
        lines = rendered.source.splitlines(keepends=True)
        linecache.cache[filename] = (len(rendered.source), None, lines, filename)
        loaded = []

        def run(*feeds):
            if not loaded:
                crt = load_runtime()
                namespace = {"np": np, "rt": host_runtime, "cp": crt.cp, "crt": crt,
                             "V": state, "R": rngs, "L": locks, **rendered.constants}
                try:
                    for code in compile_module(rendered.source, filename):
                        exec(code, namespace)  # noqa: S102 (compiles the kernels: NVRTC)
                except Exception as e:  # a kernel that fails to compile is staticgrad's bug
                    raise InternalError(None, None, f"the CUDA kernels of this plan failed to "
                                                    f"compile or load: {type(e).__name__}: "
                                                    f"{e}") from e
                loaded.append(namespace["run"])
            return loaded[0](*feeds)

        def on_state(store: dict):
            """run() (loaded by a run already) reading and writing the variables of `store`,
            not the session's: a CUDA graph's capture (graphs.py)."""
            module_run = loaded[0]
            return types.FunctionType(module_run.__code__, {**module_run.__globals__, "V": store},
                                      module_run.__name__, module_run.__defaults__,
                                      module_run.__closure__)
        run.on_state = on_state
        return run

    # variables live on the GPU, as CuPy arrays
    def read_value(self, store: dict, name: str) -> np.ndarray:
        value = store[name]
        return value.get() if hasattr(value, "__cuda_array_interface__") else np.array(value)

    def write_value(self, store: dict, name: str, array: np.ndarray) -> None:
        array = np.array(array)
        # (a string variable's objects stay on the host, where the ops that read it run)
        store[name] = array if array.dtype == object else load_runtime().to_device(array)

    def captured(self, plan, state: dict, locks: list, fetch_device: bool) -> GraphRunner:
        """`plan` (compiled with fetch_device: its fetches stay on the GPU) run as a CUDA
        graph, captured at its first call (graphs.py); UnimplementedError naming the op
        where the plan holds one a graph cannot."""
        return GraphRunner(plan, state, locks, fetch_device, load_runtime().cp)

    def new_generator(self, seed):
        return _DeviceGenerator(seed)

    def release(self) -> None:
        """The GPU memory that CuPy's pools (one for the process) keep for reuse, given back
        to the device (where the runtime was loaded: a process that never ran holds none)."""
        crt = sys.modules.get(f"{__name__}.runtime")
        if crt is not None:
            crt.free_pools()


def load_runtime():
    """The runtime module (`crt`), imported now: BackendUnavailableError, saying why, where
    CuPy or a GPU is missing."""
    try:
        crt = importlib.import_module(".runtime", __name__)
        count = crt.cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # ImportError, CUDARuntimeError (no driver, no device)...
        raise BackendUnavailableError(
            f"the cuda backend cannot run here: {type(e).__name__}: {e} (it needs CuPy, "
            "`pip install staticgrad[cuda]`, and an NVIDIA GPU; rendering source needs "
            "neither)") from None
    if count == 0:
        raise BackendUnavailableError("the cuda backend cannot run here: no GPU was found")
    return crt


class _DeviceGenerator:
    """A random generator on the GPU (CuPy's), made at its first draw from `seed`."""

    def __init__(self, seed):
        self.seed, self._generator = seed, None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._generator is None:
            self._generator = load_runtime().cp.random.default_rng(self.seed)
        return getattr(self._generator, name)


@functools.lru_cache(maxsize=256)
def _on_cpu(device: str) -> bool:
    """Does the device name `device` (an op's, checked when it was made) name the CPU?"""
    return parse(device).device_type == "CPU"


def _free_after_last_use(program: Program) -> Program:
    """Each value the plan makes is dropped after its last use (`del`): its memory goes back
    to CuPy's pool for the next allocation. (No `out=` reuse: a kernel writes new arrays.)
    A variable's update (an optimizer's step) writes into the variable's own array wherever
    the NumPy backend's rule allows it, whatever its size (render.py fuses it with the
    kernel computing its delta)."""
    live = liveness(program)
    free_after = {k: list(dead) for k, dead in live.dies_at.items()}
    fetched = {id(f) for body in bodies(program) for f in body.fetches if isinstance(f, Value)}
    in_place = frozenset().union(*[updates_in_place(body, live.last_use, fetched, min_bytes=0)
                                   for body in bodies(program)])
    return _with_memory(program, MemoryPlan(free_after, {}, in_place))


def _with_memory(program: Program, plan: MemoryPlan) -> Program:
    new = Program(program.nodes, program.feeds, program.fetches, owned=program.owned,
                  nested=program.nested)
    new.plan = {**program.plan, "memory": plan}
    return new


BACKEND = CudaBackend()
__all__ = ["BACKEND", "CudaBackend", "UnimplementedError"]
