"""Common-subexpression elimination: equal computations and equal constants are made
once; random draws never merge."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.passes.cse import cse
from staticgrad.passes.dce import eliminate_dead_code
from staticgrad.verify import verify
from tests.passes.helpers import Body, X, number, program_for, types, vector

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def test_cse_merges_equal_computations_and_equal_constants():
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    a = sg.exp(x) * 2.0
    b = sg.exp(x) * 2.0
    p = eliminate_dead_code(cse(program_for([a + b], {x: X})))
    verify(p)
    assert types(p) == ["Exp", "Mul", "Add"]
    add = p.nodes[-1]
    assert add.inputs[0] is add.inputs[1]


def test_cse_never_merges_random_draws():
    r1, r2 = sg.random_normal([3]), sg.random_normal([3])
    p = cse(program_for([r1 - r2], {}))
    assert types(p).count("RandomStandardNormal") == 2


def test_cse_merges_inside_a_region_but_never_across_its_border():
    """Equal nodes of one region merge; equal nodes in two regions, or in a region and the
    program around it, do not (a region is closed: neither may read the other's values)."""
    x = vector()
    big = number(np.arange(4, dtype=np.float32))

    def region():
        body = Body(x)
        a = body.op("Exp", body.feeds[0])
        b = body.op("Exp", body.feeds[0])  # the same as a: merged
        c = body.op("Sin", big)             # the same in each region and outside: kept
        return body.program(body.op("Add", body.op("Add", a, b), c))

    outer = Body(x)
    before = outer.op("Sin", big)
    (r1,) = outer.call(region(), outer.feeds[0])
    (r2,) = outer.call(region(), r1)
    after = outer.op("Sin", big)
    program = outer.program(outer.op("Add", outer.op("Add", before, r2), after))
    merged = eliminate_dead_code(cse(program))
    verify(merged)
    assert types(merged) == ["Sin", "Call", "Call", "Add", "Add"]  # `after` is `before`
    for call in merged.nodes[1:3]:
        (body,) = call.regions
        assert types(body) == ["Exp", "Sin", "Add", "Add"]
        assert body.nodes[2].inputs[0] is body.nodes[2].inputs[1]
