"""Ops holding regions, written as Python control flow around functions of the module.

Each region (a cond's branch, a while_loop's condition, body or body gradient) becomes a
function of the generated module (region_function.py.j2), rendered by a walk of its own
that shares the module's names, constants and kernels; the op becomes the `if`, `while` or
`for` that calls them:

    # If 'cond/If' at prog.py:7               # While 'while/While' at prog.py:9
    if Greater:                               i, s = i0, x
        y, = cond_If_then(x)                  while while_While_cond(i, s, w)[0]:
    else:                                         i, s = while_While_body(i, s, w)
        y, = cond_If_else(x)

A WhileGrad runs its loop again keeping each iteration's loop variables in a list, then its
body's gradient over the list in reverse, summing the gradients of the captured tensors.

`walk` is the renderer's walk (render.py's _NumpyWalk): `walk.function(region, base)` makes
a region's function, `walk.ref` names a value, and each line added is marked as computing
the op (`walk.computed`), so errors raised in it name the op.
"""

from __future__ import annotations

from ...codegen.walk import comment
from ...errors import UnimplementedError
from ...ir import Node, Value
from ...ir import walk as walk_nodes
from ...ops.kernels import np_dtype

FORMS = ("If", "While", "WhileGrad", "Scan")  # (lowering.REGION_FORMS lists these)


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


def _while(walk, node: Node) -> None:
    op = node.origin
    n = node.attrs["loop_vars"]
    entry = [walk.ref(v, node) for v in node.inputs[:n]]
    captured = [walk.ref(v, node) for v in node.inputs[n:]]
    cond, body = (walk.function(r, f"{op.name}_{label}")
                  for r, label in zip(node.regions, ("cond", "body")))
    outs = _outputs(walk, node)
    args = ", ".join(outs + captured)
    walk.body.append(comment(node.origin))
    _line(walk, node, f"{', '.join(outs)} = {', '.join(entry)}")
    _line(walk, node, f"while {cond}({args})[0]:")
    _line(walk, node, f"    {_targets(outs)} = {body}({args})")


def _while_grad(walk, node: Node) -> None:
    op = node.origin
    n, wanted = node.attrs["loop_vars"], node.attrs["wanted"]
    k = len([i for i in wanted if i < n])
    forward, seeds = node.inputs[:len(node.inputs) - k], node.inputs[len(node.inputs) - k:]
    entry = [walk.ref(v, node) for v in forward[:n]]
    captured = [walk.ref(v, node) for v in forward[n:]]
    seeds = [walk.ref(v, node) for v in seeds]
    cond, body, body_grad = (walk.function(r, f"{op.name}_{label}")
                             for r, label in zip(node.regions, ("cond", "body", "body_grad")))
    make = walk.names.make
    loop = [make(f"loop_var_{i}") for i in range(n)]
    kept = make(f"{op.name}_kept")
    outs = _outputs(walk, node)
    var_grads, cap_grads = outs[:k], outs[k:]
    steps = [make(f"{op.name}_step_{j}") for j in range(len(cap_grads))]
    args = ", ".join(loop + captured)
    walk.body.append(comment(node.origin))
    _line(walk, node, f"{', '.join(loop)} = {', '.join(entry)}")
    _line(walk, node, f"{kept} = []  # each iteration's loop variables")
    _line(walk, node, f"while {cond}({args})[0]:")
    _line(walk, node, f"    {kept}.append(({_targets(loop)}))")
    _line(walk, node, f"    {_targets(loop)} = {body}({args})")
    _line(walk, node, f"{', '.join(var_grads)} = {', '.join(seeds)}")
    for name, j in zip(cap_grads, [i for i in wanted if i >= n]):
        _line(walk, node, f"{name} = np.zeros_like({captured[j - n]})")
    _line(walk, node, f"for {_targets(loop)} in reversed({kept}):")
    _line(walk, node, f"    {_targets(var_grads + steps)} = "
                      f"{body_grad}({', '.join(loop + captured + var_grads)})")
    for name, step in zip(cap_grads, steps):
        _line(walk, node, f"    {name} = {name} + {step}")
    _line(walk, node, f"del {kept}")


def _scan(walk, node: Node) -> None:
    op = node.origin
    c, e = node.attrs["carries"], node.attrs["elems"]
    init = [walk.ref(v, node) for v in node.inputs[:c]]
    elems = [walk.ref(v, node) for v in node.inputs[c:c + e]]
    captured = [walk.ref(v, node) for v in node.inputs[c + e:]]
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
    t = walk.names.make("step")
    order = f"range({rows})" if not node.attrs["reverse"] else f"range({rows - 1}, -1, -1)"
    walk.body.append(comment(op))
    if c:
        _line(walk, node, f"{', '.join(finals)} = {', '.join(init)}")
    for name, v in [*zip(stacked, node.outputs[c:c + n_ys]), *kept]:
        _line(walk, node, f"{name} = np.empty({tuple(v.shape.dims)!r}, dtype={np_dtype(v.dtype)})")
    _line(walk, node, f"for {t} in {order}:")
    for name, carried in zip([k for k, _ in kept], [finals[history.index(k)] for k, _ in kept]):
        _line(walk, node, f"    {name}[{t}] = {carried}")
    targets = finals + [f"{name}[{t}]" for name in stacked]
    args = finals + [f"{name}[{t}]" for name in elems] + captured
    _line(walk, node, f"    {_targets(targets)} = {body}({', '.join(args)})")


def _read(walk, v: Value) -> bool:
    """Does anything in the walk's program read `v` (a fetch, or a node's input)?"""
    read = walk.__dict__.get("_read_values")
    if read is None:
        program = walk.program
        read = {id(x) for n in walk_nodes(program) for x in n.inputs}
        read |= {id(f) for f in program.fetches if isinstance(f, Value)}
        walk._read_values = read
    return id(v) in read
