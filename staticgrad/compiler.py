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
import operator
import threading
import types
import weakref
from collections.abc import Callable

import numpy as np

from . import runtime, runtime_fast
from .codegen.numpy_backend import render
from .gcpause import paused_gc
from .graph import Operation, Tensor
from .ir import lower, release, verify
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


def run_passes(program, options: CompileOptions = DEFAULT_OPTIONS, consume: bool = False):
    """`program` through every enabled pass of PIPELINE, in order. With `consume`, the
    program given and each one a pass replaces are not used again: their nodes are
    released (`ir.release`) as they are replaced."""
    if options.verify:
        verify(program, "lower")
    for name, run in PIPELINE:
        if name not in options.disable:
            new = run(program)
            if consume and not _same_nodes(new, program):
                release(program, keep=new)
            program = new
            if options.verify:
                verify(program, name)
    return program


def _same_nodes(a, b) -> bool:
    """Do programs a and b have the very same nodes (a pass that changed nothing)?"""
    return a.nodes is b.nodes or (len(a.nodes) == len(b.nodes)
                                  and all(map(operator.is_, a.nodes, b.nodes)))


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
        program.owned = True  # nobody else sees it: passes may reuse its nodes' values
        del ops, spec
        program = run_passes(program, options, consume=True)
        rendered = render(program, title=title, vector_math=options.vector_math)
        release(program)  # the IR is freed here, before the code is compiled
        del program
        filename = f"<staticgrad-{next(_counter)}>"
        lines = rendered.source.splitlines(keepends=True)
        linecache.cache[filename] = (len(rendered.source), None, lines, filename)
        for name in rendered.locks:  # setdefault: one lock per variable, whoever asks first
            locks.setdefault(name, threading.Lock())
        namespace = {"np": np, "rt": runtime, "fast": runtime_fast, "V": state, "R": rngs,
                     "L": locks, **rendered.constants}
        for code in compile_module(rendered.source, filename):
            exec(code, namespace)  # noqa: S102
    plan = Plan(namespace["run"], rendered.source, filename, rendered.line_ops,
                rendered.var_reads, rendered.random_ops, fetches, feeds, rendered.locks)
    # tracebacks show generated lines while the plan lives; the text goes with it
    weakref.finalize(plan, linecache.cache.pop, filename, None)
    return plan


# A module longer than this is compiled a top-level definition at a time (see compile_module).
PIECE_CHARS = 1 << 18


def compile_module(source: str, filename: str) -> list[types.CodeType]:
    """The code objects that, run in order in one namespace, do what the module `source`
    does: the whole module, or when it is long, each of its top-level definitions apart
    (with the line numbers they have in `source`). CPython's compiler holds all of a unit's
    tokens and syntax tree at once, and a long unit costs more a line than a short one: the
    250,000 lines of a 100,000-op chain's run() split into parts (codegen/parts.py) took 650
    MB compiled as one module, a few MB a definition at a time, and half the time."""
    if len(source) <= PIECE_CHARS:
        return [compile(source, filename, "exec")]
    codes, start, line = [], 0, 0
    while start < len(source):
        cut = source.find("\n\n\ndef ", start)  # the next top-level definition
        end = len(source) if cut < 0 else cut + 3
        piece = source[start:end]
        try:
            codes.append(_moved(compile(piece, filename, "exec"), line))
        except SyntaxError:  # not cut between statements after all (inside a string?):
            return [compile(source, filename, "exec")]  # the module as one unit
        line += piece.count("\n")
        start = end
    return codes


def _moved(code: types.CodeType, lines: int) -> types.CodeType:
    """`code` (and the functions it defines) as if it began `lines` lines further down."""
    if not lines:
        return code
    consts = tuple(_moved(c, lines) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + lines, co_consts=consts)


def failing_op(plan: Plan, exc: BaseException) -> Operation | None:
    """The graph node whose generated line raised `exc`, if any."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == plan.filename:
            found = plan.line_ops.get(tb.tb_lineno, found)
        tb = tb.tb_next
    return found
