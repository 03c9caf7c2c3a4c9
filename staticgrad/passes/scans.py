"""One loop where a gradient built a second: two Scans of the same inputs, the second's body
extending the first's (it gives the same results, then the values that the gradient's loop
keeps: control_flow/scan_grad.py), run as one, the second in the first's place.

    rnn, rnn_1 = Scan[body](h0, x, w)              rnn, rnn_1, kept, kept_1 = Scan[body'](h0, x, w)
    loss = ...                              ->     loss = ...
    _, _, kept, kept_1 = Scan[body'](h0, x, w)     ScanGrad(..., kept, kept_1)
    ScanGrad(..., kept, kept_1)

The second moves up to where the first was (it reads the very same values, so all it reads
is ready there) and keeps the first's name and line; the first's outputs become its: the
last carried values and the stacked outputs index by index, the history after the kept
values. A chain (the loop a second derivative keeps extends the first derivative's, which
extends the user's) runs as its last. A pair is left as it is when their inputs, options or
control dependencies differ, or when something waits on the second; so is a second Scan
extending the same one (a later gradient that needs values the first did not keep).
"""

from __future__ import annotations

from ..ir import Node, Program, walk
from .rewrite import rewrite, waited_on


def merge_scans(program: Program) -> Program:
    if not program.nested or not any([n.type == "Scan" for n in walk(program)]):
        return program
    return _merge(program)


def _merge(program: Program) -> Program:
    pairs = _pairs(program)  # id(a Scan's origin) -> the Scan extending it
    moved: dict[int, Node] = {}  # id(a Scan's origin) -> the copy, in the first's place, that
    #                               runs it (the last of a chain: a second derivative's loop
    #                               extends the first derivative's, which extends the user's)

    def visit(node: Node):
        copy = moved.get(id(node.origin))
        if copy is not None and node.type == "Scan":
            return _as_outputs_of(node, copy)
        chain, last = [], pairs.get(id(node.origin))
        while last is not None:
            chain.append(last)
            last = pairs.get(id(last.origin))
        if not chain:
            return node
        copy = chain[-1].with_inputs(node.inputs, node.controls,
                                     regions=[_merge(r) for r in chain[-1].regions])
        copy.origin = node.origin  # (the user's loop: its name and line)
        moved.update((id(s.origin), copy) for s in chain)
        values = _as_outputs_of(node, copy)
        for mine, theirs in zip(values, node.outputs):
            mine.name = theirs.name
        return [copy], values

    return rewrite(program, visit, region=_merge)


def _pairs(program: Program) -> dict[int, Node]:
    """The Scans of the program's node list that another, later one extends."""
    waited = waited_on(program)
    seen: dict[int, list[Node]] = {}  # id(a body) -> the Scans running it
    found: dict[int, Node] = {}
    for node in program.nodes:
        if node.type != "Scan":
            continue
        base = node.attrs["body"].extends
        if base is not None and id(node) not in waited:
            for first in seen.get(id(base), ()):
                if id(first.origin) not in found and _same_loop(first, node):
                    found[id(first.origin)] = node
                    break
        seen.setdefault(id(node.attrs["body"]), []).append(node)
    return found


def _same_loop(first: Node, second: Node) -> bool:
    return (len(first.inputs) == len(second.inputs)
            and all(a is b for a, b in zip(first.inputs, second.inputs))
            and all(first.attrs[k] == second.attrs[k] for k in ("carries", "elems", "reverse"))
            and set(map(id, first.controls)) == set(map(id, second.controls)))


def _as_outputs_of(first: Node, second: Node) -> list:
    """The outputs of `second` that stand for those of `first`: the last carried values and
    the stacked outputs at the same places, the history after second's own stacked ones."""
    c = first.attrs["carries"]
    head = len(first.outputs) - c
    return [*second.outputs[:head], *second.outputs[len(second.outputs) - c:]]
