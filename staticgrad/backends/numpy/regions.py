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
from ...ir import Node

FORMS = ("If", "While", "WhileGrad")  # (lowering.REGION_FORMS lists these)


def render(walk, node: Node) -> None:
    {"If": _if, "While": _while, "WhileGrad": _while_grad}[node.type](walk, node)
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
