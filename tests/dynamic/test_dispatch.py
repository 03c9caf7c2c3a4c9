"""The dispatcher's plans: a call like one made before reuses the op's compiled kernel and its
outputs' dtypes, and must behave exactly as the full path (shape rule, attr checks, errors
naming the op, gradient overrides) would."""

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy
from staticgrad.dynamic import dispatch
from staticgrad.errors import InvalidArgumentError


def _plans(op_type):
    return [key for key in dispatch._PLANS if key[0] == op_type]


def test_a_repeated_call_is_planned_and_computes_the_same():
    x = dy.tensor(np.linspace(-1, 1, 8, dtype=np.float32))
    y = dy.tensor(np.full(8, 0.5, np.float32))
    first = (x * y + y).exp()
    assert ("Mul", (8,), "float32", (8,), "float32") in dispatch._PLANS
    again = (x * y + y).exp()
    want = np.exp(x.numpy() * 0.5 + 0.5)
    np.testing.assert_allclose(first.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(again.numpy(), want, rtol=1e-6)
    assert again.dtype is dy.float32 and again.shape == (8,)


def test_other_shapes_take_their_own_plan():
    a = dy.ones(3, 1)
    b = dy.ones(1, 4) * 2.0
    (a + a).numpy()  # a plan for (3, 1) + (3, 1)
    out = a + b      # broadcasting: another key, another plan
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out.numpy(), np.full((3, 4), 3.0, np.float32))


def test_a_plan_never_admits_an_attr_the_full_path_refuses():
    x = dy.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    dispatch.run_operation("Mean", [x], {"axis": (0,), "keepdims": True})
    assert _plans("Mean")
    with pytest.raises(TypeError, match="'keepdims' of Mean must be a bool, got int 1"):
        dispatch.run_operation("Mean", [x], {"axis": (0,), "keepdims": 1})  # 1 == True


def test_a_planned_kernel_that_fails_is_reported_as_the_full_path_reports_it():
    x = dy.tensor([1.0, 2.0])
    (x / dy.tensor([1.0, 1.0])).numpy()  # planned
    with np.errstate(divide="raise"), \
            pytest.raises(InvalidArgumentError, match=r"RealDiv op at .*test_dispatch.py:\d+ "
                                                      "failed: FloatingPointError"):
        x / dy.tensor([0.0, 0.0])


def test_the_values_of_static_inputs_are_part_of_the_key():
    x = dy.arange(8.0)
    for _ in range(2):  # the full path, then the plans
        assert x.view(2, 4).shape == (2, 4)
        assert x.view(4, 2).shape == (4, 2)  # same input shapes, another target
    assert len([key for key in _plans("Reshape") if key[1] == (8,) and key[2] == "float32"]) \
        >= 2
    np.testing.assert_array_equal(x.view(4, 2).numpy(), np.arange(8.0).reshape(4, 2))


def test_ops_with_other_integer_inputs_are_never_planned():
    table = dy.tensor(np.arange(12.0).reshape(4, 3))
    for rows in ([0, 2], [3, 1]):  # indices: read by the kernel, not part of any key
        picked = dy.index_select(table, 0, dy.tensor(rows))
        np.testing.assert_array_equal(picked.numpy(), np.arange(12.0).reshape(4, 3)[rows])
    assert not _plans("GatherV2")


def test_outputs_of_one_op_count_their_inplace_writes_apart():
    x = dy.tensor([[1.0, 3.0, 2.0]])
    for _ in range(2):  # the full path, then the plan
        values, indices = dispatch.run_operation("TopKV2", [x], {"k": 2}).outputs
        assert values.tolist() == [[3.0, 2.0]] and indices.tolist() == [[1, 2]]
        assert values._version is not indices._version
    view = x.view(3)  # a view shares its input's counter
    assert view._version is x._version


def test_gradient_override_map_applies_to_a_planned_op():
    @sg.RegisterGradient("DispatchTestTimesThree")
    def _three(op, grad):
        return [grad * 3.0]

    x = dy.tensor([1.0, 2.0], requires_grad=True)
    x.exp().sum().backward()  # plans Exp
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    x.grad = None
    with sg.get_default_graph().gradient_override_map({"Exp": "DispatchTestTimesThree"}):
        y = x.exp()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    x.grad = None
    x.exp().sum().backward()  # the map is closed: Exp's own rule again
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
