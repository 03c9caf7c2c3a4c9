"""What the registry does as a graph is built (ops/registry.py): large constants and
build-time folding, and a list that mixes ints and tensors made into one tensor.
See helpers.py for what each case checks and the feeding modes."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from tests.ops.helpers import (
    F32,
    F64,
    check_result,
    data,
    run_graph,
)


def test_large_constants_and_folded_values():
    big = data((40, 40), F64)  # larger than the build-time fold limit
    g = sg.Graph()
    with g.as_default():
        c = sg.constant(big)
        folded = sg.constant([1.0, 2.0]) * 3.0 + 1.0
        y = sg.reduce_sum(c * 2.0, axis=0)
    sess = sg.Session(graph=g)
    r_c, r_f, r_y = sess.run([c, folded, y])
    np.testing.assert_array_equal(r_c, big)
    np.testing.assert_array_equal(r_f, np.array([4.0, 7.0], F32))
    np.testing.assert_allclose(r_y, (big * 2).sum(axis=0), rtol=1e-12)
    r_c[:] = 0  # a fetched constant is a copy
    np.testing.assert_array_equal(sess.run(c), big)


SHAPE_LISTS = [
    ("reshape", lambda p: sg.reshape(p, [sg.shape(p)[0], -1]), lambda x: x.reshape(x.shape[0], -1)),
    ("fill", lambda p: sg.fill([sg.shape(p)[0], 2], 1.5), lambda x: np.full((x.shape[0], 2), 1.5)),
    ("zeros", lambda p: sg.zeros([sg.shape(p)[0], 3]), lambda x: np.zeros((x.shape[0], 3))),
    ("ones", lambda p: sg.ones((2, sg.shape(p)[1])), lambda x: np.ones((2, x.shape[1]))),
    ("broadcast_to", lambda p: sg.broadcast_to(p[:, :1, :], [sg.shape(p)[0], 2, 3]),
     lambda x: np.broadcast_to(x[:, :1, :], x.shape)),
    ("slice", lambda p: sg.slice(p, [0, 0, 1], [sg.shape(p)[0], -1, 2]), lambda x: x[:, :, 1:3]),
    ("convert_to_tensor", lambda p: sg.convert_to_tensor([sg.reduce_sum(p), 1.0]),
     lambda x: np.array([x.astype(np.float64).sum(), 1.0])),
]


@pytest.mark.parametrize("build, ref", [r[1:] for r in SHAPE_LISTS],
                         ids=[f"list_with_tensors-{r[0]}" for r in SHAPE_LISTS])
@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_shape_lists_mixing_ints_and_tensors(build, ref, mode):
    x = data((4, 2, 3), F32)
    t, res = run_graph(build, [x], mode)
    check_result(t, res, np.asarray(ref(x)).astype(F32), out_dtype=F32, mode="dynamic")
    assert t.shape.ndims == res.ndim  # the rank is known statically
