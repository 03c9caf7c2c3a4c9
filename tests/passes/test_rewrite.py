"""The walk the rewriting passes share (`passes/rewrite.py`): every node visited once, in
order, the nodes of regions at every depth included, and substitutions carried through."""

from __future__ import annotations

from staticgrad.ir import make_node, walk
from staticgrad.ops.table import get_opdef
from staticgrad.passes.rewrite import map_regions, rewrite
from staticgrad.verify import verify
from tests.passes.helpers import Body, types, vector


def _nested():
    """x -> exp -> Call[ p -> sin -> Call[ q -> neg ] ] -> tanh."""
    x = vector()
    inner = Body(x)
    inner_out = inner.op("Neg", inner.feeds[0])
    middle = Body(x)
    (m,) = middle.call(inner.program(inner_out), middle.op("Sin", middle.feeds[0]))
    outer = Body(x)
    (c,) = outer.call(middle.program(m), outer.op("Exp", outer.feeds[0]))
    return outer.program(outer.op("Tanh", c))


def test_rewrite_visits_every_node_once_a_nodes_regions_before_it():
    program = _nested()
    seen = []
    same = rewrite(program, lambda node: seen.append(node.type) or node)
    assert seen == ["Exp", "Sin", "Neg", "Call", "Call", "Tanh"]
    assert same.nodes == program.nodes and same.nested  # nothing changed: the same nodes


def test_a_rewrite_deep_in_a_region_reaches_its_results_and_the_nodes_holding_it():
    program = _nested()

    def visit(node):  # -q -> (q * q): a list of new nodes, the last one computing the value
        if node.type != "Neg":
            return node
        q = node.inputs[0]
        return [make_node(get_opdef("Square"), {}, (q,), None),
                make_node(get_opdef("Mul"), {}, (q, q), None)]
    new = rewrite(program, visit)
    verify(new)
    (middle,) = new.nodes[1].regions
    (inner,) = middle.nodes[1].regions
    assert types(inner) == ["Square", "Mul"] and inner.fetches == [inner.nodes[1].outputs[0]]
    assert new.nodes[0] is program.nodes[0]                  # untouched: kept as it was
    assert new.nodes[1] is not program.nodes[1]              # holds a changed region: a copy
    assert new.nodes[2].inputs[0] is new.nodes[1].outputs[0]  # and its readers read the copy
    assert types(program.nodes[1].regions[0].nodes[1].regions[0]) == ["Neg"]  # as it was


def test_map_regions_changes_regions_alone():
    program = _nested()
    emptied = map_regions(program, lambda region: type(region)(
        [], region.feeds, list(region.feeds)))
    verify(emptied)
    assert [n.type for n in walk(emptied)] == ["Exp", "Call", "Tanh"]
    assert map_regions(emptied.nodes[1].regions[0], None) is emptied.nodes[1].regions[0]


def test_a_visit_may_place_nodes_and_name_which_of_their_values_replace_the_outputs():
    program = _nested()

    def visit(node):  # tanh(c) -> (exp(c), sin(c)), of which sin(c) stands for tanh(c)
        if node.type != "Tanh":
            return node
        c = node.inputs[0]
        placed = [make_node(get_opdef("Exp"), {}, (c,), None),
                  make_node(get_opdef("Sin"), {}, (c,), None)]
        return placed, [placed[1].outputs[0]]
    new = rewrite(program, visit)
    verify(new)
    assert types(new)[-2:] == ["Exp", "Sin"]
    assert new.fetches == [new.nodes[-1].outputs[0]]
