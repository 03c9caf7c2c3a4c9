"""Graphs far deeper than Python's recursion limit (1,000 frames) build, differentiate,
compile, run, print, export and draw without RecursionError: every walk over a graph or a
program is a loop (issue 21). Not timed: benchmarks/bench_scale.py measures the 100,000-op
chain."""

import contextlib
import importlib.util
import sys

import numpy as np

import staticgrad as sg
import staticgrad.dynamic as dy
from staticgrad import graph_io, viz

DEPTH = 30_000  # ops in the chain: 30 times the recursion limit
SHALLOWER = 5_000  # for what takes long at any depth (export, graph files, drawing)
X = np.linspace(0.1, 1.6, 4, dtype=np.float32)


def _hand(n):
    """W4's chain (y * 1.0001 and sin alternating), summed, and its gradient, in NumPy."""
    c = np.float32(1.0001)
    y, sin_inputs = X, []
    for i in range(n):
        if i % 2:
            sin_inputs.append(y)
            y = np.sin(y)
        else:
            y = y * c
    grad = np.ones_like(X)
    for i in reversed(range(n)):
        grad = grad * (np.cos(sin_inputs.pop()) if i % 2 else c)
    return np.sum(y), grad


def _chain(n):
    """(graph, x, L, dL/dx) for an n-op chain."""
    assert sys.getrecursionlimit() <= 1000 * 3  # the default (pytest's frames aside)
    graph = sg.Graph()
    with graph.as_default():
        x = sg.placeholder(sg.float32, [4], name="x")
        y = x
        for i in range(n):
            y = sg.sin(y) if i % 2 else y * 1.0001
        loss = sg.reduce_sum(y)
        dx, = sg.gradients(loss, [x])
    return graph, x, loss, dx


def test_a_deep_chain_differentiates_compiles_and_runs():
    graph, x, loss, dx = _chain(DEPTH)
    with graph.as_default():
        sess = sg.Session()
        got = sess.run([loss, dx], {x: X})
        want = _hand(DEPTH)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-3)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-3)
        assert "\ndef _part_" in sess.source([loss, dx], {x: X})  # split into parts


def test_a_deep_chain_runs_with_every_pass_off():
    """No pass may be what keeps a walk short."""
    graph, x, loss, dx = _chain(SHALLOWER)
    with graph.as_default():
        off = sg.Session(options=sg.CompileOptions(disable=set(sg.compiler.PASS_NAMES)))
        np.testing.assert_allclose(off.run(dx, {x: X}), _hand(SHALLOWER)[1], rtol=1e-3)


def test_a_deep_chain_exports_draws_and_round_trips(tmp_path):
    graph, x, loss, dx = _chain(SHALLOWER)
    with graph.as_default():
        sess = sg.Session()
        path = sg.export([loss, dx], [x], str(tmp_path / "deep.py"), session=sess)
        spec = importlib.util.spec_from_file_location("deep", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        np.testing.assert_array_equal(module.run(X)[1], sess.run(dx, {x: X}))
        assert viz.to_dot([dx]).count("->") > 2 * SHALLOWER
        repr(graph), repr(dx.op), dx.consumers()
    graph_io.export_meta_graph(str(tmp_path / "deep.json"), graph=graph)
    with sg.Graph().as_default() as copy:
        graph_io.import_meta_graph(str(tmp_path / "deep.json"))
    assert len(copy.get_operations()) == len(graph.get_operations())


def test_second_derivatives_of_a_deep_chain():
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [4], name="x")
        y = x
        for _ in range(2_000):
            y = sg.sin(y)
        dx, = sg.gradients(sg.reduce_sum(y), [x])
        ddx, = sg.gradients(sg.reduce_sum(dx), [x])
        assert np.all(np.isfinite(sg.Session().run(ddx, {x: X})))


def test_a_sum_of_thousands_of_terms_compiles(g):
    """AddN of more than ADD_N_WRITTEN terms is written rt.add_n(...): a written
    a + b + ... of 3,000 terms made Python's compiler raise RecursionError. Its gradient
    rule makes such sums for a tensor read thousands of times."""
    x = sg.placeholder(sg.float32, [4], name="x")
    terms = [x * float(i) for i in range(5_000)]
    total = sg.add_n(terms)
    read_often = sg.reduce_sum(sum(terms[:3_000]))  # x read 3,000 times: its gradient too
    dx, = sg.gradients(read_often, [x])
    sess = sg.Session()
    got_total, got_dx = sess.run([total, dx], {x: X})
    want = np.zeros(4, np.float32)
    for i in range(5_000):  # left to right, in float32, as the sum is written
        want = want + X * np.float32(i)
    np.testing.assert_array_equal(got_total, want)
    np.testing.assert_allclose(got_dx, np.full(4, sum(range(3_000)), np.float32), rtol=1e-6)
    assert "rt.add_n(" in sess.source(total, {x: X})


def test_name_scopes_nested_thousands_deep_draw(g):
    x = sg.placeholder(sg.float32, [4], name="x")
    with contextlib.ExitStack() as scopes:
        for _ in range(3_000):
            scopes.enter_context(sg.name_scope("s"))
        y = sg.sin(x)
    dot = viz.to_dot(g)
    assert dot.count("subgraph") == 3_000 and y.name.count("s/") == 3_000


def test_the_dynamic_mode_differentiates_a_deep_chain():
    t = dy.tensor(X, requires_grad=True)
    y = t
    for i in range(DEPTH):
        y = y.sin() if i % 2 else y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), _hand(DEPTH)[1], rtol=1e-3)
