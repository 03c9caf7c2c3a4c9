"""The IR's verifier (`ir.verify`), which the suite runs after every pass: a broken
program is refused, with what is wrong."""

from __future__ import annotations

import pytest

import staticgrad as sg
from staticgrad.ir import Program, VerificationError, make_node, verify
from staticgrad.ops.registry import get_opdef
from tests.passes.helpers import X, program_for

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def test_verifier_catches_a_broken_program():
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    p = program_for([sg.exp(x)], {x: X})
    (exp,) = p.nodes
    bad = make_node(get_opdef("Exp"), {}, exp.outputs, exp.origin)  # reads its own output
    with pytest.raises(VerificationError, match="before it is defined"):
        verify(Program([bad], p.feeds, p.fetches))
    wrong = make_node(get_opdef("Exp"), {}, p.feeds, exp.origin)
    wrong.outputs[0].shape = sg.TensorShape([5])
    with pytest.raises(VerificationError, match="its op makes"):
        verify(Program([wrong], p.feeds, [wrong.outputs[0]]))
