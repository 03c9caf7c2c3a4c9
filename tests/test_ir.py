"""The IR: regions, which the walkers reach at every depth; variable reads and assignments,
ordered by edges (the verifier, which checks both: tests/test_verify.py)."""

from __future__ import annotations

import pytest

from staticgrad.ir import (
    Program,
    RegionNode,
    bodies,
    previous_write,
    release,
    variable_of,
    walk,
    written_by,
)
from staticgrad.verify import verify
from tests.passes.helpers import Body, reads_and_assignments, types, vector

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


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


def test_release_reaches_the_nodes_of_regions():
    program, middle, inner = _nested()
    release(program)
    assert all(n.outputs == () for n in walk(program))


# -- variable state: reads and assignments ordered by edges ---------------------------------------
def test_a_read_after_an_assignment_is_a_read_node_ordered_after_it():
    p = reads_and_assignments()
    verify(p)
    assert types(p) == ["VariableV2", "Mul", "AssignAdd", "VariableV2", "Identity", "Mul",
                        "Assign", "VariableV2"]
    first, mul, step, second, identity, _, again, last = p.nodes
    assert written_by(first) is None and mul.inputs[0] is first.outputs[0]
    assert written_by(second) is step and identity.inputs[0] is second.outputs[0]
    assert previous_write(step) is None and previous_write(again) is step
    assert written_by(last) is again and p.fetches[3] is last.outputs[0]  # w at the end
    assert [variable_of(n) for n in (first, step, second, again)] == ["w"] * 4
