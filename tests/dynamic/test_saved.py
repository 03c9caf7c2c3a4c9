"""What the tape keeps: each gradient rule reads only the values its op declares (`saves`).

A node keeps the inputs and outputs that its op's `OpDef.saves` names and, of the others,
their shape and dtype; a rule sees those as stand-ins (staticgrad/dynamic/tape.py). Here every
row of tests/ops/test_gradients.py runs through the dynamic tape (test_parity's check: values,
gradients by backward() and grad(), second derivatives, all against sg.gradients) with
stand-ins that refuse to be computed with: a rule that read a value it did not declare fails,
and one that got past that would read NaN and disagree with the graph side.
"""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy
from staticgrad.dynamic import tape
from staticgrad.ops.table import REGISTRY
from tests.dynamic.test_parity import _PARITY, PYTHON_CONTROL_FLOW, _case_id
from tests.dynamic.test_parity import test_values_and_gradients_agree as check_row

# what a rule may do with a stand-in: ask its shape, or make an array of its shape
_METADATA = {np.shape, np.ndim, np.size, np.zeros_like, np.ones_like, np.empty_like,
             np.full_like}


class Unreadable(np.ndarray):
    """A stand-in's array: its shape and dtype may be read, its values may not."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise AssertionError(f"a gradient rule computed np.{ufunc.__name__} with a value that "
                             "its op's `saves` does not declare")

    def __array_function__(self, func, types, args, kwargs):
        if func in _METADATA:
            plain = [a.view(np.ndarray) if isinstance(a, Unreadable) else a for a in args]
            return func(*plain, **kwargs)
        raise AssertionError(f"a gradient rule called np.{func.__name__} on a value that its "
                             "op's `saves` does not declare")


@pytest.fixture
def unreadable_stand_ins(monkeypatch):
    """Stand-ins that raise when computed with; yields the list of those made."""
    made = []
    normal = tape.stand_in_array

    def strict(shape, np_dtype):
        array = normal(shape, np_dtype).view(Unreadable)  # NaN beneath, should it escape
        made.append(array)
        return array
    monkeypatch.setattr(tape, "stand_in_array", strict)
    return made


def test_every_differentiable_op_declares_what_its_rule_reads():
    undeclared = sorted(name for name, d in REGISTRY.items()
                        if d.differentiable and d.grad is not None and d.saves is None)
    assert not undeclared, f"differentiable ops without `saves`: {undeclared}"


@pytest.mark.parametrize("case", _PARITY, ids=[_case_id(c) for c in _PARITY])
def test_rules_read_only_what_they_declare(case, unreadable_stand_ins):
    check_row(case)


def test_rows_use_stand_ins(unreadable_stand_ins):
    """The check above bites: rows whose ops keep less than everything make stand-ins."""
    rows = [c for c in _PARITY if c[0] in ("Add", "Sum", "Exp", "MatMul", "Reshape")]
    for case in rows:
        unreadable_stand_ins.clear()
        check_row(case)
        assert unreadable_stand_ins, f"{case[0]}: no stand-in was made"


def test_an_undeclared_read_is_caught(monkeypatch, unreadable_stand_ins):
    monkeypatch.setitem(REGISTRY["Mul"].__dict__, "saves", ("x0",))  # Mul reads x1 too
    monkeypatch.setattr(tape, "_KINDS", {})
    monkeypatch.setattr(tape, "_PLANS", {})
    x = dy.tensor([1.0, 2.0], requires_grad=True)
    y = dy.tensor([3.0, 4.0], requires_grad=True)
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match="np.multiply with a value that its op's `saves` does not declare"):
        (x * y).sum().backward()


def test_control_flow_keeps_everything():
    """If, While and Scan never run on the tape (Python's own control flow runs); their
    declarations keep everything, as the graph side needs."""
    for name in PYTHON_CONTROL_FLOW:
        assert REGISTRY[name].saves == ("x*", "y*"), name
