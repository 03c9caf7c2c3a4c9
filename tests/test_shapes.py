"""TensorShape and Dimension: what a dimension may be (TF1's rules, a little stricter), and
errors that name the bad dimension and the user's line."""

from __future__ import annotations

import os

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.shapes import MAX_DIM, Dimension, TensorShape, as_shape
from tests.conftest import lineno

HERE = os.path.basename(__file__)


@pytest.mark.parametrize("dims, want", [
    ([2, 3], (2, 3)),
    ((), ()),
    ([None, 4], (None, 4)),
    ([-1, 4], (None, 4)),                            # -1: unknown, as staticgrad allows
    ([np.int64(2), np.int32(3), np.uint8(4)], (2, 3, 4)),
    ([Dimension(5), Dimension(None)], (5, None)),
    (np.array([2, 3]), (2, 3)),
    ([np.array(7)], (7,)),                           # a 0-d integer array has __index__
    ([2.0, np.float32(3.0)], (2, 3)),                # TF1's as_dimension(2.0) is 2
    (np.int64(3), (3,)),                             # a lone dimension is a shape of one
    (TensorShape([1, None]), (1, None)),
    ([MAX_DIM], (MAX_DIM,)),
])
def test_integral_dimensions_are_accepted(dims, want):
    shape = as_shape(dims)
    assert shape.dims == want
    assert all(d is None or type(d) is int for d in shape.dims)


@pytest.mark.parametrize("bad, error, message", [
    (2.5, ValueError, r"Ambiguous dimension: 2\.5"),
    (np.float32(0.5), ValueError, r"Ambiguous dimension: np\.float32\(0\.5\)"),
    (float("nan"), ValueError, "Ambiguous dimension: nan"),
    (float("inf"), ValueError, "Ambiguous dimension: inf"),
    (True, TypeError, "dimension True is a bool"),
    (np.True_, TypeError, "is a bool"),
    ("3", TypeError, "dimension '3' is a string"),
    (b"3", TypeError, "is a string"),
    (-2, ValueError, "dimension -2 must be >= 0"),
    (MAX_DIM + 1, ValueError, "dimension 9223372036854775808 is too large"),
    (10**100, ValueError, "is too large"),
    (np.array(2.0), TypeError, r"dimension array\(2\.\) \(ndarray\) is not an integer"),
    (object(), TypeError, r"\(object\) is not an integer or None"),
])
def test_non_integral_dimension_is_rejected_naming_it(bad, error, message):
    with pytest.raises(error, match=message + r".*\(dimension 1 of shape \[3, .*given at .*"
                       + HERE):
        TensorShape([3, bad])
    with pytest.raises(error, match=message):
        Dimension(bad)


def test_placeholder_with_ambiguous_dimension_names_it_and_the_line(g):
    """placeholder(float32, [2.5]) became (2,); TF1 says "Ambiguous dimension: 2.5"."""
    with pytest.raises(ValueError, match=rf"Ambiguous dimension: 2\.5 \(dimension 1 of shape "
                                         rf"\[None, 2\.5\], given at .*{HERE}:{lineno() + 1}\)"):
        sg.placeholder(sg.float32, [None, 2.5], name="x")
    assert not g.get_operations()  # nothing half made
    with pytest.raises(TypeError, match="is a bool"):
        sg.placeholder(sg.float32, [True])
    with pytest.raises(TypeError, match="got the string '23'"):
        sg.placeholder(sg.float32, "23")
    assert sg.placeholder(sg.float32, [2.0, None]).shape.as_list() == [2, None]


def test_variable_shapes_reject_ambiguous_dimensions(g):
    with pytest.raises(ValueError, match=rf"^variable 'w': Ambiguous dimension: 1\.5 "
                                         rf"\(dimension 0 .*{HERE}:{lineno() + 1}\)"):
        sg.Variable(np.zeros(2, np.float32), shape=[1.5], validate_shape=False, name="w")
    with sg.variable_scope("layer"):
        with pytest.raises(ValueError, match=r"^get_variable 'layer/v': Ambiguous dimension: "
                                             r"2\.5 \(dimension 0 of shape \[2\.5, 3\]"):
            sg.get_variable("v", shape=[2.5, 3], initializer=sg.zeros_initializer())


def test_set_shape_names_the_tensor_and_the_bad_dimension(g):
    x = sg.placeholder(sg.float32, None, name="x"); made = lineno()  # noqa: E702
    with pytest.raises(ValueError, match=rf"set_shape of tensor x:0 \(Placeholder op \"x\" "
                                         rf"created at .*{HERE}:{made}\): Ambiguous dimension: "
                                         rf"0\.5 .*given at .*{HERE}:{lineno() + 1}"):
        x.set_shape([0.5])
    x.set_shape([4.0])
    assert x.shape.as_list() == [4]


@pytest.mark.parametrize("dims, message", [
    ("ab", "got the string 'ab'"),
    (b"\x02", "got the string"),
    ({2, 3}, "a set .* which has no order"),
    ({2: 1}, "a dict"),
])
def test_shapes_from_text_or_unordered_collections_are_rejected(dims, message):
    with pytest.raises(TypeError, match=message + f".*given at .*{HERE}"):
        TensorShape(dims)


def test_what_names_the_shape_owner():
    with pytest.raises(ValueError, match=r"^feed signature of y: Ambiguous dimension: 2\.5"):
        as_shape([2.5], what="feed signature of y")
    assert as_shape([2], what="unused when all is well").dims == (2,)


def test_shape_equality_with_non_shapes_is_false():
    assert TensorShape([2]) != "2"
    assert TensorShape([2]) != [2.5]
    assert TensorShape([2]) == [2.0]


def test_tensors_of_equal_dims_share_a_shape_and_set_shape_changes_only_its_own(g):
    """Graph tensors share one TensorShape per dims (shapes.shared, fewer objects for the
    cycle collector); set_shape gives its tensor another, never changing the shared one."""
    a = sg.placeholder(sg.float32, [None, 3], name="a")
    b = sg.placeholder(sg.float32, [None, 3], name="b")
    y = a + b
    assert a.shape is b.shape is y.shape
    a.set_shape([4, 3])
    assert a.shape.as_list() == [4, 3]
    assert b.shape.as_list() == [None, 3] and y.shape.as_list() == [None, 3]
