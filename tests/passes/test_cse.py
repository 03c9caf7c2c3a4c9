"""Common-subexpression elimination: equal computations and equal constants are made
once; random draws never merge."""

from __future__ import annotations

import pytest

import staticgrad as sg
from staticgrad.ir import verify
from staticgrad.passes.cse import cse
from staticgrad.passes.dce import eliminate_dead_code
from tests.passes.helpers import X, program_for, types

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
