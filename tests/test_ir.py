"""The IR: its verifier (`ir.verify`), which the suite runs after every pass (a broken program
is refused, with what is wrong), and regions: the walkers and the verifier reach them."""

from __future__ import annotations

import pytest

import staticgrad as sg
from staticgrad.ir import (
    Program,
    RegionNode,
    VerificationError,
    bodies,
    make_node,
    release,
    verify,
    walk,
)
from staticgrad.ops.registry import get_opdef
from tests.passes.helpers import Body, X, program_for, vector

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


# -- regions ---------------------------------------------------------------------------------------
def _nested():
    """x -> exp -> Call[ region: p -> sin -> Call[ region: q -> neg ] ] -> tanh."""
    x = vector()
    inner = Body(x)
    (inner_out,) = [inner.op("Neg", inner.feeds[0])]
    middle = Body(x)
    s = middle.op("Sin", middle.feeds[0])
    (m,) = middle.call(inner.program(inner_out), s)
    outer = Body(x)
    e = outer.op("Exp", outer.feeds[0])
    (c,) = outer.call(middle.program(m), e)
    t = outer.op("Tanh", c)
    return outer.program(t), middle, inner


def test_walk_lists_every_node_at_every_depth_in_order():
    program, middle, inner = _nested()
    assert program.nested and not inner.program().nested
    assert [n.type for n in walk(program)] == ["Exp", "Call", "Sin", "Call", "Neg", "Tanh"]
    assert [[n.type for n in b.nodes] for b in bodies(program)] == [
        ["Exp", "Call", "Tanh"], ["Sin", "Call"], ["Neg"]]
    flat = Program(middle.nodes[:1], middle.feeds, [])
    assert walk(flat) is flat.nodes  # no region anywhere: the list itself, no copy
    verify(program)


def test_a_copy_of_a_node_holding_regions_holds_them_too():
    program, _, _ = _nested()
    call = program.nodes[1]
    copy = call.with_inputs(call.inputs, ())
    assert isinstance(copy, RegionNode) and copy.regions == call.regions
    assert not program.nodes[0].regions and not isinstance(program.nodes[0], RegionNode)


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


def test_release_reaches_the_nodes_of_regions():
    program, middle, inner = _nested()
    release(program)
    assert all(n.outputs == () for n in walk(program))
