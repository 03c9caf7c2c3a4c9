"""Transposes folded into matmul's transpose flags."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.passes.dce import eliminate_dead_code
from staticgrad.passes.matmul import fold_transposes_into_matmul
from tests.passes.helpers import program_for

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def test_transposes_fold_into_matmul_flags():
    a = sg.placeholder(sg.float32, [3, 2], name="a")
    b = sg.placeholder(sg.float32, [4, 3], name="b")
    y = sg.matmul(sg.transpose(a), sg.transpose(b))
    p = eliminate_dead_code(fold_transposes_into_matmul(
        program_for([y], {a: np.ones((3, 2), np.float32), b: np.ones((4, 3), np.float32)})))
    (node,) = p.nodes
    assert node.type == "MatMul" and node.attrs["transpose_a"] and node.attrs["transpose_b"]
    assert node.inputs == tuple(p.feeds)
