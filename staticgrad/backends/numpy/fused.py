"""Render a fused group (see passes/fuse.py) as a block kernel plus the lines that run it,
through the templates codegen_templates/numpy/fused_kernel.py.j2 and fused_run.py.j2.

    def fused_1(lo, hi, x, c, out_Tanh, scratch):  # elements lo:hi of every array
        r0, r1 = scratch                      # this thread's scratch rows, one block long
        x = x[lo:hi]
        Mul = np.multiply(f32_1_5, x, out=r0) # each result goes into a free row
        ...
        Tanh = np.tanh(Add, out=out_Tanh[lo:hi])  # the group's outputs, written in full
        Sum = np.add.reduce(Add_2, dtype=np.float32)
        return (Sum, )                         # its part of the group's sums, if any

    # fused: 23 elementwise ops over 1000000 float32 elements, in blocks of at most 131072
    #   Sum = sum(tanh(1.5 * x + 0.3) * sigmoid(x) + ...)
    c = 0.5 * np.reshape(s, ())               # what needs no block is computed once
    Tanh = np.empty((1000000,), dtype=np.float32)
    parts = rt.run_blocks(fused_1, 1000000, x.reshape(-1), c, Tanh.reshape(-1),
                          scratch=(2, np.float32))
    Sum = np.sum(np.array([p[0] for p in parts], dtype=np.float32))

A block allocates no array of its dtype when every member has an out= form (lowering.OUT_FORMS;
ReluGrad's still makes its mask, a byte an element): rows are assigned by liveness, a result
taking the row of an input that dies there, so a long chain runs in a few rows that stay in
cache. A member without one makes its array as usual, and it is deleted after its last use.

With the [fast] extra, a float32 group whose members all have a scalar form is also one numba
kernel (one_pass_render.py), which run() calls instead; this kernel stays in the module as
what computes the blocks that kernel hands back (those NumPy would report on).
"""

from __future__ import annotations

from ...codegen.templates import render_template
from ...ir import Node, Value
from ...ops.kernels import np_dtype, render_numpy
from . import fast as runtime_fast
from .blocks import BLOCK
from .lowering import OUT_FORMS, READS_AFTER_OUT, VECTOR, out_form

EXPRESSION_LIMIT = 240  # characters of a fused expression shown in the comment


class _Rows:
    """The kernel's scratch rows: which value each holds, by liveness."""

    def __init__(self, names):
        self.names, self.free, self.holder, self._make = [], [], {}, names.make

    def take(self, dying: list[Value]) -> str:
        """A row for a new result: one that a dying input holds, else a free or a new one."""
        for x in dying:
            for row, held in self.holder.items():
                if held is x:
                    return row
        if self.free:
            return self.free.pop()
        self.names.append(self._make(f"r{len(self.names)}"))
        return self.names[-1]

    def hold(self, v: Value, row: str) -> None:
        self.holder[row] = v

    def release(self, dead: list[Value]) -> None:
        for row, held in list(self.holder.items()):
            if any(held is x for x in dead):
                del self.holder[row]
                self.free.append(row)


def render_group(node: Node, kname: str, ref, number, out_name, kernel_names, printable,
                 vector_math: bool = True, runner: str | None = None):
    """(lines for run(), lines of the kernel, the op of each kernel line, whether the kernel
    calls runtime_fast, the kernel's interface) for the fused group `node`.

    With `vector_math`, a float32 group computes each member that has a runtime_fast
    function (`OpDef.vector`) with it, where runtime_fast works here (a group has at least
    policy.FUSE.min_elements: large enough for its range checks not to count).

    `ref(value, consumer)` is how run() refers to a value, `number(value)` names a scalar
    constant as a module constant (a 0-d array), `out_name(value)` names a value in run(),
    `kernel_names` makes the kernel's local names. run() calls `runner` over the blocks (the
    kernel itself if None: one_pass_render.py's kernel falls back to it). The interface is
    what one_pass_render.py reads: "params" (name, Value, "array" or "number") of each
    argument before the outputs, "outputs" (name, Value) of each output written in full,
    "locals" (id(Value) -> the kernel's name of a member's result), "scalars" (id of a
    broadcast -> the one-element value it broadcasts).
    """
    names = kernel_names
    local: dict[int, str] = {}   # id(Value) -> how the kernel refers to it
    outer: dict[int, str] = {}   # id(Value) -> how run() refers to a number the kernel reads
    block: set[int] = set()      # values that are arrays of one block (else one number)
    params, args, prologue, hoisted = [], [], [], []
    kinds = []  # "array" or "number", of each of params
    last = node.members[-1]
    domain = (last.inputs[0] if last.type == "Sum" else last.outputs[0]).shape
    dtype = (last.inputs[0] if last.type == "Sum" else last.outputs[0]).dtype
    vector = vector_math and dtype.name == "float32" and \
        any(m.type in VECTOR for m in node.members) and runtime_fast.available()

    def param(v: Value, arg: str, kind: str = "number") -> None:
        local[id(v)] = names.make(v.name)
        outer[id(v)] = arg
        params.append(local[id(v)])
        args.append(arg)
        kinds.append((v, kind))

    for v in node.inputs:
        if v.const is not None and v.const.ndim == 0:
            continue  # a literal or a module constant, used as it is
        if v.shape.num_elements() == 1:  # a scalar: passed as one number
            param(v, f"np.reshape({ref(v, None)}, ())")
        else:
            param(v, f"{ref(v, None)}.reshape(-1)", "array")
            prologue.append(f"{local[id(v)]} = {local[id(v)]}[lo:hi]")
            block.add(id(v))
    for broadcast, source in node.attrs["scalars"].items():
        local[broadcast] = local.get(id(source)) or ref(source, None)
        outer[broadcast] = outer.get(id(source)) or ref(source, None)
    full = [v for v in node.outputs if v.producer.type != "Sum"]
    out_params = {id(v): names.make("out_" + v.name) for v in full}
    scratch = names.make("scratch")

    inside = {id(v) for m in node.members for v in m.outputs}
    rows = _Rows(names)
    last_use = {id(v): i for i, m in enumerate(node.members) for v in m.inputs}
    allocated: set[int] = set()  # block arrays NumPy made (not in a row): del after last use
    body, body_ops, partials = [], [], []
    calls_fast = False

    def emit(line: str, op) -> None:
        body.append(line)
        body_ops.append(op)

    for i, m in enumerate(node.members):
        (v,) = m.outputs
        a = [local[id(x)] if id(x) in local else ref(x, m) for x in m.inputs]
        from_block = any(id(x) in block for x in m.inputs)
        if m.type == "Sum":
            x = a[0] if from_block else f"np.broadcast_to({a[0]}, (hi - lo,))"
            local[id(v)] = names.make(v.name)
            # np.add.reduce is np.sum's own reduction (the same pairwise sum), without the
            # wrapper's 2 us a call: a block's Python time is time the other thread may wait
            emit(f"{local[id(v)]} = np.add.reduce({x}, dtype={np_dtype(v.dtype)})", m.origin)
            partials.append(local[id(v)])
        elif not from_block and id(v) not in out_params and \
                all(id(x) in outer or id(x) not in inside for x in m.inputs):
            # from numbers run() knows: computed once, there, and passed in as a number
            code = render_numpy(m.opdef, [outer[id(x)] if id(x) in outer else ref(x, m)
                                          for x in m.inputs], m.ctx)
            param(v, out_name(v))
            hoisted.append(f"{outer[id(v)]} = {code}")
            continue
        else:
            name = local[id(v)] = names.make(v.name)
            dest = f"{out_params[id(v)]}[lo:hi]" if id(v) in out_params else None
            if from_block and m.type in OUT_FORMS and (dest or v.dtype is dtype):
                if dest is None:
                    dest = rows.take([x for k, x in enumerate(m.inputs)
                                      if last_use[id(x)] == i
                                      and k not in READS_AFTER_OUT.get(m.type, ())])
                    rows.hold(v, dest)
                # a number as a 0-d array of its dtype: a ufunc converts a Python number on
                # every call (0.4 us, as long as the call itself, time the other threads wait)
                a = [number(x) if id(x) not in local and x.const is not None and
                     x.const.ndim == 0 else arg for x, arg in zip(m.inputs, a)]
                if vector and m.type in VECTOR and v.dtype is dtype:
                    emit(f"{name} = fast.{VECTOR[m.type]}({a[0]}, out={dest})", m.origin)
                    calls_fast = True
                else:
                    emit(f"{name} = {out_form(m.type, a, dest, m.ctx)}", m.origin)
            else:
                emit(f"{name} = {render_numpy(m.opdef, a, m.ctx)}", m.origin)
                if dest:  # a group output without an out= form
                    emit(f"{dest} = {name}", m.origin)
                elif from_block:
                    allocated.add(id(v))
            if from_block:
                block.add(id(v))
        dying = [x for x in (*m.inputs, v) if last_use.get(id(x), i) <= i]
        rows.release(dying)
        dead = sorted({local[id(x)] for x in dying if id(x) in allocated})
        if dead:
            emit(f"del {', '.join(dead)}", None)
            allocated.difference_update(id(x) for x in dying)

    kernel_params = params + list(out_params.values()) + [scratch][:bool(rows.names)]
    kernel = render_template("numpy/fused_kernel.py.j2", name=kname, params=kernel_params,
                             rows=rows.names, scratch=scratch, prologue=prologue, body=body,
                             partials=partials).splitlines()
    # which op each kernel line computes (for errors): none for the def and the slicing
    kernel_ops = [None] * (1 + bool(rows.names) + len(prologue)) + body_ops + [None]
    assert len(kernel_ops) == len(kernel), "fused_kernel.py.j2 and kernel_ops disagree"

    memo: dict = {}
    for m in node.members:  # in order, so each expression's parts are known (no recursion)
        _expression(m.outputs[0], inside, memo)
    outputs = [(out_name(v), repr(tuple(v.shape.dims)), np_dtype(v.dtype)) for v in full]
    args += [f"{out_name(v)}.reshape(-1)" for v in full]
    if rows.names:
        args.append(f"scratch=({len(rows.names)}, {np_dtype(dtype)})")
    # each block returns its part of every sum of the group, in member order
    sums = [m.outputs[0] for m in node.members if m.type == "Sum"]
    parts = names.make("parts") if sums else None
    wanted = {id(v) for v in node.outputs}
    run = render_template(
        "numpy/fused_run.py.j2", members=len(node.members), elements=domain.num_elements(),
        dtype=dtype.name, block=BLOCK, kernel=runner or kname, args=args, hoisted=hoisted,
        expressions=[(printable(v.name), printable(memo[id(v)])) for v in node.outputs],
        outputs=outputs, parts=parts,
        sums=[(out_name(s), i, np_dtype(s.dtype)) for i, s in enumerate(sums)
              if id(s) in wanted]).splitlines()
    interface = {"params": [(p, v, kind) for p, (v, kind) in zip(params, kinds)],
                 "outputs": [(out_params[id(v)], v) for v in full],
                 "locals": local, "scalars": node.attrs["scalars"]}
    return run, kernel, kernel_ops, calls_fast, interface


def _atomic(text: str) -> bool:
    """Does `text` read as one operand: a name, a number, or one call f(...)?"""
    if " " not in text:
        return True
    head, paren, _ = text.partition("(")
    if not paren or not head.replace("_", "").replace(".", "").isalnum():
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and i > len(head):
            return i == len(text) - 1
    return False


def _expression(v: Value, inside: set, memo: dict) -> str:
    """The fused expression computing v from the group's inputs (cut short when long)."""
    if id(v) in memo:
        return memo[id(v)]
    m = v.producer
    if id(v) not in inside or m is None:
        text = v.name if v.const is None or v.const.ndim else repr(v.const[()].item())
    elif m.type == "Sum":
        text = f"sum({_expression(m.inputs[0], inside, memo)})"
    else:
        parts = [_expression(i, inside, memo) for i in m.inputs]
        parts = [p if _atomic(p) else f"({p})" for p in parts]
        text = render_numpy(m.opdef, parts, m.ctx).replace("np.", "").replace("rt.", "")
    if len(text) > EXPRESSION_LIMIT:
        text = text[:EXPRESSION_LIMIT] + "..."
    memo[id(v)] = text
    return text
