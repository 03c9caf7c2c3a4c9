"""Turn (fetches, feed signature) into a compiled function: the session's slow path.

    prune -> specialize -> lower -> the passes (shared and the backend's, in order)
          -> the backend renders -> the backend loads

`prune` and `specialize` work on the graph (what the fetches need, with the feeds' shapes);
`lower` makes the IR (`ir.py`), which each pass maps to a new one; the backend
(`backends/`) renders the last as source and loads it. Every pass is a plain function,
testable alone, and any of them can be switched off per session:
`Session(options=CompileOptions(disable={"cse"}))`. With `verify=True` (the test suite
turns it on) the IR is checked after every pass.
"""

from __future__ import annotations

import dataclasses
import itertools
import linecache
import operator
import threading
import weakref
from collections.abc import Callable

from .backends import BACKENDS, Backend, get_backend
from .codegen import pycompile
from .gcpause import paused_gc
from .graph import Operation, Tensor
from .ir import lower, release
from .passes.cse import cse
from .passes.dce import eliminate_dead_code
from .passes.fold import fold_constants
from .passes.matmul import fold_transposes_into_matmul
from .passes.negations import fold_negations
from .passes.prune import prune
from .passes.scans import merge_scans
from .passes.simplify import simplify
from .passes.specialize import specialize
from .verify import verify

_counter = itertools.count()

# The shared rewriting passes, in the order they run, each mapping a Program to a new one;
# a backend's early passes run after SIMPLIFYING, its late ones after OPTIMIZING.
SIMPLIFYING = (
    ("fold", fold_constants),                          # known inputs -> computed now
    ("simplify", simplify),                            # x*1, x+0, --x, no-op reshapes...
)
OPTIMIZING = (
    ("merge_scans", merge_scans),                      # a loop its gradient built again -> once
    ("cse", cse),                                      # the same computation twice -> once
    ("negations", fold_negations),                     # a + (-b) -> a - b, a + (-p)*q -> a - p*q
    ("transpose_matmul", fold_transposes_into_matmul),  # matmul(transpose(a), b) -> flag
    ("dce", eliminate_dead_code),                      # drop what no fetch needs any more
)


def pipeline(backend: Backend | str = "numpy") -> tuple:
    """(name, pass) of every pass a plan for `backend` goes through, in order."""
    backend = get_backend(backend)
    return SIMPLIFYING + tuple(backend.early_passes) + OPTIMIZING + tuple(backend.late_passes)


def pass_names() -> tuple:
    """The names of every pass, in the order of the pipelines of the backends that can run
    here (the NumPy backend's first), then any shared pass none of them has."""
    names: dict = {}
    for backend in BACKENDS:
        try:
            names.update(dict.fromkeys(name for name, _ in pipeline(backend)))
        except (ValueError, RuntimeError):  # a backend that cannot run here
            continue
    names.update(dict.fromkeys(name for name, _ in SIMPLIFYING + OPTIMIZING))
    return tuple(names)


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """How a session compiles: which passes of `pipeline(backend)` to skip, whether to check the IR
    after each pass (slower; for tests and for debugging a pass), and whether float32 fused
    groups may compute exp, log, log1p, tanh and sigmoid with runtime_fast (glibc's vector math
    through numba, the `[fast]` extra; used only where it is installed and works), and run as
    one generated numba kernel where every member has a scalar form
    (backends/numpy/one_pass_render.py)."""

    disable: frozenset = frozenset()
    verify: bool = False
    vector_math: bool = True
    fetch_device: bool = False  # fetches stay in the device's memory (make_callable's)

    def __post_init__(self):
        disable = frozenset([self.disable] if isinstance(self.disable, str) else self.disable)
        known = pass_names()
        unknown = disable - set(known)
        if unknown:
            raise ValueError(f"unknown compiler passes {sorted(unknown)}; the passes are "
                             f"{list(known)}")
        object.__setattr__(self, "disable", disable)


DEFAULT_OPTIONS = CompileOptions()


@dataclasses.dataclass
class Plan:
    fn: Callable
    source: str
    filename: str
    line_ops: dict
    var_reads: list
    random_ops: list
    fetches: list
    feeds: list
    locks: list = dataclasses.field(default_factory=list)  # variables a run holds locked
    constants: dict = dataclasses.field(default_factory=dict)  # the module's arrays, by name
    uncapturable: list = dataclasses.field(default_factory=list)  # Rendered.uncapturable

    def failing_op(self, exc: BaseException) -> Operation | None:
        """The graph node whose generated line raised `exc`, if any."""
        tb = exc.__traceback__
        found = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                found = self.line_ops.get(tb.tb_lineno, found)
            tb = tb.tb_next
        return found


def run_passes(program, options: CompileOptions = DEFAULT_OPTIONS, consume: bool = False,
               backend: Backend | str = "numpy"):
    """`program` through every enabled pass of `pipeline(backend)`, in order. With
    `consume`, the program given and each one a pass replaces are not used again: their
    nodes are released (`ir.release`) as they are replaced."""
    if options.verify:
        verify(program, "lower")
    backend = get_backend(backend)
    placed = {}  # once a backend with a host partitioned the plan: how to check it stays so
    for name, run in pipeline(backend):
        if name not in options.disable:
            new = run(program)
            if consume and not _same_nodes(new, program):
                release(program, keep=new)
            program = new
            if name == "partition":
                placed = {"place": backend.place, "host": backend.host,
                          "fetch_on": getattr(backend, "fetch_on", None)}
            if options.verify:
                verify(program, name, **placed)
    return program


def _same_nodes(a, b) -> bool:
    """Do programs a and b have the very same nodes (a pass that changed nothing)?"""
    return a.nodes is b.nodes or (len(a.nodes) == len(b.nodes)
                                  and all(map(operator.is_, a.nodes, b.nodes)))


def compile_plan(fetches: list, feeds: list[Tensor], feed_sig: list[tuple], state: dict,
                 rngs: dict, title: str = "", options: CompileOptions | None = None,
                 locks: dict | None = None, backend: Backend | str = "numpy") -> Plan:
    """Compile the computation of `fetches` from `feeds` (with shapes/dtypes `feed_sig`).

    `state` and `rngs` are the session's variable values and random generators, `locks` its
    variables' locks (made here for those the plan's use_locking updates hold); the
    generated module refers to them as `V`, `R` and `L`.
    """
    locks = {} if locks is None else locks
    options = options or DEFAULT_OPTIONS
    backend = get_backend(backend)
    backend = backend.configured(options)
    with paused_gc():
        ops = prune(fetches, set(feeds))
        spec = specialize(ops, dict(zip(feeds, feed_sig)))
        program = lower(ops, fetches, feeds, spec)
        program.owned = True  # nobody else sees it: passes may reuse its nodes' values
        del ops, spec
        program = run_passes(program, options, consume=True, backend=backend)
        # a long program's module is compiled partly on helper processes: they start now,
        # while it is rendered (a node's lines are about 100 characters)
        pycompile.prepare(len(program.nodes) * 100)
        rendered = backend.render(program, title, options)
        release(program)  # the IR is freed here, before the code is compiled
        del program
        filename = f"<staticgrad-{next(_counter)}>"
        for name in rendered.locks:  # setdefault: one lock per variable, whoever asks first
            locks.setdefault(name, threading.Lock())
        fn = backend.load(rendered, filename, state, rngs, locks)
    plan = Plan(fn, rendered.source, filename, rendered.line_ops, rendered.var_reads,
                rendered.random_ops, fetches, feeds, rendered.locks, rendered.constants,
                rendered.uncapturable)
    # tracebacks show generated lines while the plan lives; the text goes with it
    weakref.finalize(plan, linecache.cache.pop, filename, None)
    return plan


# the NumPy backend's, the default (what the benchmarks and tests switch off one by one)
PIPELINE = pipeline("numpy")
PASS_NAMES = pass_names()
