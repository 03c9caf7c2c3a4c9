"""Ops holding regions, written as Python control flow in the generated module.

A region is rendered by a walk of its own that shares the module's names, constants and
kernels. A while_loop's condition and body are written inline, in the loop (a hot loop then
pays no call an iteration); the other regions (a cond's branch, a loop gradient's body, a
scan's body) become functions of the module (region_function.py.j2), which the op's `if` or
`for` calls:

    # If 'cond/If' at prog.py:7               # While 'while/While' at prog.py:9
    if Greater:                               i, s = i0, x
        y, = cond_If_then(x)                  while True:
    else:                                         Less = i < 10
        y, = cond_If_else(x)                      if not Less:
                                                      break
                                                  Add = i + 1
                                                  Mul = s * w
                                                  i, s = Add, Mul

A WhileGrad runs its loop again keeping each iteration's loop variables in a list, then its
body's gradient over the list in reverse, summing the gradients of the captured tensors.

`walk` is the renderer's walk (render.py's _NumpyWalk): `walk.function(region, base)` makes
a region's function, `walk.inlined(region, params)` its lines for the code around it,
`walk.ref` names a value, and each line added is marked as computing
the op (`walk.computed`), so errors raised in it name the op.
"""

from __future__ import annotations

from ...codegen.walk import comment
from ...errors import UnimplementedError
from ...ir import Node, Value
from ...ir import walk as walk_nodes
from ...ops.kernels import np_dtype

FORMS = ("If", "While", "WhileGrad", "Scan")  # the ops written here

# Loops written inline inside one another at most this deep; deeper ones call functions of
# the module (CPython refuses a function of more than 20 nested blocks).
MAX_INLINE_NESTING = 8


def render(walk, node: Node) -> None:
    {"If": _if, "While": _while, "WhileGrad": _while_grad, "Scan": _scan}[node.type](
        walk, node)
    for v in node.outputs:  # a region may give back its input: a feed, a variable's value
        walk.alias.add(id(v))
    if walk.free_after:
        walk.free(node)


def _line(walk, node: Node, text: str) -> None:
    walk.body.append(text)
    walk.computed(node.origin)


def _targets(names: list[str]) -> str:
    """The left side of an assignment from a region function's tuple."""
    return ", ".join(names) + ("," if len(names) == 1 else "")


def _outputs(walk, node: Node) -> list[str]:
    outs = [walk.names.make(v.name) for v in node.outputs]
    for v, name in zip(node.outputs, outs):
        walk.expr[id(v)] = name
    return outs


def _if(walk, node: Node) -> None:
    op = node.origin
    pred = walk.ref(node.inputs[0], node)
    args = ", ".join(walk.ref(v, node) for v in node.inputs[1:])
    functions = [walk.function(r, f"{op.name}_{label}")
                 for r, label in zip(node.regions, ("then", "else"))]
    target = _targets(_outputs(walk, node))
    walk.body.append(comment(node.origin))
    for head, function in zip((f"if {pred}:", "else:"), functions):
        _line(walk, node, head)
        _line(walk, node, f"    {target} = {function}({args})")


def _scalar(walk, node: Node, v) -> str:
    """How a loop reads `v`: a 0-d array as a NumPy scalar, on which NumPy's arithmetic is
    several times faster (a loop pays it every iteration); anything else as it is."""
    ref = walk.ref(v, node)
    if v.shape.ndims == 0 and (ref.isidentifier() or ref.startswith("V[")):
        return f"{ref}[()]"
    return ref


def _captured(walk, node: Node, values) -> list[str]:
    """The names a loop passes for the tensors its regions capture: each 0-d one bound to its
    NumPy scalar once, before the loop."""
    names = []
    for v in values:
        ref = _scalar(walk, node, v)
        if ref.endswith("[()]"):
            name = walk.names.make(f"{v.name}_scalar")
            _line(walk, node, f"{name} = {ref}")
            ref = name
        names.append(ref)
    return names


def _while(walk, node: Node) -> None:
    """The loop written out: the condition's lines, a break, the body's lines, the next loop
    variables (inline: a hot loop pays no call a step)."""
    n = node.attrs["loop_vars"]
    walk.body.append(comment(node.origin))
    entry = [_scalar(walk, node, v) for v in node.inputs[:n]]
    captured = _captured(walk, node, node.inputs[n:])
    outs = _outputs(walk, node)
    _line(walk, node, f"{', '.join(outs)} = {', '.join(entry)}")
    cond, body = node.regions
    if walk.nesting >= MAX_INLINE_NESTING:  # (CPython compiles 20 nested blocks at most)
        functions = [walk.function(r, f"{node.origin.name}_{label}")
                     for r, label in zip(node.regions, ("cond", "body"))]
        args = ", ".join(outs + captured)
        _line(walk, node, f"while {functions[0]}({args})[0]:")
        _line(walk, node, f"    {_targets(outs)} = {functions[1]}({args})")
        return
    _line(walk, node, "while True:")
    (going,) = _inline(walk, cond, outs + captured, "    ")
    _line(walk, node, f"    if not {going}:")
    _line(walk, node, "        break")
    nexts = _inline(walk, body, outs + captured, "    ")
    _line(walk, node, f"    {', '.join(outs)} = {', '.join(nexts)}")


def _inline(walk, region, params: list[str], indent: str) -> list[str]:
    """`region`'s lines added to the walk's, indented, reading `params` for its feeds (the
    line map follows them); the names of its results."""
    inner, results = walk.inlined(region, params)
    base = len(walk.body)
    walk.body.extend(indent + line if line else line for line in inner.body)
    for k, op in zip(inner.line_at, inner.line_op):
        walk.line_at.append(base + k)
        walk.line_op.append(op)
    return results


def _while_grad(walk, node: Node) -> None:
    op = node.origin
    n, wanted = node.attrs["loop_vars"], node.attrs["wanted"]
    k = len([i for i in wanted if i < n])
    forward, seeds = node.inputs[:len(node.inputs) - k], node.inputs[len(node.inputs) - k:]
    walk.body.append(comment(node.origin))
    entry = [_scalar(walk, node, v) for v in forward[:n]]
    captured = _captured(walk, node, forward[n:])
    seeds = [_scalar(walk, node, v) for v in seeds]
    cond, body, body_grad = (walk.function(r, f"{op.name}_{label}")
                             for r, label in zip(node.regions, ("cond", "body", "body_grad")))
    make = walk.names.make
    loop = [make(f"loop_var_{i}") for i in range(n)]
    kept = make(f"{op.name}_kept")
    outs = _outputs(walk, node)
    var_grads, cap_grads = outs[:k], outs[k:]
    steps = [make(f"{op.name}_step_{j}") for j in range(len(cap_grads))]
    args = ", ".join(loop + captured)
    _line(walk, node, f"{', '.join(loop)} = {', '.join(entry)}")
    _line(walk, node, f"{kept} = []  # each iteration's loop variables")
    _line(walk, node, f"while {cond}({args})[0]:")
    _line(walk, node, f"    {kept}.append(({_targets(loop)}))")
    _line(walk, node, f"    {_targets(loop)} = {body}({args})")
    _line(walk, node, f"{', '.join(var_grads)} = {', '.join(seeds)}")
    for name, j in zip(cap_grads, [i for i in wanted if i >= n]):
        _line(walk, node, f"{name} = {walk.xp}.zeros_like({captured[j - n]})")
    _line(walk, node, f"for {_targets(loop)} in reversed({kept}):")
    _line(walk, node, f"    {_targets(var_grads + steps)} = "
                      f"{body_grad}({', '.join(loop + captured + var_grads)})")
    for name, step in zip(cap_grads, steps):
        _line(walk, node, f"    {name} = {name} + {step}")
    _line(walk, node, f"del {kept}")


def _scan(walk, node: Node) -> None:
    op = node.origin
    c, e = node.attrs["carries"], node.attrs["elems"]
    walk.body.append(comment(op))
    init = [_scalar(walk, node, v) for v in node.inputs[:c]]
    used = _used_feeds(node.regions[0])  # (a row the body never reads is not taken: None)
    elems = [walk.ref(v, node) if c + k in used else None
             for k, v in enumerate(node.inputs[c:c + e])]
    captured = _captured(walk, node, node.inputs[c + e:])
    (body,) = (walk.function(r, f"{op.name}_body") for r in node.regions)
    outs = _outputs(walk, node)
    n_ys = len(node.outputs) - 2 * c
    finals, stacked, history = outs[:c], outs[c:c + n_ys], outs[c + n_ys:]
    rows = node.inputs[c].shape.dims[0]
    for v in node.outputs[c:]:
        if not v.shape.is_fully_defined():
            raise UnimplementedError(None, op, f"{op.where()}: the shape of its stacked output "
                                               f"{v.name} ({v.shape}) must be known when the "
                                               "session compiles")
    kept = [(name, v) for name, v in zip(history, node.outputs[c + n_ys:]) if _read(walk, v)]
    for v in node.outputs[c + n_ys:]:  # a history nothing reads is never made (nor freed)
        if not any(v is k for _, k in kept):
            del walk.expr[id(v)]
    unread = {k for k, v in enumerate(node.outputs[c:c + n_ys]) if not _read(walk, v)}
    for k in unread:  # nor is a stacked output nobody reads (the body's value is dropped)
        del walk.expr[id(node.outputs[c + k])]
    made = [(name, v) for k, (name, v) in enumerate(zip(stacked, node.outputs[c:c + n_ys]))
            if k not in unread]
    t = walk.names.make("step")
    order = f"range({rows})" if not node.attrs["reverse"] else f"range({rows - 1}, -1, -1)"
    if c:
        _line(walk, node, f"{', '.join(finals)} = {', '.join(init)}")
    for name, v in [*made, *kept]:
        if _rows_only(walk, v):  # (a list: each step's value kept as it is, not copied)
            _line(walk, node, f"{name} = [None] * {rows}")
        else:
            _line(walk, node,
                  f"{name} = {walk.xp}.empty({tuple(v.shape.dims)!r}, dtype={np_dtype(v.dtype)})")
    _line(walk, node, f"for {t} in {order}:")
    for name, carried in zip([k for k, _ in kept], [finals[history.index(k)] for k, _ in kept]):
        _line(walk, node, f"    {name}[{t}] = {carried}")
    targets = finals + ["_" if k in unread else f"{name}[{t}]" for k, name in enumerate(stacked)]
    args = finals + [f"{name}[{t}]" if name is not None else "None" for name in elems] + \
        captured
    _line(walk, node, f"    {_targets(targets)} = {body}({', '.join(args)})")


def _read(walk, v: Value) -> bool:
    """Does anything in the walk's program read `v` (a fetch, or a node's input)?"""
    return id(v) in _readers(walk)


def _rows_only(walk, v: Value) -> bool:
    """Is a Scan's stacked output `v` read only a row at a time, as the elems of other Scans
    (a forward loop's history and kept values, read by its gradient's loop)? It may then be a
    list of each step's values rather than an array they are copied into."""
    readers = _readers(walk).get(id(v))
    return bool(readers) and all(
        n is not None and n.type == "Scan"
        and n.attrs["carries"] <= k < n.attrs["carries"] + n.attrs["elems"] for n, k in readers)


def _readers(walk) -> dict:
    """id(value) -> the (node, input position) of each reader in the walk's program; a fetch
    reads with node None. A Scan whose body never reads a row of an elems (a shape its
    gradient kept, known once compiled) does not read that elems. (Made once a walk, when
    its first Scan asks.)"""
    if walk.readers is None:
        program = walk.program
        readers: dict = {}
        for n in walk_nodes(program):
            skipped = ()
            if n.type == "Scan":
                c, used = n.attrs["carries"], _used_feeds(n.regions[0])
                skipped = {k for k in range(c, c + n.attrs["elems"]) if k not in used}
            for k, x in enumerate(n.inputs):
                if k not in skipped:
                    readers.setdefault(id(x), []).append((n, k))
        for f in program.fetches:
            if isinstance(f, Value):
                readers.setdefault(id(f), []).append((None, None))
        walk.readers = readers
    return walk.readers


def _used_feeds(region) -> set[int]:
    """The positions of the feeds of `region` that its nodes or results read."""
    read = {id(x) for n in region.nodes for x in n.inputs} | \
        {id(f) for f in region.fetches if isinstance(f, Value)}
    return {k for k, v in enumerate(region.feeds) if id(v) in read}
