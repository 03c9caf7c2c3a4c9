"""What the op table and op creation do as a graph is built (ops/table.py, creation.py,
conversion.py, kernels.py): large constants and build-time folding, and a list that mixes
ints and tensors made into one tensor; and that every op type has a decision for ONNX. See
helpers.py for what each case checks and the feeding modes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.onnx import NO_ONNX, RULES
from staticgrad.ops.table import REGISTRY
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


def test_every_op_type_has_an_onnx_rule_or_a_reason_for_none():
    """Each op type of the registry has a rule in staticgrad.onnx.RULES or, in NO_ONNX, the
    reason it has no ONNX form (what export_onnx's error says): an op type added to the
    registry needs one of the two. Runs without the onnx package."""
    problems = [f"{t}: no ONNX rule in staticgrad.onnx.RULES (staticgrad/onnx/rules_*.py), "
                "and no reason in NO_ONNX (onnx/no_form.py) why it has no ONNX form; add one "
                "or the other"
                for t in sorted(set(REGISTRY) - set(RULES) - set(NO_ONNX))]
    problems += [f"{t}: both an ONNX rule and a reason for none (NO_ONNX); keep one"
                 for t in sorted(set(RULES) & set(NO_ONNX))]
    problems += [f"{t}: in staticgrad.onnx.{table}, but no op type {t!r} is registered"
                 for table, types in (("RULES", RULES), ("NO_ONNX", NO_ONNX))
                 for t in sorted(set(types) - set(REGISTRY))]
    problems += [f"{t}: NO_ONNX gives no reason" for t, why in NO_ONNX.items()
                 if not (isinstance(why, str) and why.strip())]
    assert not problems, "\n".join(problems)


def test_the_onnx_tables_load_without_the_onnx_package():
    code = ("import sys; sys.modules['onnx'] = None; import staticgrad.onnx as o; "
            "assert o.RULES and o.NO_ONNX")
    root = Path(__file__).resolve().parents[2]  # where `import staticgrad` finds this one
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr
