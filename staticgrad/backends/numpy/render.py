"""Render a compiled `Program` (see `ir.py`) as a readable NumPy module.

One line per node where possible, named after the node, with a comment naming the op and the
line of the user's program that created it (the shared walk, codegen/walk.py, keeps the
names, comments, constants and line map). Small constants are inlined as literals; larger
ones become module globals, as do the numbers of a fused kernel's blocks (0-d arrays named by
dtype and value, f32_1_5). The module is the template codegen_templates/numpy/module.py.j2.

What is this backend's own: the scalar fast path (values held as NumPy scalars,
scalars.py), the memory plan's `del` and `out=` (memory.py), fused groups as block kernels
(fused.py), variables read and written as V['w'], and a long run() cut into parts
(parts.py).
"""

from __future__ import annotations

import builtins
import re
from array import array

import numpy as np

from ...codegen.templates import render_template
from ...codegen.walk import LineMap, Lines, Walk, comment, node_comment, printable
from ...errors import UnimplementedError
from ...ir import Node, Program, Value, previous_write, walk, written_by
from ...ops.attr_types import Name
from ...ops.kernels import render_format, render_numpy, scalar_literal
from ...ops.state_ops import Store
from ...ops.table import get_opdef
from ..base import Rendered
from . import conv_fast, fast, parts, products, regions
from .epilogues import EPILOGUES
from .fused import render_group
from .lowering import NO_WEAK_LITERALS, out_form
from .one_pass_render import render_one_pass, takes_one_pass

# Names the generated module uses: its globals, and every builtin an emitter may call.
# (nb: one_pass.py, which compiles one-pass kernels; vk: _vector_kernels.py, which they call)
RESERVED = frozenset({"np", "rt", "fast", "nb", "vk", "V", "R", "L", "run", "lo", "hi"}
                     | set(dir(builtins)))

_LETTERS = re.compile(r"[a-z]+")
_TRANSFER = get_opdef("Transfer")  # (its comment says which way it moves its value)


def render(program: Program, title: str = "", vector_math: bool = True) -> Rendered:
    """Render `program` as a module whose `run(feeds...)` returns its fetches; with
    `vector_math`, float32 fused groups call runtime_fast's functions (exp, log, log1p,
    tanh, sigmoid) where that works here (the module then uses the global `fast`)."""
    return _NumpyWalk(program, vector_math).render(title)


class _NumpyWalk(Walk):
    reserved = RESERVED
    backend = "NumPy"

    def __init__(self, program: Program, vector_math: bool, module: _NumpyWalk | None = None,
                 params: list[str] | None = None):
        super().__init__(program)
        if module is not None:  # a region's function, in `module`'s module: one set of names
            self.names, self.constants, self._literals = \
                module.names, module.constants, module._literals
        self.vector_math = vector_math
        # id(Value) of those that may share memory with a feed, a variable or a constant
        # (a set: most values do not)
        self.alias: set[int] = set()
        self.scal: dict[int, str] = {}      # id(Value) -> its NumPy scalar (scalar fast path)
        self.by_value: dict[tuple, str] = {}  # (dtype, bytes) -> a fused block's number
        self.uses_fast = False              # a fused kernel calls runtime_fast (`fast`)
        self.uses_one_pass = False          # a fused group is a numba kernel (`nb`)
        # the run holds the BLAS to one thread where the [fast] extra runs one_blas_thread_ops
        # (rt.one_blas_thread says at run time: the source is the same with or without it, and
        # rendering loads no numba), its large products as rt.matmul; only with a convolution
        # large enough for conv_fast's loops (the others are runtime_conv's, whole-batch
        # products on the BLAS's own threads)
        self.one_blas_thread = module.one_blas_thread if module is not None else (
            vector_math and self._holds_one_blas_thread_op(program))
        self.kernels = []  # (lines, the op of each line) of each fused group's block kernel
        self.var_reads, self.random_ops = [], []
        self.locks = set()                  # use_locking updates: their variables' locks
        memory = self.memory = program.plan.get("memory") or (  # memory.py's plan (the
            module.memory if module is not None else None)  # program's covers its regions)
        self.free_after = memory.free_after if memory else {}
        self.write_into = memory.write_into if memory else {}
        self.held = program.plan.get("scalars", frozenset())  # scalars.py's held nodes
        if module is not None:  # what the module holds, whichever function adds to it
            self.by_value, self.kernels, self.var_reads, self.random_ops, self.locks = \
                module.by_value, module.kernels, module.var_reads, module.random_ops, \
                module.locks
        self.shared = _Shared(program, self.alias)
        self.params = []
        for k, v in enumerate(program.feeds):  # (a region written inline reads given names)
            self.expr[id(v)] = params[k] if params is not None else self.names.make(v.name)
            self.alias.add(id(v))
            self.params.append(self.expr[id(v)])
        self.inline = params is not None  # its feeds then are names of the code around it
        self.readers = None  # id(value) -> who reads it in its program (regions.py's _readers)
        # the blocks (loops written inline) its lines stand in, in the function around them
        self.nesting = module.nesting + 1 if self.inline else 0

    # -- how the code refers to values ---------------------------------------------------------
    def ref(self, v: Value, consumer: Node | None) -> str:
        known = self.expr.get(id(v))
        if known is not None:
            return known
        if id(v) in self.scal:  # held as a scalar: an array of its shape, made where needed
            if v.shape.ndims == 0:
                return self.scal[id(v)]
            name = self.expr[id(v)] = self.names.make(v.name)
            self.body.append(f"{name} = {self.scal[id(v)]}"
                             f"[{', '.join(['None'] * v.shape.ndims)}]")
            return name
        if v.const is None:
            raise AssertionError(f"{v!r} is used before it is computed")
        lit = self.literal(v.const) if v.const.ndim == 0 else None
        if lit is not None and consumer is not None and _weak_ok(consumer, v):
            return lit
        self.alias.add(id(v))  # a constant is shared by every run: never handed out or written
        return self.constant(v)

    def number(self, v: Value) -> str:
        """The scalar constant v as a module constant, a 0-d array of its dtype named by dtype
        and value (f32_1_5), one per distinct number: how a fused block's ufuncs read it."""
        value = np.asarray(v.const, dtype=v.dtype.np)
        key = (value.dtype, value.tobytes())  # (0.0 and -0.0 stay apart)
        if key not in self.by_value:
            lit = scalar_literal(value[()])
            name = self.names.make(v.name if lit is None else _constant_name(v, lit))
            self.by_value[key] = name
            self.constants[name] = value
        return self.by_value[key]

    def scalar_ref(self, v: Value, consumer: Node) -> str:
        """v as a NumPy scalar (v has one element)."""
        if id(v) in self.scal:
            return self.scal[id(v)]
        first = "[" + ", ".join(["0"] * v.shape.ndims) + "]" if v.shape.ndims else "[()]"
        if v.const is not None:
            lit = scalar_literal(v.const.ravel()[0])
            if lit is not None and _weak_ok(consumer, v):
                return lit
            return self.ref(v, None) + first
        if v.producer is not None and v.producer.opdef.reads_state:
            return self.ref(v, consumer) + first  # read where used, like every variable read
        name = self.scal[id(v)] = self.names.make(v.name + "_s")
        self.body.append(f"{name} = {self.ref(v, consumer)}{first}")
        return name

    def free(self, node: Node) -> None:
        """`del` the values whose last use is `node` (the memory plan)."""
        # (a value held as a NumPy scalar, scal, has no array name to free)
        expr = self.expr
        dead = [expr[id(v)] for v in self.free_after.get(id(node), ()) if id(v) in expr]
        if self.inline:  # (the feeds of a region written inline are the loop's: kept)
            dead = [name for name in dead if name not in self.params]
        if dead:
            self.body.append(f"del {', '.join(dead)}")

    # -- what a backend built on this one changes (backends/cuda/render.py) ------------------
    template = "numpy/module.py.j2"  # the module's template
    # ops whose kernels run on staticgrad's threads around one-threaded BLAS products
    # (conv_blocked.py): a run holding one holds the BLAS to one thread from start to end
    one_blas_thread_ops = frozenset({"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"})
    xp = "np"  # the array module of what regions.py writes around a node's regions

    def code(self, node: Node, args: list[str]) -> str:
        """The expression computing `node` from `args` (its reference kernel's; a large 2-D
        product on staticgrad's threads in a run that holds the BLAS to one thread)."""
        if self.one_blas_thread and node.type == "MatMul" and _split_product(node):
            a, b = (f"{arg}.T" if node.attrs[f"transpose_{side}"] else arg
                    for arg, side in zip(args, "ab"))
            return f"rt.matmul({a}, {b})"
        return _code(node, args, self.shared)

    def _holds_one_blas_thread_op(self, program: Program) -> bool:
        ops = self.one_blas_thread_ops
        return bool(ops) and any(node.type in ops and _on_loops(node) for node in walk(program))

    def copied(self, v: Value, e: str) -> str:
        """A fetch `e` (of value `v`) that the run keeps or shares, as a copy to hand out."""
        return f"np.array({e})"

    def returned(self, v: Value, e: str) -> str:
        """How run() hands out the fetch `e` of value `v`: a scalar for a 0-d value, a copy
        of what the run keeps or shares (`copied`), else the array itself."""
        if v.shape.ndims == 0:
            return f"{e}[()]"
        if id(v) in self.alias or e in self.constants:
            return self.copied(v, e)
        return e

    def module_values(self) -> dict:
        """The template's further values."""
        return {}

    # -- the hooks -----------------------------------------------------------------------------
    def out_name(self, v: Value) -> str:
        """The name of a value a kernel writes (made at its first mention)."""
        if id(v) not in self.expr:
            self.expr[id(v)] = self.names.make(v.name)
        return self.expr[id(v)]

    def group(self, node: Node) -> None:
        """A fused group: a block kernel, and the lines that run it."""
        names, out_name = self.names, self.out_name

        kname = names.make("fused")
        # with vector math on, a float32 group of scalar forms is also one numba kernel, which
        # hands the blocks NumPy would report on to the NumPy kernel (one_pass_render.py)
        one_pass = self.vector_math and takes_one_pass(node) and fast.available()
        runner = names.make(kname + "_one_pass") if one_pass else None
        run_lines, kernel, kernel_ops, vector, interface = render_group(
            node, kname, self.ref, self.number, out_name, names, printable, self.vector_math,
            runner)
        self.uses_fast = self.uses_fast or vector
        self.kernels.append((kernel, kernel_ops))
        if one_pass:
            self.kernels.append(render_one_pass(node, runner, kname, interface, names))
            self.uses_one_pass = True
        self.body.extend(run_lines)
        self.computed(node.origin)
        for v in node.outputs:
            self.alias.discard(id(v))
        if self.free_after:
            self.free(node)

    def regions(self, node: Node) -> None:
        """An If, While or WhileGrad: Python control flow around functions of the module, one
        for each region (regions.py)."""
        if node.type not in regions.FORMS:
            super().regions(node)  # (which refuses it)
            return
        regions.render(self, node)

    def inlined(self, region: Program, params: list[str]) -> tuple[_NumpyWalk, list[str]]:
        """`region` written for the code around it, reading `params` where it reads its
        feeds: the walk (its `body`, `line_at`, `line_op`) and the names of its results."""
        walk = type(self)(region, self.vector_math, module=self, params=params)
        walk.walk()
        self._uses_what(walk)
        return walk, [walk.ref(f, None) for f in region.fetches]

    def _uses_what(self, walk: _NumpyWalk) -> None:
        """What the module needs for a region's walk too (its lines are the module's)."""
        self.uses_fast = self.uses_fast or walk.uses_fast
        self.uses_one_pass = self.uses_one_pass or walk.uses_one_pass

    def function(self, region: Program, base: str) -> str:
        """`region` as a function of the module (kept with the fused kernels, whose lines
        the line map reads alike); its name."""
        walk = type(self)(region, self.vector_math, module=self)
        walk.walk()
        returns = [walk.ref(f, None) for f in region.fetches]
        name = self.names.make(base)
        lines = render_template("numpy/region_function.py.j2", name=name, params=walk.params,
                                body=walk.body, returns=returns).splitlines()
        ops = [None] * len(lines)
        for k, op in zip(walk.line_at, walk.line_op):  # (body line k is line k of the function)
            ops[k] = op
        assert len(lines) == len(walk.body) + 2, "region_function.py.j2 and its ops disagree"
        self.kernels.append((lines, ops))
        self._uses_what(walk)
        return name

    def node(self, node: Node) -> None:
        op, body, expr = node.origin, self.body, self.expr
        if id(node) in self.held:  # the scalar fast path: computed on NumPy scalars
            args = ["None" if i in node.static_uses else self.scalar_ref(v, node)
                    for i, v in enumerate(node.inputs)]
            (out,) = node.outputs
            self.scal[id(out)] = self.names.make(out.name)
            body.append(comment(op))
            body.append(f"{self.scal[id(out)]} = {_code(node, args)}")
            self.computed(op)
            return
        opdef = node.opdef
        if opdef.reads_state:  # e.g. V['w']: evaluated where each consumer runs
            expr[id(node.outputs[0])] = _code(node, [])
            self.alias.add(id(node.outputs[0]))
            if written_by(node) is None and op.name not in self.var_reads:  # its value on entry
                self.var_reads.append(op.name)
            return
        ref = self.ref
        if node.static_uses:
            args = ["None" if i in node.static_uses else ref(v, node)
                    for i, v in enumerate(node.inputs)]
        else:  # (most: a name made already)
            known = expr.get
            args = [known(id(v)) or ref(v, node) for v in node.inputs]
        into = self.write_into.get(id(node)) if self.write_into else None
        if into is not None:  # the result goes into a dying input's buffer
            code = out_form(node.type, args, expr[id(into)], node.ctx)
        else:
            try:
                code = self.code(node, args)
            except ValueError as e:  # an emitter that needs what only a run knows
                raise UnimplementedError(None, op, f"{op.where()} cannot be compiled: {e}") \
                    from None
        self.emit(node, code)

    def emit(self, node: Node, code) -> None:
        """The lines computing `node` by `code` (an expression, a statement for an op of no
        outputs, or a Store), and what the walk keeps of its outputs."""
        op, opdef, body, expr = node.origin, node.opdef, self.body, self.expr
        outputs = node.outputs
        if len(outputs) == 1:
            outs = [self.names.make(outputs[0].name)]
        else:
            make = self.names.make
            outs = [make(v.name) for v in outputs]
        if opdef.draws_random:
            self.random_ops.append(op)
        if opdef is _TRANSFER:
            body.append(node_comment(node))
        elif node.type in EPILOGUES:  # (a bias add and its ReLU...: each op's comment)
            body.extend([comment(o) for o in node.attrs["ops"]])
        else:
            body.append(comment(op))
        if isinstance(code, Store):
            memory = self.memory
            value = code.in_place if memory and id(node) in memory.in_place else code.value
            body.append(f"{code.target} = {outs[0]} = {value}")
            self.alias.add(id(node.inputs[1]))  # the value now is the variable's: copy to fetch
            var = node.attrs["var"]
            if code.reads_target and previous_write(node) is None and var not in self.var_reads:
                self.var_reads.append(var)  # (its value on entry)
            if node.attrs["use_locking"]:
                self.locks.add(var)
            aliased = True  # an assignment's output is the variable's new value itself
        elif not outs:  # an op of no outputs (Assert): a statement
            body.append(code)
            aliased = False
        else:
            body.append(f"{outs[0] if len(outs) == 1 else ', '.join(outs)} = {code}")
            aliased = opdef.view and bool(node.inputs) and id(node.inputs[0]) in self.alias
        self.line_at.append(len(body))  # (computed(op), inline: once a node)
        self.line_op.append(op)
        for v, name in zip(outputs, outs):
            expr[id(v)] = name
        if aliased:
            self.alias.update(id(v) for v in outputs)
        if self.free_after:
            self.free(node)

    # -- the module ----------------------------------------------------------------------------
    def render(self, title: str) -> Rendered:
        self.walk()  # then the lines made for the fetches, which stay in run()
        program, expr, constants = self.program, self.expr, self.constants
        returns, fetch_names = [], []
        for f in program.fetches:
            if not isinstance(f, Value):
                returns.append("None")
                fetch_names.append(f.origin.name if isinstance(f, Node) else "an operation")
                continue
            fetch_names.append(f.tensor.name if f.tensor is not None else f.name)
            returns.append(self.returned(f, self.ref(f, None)))
        feeds = [(expr[id(v)], printable(v.tensor.name), v.dtype.name, printable(v.shape))
                 for v in program.feeds]
        body, names = self.body, self.names
        split = None
        if len(body) > parts.SPLIT_ABOVE:
            split = parts.split_run(program, body, self.marks, names.made, self.made, expr,
                                    self.scal, self.free_after, constants, self.params)
        # the source is put together from here on: the names of values are no longer needed,
        # and each part's lines are joined into one text as their list is dropped (a
        # 100,000-op chain's lines, names and texts at once were a fifth of its peak memory)
        for table in (expr, self.scal, self.alias, names.used, names.made):
            table.clear()
        if split:
            body.clear()  # the parts and run()'s new body hold the lines now
            body = split[0]
            for part in split[1]:
                part.join()
        locks = [f"L[{Name().literal(v)}]" for v in sorted(self.locks)]
        holds = []  # (why, what) of each context run() holds from start to end
        if locks:
            holds.append(("use_locking: a run holds the locks of the variables it updates, "
                          "from start to end", locks))
        if self.one_blas_thread:
            holds.append(("the BLAS on one thread throughout where convolutions run on "
                          "staticgrad's threads ([fast])", ["rt.one_blas_thread()"]))
        source = render_template(
            self.template, **self.module_values(), title=printable(title), params=self.params,
            body=("\n        " if holds else "\n    ").join(body), returns=returns,
            parts=split[1] if split else [], constants=sorted(constants),
            kernels=[lines for lines, _ in self.kernels], feeds=feeds,
            fetches=[printable(n) for n in fetch_names], fast=self.uses_fast,
            one_pass=self.uses_one_pass, locks=locks, holds=holds)
        line_map = _line_map(source, self.line_at, self.line_op, split, self.kernels,
                             len(holds) + 1 if holds else 0)
        return Rendered(source, constants, line_map, self.var_reads, self.random_ops,
                        sorted(self.locks))


def _line_map(source: str, line_at, line_op: list, split, kernels, skip: int) -> LineMap:
    """The op of each line of `source` that computes one, from `line_at` (1-based lines of
    run()'s unsplit body, ascending) and `line_op`, and the op of each line of each kernel.
    `skip`: lines at the top of run() before its body (the comments and `with` of what it
    holds)."""
    lines = Lines(source)
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
    dtype = v.dtype
    for o in consumer.inputs:  # (a loop, not any() of a generator: once per constant read)
        if o is not v and o.dtype is dtype and o.const is None:
            return True
    return False


def _on_loops(node: Node) -> bool:
    """Is convolution `node` large enough for conv_fast's loops (conv_blocked's, around
    one-threaded products), or of a size known only at run time?"""
    positions = node.outputs[0] if node.type == "Conv2D" else node.inputs[2]
    filt = node.outputs[0] if node.type == "Conv2DBackpropFilter" else node.inputs[1]
    dims = [positions.shape.dims, filt.shape.dims]
    if any(d is None or None in d for d in dims):
        return True
    return conv_fast.conv_macs(dims[0], dims[1]) >= conv_fast.LOOPS_MIN_MACS


def _split_product(node: Node) -> bool:
    """Is MatMul `node` a product of 2-D inputs worth splitting between threads?"""
    a, b = (v.shape.dims for v in node.inputs)
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return False
    (m, k), n = (a[::-1] if node.attrs["transpose_a"] else a), \
        (b[0] if node.attrs["transpose_b"] else b[1])
    return products.worth_splitting(m, k, n)
