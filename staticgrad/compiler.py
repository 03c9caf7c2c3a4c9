"""Turn (fetches, feed signature) into a compiled function: the session's slow path.

    PIPELINE: prune -> specialize -> render -> exec

Each stage is a plain function (see `passes/` and `codegen/`); `compile_plan` runs them in
order and returns a `Plan` holding the function and its source.
"""

from __future__ import annotations

import dataclasses
import itertools
import linecache
import weakref
from collections.abc import Callable

import numpy as np

from . import runtime
from .codegen.numpy_backend import render
from .graph import Operation, Tensor
from .passes.prune import prune
from .passes.specialize import specialize

_counter = itertools.count()


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


def compile_plan(fetches: list, feeds: list[Tensor], feed_sig: list[tuple], state: dict,
                 rngs: dict, title: str = "") -> Plan:
    """Compile the computation of `fetches` from `feeds` (with shapes/dtypes `feed_sig`).

    `state` and `rngs` are the session's variable values and random generators; the
    generated module refers to them as `V` and `R`.
    """
    fed = set(feeds)
    ops = prune(fetches, fed)
    spec = specialize(ops, dict(zip(feeds, feed_sig)))
    rendered = render(ops, fetches, feeds, spec, title=title)
    filename = f"<staticgrad-{next(_counter)}>"
    lines = rendered.source.splitlines(keepends=True)
    linecache.cache[filename] = (len(rendered.source), None, lines, filename)
    namespace = {"np": np, "rt": runtime, "V": state, "R": rngs, **rendered.constants}
    exec(compile(rendered.source, filename, "exec"), namespace)  # noqa: S102
    plan = Plan(namespace["run"], rendered.source, filename, rendered.line_ops,
                rendered.var_reads, rendered.random_ops, fetches, feeds)
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
