"""Render a fused group (see passes/fuse.py) as a block kernel plus the lines that run it.

    def fused_1(lo, hi, x, out_Tanh):         # elements lo:hi of every array
        x = x[lo:hi]
        Mul = 1.5 * x
        ...
        out_Tanh[lo:hi] = Tanh                 # the group's outputs, written in full
        return np.sum(Add_2)                   # its part of the group's sum, if any

    # fused: 23 elementwise ops over 1000000 float32 elements, in blocks of 32768
    #   Sum = sum(tanh(1.5 * x + 0.3) * sigmoid(x) + ...)
    Tanh = np.empty((1000000,), dtype=np.float32)
    parts = rt.run_blocks(fused_1, 1000000, x.reshape(-1), Tanh.reshape(-1))
    Sum = np.sum(np.array(parts, dtype=np.float32))
"""

from __future__ import annotations

from ..ir import Node, Value
from ..ops.registry import np_dtype, render_numpy
from ..runtime_blocks import BLOCK

EXPRESSION_LIMIT = 240  # characters of a fused expression shown in the comment


def render_group(node: Node, kname: str, ref, out_name, kernel_names, printable):
    """(lines for run(), lines of the kernel) for the fused group `node`.

    `ref(value, consumer)` is how run() refers to a value, `out_name(value)` names a group
    output in run(), `kernel_names` makes the kernel's local names.
    """
    names = kernel_names
    local: dict[int, str] = {}
    params, args, prologue = [], [], []
    last = node.members[-1]
    domain = (last.inputs[0] if last.type == "Sum" else last.outputs[0]).shape
    dtype = (last.inputs[0] if last.type == "Sum" else last.outputs[0]).dtype
    for v in node.inputs:
        if v.const is not None and v.const.ndim == 0:
            continue  # a literal or a module constant, used as it is
        p = names.make(v.name)
        params.append(p)
        local[id(v)] = p
        if v.shape.num_elements() == 1:  # a scalar: passed as one number
            args.append(f"np.reshape({ref(v, None)}, ())")
        else:
            args.append(f"{ref(v, None)}.reshape(-1)")
            prologue.append(f"{p} = {p}[lo:hi]")
    for broadcast, source in node.attrs["scalars"].items():
        local[broadcast] = local[id(source)] if id(source) in local else ref(source, None)
    full = [v for v in node.outputs if v.producer.type != "Sum"]
    out_params = {id(v): names.make("out_" + v.name) for v in full}

    # a block's arrays are freed after their last use, so few are alive at once (and the
    # memory they free is reused, still in cache, by the next ones)
    sliced = {id(v) for v in node.inputs if id(v) in local and v.shape.num_elements() != 1}
    last_use = {id(v): i for i, m in enumerate(node.members) for v in m.inputs}
    body, partials, body_ops = [], [], []
    for i, m in enumerate(node.members):
        a = [local[id(v)] if id(v) in local else ref(v, m) for v in m.inputs]
        out = names.make(m.outputs[0].name)
        local[id(m.outputs[0])] = out
        if m.type == "Sum":
            body.append(f"{out} = np.sum({a[0]}, dtype={np_dtype(m.outputs[0].dtype)})")
            partials.append(out)
        else:
            body.append(f"{out} = {render_numpy(m.opdef, a, m.ctx)}")
            sliced.add(id(m.outputs[0]))
        body_ops.append(m.origin)
        if id(m.outputs[0]) in out_params:
            body.append(f"{out_params[id(m.outputs[0])]}[lo:hi] = {out}")
            body_ops.append(m.origin)
        dead = sorted({local[id(v)] for v in (*m.inputs, m.outputs[0])
                       if id(v) in sliced and last_use.get(id(v), i) <= i})
        if dead:
            body.append(f"del {', '.join(dead)}")
            body_ops.append(None)
            sliced.difference_update(id(v) for v in (*m.inputs, m.outputs[0])
                                     if id(v) in sliced and last_use.get(id(v), i) <= i)
    kernel = [f"def {kname}(lo, hi, {', '.join(params + list(out_params.values()))}):"]
    kernel += [f"    {line}" for line in prologue + body]
    kernel.append(f"    return ({''.join(p + ', ' for p in partials)})")
    # which op each kernel line computes (for errors): none for the def and the slicing
    kernel_ops = [None] * (1 + len(prologue)) + body_ops + [None]

    inside = {id(v) for m in node.members for v in m.outputs}
    run = [f"# fused: {len(node.members)} elementwise ops over {domain.num_elements()} "
           f"{dtype.name} elements, in blocks of {BLOCK}"]
    memo: dict = {}
    for m in node.members:  # in order, so each expression's parts are known (no recursion)
        _expression(m.outputs[0], inside, memo)
    run += [f"#   {printable(v.name)} = {printable(memo[id(v)])}" for v in node.outputs]
    for v in full:
        run.append(f"{out_name(v)} = np.empty({tuple(v.shape.dims)!r}, "
                   f"dtype={np_dtype(v.dtype)})")
    call = f"rt.run_blocks({kname}, {domain.num_elements()}, " + \
        ", ".join(args + [f"{out_name(v)}.reshape(-1)" for v in full]) + ")"
    # each block returns its part of every sum of the group, in member order
    sums = [m.outputs[0] for m in node.members if m.type == "Sum"]
    wanted = {id(v) for v in node.outputs}
    if sums:
        parts = names.make("parts")
        run.append(f"{parts} = {call}")
        for i, s in enumerate(sums):
            if id(s) in wanted:
                run.append(f"{out_name(s)} = np.sum(np.array([p[{i}] for p in {parts}], "
                           f"dtype={np_dtype(s.dtype)}))")
    else:
        run.append(call)
    return run, kernel, kernel_ops


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
