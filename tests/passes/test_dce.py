"""Dead-code elimination: what no fetch needs goes, in regions too; what has effects stays."""

from __future__ import annotations

import pytest

import staticgrad as sg
from staticgrad.ir import walk
from staticgrad.passes.dce import eliminate_dead_code
from staticgrad.verify import verify
from tests.passes.helpers import Body, X, number, program_for, types, vector

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def test_dce_drops_what_no_fetch_needs_and_keeps_state():
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    v = sg.Variable(X, name="v")
    unused = sg.exp(x)  # noqa: F841 - made and never fetched
    bump = sg.assign_add(v, x)
    p = eliminate_dead_code(program_for([sg.sin(x), bump.op], {x: X}))
    verify(p)
    assert "Exp" not in types(p) and "AssignAdd" in types(p)


def test_dce_in_regions_keeps_what_results_need_and_nodes_whose_regions_have_effects():
    x = vector()
    region = Body(x)
    region.op("Cos", region.feeds[0])  # read by nothing: dropped
    kept = region.op("Sin", region.feeds[0])
    used = Body()
    (y,) = used.call(region.program(kept), used.op("Exp", number([1.0] * 4)))
    unused = Body(x)
    unused.op("Tanh", unused.feeds[0])  # a whole region of dead code: its node goes
    drawing = Body(x)
    drawing.op("RandomStandardNormal", number([4], sg.int32), dtype=sg.float32,
               seed=(1, 2))  # a draw: the node holding it stays
    used.call(unused.program(unused.feeds[0]), y)
    used.call(drawing.program(drawing.feeds[0]), y)
    p = eliminate_dead_code(used.program(y))
    verify(p)
    assert types(p) == ["Exp", "Call", "Call"]
    assert types(p.nodes[1].regions[0]) == ["Sin"]
    assert types(p.nodes[2].regions[0]) == ["RandomStandardNormal"]
    assert [n.type for n in walk(p)] == ["Exp", "Call", "Sin", "Call", "RandomStandardNormal"]
