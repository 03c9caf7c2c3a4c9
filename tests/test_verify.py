"""The IR verifier (`verify.py`), which the suite runs after every pass: a broken program is
refused, with what is wrong; each region checked as a closed program; variable reads and
assignments checked against their ordering edges."""

from __future__ import annotations

import pytest

import staticgrad as sg
from staticgrad.ir import Program, make_node
from staticgrad.ops.table import get_opdef
from staticgrad.passes.rewrite import rewrite
from staticgrad.verify import VerificationError, verify
from tests.passes.helpers import Body, X, program_for, reads_and_assignments, vector

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


def test_verifier_catches_output_kinds_kept_for_other_nodes():
    """fuse, scalars and memory read `output_kinds` from the program's plan, made once: a
    pass that changed the nodes but kept the plan would make them skip work."""
    import dataclasses

    from staticgrad.passes.rewrite import output_kinds
    x = sg.placeholder(sg.float32, [2, 3], name="x")
    p = program_for([sg.exp(x), sg.reduce_sum(x)], {x: X})
    assert len(output_kinds(p)) == 2  # [2, 3] and [] float32
    verify(p)  # (kept for its own nodes: fine)
    kept_plan = dataclasses.replace(p, nodes=p.nodes[:1], fetches=p.fetches[:1])
    with pytest.raises(VerificationError, match="output kinds .* of other nodes"):
        verify(kept_plan, "a pass")
    verify(Program(p.nodes[:1], p.feeds, p.fetches[:1]))  # (a new program: a plan of its own)


def test_verifier_checks_each_region_as_a_closed_program():
    x = vector()
    outer = Body(x)
    e = outer.op("Exp", outer.feeds[0])
    region = Body(x)
    leak = region.op("Sin", e)  # reads the program's value, not a feed of its own
    outer.call(region.program(leak), e)
    with pytest.raises(VerificationError, match=r"Sin.* reads .*Exp.* before it is defined "
                                                r"in region 0 of <Node Call"):
        verify(outer.program())

    region = Body(x)
    (never,) = Body(x).call(Body(x).program(Body(x).feeds[0]), region.feeds[0])
    outer = Body(x)
    outer.call(region.program(never), outer.feeds[0])  # a result no node of it makes
    with pytest.raises(VerificationError, match="fetch .* is never computed in region 0"):
        verify(outer.program())

    region = Body(x)
    outer = Body(x)
    outer.call(region.program(region.feeds[0]), outer.feeds[0])
    hidden = Program(outer.nodes, outer.feeds, [], nested=False)
    with pytest.raises(VerificationError, match="Program.nested"):
        verify(hidden)  # the walkers would skip its region


def test_verifier_catches_a_variable_read_or_assignment_out_of_its_order():
    p = reads_and_assignments()
    first, _, step = p.nodes[:3]

    def stale(node):  # the identity reads w as it was before the assign_add
        if node.type != "Identity":
            return node
        return make_node(node.opdef, {}, (first.outputs[0],), node.origin, node.controls)
    with pytest.raises(VerificationError, match=r"Identity.* reads variable 'w' as it was "
                                                r"before <Node AssignAdd"):
        verify(rewrite(p, stale))

    def unordered(node):  # the assign no longer waits on the assign_add before it
        return node.with_inputs(node.inputs, ()) if node.type == "Assign" else node
    with pytest.raises(VerificationError, match="Assign.* assigns variable 'w' after None, "
                                                "but its last write before is <Node AssignAdd"):
        verify(rewrite(p, unordered))
    with pytest.raises(VerificationError, match="the fetch .* is variable 'w' as it was before"):
        verify(Program(p.nodes, p.feeds, [first.outputs[0]]))
