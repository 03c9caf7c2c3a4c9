"""The interface every backend implements, and what its renderer hands back.

The compiler (`compiler.compile_plan`) works a plan out with the shared passes and, around
them, the backend's own (`early_passes`, `late_passes`: lowerings the shared passes should
see, then the plan's schedule, fusion and memory); the backend renders the last IR as source
(`render`), turns that source into a function (`load`), and keeps the variables' values
(`new_variable_store`) where its generated code reads them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..errors import UnimplementedError
from ..passes.fuse import FusePolicy, fuse_elementwise
from ..passes.partition import partition


class BackendUnavailableError(RuntimeError):
    """A backend that exists but cannot run here (a library or a device is missing)."""


@dataclasses.dataclass
class Rendered:
    """A program rendered as a module: its source and what loading and running it need."""

    source: str
    constants: dict        # global name -> value (arrays the module reads by name)
    line_ops: object       # line number in source -> Operation (for error messages): .get
    var_reads: list        # variable names read before any assignment in this plan
    random_ops: list       # random Operations the plan draws from
    locks: list            # variables whose lock a run holds throughout (use_locking updates)
    # (Operation or None, why) of each op a CUDA graph cannot hold (backends/cuda/graphs.py):
    # its work is the host's, or not the same at each run
    uncapturable: list = dataclasses.field(default_factory=list)


class Backend:
    """One kind of generated code and the machine it runs on."""

    name: str = ""
    description: str = ""
    early_passes: tuple = ()   # (name, Program -> Program) run after simplify, before cse
    late_passes: tuple = ()    # (name, Program -> Program) run last: grouping, memory plan
    fuse_policy: FusePolicy | None = None  # what its fused groups may hold (see `fuse`)
    # the backend that runs what this one leaves (host-only ops, ops it cannot run), and
    # that feeds and fetches live on; None: this one runs every op of its plans itself
    host: str | None = None
    host_backend: Backend | None = None  # that backend, once the registry resolved `host`
    # the device types (TF1's: "CPU", "GPU") whose ops it runs, where sg.device places them
    device_types: tuple = ("CPU",)
    captures_graphs: bool = False  # can it run a plan as a CUDA graph (`captured`)?

    def release(self) -> None:
        """A session closed (its values are gone already): give back what the backend keeps
        for reuse beyond them, e.g. the device memory a GPU library's pool holds."""

    def configured(self, options) -> Backend:
        """This backend as a plan compiled with `options` (a CompileOptions) sees it: with
        `fetch_device`, fetching on the device. A backend whose own passes depend on an
        option returns a backend set for it."""
        return self.fetching_on_device() if options.fetch_device else self

    def fetching_on_device(self) -> Backend:
        """This backend, its plans handing fetches back in the device's memory rather than
        on the host (make_callable(..., fetch_device=True)); one of host memory: itself."""
        return self

    def captured(self, plan, state: dict, locks: list, fetch_device: bool) -> Callable:
        """`plan`'s run (compiled with fetch_device) as a function that captures it as a CUDA
        graph and replays that (make_callable(..., cuda_graph=True)), reading the session's
        variables `state` and holding `locks` as a run does: a backend that
        `captures_graphs` has it."""
        raise NotImplementedError

    def new_generator(self, seed) -> np.random.Generator:
        """The random generator of a random op of seed `seed` (R[op name] in its code)."""
        return np.random.default_rng(seed)

    def unavailable(self) -> str | None:
        """None if this backend can run here, else why not (a library, a device...)."""
        return None

    def fuse(self, program):
        """The shared fusion pass (passes/fuse.py) under this backend's `fuse_policy`: what a
        backend that fuses lists in its late passes, as ("fuse", self.fuse)."""
        return fuse_elementwise(program, self.fuse_policy)

    def supports(self, op_type: str) -> bool:
        """Can this backend compute ops of this type?"""
        raise NotImplementedError

    def place(self, node) -> str:
        """The backend that runs `node` (an IR node) in this backend's plans: this one, or
        its `host` for a host-only op or one this backend cannot run. UnimplementedError,
        naming the op, this backend and the user's line, when neither can run it."""
        if not node.opdef.host_only and self.supports(node.type):
            return self.name
        if self.host_backend is not None and self.host_backend.supports(node.type):
            return self.host
        op = node.origin
        raise UnimplementedError(None, op, f"{op.where() + ': ' if op else ''}the {self.name} "
                                           f"backend cannot run {node.type}"
                                           + (f", nor can its host {self.host}"
                                              if self.host and self.host != self.name else ""))

    def partition(self, program):
        """The plan with a Transfer node on each edge between this backend and its host
        (passes/partition.py): what a backend with a `host` lists first in its late
        passes, as ("partition", self.partition)."""
        return partition(program, self.place, self.host or self.name)

    def render(self, program, title: str, options) -> Rendered:
        """`program` (after every pass) as the source of a module whose run(feeds...)
        returns its fetches."""
        raise NotImplementedError

    def load(self, rendered: Rendered, filename: str, state: dict, rngs: dict,
             locks: dict) -> Callable:
        """The rendered module's run function, compiled and loaded under `filename` (what
        tracebacks show), reading `state` (V), `rngs` (R) and `locks` (L)."""
        raise NotImplementedError

    # The variables' values of one session live in a plain dict {variable name: value}, which
    # the generated code reads as V['w'] (a dict subclass would make each read slower). A
    # backend whose values live elsewhere than host memory converts in read_value and
    # write_value: Session.read_variable/write_variable, the Saver, export and ONNX go
    # through these two.
    def new_variable_store(self) -> dict:
        return {}

    def read_value(self, store: dict, name: str) -> np.ndarray:
        """A NumPy array holding variable `name`'s value (a copy: the caller may keep it)."""
        return np.array(store[name])

    def write_value(self, store: dict, name: str, array: np.ndarray) -> None:
        """Set variable `name`'s value to a copy of the NumPy array `array`."""
        store[name] = np.array(array)

    def __repr__(self) -> str:
        return f"<backend {self.name!r}: {self.description}>"
