"""Liveness (`passes/liveness.py`): who reads each value, where it is read last, and which
values are dead after each node; each region a scope of its own."""

from __future__ import annotations

from staticgrad.passes.liveness import liveness
from tests.passes.helpers import Body, number, vector


def test_values_die_after_their_last_reader_or_where_made_and_fetches_never():
    x = vector()
    body = Body(x)
    a = body.op("Exp", body.feeds[0])
    b = body.op("Mul", a, number(2.0))
    c = body.op("Sin", b)  # read by nobody
    d = body.op("Add", b, b)
    program = body.program(d)
    exp, mul, sin, add = program.nodes
    live = liveness(program)
    assert live.readers[id(a)] == [mul] and live.readers[id(b)] == [sin, add, add]
    assert live.last_use[id(b)] is add and live.last_use[id(body.feeds[0])] is exp
    assert live.dies_at == {id(mul): [a], id(sin): [c], id(add): [b]}  # d is fetched
    assert liveness(program) is live and program.plan["liveness"] is live  # made once


def test_a_region_is_a_scope_and_its_node_reads_only_its_inputs():
    x = vector()
    region = Body(x)
    inner = region.op("Neg", region.feeds[0])
    result = region.op("Sin", inner)
    outer = Body(x)
    e = outer.op("Exp", outer.feeds[0])
    (c,) = outer.call(region.program(result), e)
    t = outer.op("Tanh", c)
    program = outer.program(t)
    _, call, tanh = program.nodes
    neg, sin = call.regions[0].nodes
    live = liveness(program)
    assert live.last_use[id(e)] is call and live.dies_at[id(call)] == [e]
    assert live.dies_at[id(tanh)] == [c]
    assert live.dies_at[id(sin)] == [inner]       # the region's result lives to its end
    assert id(result) not in {id(v) for vs in live.dies_at.values() for v in vs}
    assert live.last_use[id(region.feeds[0])] is neg
