"""The op vocabulary (ops/vocabulary.py): every op registered with an Api is offered, from
that one entry, as a graph builder in each namespace it names, and as a dynamic-mode function
and Tensor method, each with a docstring, computing the same values in both modes."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy
from staticgrad.ops import vocabulary
from staticgrad.ops.vocabulary import Api

ENTRIES = vocabulary.entries()
NAMESPACES = {"sg": sg, "nn": sg.nn, "math": sg.math}


@pytest.mark.parametrize("op_type, api, builder", ENTRIES, ids=[e[0] for e in ENTRIES])
def test_each_entry_is_offered_where_it_says_with_a_docstring(op_type, api, builder):
    assert builder.__name__ == api.name and api.doc.lower() in builder.__doc__.lower()
    for ns in api.namespaces:
        module = NAMESPACES[ns]
        for name in (api.name, *api.aliases):
            assert getattr(module, name) is builder, f"{ns}.{name}"
            assert name in module.__all__ and name in dir(module), f"{ns}.{name}"
    for ns in set(NAMESPACES) - set(api.namespaces):
        assert getattr(NAMESPACES[ns], api.name, None) is not builder, f"{ns}.{api.name}"
    if api.dynamic is None:
        return
    name = api.dynamic or api.name
    for alias in (name, *api.dynamic_aliases):
        fn = getattr(dy, alias)
        assert fn.__doc__ and api.doc in fn.__doc__ and alias in dir(dy)
    assert callable(getattr(dy.Tensor, name)), f"Tensor.{name}"


def _input(op_type: str):
    x = np.random.default_rng(7).uniform(0.1, 2.0, 12).astype(np.float32)
    return x > 1 if op_type == "LogicalNot" else x


@pytest.mark.parametrize("op_type, api, builder",
                         [e for e in ENTRIES if e[1].dynamic is not None],
                         ids=[e[0] for e in ENTRIES if e[1].dynamic is not None])
def test_the_dynamic_function_and_method_compute_what_the_graph_builder_does(op_type, api,
                                                                             builder):
    x = _input(op_type)
    with sg.Graph().as_default():
        t = sg.placeholder(sg.as_dtype(x.dtype), [12])
        want = sg.Session().run(builder(t), {t: x})
    name = api.dynamic or api.name
    np.testing.assert_array_equal(getattr(dy, name)(dy.tensor(x)).numpy(), want)
    np.testing.assert_array_equal(getattr(dy.tensor(x), name)().numpy(), want)


def test_an_api_names_only_known_namespaces():
    with pytest.raises(ValueError, match="unknown namespaces"):
        Api("f", "a function", namespaces=("sg", "linalg"))
