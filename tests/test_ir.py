"""The IR: its verifier (`ir.verify`), which the suite runs after every pass (a broken program
is refused, with what is wrong); regions, which the walkers and the verifier reach; variable
reads and assignments, ordered by edges that the verifier checks."""

from __future__ import annotations

import pytest

import staticgrad as sg
from staticgrad.ir import (
    Program,
    RegionNode,
    VerificationError,
    bodies,
    make_node,
    previous_write,
    release,
    variable_of,
    verify,
    walk,
    written_by,
)
from staticgrad.ops.registry import get_opdef
from staticgrad.passes.rewrite import rewrite
from tests.passes.helpers import Body, X, program_for, types, vector

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


# -- variable state: reads and assignments ordered by edges ---------------------------------------
def _reads_and_assignments():
    """w read; w += 1; then (after it) w read again and assigned; w fetched at the end."""
    w = sg.Variable([1.0, 2.0], name="w")
    before = w * 2.0
    step = sg.assign_add(w, [1.0, 1.0])
    with sg.control_dependencies([step]):
        after = sg.identity(w) * 3.0
    again = sg.assign(w, after)
    return program_for([before, after, again, w._tensor], {})


def test_a_read_after_an_assignment_is_a_read_node_ordered_after_it():
    p = _reads_and_assignments()
    verify(p)
    assert types(p) == ["VariableV2", "Mul", "AssignAdd", "VariableV2", "Identity", "Mul",
                        "Assign", "VariableV2"]
    first, mul, step, second, identity, _, again, last = p.nodes
    assert written_by(first) is None and mul.inputs[0] is first.outputs[0]
    assert written_by(second) is step and identity.inputs[0] is second.outputs[0]
    assert previous_write(step) is None and previous_write(again) is step
    assert written_by(last) is again and p.fetches[3] is last.outputs[0]  # w at the end
    assert [variable_of(n) for n in (first, step, second, again)] == ["w"] * 4


def test_verifier_catches_a_variable_read_or_assignment_out_of_its_order():
    p = _reads_and_assignments()
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
