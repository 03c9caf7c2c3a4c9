"""Render a specialized, scheduled graph as a readable NumPy module.

One line per node where possible, named after the node, with a comment naming the op and the
line of the user's program that created it. Names are sanitized, so a node name can never
inject code. Small constants are inlined as literals; larger ones become module globals.
"""

from __future__ import annotations

import builtins
import dataclasses
import keyword
import re

import numpy as np

from ..graph import Operation, Tensor
from ..ops.registry import render_numpy, scalar_literal
from ..ops.state_ops import Store
from ..passes.specialize import Spec
from .templates import render_template

# Names the generated module uses: its globals, and every builtin an emitter may call.
RESERVED = {"np", "rt", "V", "R", "run"} | set(dir(builtins))


@dataclasses.dataclass
class Rendered:
    source: str
    constants: dict        # global name -> NumPy value
    line_ops: dict         # line number in source -> Operation (for error messages)
    var_reads: list        # variable names read before any assignment in this plan
    random_ops: list       # random Operations the plan draws from


class _Names:
    def __init__(self):
        self.used = set(RESERVED)

    def make(self, text: str) -> str:
        base = re.sub(r"\W", "_", text, flags=re.ASCII).strip("_") or "t"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "t_" + base
        name, i = base, 1
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.used.add(name)
        return name


def _printable(text: str) -> str:
    """Text safe inside a comment or docstring of generated code, whatever it came from."""
    return re.sub(r"[^A-Za-z0-9_.:/<>()?, -]", "?", str(text))


def _comment(op: Operation) -> str:
    filename, lineno = op.location
    where = _printable(filename.rsplit("/", 1)[-1])
    return f"# {op.type} {_printable(op.name)!r} at {where}:{lineno}"


def render(ops: list[Operation], fetches: list, feeds: list[Tensor], spec: Spec,
           title: str = "") -> Rendered:
    """Render `ops` (pruned, in order) computing `fetches` from the `feeds` parameters."""
    names = _Names()
    expr: dict[Tensor, str] = {}       # how a tensor is referred to in the code
    alias: dict[Tensor, bool] = {}     # may share memory with a feed or a variable
    constants: dict[str, np.ndarray] = {}
    params = []
    for t in feeds:
        expr[t] = names.make(t.op.name if t.value_index == 0 else t.name)
        alias[t] = True
        params.append(expr[t])

    needed = _needed_ops(ops, fetches, feeds, spec)

    def ref(t: Tensor, consumer: Operation | None) -> str:
        if t in expr:
            return expr[t]
        value = spec.values.get(t) if t in spec.shapes else t._static
        if value is None:
            raise AssertionError(f"tensor {t.name} is used before it is computed")
        lit = scalar_literal(value[()]) if np.ndim(value) == 0 else None
        if lit is not None and consumer is not None and _weak_ok(consumer, t, spec):
            return lit
        gname = names.make(t.op.name if t.value_index == 0 else t.name)
        constants[gname] = np.asarray(value, dtype=t.dtype.np)
        expr[t] = gname
        return gname

    body, line_ops, var_reads, assigned, random_ops = [], {}, [], set(), []
    for op in ops:
        if op not in needed:
            continue
        if op.opdef.numpy is None:
            continue  # constants and feeds are referenced where used; a NoOp does nothing
        if not op.opdef.stateful and op.outputs and all(_is_static(t, spec) for t in op.outputs):
            continue  # folded: its values are constants, referenced where used
        ctx = spec.ctxs[op]
        if op.opdef.reads_state:  # e.g. V['w']: evaluated where each consumer runs
            expr[op.outputs[0]] = render_numpy(op.opdef, [], ctx)
            alias[op.outputs[0]] = True
            if op.name not in assigned and op.name not in var_reads:
                var_reads.append(op.name)
            continue
        args = []
        for i, t in enumerate(op.inputs):
            if _static_use(op, i, t, spec):
                args.append("None")
            else:
                args.append(ref(t, op))
        ctx.in_alias = [alias.get(t, False) for t in op.inputs]
        code = render_numpy(op.opdef, args, ctx)
        outs = [names.make(op.name if i == 0 else f"{op.name}_{i}")
                for i in range(len(op.outputs))]
        if op.opdef.draws_random:
            random_ops.append(op)
        body.append(_comment(op))
        if isinstance(code, Store):
            body.append(f"{code.target} = {outs[0]} = {code.value}")
            var = op.attrs["var"]
            if code.reads_target and var not in assigned and var not in var_reads:
                var_reads.append(var)
            assigned.add(var)
        elif len(outs) == 1:
            body.append(f"{outs[0]} = {code}")
        else:
            body.append(f"{', '.join(outs)} = {code}")
        line_ops[len(body)] = op
        for t, name in zip(op.outputs, outs):
            expr[t] = name
            # an assignment's output is the variable's new value itself (V[...] = out = ...)
            alias[t] = isinstance(code, Store) or (
                op.opdef.view and bool(op.inputs) and alias.get(op.inputs[0], False))

    returns = []
    for f in fetches:
        if isinstance(f, Operation):
            returns.append("None")
            continue
        e = ref(f, None)
        if spec.shapes[f].ndims == 0 if f in spec.shapes else f.shape.ndims == 0:
            returns.append(f"{e}[()]")
        elif (alias.get(f, False) or e in constants or
                                   (f.op.opdef.view and f not in feeds)):
            returns.append(f"np.array({e})")
        else:
            returns.append(e)
    source = render_template("numpy/module.py.j2", title=_printable(title), params=params,
                             body=body, returns=returns, constants=sorted(constants),
                             feeds=[(expr[t], _printable(t.name), t.dtype.name,
                                     _printable(spec.shapes[t])) for t in feeds],
                             fetches=[_printable(f.name) for f in fetches])
    header_lines = source.split("\n")
    # Map body line numbers (1-based within body) to source line numbers.
    first = next(i for i, line in enumerate(header_lines) if line.startswith("def run(")) + 2
    line_map = {first + k - 1: op for k, op in line_ops.items()}
    return Rendered(source, constants, line_map, var_reads, random_ops)


def _weak_ok(consumer: Operation, t: Tensor, spec: Spec) -> bool:
    """May the scalar constant t be inlined as a Python literal in consumer without changing
    the result dtype? Yes when consumer is elementwise and another operand has t's dtype."""
    if not consumer.opdef.elementwise:
        return False
    return any(o is not t and o.dtype is t.dtype and not _is_static(o, spec)
               for o in consumer.inputs)


def _is_static(t, spec):
    return (spec.values.get(t) if t in spec.shapes else t._static) is not None


def _static_use(op, i, t, spec) -> bool:
    """Is input i of op read only statically (its value or shape known at compile time)?"""
    if i in op.opdef.static_inputs and _is_static(t, spec):
        return True
    if i in op.opdef.shape_inputs:
        shape = spec.shapes.get(t, t._shape)
        return shape.is_fully_defined()
    return False


def _needed_ops(ops, fetches, feeds, spec) -> set:
    """Ops whose code must run: walk back from fetches over the inputs that are read at run
    time (not those used only for a value or shape known at compile time)."""
    feeds = set(feeds)
    stack = []
    for f in fetches:
        if isinstance(f, Operation):
            stack.append(f)
        elif f not in feeds:
            stack.append(f.op)
    needed = set()
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        stack.extend(op.control_inputs)
        for i, t in enumerate(op.inputs):
            if t in feeds or _static_use(op, i, t, spec):
                continue
            if _is_static(t, spec) and not t.op.opdef.stateful:
                continue
            stack.append(t.op)
    return needed
