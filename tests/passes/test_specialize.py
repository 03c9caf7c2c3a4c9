"""specialize: concrete shapes for the fed shapes, and shape arithmetic folded."""

from __future__ import annotations

import staticgrad as sg
from staticgrad.passes.prune import prune
from staticgrad.passes.specialize import specialize


def test_specialize_makes_shapes_concrete_and_folds_shape_arithmetic(g):
    x = sg.placeholder(sg.float32, [None, 3], name="x")
    n = sg.shape(x)[0] * 3
    y = sg.reshape(x, [n, -1])
    ops = prune([y], {x})
    spec = specialize(ops, {x: ((4, 3), sg.float32)})
    assert spec.shapes[y].as_list() == [12, 1]
    assert int(spec.values[n]) == 12
    assert y.shape.as_list() == [None, None]  # the graph itself is unchanged
