"""Render a compiled `Program` (see `ir.py`) as a readable NumPy module.

One line per node where possible, named after the node, with a comment naming the op and the
line of the user's program that created it. Names are sanitized, so a node name can never
inject code. Small constants are inlined as literals; larger ones become module globals, as
do the numbers of a fused kernel's blocks (0-d arrays named by dtype and value, f32_1_5).
"""

from __future__ import annotations

import bisect
import builtins
import dataclasses
import functools
import keyword
import re
from array import array

import numpy as np

from ...codegen.templates import render_template
from ...errors import UnimplementedError
from ...graph import Operation
from ...ir import Node, Program, Value, previous_write, walk, written_by
from ...ops.attr_types import Name
from ...ops.kernels import render_format, render_numpy, scalar_literal
from ...ops.state_ops import Store
from . import parts
from .fused import render_group
from .lowering import NO_WEAK_LITERALS, out_form

# Names the generated module uses: its globals, and every builtin an emitter may call.
RESERVED = {"np", "rt", "fast", "V", "R", "L", "run", "lo", "hi"} | set(dir(builtins))


@dataclasses.dataclass
class Rendered:
    source: str
    constants: dict        # global name -> NumPy value
    line_ops: LineMap      # line number in source -> Operation (for error messages)
    var_reads: list        # variable names read before any assignment in this plan
    random_ops: list       # random Operations the plan draws from
    locks: list            # variables whose lock a run holds throughout (use_locking updates)


_NON_WORD = re.compile(r"\W", flags=re.ASCII)
_LETTERS = re.compile(r"[a-z]+")
_UNPRINTABLE = re.compile(r"[^A-Za-z0-9_.:/<>()?, *+=%-]")


class _Names:
    def __init__(self):
        self.used = set(RESERVED)
        self.made = []  # every name made, in order (backends/numpy/parts.py reads which are whose)

    def make(self, text: str) -> str:
        base = text.replace("/", "_")  # op names: letters, digits, _ . - / > (scope/Op_1)
        if not (base.isascii() and base.isidentifier()):
            base = _NON_WORD.sub("_", base)
        base = base.strip("_") or "t"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "t_" + base
        name, i = base, 1
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.used.add(name)
        self.made.append(name)
        return name


def _printable(text: str) -> str:
    """Text safe inside a comment or docstring of generated code, whatever it came from."""
    return _UNPRINTABLE.sub("?", str(text))


@functools.lru_cache(maxsize=256)
def _short_file(filename: str) -> str:
    return _printable(filename.rsplit("/", 1)[-1])


@functools.lru_cache(maxsize=1024)
def _where(location: tuple) -> str:
    """'model.py:12' (the ops of one line share their location tuple: errors.user_location)."""
    filename, lineno = location
    return f"{_short_file(filename)}:{lineno}"


def _comment(op: Operation) -> str:
    # (a printable name has no quote or backslash: quoted as repr() would, without it)
    return f"# {op.type} '{_printable(op.name)}' at {_where(op.location)}"


def render(program: Program, title: str = "", vector_math: bool = True) -> Rendered:
    """Render `program` as a module whose `run(feeds...)` returns its fetches; with
    `vector_math`, float32 fused groups call runtime_fast's functions (exp, log, tanh,
    sigmoid) where that works here (the module then uses the global `fast`)."""
    names = _Names()
    expr: dict[int, str] = {}      # id(Value) -> how the code refers to it
    alias: set[int] = set()        # id(Value) of those that may share memory with a feed,
    #                                a variable or a constant (a set: most values do not)
    constants: dict[str, np.ndarray] = {}
    by_value: dict[tuple, str] = {}  # (dtype, bytes) -> a fused block's number (number())
    params = []
    for v in program.feeds:
        expr[id(v)] = names.make(v.name)
        alias.add(id(v))
        params.append(expr[id(v)])

    scal: dict[int, str] = {}      # id(Value) -> its NumPy scalar (the scalar fast path)
    uses_fast = False              # a fused kernel calls runtime_fast (`fast`)
    literals: dict[tuple, str | None] = {}  # (dtype, bytes) -> scalar_literal of that number

    def literal(c: np.ndarray) -> str | None:
        """scalar_literal of the 0-d array c, once per distinct number (a chain's thousands
        of `* 1.0001` are as many constants of one number)."""
        key = (c.dtype, c.tobytes())
        text = literals.get(key, literals)
        if text is literals:
            text = literals[key] = scalar_literal(c[()])
        return text

    def ref(v: Value, consumer: Node | None) -> str:
        known = expr.get(id(v))
        if known is not None:
            return known
        if id(v) in scal:  # held as a scalar: an array of its shape, made where needed
            if v.shape.ndims == 0:
                return scal[id(v)]
            expr[id(v)] = names.make(v.name)
            body.append(f"{expr[id(v)]} = {scal[id(v)]}[{', '.join(['None'] * v.shape.ndims)}]")
            return expr[id(v)]
        if v.const is None:
            raise AssertionError(f"{v!r} is used before it is computed")
        lit = literal(v.const) if v.const.ndim == 0 else None
        if lit is not None and consumer is not None and _weak_ok(consumer, v):
            return lit
        gname = names.make(v.name)
        constants[gname] = np.asarray(v.const, dtype=v.dtype.np)
        expr[id(v)] = gname
        alias.add(id(v))  # a constant is shared by every run: never handed out or written
        return gname

    def number(v: Value) -> str:
        """The scalar constant v as a module constant, a 0-d array of its dtype named by dtype
        and value (f32_1_5), one per distinct number: how a fused block's ufuncs read it."""
        value = np.asarray(v.const, dtype=v.dtype.np)
        key = (value.dtype, value.tobytes())  # (0.0 and -0.0 stay apart)
        if key not in by_value:
            lit = scalar_literal(value[()])
            by_value[key] = names.make(v.name if lit is None else _constant_name(v, lit))
            constants[by_value[key]] = value
        return by_value[key]

    def scalar_ref(v: Value, consumer: Node) -> str:
        """v as a NumPy scalar (v has one element)."""
        if id(v) in scal:
            return scal[id(v)]
        first = "[" + ", ".join(["0"] * v.shape.ndims) + "]" if v.shape.ndims else "[()]"
        if v.const is not None:
            lit = scalar_literal(v.const.ravel()[0])
            if lit is not None and _weak_ok(consumer, v):
                return lit
            return ref(v, None) + first
        if v.producer is not None and v.producer.opdef.reads_state:
            return ref(v, consumer) + first  # read where used, like every variable read
        scal[id(v)] = names.make(v.name + "_s")
        body.append(f"{scal[id(v)]} = {ref(v, consumer)}{first}")
        return scal[id(v)]

    def free(node: Node) -> None:
        """`del` the values whose last use is `node` (the memory plan)."""
        # (a value held as a NumPy scalar, scal, has no array name to free)
        dead = [expr[id(v)] for v in free_after.get(id(node), ()) if id(v) in expr] \
            if free_after else []
        if dead:
            body.append(f"del {', '.join(dead)}")

    shared = _Shared(program, alias)
    body, var_reads, random_ops = [], [], []
    line_at, line_op = array("l"), []  # the body's lines (1-based) that compute ops, the ops
    locks = set()                      # use_locking updates: their variables' locks
    kernels = []  # (lines, the op of each line) of each fused group's block kernel
    memory = program.plan.get("memory")  # (memory.py's plan, scalars.py's held nodes)
    free_after = memory.free_after if memory else {}
    write_into = memory.write_into if memory else {}
    held = program.plan.get("scalars", frozenset())
    marks, made = array("l"), array("l")  # where each node's lines and names begin (parts.py)
    known = expr.get
    for node in program.nodes:
        marks.append(len(body))
        made.append(len(names.made))
        op = node.origin
        if node.regions:  # (no op that this backend can render holds regions yet)
            raise UnimplementedError(None, op, f"{op.where() + ': ' if op else ''}the NumPy "
                                               f"backend cannot render a {node.type} holding "
                                               "regions")
        if not node.opdef.computes and not node.members:
            continue  # a NoOp: nothing to compute
        if node.members:  # a fused group: a block kernel, and the lines that run it
            def out_name(v):
                if id(v) not in expr:
                    expr[id(v)] = names.make(v.name)
                return expr[id(v)]
            kname = names.make("fused")
            run_lines, kernel, kernel_ops, vector = render_group(
                node, kname, ref, number, out_name, names, _printable, vector_math)
            uses_fast = uses_fast or vector
            kernels.append((kernel, kernel_ops))
            body.extend(run_lines)
            line_at.append(len(body))
            line_op.append(op)
            for v in node.outputs:
                alias.discard(id(v))
            free(node)
            continue
        if id(node) in held:  # the scalar fast path: computed on NumPy scalars
            args = ["None" if i in node.static_uses else scalar_ref(v, node)
                    for i, v in enumerate(node.inputs)]
            (out,) = node.outputs
            scal[id(out)] = names.make(out.name)
            body.append(_comment(op))
            body.append(f"{scal[id(out)]} = {_code(node, args)}")
            line_at.append(len(body))
            line_op.append(op)
            continue
        if node.opdef.reads_state:  # e.g. V['w']: evaluated where each consumer runs
            expr[id(node.outputs[0])] = _code(node, [])
            alias.add(id(node.outputs[0]))
            if written_by(node) is None and op.name not in var_reads:  # its value on entry
                var_reads.append(op.name)
            continue
        args = ["None" if i in node.static_uses else ref(v, node)
                for i, v in enumerate(node.inputs)] if node.static_uses else \
            [known(id(v)) or ref(v, node) for v in node.inputs]  # (most: a name made already)
        into = write_into.get(id(node)) if write_into else None
        if into is not None:  # the result goes into a dying input's buffer
            code = out_form(node.type, args, expr[id(into)], node.ctx)
        else:
            try:
                code = _code(node, args, shared)
            except ValueError as e:  # an emitter that needs what only a run knows
                raise UnimplementedError(None, op, f"{op.where()} cannot be compiled: {e}") \
                    from None
        outs = [names.make(v.name) for v in node.outputs]
        if node.opdef.draws_random:
            random_ops.append(op)
        body.append(_comment(op))
        if isinstance(code, Store):
            value = code.in_place if memory and id(node) in memory.in_place else code.value
            body.append(f"{code.target} = {outs[0]} = {value}")
            alias.add(id(node.inputs[1]))  # the value now is the variable's: copy to fetch
            var = node.attrs["var"]
            if code.reads_target and previous_write(node) is None and var not in var_reads:
                var_reads.append(var)  # (its value on entry)
            if node.attrs["use_locking"]:
                locks.add(var)
        elif len(outs) == 1:
            body.append(f"{outs[0]} = {code}")
        else:
            body.append(f"{', '.join(outs)} = {code}")
        line_at.append(len(body))
        line_op.append(op)
        # an assignment's output is the variable's new value itself (V[...] = out = ...)
        aliased = isinstance(code, Store) or (
            node.opdef.view and bool(node.inputs) and id(node.inputs[0]) in alias)
        for v, name in zip(node.outputs, outs):
            expr[id(v)] = name
            if aliased:
                alias.add(id(v))
        if free_after:
            free(node)

    marks.append(len(body))  # then the lines made for the fetches, which stay in run()
    made.append(len(names.made))
    returns, fetch_names = [], []
    for f in program.fetches:
        if not isinstance(f, Value):
            returns.append("None")
            fetch_names.append(f.origin.name if isinstance(f, Node) else "an operation")
            continue
        fetch_names.append(f.tensor.name if f.tensor is not None else f.name)
        e = ref(f, None)
        if f.shape.ndims == 0:
            returns.append(f"{e}[()]")
        elif id(f) in alias or e in constants:
            returns.append(f"np.array({e})")
        else:
            returns.append(e)
    feeds = [(expr[id(v)], _printable(v.tensor.name), v.dtype.name, _printable(v.shape))
             for v in program.feeds]
    split = None
    if len(body) > parts.SPLIT_ABOVE:
        split = parts.split_run(program, body, marks, names.made, made, expr, scal,
                                free_after, constants, params)
    # the source is put together from here on: the names of values are no longer needed,
    # and each part's lines are joined into one text as their list is dropped (a 100,000-op
    # chain's lines, names and texts at once were a fifth of its peak memory)
    for table in (expr, scal, alias, names.used, names.made):
        table.clear()
    if split:
        body.clear()  # the parts and run()'s new body hold the lines now
        body = split[0]
        for part in split[1]:
            part.join()
    source = render_template("numpy/module.py.j2", title=_printable(title), params=params,
                             body=("\n        " if locks else "\n    ").join(body),
                             returns=returns,
                             parts=split[1] if split else [], constants=sorted(constants),
                             kernels=[lines for lines, _ in kernels], feeds=feeds,
                             fetches=[_printable(n) for n in fetch_names],
                             fast=uses_fast,
                             locks=[f"L[{Name().literal(v)}]" for v in sorted(locks)])
    line_map = _line_map(source, line_at, line_op, split, kernels, 2 if locks else 0)
    return Rendered(source, constants, line_map, var_reads, random_ops, sorted(locks))


def _line_map(source: str, line_at, line_op: list, split, kernels, skip: int) -> LineMap:
    """The op of each line of `source` that computes one, from `line_at` (1-based lines of
    run()'s unsplit body, ascending) and `line_op`, and the op of each line of each kernel.
    `skip`: lines at the top of run() before its body (the locks' comment and `with`)."""
    lines = _Lines(source)
    numbers = array("l")
    if split is None:
        first = lines.find("\ndef run(") + 1 + skip
        numbers.extend(first + k - 1 for k in line_at)
        ops = list(line_op)
    else:
        ops, i = [], 0
        for part in split[1]:
            first = lines.find(f"\ndef {part.name}(") + len(part.head)
            end = part.first + part.size
            start = i
            while i < len(line_at) and line_at[i] <= end:
                i += 1
            numbers.extend(first + k - 1 - part.first for k in line_at[start:i])
            ops += line_op[start:i]
    for kernel, kernel_ops in kernels:  # a kernel's lines map to the ops they compute
        start = lines.find("\n" + kernel[0] + "\n")
        for i, op in enumerate(kernel_ops):
            if op is not None:
                numbers.append(start + i)
                ops.append(op)
    return LineMap(numbers, ops)


class LineMap:
    """{line number: op}, read-only, as two parallel sequences sorted by line (a dict of
    250,000 int keys took 20 MB for the 100,000-op chain); `get` by bisection."""

    def __init__(self, lines, ops: list):
        self.lines, self.ops = lines, ops

    def get(self, line: int, default=None):
        i = bisect.bisect_left(self.lines, line)
        return self.ops[i] if i < len(self.lines) and self.lines[i] == line else default

    def __getitem__(self, line: int):
        op = self.get(line, _MISSING)
        if op is _MISSING:
            raise KeyError(line)
        return op

    def __contains__(self, line) -> bool:
        return self.get(line, _MISSING) is not _MISSING

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self):
        return iter(self.lines)

    def items(self):
        return zip(self.lines, self.ops)


_MISSING = object()


class _Lines:
    """Line numbers of texts found in `source`, searched in order from the last one found
    (one pass over the source, however many parts and kernels it has)."""

    def __init__(self, source: str):
        self.source, self.pos, self.line = source, 0, 1

    def find(self, text: str) -> int:
        """The line number of the line after the "\\n" that `text` starts with."""
        at = self.source.index(text, self.pos)
        self.line += self.source.count("\n", self.pos, at + 1)
        self.pos = at + 1
        return self.line


class _Shared:
    """shared(v): may v share memory with anything else the run keeps (`ctx.may_share`)? Yes
    for what `alias` marks (feeds, variables, constants, views of them, stored values), and
    for any value but an array a non-view op of this run made, that one node reads and no
    fetch returns (found at the first question: only an op that stores its input asks). A
    variable's array is thus the session's alone, which updates written into it
    (backends/numpy/memory.py) rely on."""

    def __init__(self, program: Program, alias: set):
        self.program, self.alias, self.sole = program, alias, None

    def __call__(self, v: Value) -> bool:
        if id(v) in self.alias:
            return True
        if self.sole is None:
            uses: dict[int, int] = {}
            nodes = walk(self.program)
            for node in nodes:
                for u in node.runtime_inputs():
                    uses[id(u)] = uses.get(id(u), 0) + 1
            fetched = {id(f) for f in self.program.fetches if isinstance(f, Value)}
            self.sole = {id(u) for node in nodes for u in node.outputs
                         if uses.get(id(u)) == 1 and id(u) not in fetched
                         and (node.members or not node.opdef.view)}
        return id(v) not in self.sole


def _code(node: Node, args: list[str], shared: _Shared | None = None) -> str:
    """The node's NumPy code. A format string reads only the attrs; the node's full context
    (shapes, dtypes, which inputs may share memory with what the run keeps: `shared`) is
    made only for an emitter function."""
    if isinstance(node.opdef.numpy, str):
        return render_format(node.opdef, args, node.attrs)
    ctx = node.ctx
    ctx._shares = (lambda i: shared(node.inputs[i])) if shared is not None else None
    code = render_numpy(node.opdef, args, ctx)
    ctx._shares = None  # asked while rendering only
    return code


def _constant_name(v: Value, literal: str) -> str:
    """The name of a scalar constant, made of its dtype and value: f32_1_5 for float32 1.5,
    i64_m2 for int64 -2, f32_1_1754944em38 for float32 1.1754944e-38."""
    kind = "b" if v.dtype.is_bool else v.dtype.name[0] + _LETTERS.sub("", v.dtype.name)
    text = literal.replace("np.", "").strip("()").replace("-", "m").replace("+", "")
    return f"{kind}_{text.replace('.', '_')}"


def _weak_ok(consumer: Node, v: Value) -> bool:
    """May the scalar constant v be inlined as a Python literal in consumer without changing
    the result dtype? Yes when consumer is elementwise and another operand has v's dtype."""
    if not consumer.opdef.elementwise or consumer.type in NO_WEAK_LITERALS:
        return False
    return any(o is not v and o.dtype is v.dtype and o.const is None for o in consumer.inputs)
