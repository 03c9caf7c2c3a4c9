"""Turn (fetches, feed signature) into a compiled function: the session's slow path.

    prune -> specialize -> lower -> PIPELINE (the rewriting passes, in order) -> render -> exec

`prune` and `specialize` work on the graph (what the fetches need, with the feeds' shapes);
`lower` makes the IR (`ir.py`), which each pass of `PIPELINE` maps to a new one; the code
generator renders the last. Every pass is a plain function, testable alone, and any of them
can be switched off per session: `Session(options=CompileOptions(disable={"cse"}))`.
With `verify=True` (the test suite turns it on) the IR is checked after every pass.
"""

from __future__ import annotations

import dataclasses
import itertools
import linecache
import threading
import weakref
from collections.abc import Callable

import numpy as np

from . import runtime, runtime_fast
from .codegen.numpy_backend import render
from .gcpause import paused_gc
from .graph import Operation, Tensor
from .ir import lower, verify
from .passes.cse import cse
from .passes.dce import eliminate_dead_code
from .passes.expand import expand_composites
from .passes.fold import fold_constants
from .passes.fuse import fuse_elementwise
from .passes.matmul import fold_transposes_into_matmul
from .passes.memory import plan_memory
from .passes.negations import fold_negations
from .passes.prune import prune
from .passes.scalars import hold_scalars
from .passes.simplify import simplify
from .passes.specialize import specialize

_counter = itertools.count()

# The rewriting passes, in the order they run. Each maps a Program to a new Program.
PIPELINE = (
    ("fold", fold_constants),                          # known inputs -> computed now
    ("simplify", simplify),                            # x*1, x+0, --x, no-op reshapes...
    ("expand", expand_composites),                     # log1p of a large array -> its steps
    ("cse", cse),                                      # the same computation twice -> once
    ("negations", fold_negations),                     # a + (-b) -> a - b, a + (-p)*q -> a - p*q
    ("transpose_matmul", fold_transposes_into_matmul),  # matmul(transpose(a), b) -> flag
    ("dce", eliminate_dead_code),                      # drop what no fetch needs any more
    ("fuse", fuse_elementwise),                        # elementwise groups, run in blocks
    ("scalars", hold_scalars),                         # one-element chains on NumPy scalars
    ("memory", plan_memory),                           # free after last use, reuse buffers
)
PASS_NAMES = tuple(name for name, _ in PIPELINE)


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """How a session compiles: which passes of `PIPELINE` to skip, whether to check the IR
    after each pass (slower; for tests and for debugging a pass), and whether float32 fused
    groups may compute exp, log, tanh and sigmoid with runtime_fast (glibc's vector math
    through numba, the `[fast]` extra; used only where it is installed and works)."""

    disable: frozenset = frozenset()
    verify: bool = False
    vector_math: bool = True

    def __post_init__(self):
        disable = frozenset([self.disable] if isinstance(self.disable, str) else self.disable)
        unknown = disable - set(PASS_NAMES)
        if unknown:
            raise ValueError(f"unknown compiler passes {sorted(unknown)}; the passes are "
                             f"{list(PASS_NAMES)}")
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


def run_passes(program, options: CompileOptions = DEFAULT_OPTIONS):
    """`program` through every enabled pass of PIPELINE, in order."""
    if options.verify:
        verify(program, "lower")
    for name, run in PIPELINE:
        if name not in options.disable:
            program = run(program)
            if options.verify:
                verify(program, name)
    return program


def compile_plan(fetches: list, feeds: list[Tensor], feed_sig: list[tuple], state: dict,
                 rngs: dict, title: str = "", options: CompileOptions | None = None,
                 locks: dict | None = None) -> Plan:
    """Compile the computation of `fetches` from `feeds` (with shapes/dtypes `feed_sig`).

    `state` and `rngs` are the session's variable values and random generators, `locks` its
    variables' locks (made here for those the plan's use_locking updates hold); the
    generated module refers to them as `V`, `R` and `L`.
    """
    locks = {} if locks is None else locks
    options = options or DEFAULT_OPTIONS
    with paused_gc():
        ops = prune(fetches, set(feeds))
        spec = specialize(ops, dict(zip(feeds, feed_sig)))
        program = lower(ops, fetches, feeds, spec)
        program = run_passes(program, options)
        rendered = render(program, title=title, vector_math=options.vector_math)
        filename = f"<staticgrad-{next(_counter)}>"
        lines = rendered.source.splitlines(keepends=True)
        linecache.cache[filename] = (len(rendered.source), None, lines, filename)
        for name in rendered.locks:  # setdefault: one lock per variable, whoever asks first
            locks.setdefault(name, threading.Lock())
        namespace = {"np": np, "rt": runtime, "fast": runtime_fast, "V": state, "R": rngs,
                     "L": locks, **rendered.constants}
        exec(compile(rendered.source, filename, "exec"), namespace)  # noqa: S102
    plan = Plan(namespace["run"], rendered.source, filename, rendered.line_ops,
                rendered.var_reads, rendered.random_ops, fetches, feeds, rendered.locks)
    # tracebacks show generated lines while the plan lives; the text goes with it
    weakref.finalize(plan, linecache.cache.pop, filename, None)
    return plan


def failing_op(plan: Plan, exc: BaseException) -> Operation | None:
    """The graph node whose generated line raised `exc`, if any."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == plan.filename:
            found = plan.line_ops.get(tb.tb_lineno, found)
        tb = tb.tb_next
    return found
