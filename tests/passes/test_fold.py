"""Constant folding: known nodes computed with the op's own kernel; state, random draws
and control dependencies left alone; no broadcast made into a big constant."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.passes.fold import fold_constants
from staticgrad.verify import verify
from tests.passes.helpers import Body, number, program_for, types, vector

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def test_fold_computes_known_nodes_with_the_ops_kernels():
    c = sg.constant(np.arange(4096, dtype=np.float32) / 4096)  # too big to fold when built
    y = sg.exp(c) * 2.0
    p = program_for([y], {})
    assert types(p) == ["Exp", "Mul"]
    folded = fold_constants(p)
    verify(folded)
    assert folded.nodes == [] and folded.fetches[0].const is not None
    want = np.exp(np.arange(4096, dtype=np.float32) / 4096) * 2
    np.testing.assert_array_equal(folded.fetches[0].const, want)
    assert types(p) == ["Exp", "Mul"]  # the input program is unchanged


def test_fold_leaves_state_random_and_control_dependencies_alone():
    v = sg.Variable(1.0)
    r = sg.random_uniform([3])
    with sg.control_dependencies([r]):
        k = sg.identity(sg.constant(np.ones(2000, np.float32)))
    p = fold_constants(program_for([v * 2.0, r, k], {}))
    assert {"VariableV2", "RandomUniform", "Identity"} <= set(types(p))


def test_folding_never_makes_a_broadcast_into_a_big_constant():
    x = sg.placeholder(sg.float32, [60_000], name="x")
    (g,) = sg.gradients(sg.reduce_sum(sg.sin(x) * 0.5 - x * 3.0), [x])
    with sg.Session() as sess:
        plan = sess.plan(g, {x: np.zeros(60_000, np.float32)})
    assert sum(np.asarray(c).nbytes for c in plan.fn.__globals__.values()
               if isinstance(c, np.ndarray)) < 10_000


def test_fold_computes_known_nodes_inside_regions_at_every_depth():
    """A region's node of known inputs becomes a constant there; the nodes holding the
    changed regions are new ones, and the program given is as it was."""
    x = vector()
    inner = Body(x)
    two = inner.op("Exp", number(0.0))  # known: exp(0) = 1
    inner_out = inner.op("Mul", inner.feeds[0], two)
    middle = Body(x)
    (m,) = middle.call(inner.program(inner_out), middle.op("Sin", middle.feeds[0]))
    outer = Body(x)
    (y,) = outer.call(middle.program(m), outer.feeds[0])
    program = outer.program(y)
    folded = fold_constants(program)
    verify(folded)
    deepest = folded.nodes[0].regions[0].nodes[1].regions[0]
    assert types(deepest) == ["Mul"] and float(deepest.nodes[0].inputs[1].const) == 1.0
    assert folded.nodes[0] is not program.nodes[0] and folded.fetches[0] is not y
    assert types(program.nodes[0].regions[0].nodes[1].regions[0]) == ["Exp", "Mul"]
