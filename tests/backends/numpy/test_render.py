"""The NumPy renderer (`backends/numpy/render.py`): which variables a plan reads as they were
when the run began (the session refuses to run it while one is uninitialized), found from the
IR's ordering edges; a node holding regions is refused (no op it renders holds any yet)."""

from __future__ import annotations

import pytest

import staticgrad as sg
from staticgrad import compiler
from staticgrad.backends.numpy.render import render
from staticgrad.errors import UnimplementedError
from tests.passes.helpers import Body, program_for, vector

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def _var_reads(*fetches):
    return render(compiler.run_passes(program_for(list(fetches), {}))).var_reads


def test_a_plan_reads_a_variable_before_its_first_assignment_only():
    w = sg.Variable([1.0, 2.0], name="w")
    v = sg.Variable([3.0, 4.0], name="v")
    assert _var_reads(sg.assign_sub(w, v * 2.0)) == ["v", "w"]  # v read, w read by -=
    set_w = sg.assign(w, [0.0, 0.0])
    with sg.control_dependencies([set_w]):
        bump = sg.assign_add(w, [1.0, 1.0])
    assert _var_reads(bump) == []  # += reads what w was set to, not its value on entry
    assert _var_reads(sg.assign_add(w, [1.0, 1.0])) == ["w"]
    assert _var_reads(w * 1.0, bump) == ["w"]


def test_a_node_holding_regions_is_refused():
    x = vector()
    body = Body(x)
    body.call(Body(x).program(Body(x).feeds[0]), body.feeds[0])
    with pytest.raises(UnimplementedError, match="cannot render a Call holding regions"):
        render(body.program())
