"""Render a float32 fused group as one numba kernel: one pass over its elements, in
sub-blocks of SUB elements whose rows stay in L1 (the template
codegen_templates/numpy/one_pass_kernel.py.j2; one_pass.py compiles and runs it).

    @nb.kernel(fused, "array", "out")         # fused: the group's NumPy block kernel
    def fused_nb(lo, hi, x_1, out_gradients_AddN):
        rows = np.zeros((9, 512), np.float32)
        r0, r1, ... = rows[0], rows[1], ...
        ok = True
        b = lo
        while b < hi:
            m = min(512, hi - b)
            for j in range(m):                # the cheap members: loops LLVM vectorizes
                x_2 = x_1[b + j]
                Mul = np.float32(1.5) * x_2
                ...
                r0[j] = Add                   # what a vector function or a later loop reads
                ok &= (Mul - Mul) + ... == np.float32(0)   # every result finite
            for i in range(0, (m + 7) // 8 * 8, 8):
                vk.tanh8(r0, r4, i)           # glibc's 8-wide tanhf on r0[i:i+8]
            for j in range(m):
                ...                           # what reads tanh, sigmoid, exp, log1p
            ...                               # each sum: in eight float32 lanes a sub-block,
            b += 512                          # the sub-blocks' lanes added in float64
        return ok, np.float32(Sum)            # ok: NumPy would report nothing here

A member's level is the loop that computes it: a cheap member's is the latest of its
inputs', a vector member (exp, log, log1p, tanh, sigmoid: lowering.VECTOR) runs after the
loop of its input's level and its result is read from the next loop on. Values crossing a
loop, and every vector function's argument and result, live in a row; the rest are locals of
one loop.

`ok` says whether NumPy would report nothing for the block (under an np.errstate ignoring
underflow: one_pass.py): no value of the block is non-finite (an overflow, a division by
zero and an invalid operation all make one), and each vector function's argument is in the
domain runtime_fast takes (fast.py). Not every value is checked: one whose non-finite value
would reach a checked one is not (lowering.ScalarForm.passes; a sum passes it on), nor the
result of an op that keeps finite inputs finite (keeps_finite), its inputs covered. Where
`ok` is False one_pass.py has the NumPy kernel compute the block again. Every name is made
by the module's `Names`, every number by `scalar_literal`.
"""

from __future__ import annotations

import numpy as np

from ...codegen.templates import render_template
from ...codegen.walk import comment
from ...ir import Node, Value
from ...ops.kernels import scalar_literal
from .lowering import SCALAR_FORMS, VECTOR, scalar_form

SUB = 512  # elements of a sub-block: 2 KB a float32 row, a group's rows in L1
# the fewest elements of a group made one kernel: numba takes about a second to compile one
# (once, then cached), which pays off on large groups (the NumPy backend fuses from the same
# size, policy.FUSE; tests that fuse smaller groups do not compile a kernel for each)
MIN_ELEMENTS = 1 << 16

_F32 = "np.float32"
_TINY, _BIG = (scalar_literal(np.float32(v)) for v in (np.finfo(np.float32).tiny,
                                                     np.finfo(np.float32).max))
# each vector function's argument where runtime_fast computes it (fast.py; its subnormal
# conditions are for underflow reports, and the kernel runs only where underflow is ignored)
_DOMAIN = {
    "exp": f"({{0}} >= {_F32}(-87.0)) & ({{0}} <= {_F32}(88.0))",
    "log": f"({{0}} >= {_F32}({_TINY})) & ({{0}} <= {_F32}({_BIG}))",
    "log1p": f"({{0}} > {_F32}(-1.0)) & ({{0}} <= {_F32}({_BIG}))",
}
_FINITE_FROM_FINITE = {"tanh", "sigmoid"}  # the vector functions of no domain check


def takes_one_pass(node: Node) -> bool:
    """Can the group be one numba kernel: of MIN_ELEMENTS or more, float32 throughout, every
    member one with a scalar form (lowering.SCALAR_FORMS) or a vector function
    (lowering.VECTOR), or a sum?"""
    last = node.members[-1]
    if (last.inputs[0] if last.type == "Sum" else last.outputs[0]).shape.num_elements() \
            < MIN_ELEMENTS:
        return False
    for m in node.members:
        if len(m.outputs) != 1 or (m.type != "Sum" and m.type not in SCALAR_FORMS
                                   and m.type not in VECTOR):
            return False
        if any(v.dtype.name != "float32" for v in (*m.inputs, *m.outputs)):
            return False
    return True


def render_one_pass(node: Node, name: str, fallback: str, interface: dict, names):
    """(the kernel's lines, the op of each line) of `node` as one numba kernel `name`, whose
    blocks that NumPy would report on are its NumPy kernel `fallback`'s.

    `interface` (fused.render_group's): "params", (name, Value, "array" or "number") of each
    argument of the NumPy kernel before its outputs; "outputs", (name, Value) of each output
    it writes in full; "locals", id(Value) -> the NumPy kernel's name for a member's result;
    "scalars", id(broadcast) -> the one-element value it broadcasts."""
    make = names.make
    param_of = {id(v): (p, kind) for p, v, kind in interface["params"]}
    out_of = {id(v): p for p, v in interface["outputs"]}
    scalars = interface["scalars"]
    members = [m for m in node.members
               if m.type == "Sum" or param_of.get(id(m.outputs[0]), (0, ""))[1] != "number"]
    element: dict[int, str] = {}  # id(array param's Value) -> the local of its element

    def term(v: Value) -> str:
        """How a loop refers to one element of v."""
        if id(v) in param_of:
            p, kind = param_of[id(v)]
            if kind == "number":
                return p
            if id(v) not in element:
                element[id(v)] = make(v.name + "_e")
            return element[id(v)]
        if id(v) in scalars:
            return term(scalars[id(v)])
        if v.const is not None and v.const.ndim == 0:
            return f"{_F32}({scalar_literal(np.float32(v.const[()]))})"
        return interface["locals"][id(v)]

    # -- levels: which loop computes (or first reads) each value ---------------------------
    level: dict[int, int] = {}
    for m in members:
        lv = max([level.get(id(_root(x, scalars)), 0) for x in m.inputs] or [0])
        level[id(m.outputs[0])] = lv + (m.type in VECTOR)
    loops = max(level.values(), default=0) + 1
    uses = {}  # id(Value) -> the loops that read it
    for m in members:
        at = level[id(m.outputs[0])] - (m.type in VECTOR)
        for x in m.inputs:
            uses.setdefault(id(_root(x, scalars)), set()).add(at)

    # -- rows: vector arguments and results, values read by a later loop, summands ---------
    row: dict[int, str] = {}
    rows: list[str] = []

    def row_of(v: Value) -> str:
        if id(v) not in row:
            row[id(v)] = make(f"row{len(rows)}")
            rows.append(row[id(v)])
        return row[id(v)]

    stores = [[] for _ in range(loops)]  # per loop: (Value, domain check or None)
    vector = [[] for _ in range(loops)]  # per loop: the vector calls after it
    sums = []                            # (member, its row, its float64 total)
    for m in members:
        (v,) = m.outputs
        if m.type in VECTOR:
            x = _root(m.inputs[0], scalars)
            at = level[id(v)] - 1
            if id(x) not in row:  # (a vector result is in its row already)
                stores[level.get(id(x), 0)].append(x)
                row_of(x)
            vector[at].append((m, row[id(x)], row_of(v)))
        elif m.type == "Sum":
            x = _root(m.inputs[0], scalars)
            if id(x) not in row:
                stores[level.get(id(x), 0)].append(x)
            sums.append((m, row_of(x), make(v.name + "_total")))
    for m in members:
        (v,) = m.outputs
        if m.type not in VECTOR and m.type != "Sum" and \
                any(u > level[id(v)] for u in uses.get(id(v), ())) and id(v) not in row:
            stores[level[id(v)]].append(v)
            row_of(v)

    # -- the loops -------------------------------------------------------------------------
    j, i, b, m_, ok = (make(n) for n in ("j", "i", "b", "m", "ok"))
    body, ops = [], []

    def emit(line: str, op=None, depth: int = 2) -> None:
        body.append("    " * depth + line)
        ops.append(op)

    domains = {}  # id(vector argument) -> its domain check
    for loop in vector:
        for m, _, _ in loop:
            form = _DOMAIN.get(VECTOR[m.type])
            if form is not None:
                x = _root(m.inputs[0], scalars)
                domains.setdefault(id(x), []).append(form)
    checked = _checked(members, interface["params"], scalars)
    read_params = set()
    for k in range(loops):
        lines, finite, checks = [], [], []
        needed = set()  # ids of the values this loop refers to
        computed = [m for m in members if m.type != "Sum" and m.type not in VECTOR
                    and level[id(m.outputs[0])] == k]
        here = {id(m.outputs[0]) for m in computed}
        materialized = [m.outputs[0] for m in members if m.type in VECTOR
                        and level[id(m.outputs[0])] == k]  # vector results, read here
        for m in computed:
            needed.update(id(_root(x, scalars)) for x in m.inputs)
        needed.update(id(v) for v in stores[k])
        needed.update(id(v) for v in materialized)
        reads = []
        # the loop's reads: array elements, and values of earlier loops (rows)
        for p, v, kind in interface["params"]:
            if kind == "array" and id(v) in needed:
                reads.append(f"{term(v)} = {p}[{b} + {j}]")
                if id(v) not in read_params and id(v) in checked:
                    finite.append(term(v))
                read_params.add(id(v))
        for mm in members:
            v = mm.outputs[0]
            if mm.type == "Sum" or id(v) in here or id(v) not in needed:
                continue
            if id(v) in row and (mm.type in VECTOR and level[id(v)] <= k or
                                 mm.type not in VECTOR and level[id(v)] < k):
                reads.append(f"{term(v)} = {row[id(v)]}[{j}]")
        for line in reads:
            lines.append((line, None))
        for mm in computed:
            (v,) = mm.outputs
            args = [term(x) for x in mm.inputs]
            lines.append((comment(mm.origin), mm.origin))
            lines.append((f"{term(v)} = {scalar_form(mm.type, args)}", mm.origin))
            if id(v) in checked:
                finite.append(term(v))
        for v in materialized:
            if id(v) in checked:
                finite.append(term(v))
        for v in stores[k]:
            lines.append((f"{row[id(v)]}[{j}] = {term(v)}", None))
            checks += [form.format(term(v)) for form in domains.get(id(v), ())]
        for v in [*(mm.outputs[0] for mm in computed), *materialized]:
            if id(v) in out_of:
                lines.append((f"{out_of[id(v)]}[{b} + {j}] = {term(v)}", v.producer.origin))
        if finite:
            checks.insert(0, f"({' + '.join(f'({n} - {n})' for n in finite)} == {_F32}(0))")
        if checks:
            lines.append((f"{ok} &= {' & '.join(checks)}", None))
        if lines:
            emit(f"for {j} in range({m_}):")
            for line, op in lines:
                emit(line, op, 3)
        if vector[k]:
            emit(f"for {i} in range(0, ({m_} + 7) // 8 * 8, 8):")
            for mm, src, dst in vector[k]:
                emit(comment(mm.origin), mm.origin, 3)
                emit(f"vk.{VECTOR[mm.type]}8({src}, {dst}, {i})", mm.origin, 3)

    # -- the sums: eight float32 lanes a sub-block, added into a float64 total -------------
    lanes, m8, t = (make(n) for n in ("lanes", "m8", "t")) if sums else (None,) * 3
    if sums:
        emit(f"{m8} = {m_} // 8 * 8")
    for mm, src, total in sums:
        emit(comment(mm.origin), mm.origin)
        emit(f"{lanes}[:] = 0")
        emit(f"for {i} in range(0, {m8}, 8):")
        emit(f"for {t} in range(8):", None, 3)
        emit(f"{lanes}[{t}] += {src}[{i} + {t}]", mm.origin, 4)
        emit(f"for {j} in range({m8}, {m_}):")
        emit(f"{lanes}[{j} - {m8}] += {src}[{j}]", mm.origin, 3)
        emit(f"{total} += {lanes}.sum()", mm.origin)

    numbers = [p for p, v, kind in interface["params"] if kind == "number"]
    takes = [kind for _, _, kind in interface["params"]] + ["out"] * len(interface["outputs"])
    params = [p for p, _, _ in interface["params"]] + [p for p, _ in interface["outputs"]]
    lines = render_template(
        "numpy/one_pass_kernel.py.j2", name=name, fallback=fallback, takes=takes,
        params=params, rows=rows, sub=SUB, numbers=numbers, ok=ok, b=b, m=m_, body=body,
        lanes=lanes, totals=[(total, make(total + "_32")) for _, _, total in sums],
        members=len(node.members)).splitlines()
    head = lines.index("    " * 2 + f"{m_} = min({SUB}, hi - {b})") + 1
    line_ops = [None] * head + ops + [None] * (len(lines) - head - len(ops))
    assert len(line_ops) == len(lines) and lines[head:head + len(body)] == body, \
        "one_pass_kernel.py.j2 and its ops disagree"
    return lines, line_ops


def _checked(members: list, params: list, scalars: dict) -> set[int]:
    """id() of the values the kernel checks are finite: those whose non-finite value would
    reach no checked value (see the module's docstring)."""
    consumers: dict[int, list] = {}
    for m in members:
        for k, x in enumerate(m.inputs):
            consumers.setdefault(id(_root(x, scalars)), []).append((m, k))
    mine = {id(m) for m in members}
    values = [v for _, v, kind in params if kind == "array"] + \
        [m.outputs[0] for m in members if m.type != "Sum"]
    # seen: the values whose non-finite value makes `ok` False, checked or passed on to one
    # that is (a sum's total is checked). A value of an op that keeps finite inputs finite is
    # not checked but is not seen either: its inputs must be (Relu(-x) of a NaN x is 0, so
    # -x, unchecked for Relu's sake, must not stand for x)
    seen, checked = set(), set()
    for v in reversed(values):  # each value's readers before it
        if any(_passes(c, k) and (c.type == "Sum" or id(c.outputs[0]) in seen)
               for c, k in consumers.get(id(v), ())):
            seen.add(id(v))
            continue
        m = v.producer
        if m is not None and id(m) in mine and _keeps_finite(m.type):
            continue  # finite where its inputs are, and they are seen or finite where theirs are
        checked.add(id(v))
        seen.add(id(v))
    return checked


def _passes(m: Node, k: int) -> bool:
    """Is m's result non-finite (or its argument refused) where its input k is?"""
    if m.type == "Sum":
        return True
    if m.type in VECTOR:
        return VECTOR[m.type] in _DOMAIN
    return k in SCALAR_FORMS[m.type].passes


def _keeps_finite(op_type: str) -> bool:
    if op_type in VECTOR:
        return VECTOR[op_type] in _FINITE_FROM_FINITE
    return SCALAR_FORMS[op_type].keeps_finite


def _root(v: Value, scalars: dict) -> Value:
    """The value v stands for (a broadcast one-element value: what it broadcasts)."""
    while id(v) in scalars:
        v = scalars[id(v)]
    return v
