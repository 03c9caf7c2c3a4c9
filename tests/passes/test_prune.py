"""prune: the operations that fetches need, cut at fed tensors, in creation order (a
topological order), against networkx's ancestors."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import staticgrad as sg
from staticgrad.passes.prune import prune


def _model(g):
    x = sg.placeholder(sg.float32, [None, 3], name="x")
    unused = sg.placeholder(sg.float32, [2], name="unused")
    w = sg.Variable(np.ones((3, 2), np.float32), name="w")
    h = sg.nn.relu(sg.matmul(x, w), name="h")
    y = sg.reduce_sum(h, axis=1, name="y")
    side = sg.exp(unused, name="side")
    dw, = sg.gradients(y, [w])
    return x, w, h, y, side, dw


def test_creation_order_is_a_topological_order(g):
    _model(g)
    nxg = g.to_networkx()
    assert nx.is_directed_acyclic_graph(nxg)
    order = {op.name: i for i, op in enumerate(g.get_operations())}
    assert all(order[u] < order[v] for u, v in nxg.edges())


@pytest.mark.parametrize("fetch_names, fed_names", [
    (["y"], ["x"]),
    (["dw"], ["x"]),
    (["y", "side"], ["x", "unused"]),
    (["y"], ["x", "h"]),       # feeding h cuts the graph above it
])
def test_prune_keeps_exactly_the_ancestors_of_the_fetches(g, fetch_names, fed_names):
    x, w, h, y, side, dw = _model(g)
    named = {"x": x, "h": h, "y": y, "side": side, "dw": dw, "unused": side.op.inputs[0]}
    fetches = [named[n] for n in fetch_names]
    fed = {named[n] for n in fed_names}
    got = {op.name for op in prune(fetches, fed)}
    # reference: networkx ancestors in the graph with the fed tensors' producers cut off
    nxg = g.to_networkx()
    fed_names_ = {t.name for t in fed}
    nxg.remove_edges_from([(u, v, k) for u, v, k, d in nxg.edges(keys=True, data=True)
                           if d.get("tensor") in fed_names_])
    want = set()
    for f in fetches:
        if f in fed:
            continue
        want |= {f.op.name} | nx.ancestors(nxg, f.op.name)
    assert got == want


def test_prune_skips_what_is_known_when_the_graph_is_built():
    """A placeholder read only for its (known) shape need not be fed: shape(w), zeros_like(w),
    and the filter gradient of a convolution, which reads only the filter's shape."""
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [1, 4, 4, 1], name="x")
        w = sg.placeholder(sg.float32, [2, 2, 1, 1], name="w")
        dw = sg.nn.conv2d_backprop_filter(x, sg.shape(w), sg.ones([1, 3, 3, 1]), [1, 1, 1, 1],
                                          "VALID")
        fetches = [sg.shape(w), sg.zeros_like(w), dw]
        assert "w" not in {op.name for op in prune(fetches, {x})}
        with sg.Session() as sess:
            s, z, d = sess.run(fetches, {x: np.ones((1, 4, 4, 1), np.float32)})
    assert s.tolist() == [2, 2, 1, 1] and not z.any()
    np.testing.assert_array_equal(d, np.full((2, 2, 1, 1), 9.0))
