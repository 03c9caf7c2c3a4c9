"""The op vocabulary (ops/vocabulary.py): every op registered with an Api is offered, from
that one entry, as a graph builder in each namespace it names, and as a dynamic-mode function
and Tensor method, each with a docstring, computing the same values in both modes.

REFERENCES is the one test row each such op needs: its value computed independently (in
float64, then rounded to the op's dtype), the interval its inputs are drawn from (one for each
input), and, for a new differentiable op, the inputs its finite-difference rows in
test_gradients.py use."""

from __future__ import annotations

import math

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy
from staticgrad.ops import vocabulary
from staticgrad.ops.vocabulary import Api

ENTRIES = vocabulary.entries()
NAMESPACES = {"sg": sg, "nn": sg.nn, "math": sg.math, "debugging": sg.debugging}
RNG = np.random.default_rng(11)


def _away(points, margin=0.1):
    """Gradient inputs in [-2.5, 2.5], at least `margin` from each of `points` (the kinks)."""
    def make(shape):
        x = RNG.uniform(-2.5, 2.5, shape)
        for p in points:
            near = np.abs(x - p) < margin
            x[near] = p + np.where(x[near] >= p, margin, -margin)
        return x
    return make


_vec = np.vectorize
# op type: (reference (float64 in, out), (low, high) of the inputs, with "special" for NaN and
# the infinities among them too, "bool" for bools, "halves" for multiples of 0.5 (so that
# comparisons meet equal values) -- for a two-input op a pair of these, one per input --
# gradient inputs or None: None where the op has a finite-difference row of its own in
# test_gradients.py, or none)
REFERENCES = {
    "Neg": (lambda x: -x, (-3, 3), None),
    "Abs": (np.abs, (-3, 3), None),
    "Sign": (np.sign, (-3, 3), None),
    "Square": (lambda x: x * x, (-3, 3), None),
    "Sqrt": (np.sqrt, (0.1, 4), None),
    "Rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 4), None),
    "Reciprocal": (lambda x: 1 / x, (0.5, 4), None),
    "Exp": (np.exp, (-3, 3), None),
    "Expm1": (_vec(math.expm1), (-3, 3), None),
    "Log": (np.log, (0.1, 4), None),
    "Log1p": (_vec(math.log1p), (-0.5, 3), None),
    "Sin": (np.sin, (-3, 3), None),
    "Cos": (np.cos, (-3, 3), None),
    "Tan": (np.tan, (-1, 1), None),
    "Tanh": (np.tanh, (-3, 3), None),
    "Sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-8, 8), None),
    "Softplus": (lambda x: np.log1p(np.exp(x)), (-8, 8), None),
    "Erf": (_vec(math.erf), (-2, 2), None),
    "Relu": (lambda x: np.where(x > 0, x, 0), (-3, 3), None),
    "Relu6": (lambda x: np.minimum(np.maximum(x, 0), 6), (-9, 9), None),
    "Elu": (lambda x: np.where(x > 0, x, _vec(math.expm1)(x)), (-3, 3), None),
    "Floor": (_vec(math.floor), (-3, 3), None),
    "Ceil": (np.ceil, (-3, 3), _away([-2, -1, 0, 1, 2])),
    "Round": (_vec(lambda v: float(round(v))), (-3, 3), _away([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])),
    "Rint": (_vec(lambda v: float(round(v))), (-3, 3), _away([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])),
    "IsNan": (_vec(math.isnan), (-3, 3, "special"), None),
    "IsInf": (_vec(math.isinf), (-3, 3, "special"), None),
    "IsFinite": (_vec(math.isfinite), (-3, 3, "special"), None),
    "Erfc": (_vec(math.erfc), (-3, 3), _away([])),
    "Selu": (lambda x: np.where(x > 0, 1.0507009873554805 * x,
                                1.0507009873554805 * 1.6732632423543772 * np.expm1(x)),
             (-3, 3), _away([0])),
    "Softsign": (lambda x: x / (1 + np.abs(x)), (-3, 3), _away([0])),
    "Identity": (lambda x: x, (-3, 3), None),
    "StopGradient": (lambda x: x, (-3, 3), None),
    "LogicalNot": (np.logical_not, (0, 1, "bool"), None),
    # two inputs
    "Add": (np.add, ((-3, 3), (-3, 3)), None),
    "Sub": (np.subtract, ((-3, 3), (-3, 3)), None),
    "Mul": (np.multiply, ((-3, 3), (-3, 3)), None),
    "FloorDiv": (np.floor_divide, ((-7, 7), (0.5, 3)), None),
    "FloorMod": (np.mod, ((-7, 7), (0.5, 3)), None),
    "Pow": (np.power, ((0.1, 3), (-2, 2)), None),
    "Maximum": (np.maximum, ((-3, 3), (-3, 3)), None),
    "Minimum": (np.minimum, ((-3, 3), (-3, 3)), None),
    "Equal": (np.equal, ((-2, 2, "halves"), (-2, 2, "halves")), None),
    "NotEqual": (np.not_equal, ((-2, 2, "halves"), (-2, 2, "halves")), None),
    "Less": (np.less, ((-2, 2, "halves"), (-2, 2, "halves")), None),
    "LessEqual": (np.less_equal, ((-2, 2, "halves"), (-2, 2, "halves")), None),
    "Greater": (np.greater, ((-2, 2, "halves"), (-2, 2, "halves")), None),
    "GreaterEqual": (np.greater_equal, ((-2, 2, "halves"), (-2, 2, "halves")), None),
    "LogicalAnd": (np.logical_and, ((0, 1, "bool"), (0, 1, "bool")), None),
    "LogicalOr": (np.logical_or, ((0, 1, "bool"), (0, 1, "bool")), None),
    "DivNoNan": (lambda x, y: np.where(y == 0, 0, x / np.where(y == 0, 1, y)),
                 ((-3, 3, "special"), (-1, 1, "halves")), _away([0])),
}


def arity(op_type: str) -> int:
    return 2 if isinstance(REFERENCES[op_type][1][0], tuple) else 1


def gradient_rows() -> list:
    """test_gradients.py's rows for the ops whose REFERENCES entry gives gradient inputs."""
    builders = {t: b for t, _, b in ENTRIES}
    return [(t, builders[t], [(make, (2, 3))] * arity(t), True)
            for t, (_, _, make) in REFERENCES.items() if make is not None]


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


SPECIAL = [np.nan, np.inf, -np.inf]


def _draw(interval, dtype, n: int, seed: int):
    low, high, *kind = interval
    x = np.random.default_rng(seed).uniform(low, high, n)
    if kind == ["bool"]:
        return x > (low + high) / 2
    if kind == ["halves"]:
        x = np.round(x * 2) / 2
    if kind == ["special"]:
        x[:len(SPECIAL)] = SPECIAL
    return x.astype(dtype)


def _inputs(op_type: str, dtype=np.float32, n: int = 12) -> list:
    """The op's inputs: one array for each, from its REFERENCES intervals."""
    intervals = REFERENCES[op_type][1]
    if arity(op_type) == 1:
        intervals = [intervals]
    return [_draw(interval, dtype, n, 7 + i) for i, interval in enumerate(intervals)]


def test_every_entry_has_its_reference_row():
    missing = sorted(t for t, _, _ in ENTRIES if t not in REFERENCES)
    assert not missing, f"ops offered without a REFERENCES row: {missing}"
    assert set(REFERENCES) <= {t for t, _, _ in ENTRIES}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op_type, api, builder", ENTRIES, ids=[e[0] for e in ENTRIES])
def test_each_entry_computes_its_reference(op_type, api, builder, dtype):
    xs = _inputs(op_type, dtype, 64)
    reference = REFERENCES[op_type][0]
    with sg.Graph().as_default():
        ts = [sg.placeholder(sg.as_dtype(x.dtype), [64]) for x in xs]
        got = sg.Session().run(builder(*ts), dict(zip(ts, xs)))
    want = np.asarray(reference(*[x.astype(np.float64) if x.dtype != bool else x
                                  for x in xs]))
    want = want.astype(got.dtype)
    assert got.dtype == want.dtype and got.shape == (64,)
    if got.dtype == bool:
        np.testing.assert_array_equal(got, want, err_msg=op_type)
        return
    tolerance = {np.float32: 2e-6, np.float64: 1e-14}.get(got.dtype.type, 0)
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=op_type)


@pytest.mark.parametrize("op_type, api, builder",
                         [e for e in ENTRIES if e[1].dynamic is not None],
                         ids=[e[0] for e in ENTRIES if e[1].dynamic is not None])
def test_the_dynamic_function_and_method_compute_what_the_graph_builder_does(op_type, api,
                                                                             builder):
    xs = _inputs(op_type)
    with sg.Graph().as_default():
        ts = [sg.placeholder(sg.as_dtype(x.dtype), [12]) for x in xs]
        want = sg.Session().run(builder(*ts), dict(zip(ts, xs)))
    name = api.dynamic or api.name
    first, *rest = [dy.tensor(x) for x in xs]
    np.testing.assert_array_equal(getattr(dy, name)(first, *rest).numpy(), want)
    np.testing.assert_array_equal(getattr(first, name)(*rest).numpy(), want)


def test_a_two_input_builder_gives_a_python_number_the_dtype_beside_it():
    for op_type, _, builder in ENTRIES:
        if arity(op_type) != 2 or REFERENCES[op_type][1][0][2:] == ("bool",):
            continue
        with sg.Graph().as_default():
            x = sg.placeholder(sg.float64, [3], name="x")
            assert builder(x, 2).op.inputs[1].dtype is sg.float64, op_type
            assert builder(2, x).op.inputs[0].dtype is sg.float64, op_type


def test_an_api_names_only_known_namespaces():
    with pytest.raises(ValueError, match="unknown namespaces"):
        Api("f", "a function", namespaces=("sg", "linalg"))
