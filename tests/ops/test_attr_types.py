"""Declared attribute types: generated code is injection-proof by construction.

Driven by the registry's declared types, so an op added later is covered with no new test
code: every attribute of every op is fed hostile values (code, quotes, newlines, huge numbers,
wrong types, deep nesting, subclasses with a hostile repr) through the Python API, a graph
file, `export` and the CLI. Nothing may run, and each gets an error naming the op and the
attribute (or, for a free-text attribute, becomes a plain string literal).
"""

from __future__ import annotations

import ast
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import staticgrad as sg
from staticgrad.graph_io import GraphFormatError, encode_value
from staticgrad.ir import Value, make_node
from staticgrad.ops import attr_types as T
from staticgrad.ops.creation import create_operation
from staticgrad.ops.table import REGISTRY

ROOT = pathlib.Path(__file__).resolve().parents[2]
CANARY = "SG_ATTR_CANARY"
# Python that would set the canary if it ever ran
PAYLOAD = f"__import__('os').environ.__setitem__({CANARY!r}, 'ran')"


class EvilInt(int):
    def __repr__(self):
        return PAYLOAD

    __str__ = __repr__

    def __format__(self, spec):
        return PAYLOAD


class EvilFloat(float):
    def __repr__(self):
        return PAYLOAD

    __str__ = __repr__


class EvilStr(str):
    def __repr__(self):
        return PAYLOAD

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def _nested(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


HOSTILE = [
    PAYLOAD,
    f"0); {PAYLOAD} #",
    f"SAME'\n{PAYLOAD}\n'",
    "'\"\\\n",
    "1\n",
    "",
    EvilStr("SAME"),
    EvilInt(1),
    EvilFloat(0.5),
    2 ** 200,
    -(2 ** 200),
    float("nan"),
    1e308,
    (PAYLOAD,),
    (1, PAYLOAD),
    [EvilInt(1), EvilInt(2)],
    ((0, PAYLOAD), (0, 0)),
    ("slice", PAYLOAD, None, None),
    (("slice", 0, PAYLOAD, 1),),
    _nested(10_000),
    {"a": PAYLOAD},
    object(),
    print,
    np.array([PAYLOAD]),
    np.array([1, 2], dtype=object),
    sg.TensorShape([EvilInt(2)]),
]

ATTRS = [(op_type, key) for op_type, opdef in sorted(REGISTRY.items())
         for key in opdef.attrs if not opdef.internal]
# the ops a graph may hold (the others, Transfer, only the compiler makes: see the last test)
PUBLIC = sorted(t for t, d in REGISTRY.items() if not d.internal)
INTERNAL = sorted(t for t, d in REGISTRY.items() if d.internal)


@pytest.fixture(autouse=True)
def _canary():
    os.environ.pop(CANARY, None)
    yield
    assert CANARY not in os.environ, "a hostile attribute value ran as code"


def _inputs(opdef, x) -> list:
    return [x] * (opdef.arity if isinstance(opdef.arity, int) else opdef.arity[0])


def _examples(opdef) -> dict:
    return {k: kind.example() for k, kind in opdef.attrs.items()}


def test_every_attr_type_example_is_valid():
    for op_type, key in ATTRS:
        kind = REGISTRY[op_type].attrs[key]
        value = kind.example()
        assert _same(kind.check(value), value), (op_type, key)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b) and a.dtype == b.dtype
    if isinstance(a, float) and math.isnan(a):
        return type(b) is float and math.isnan(b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("op_type, key", ATTRS, ids=[f"{t}.{k}" for t, k in ATTRS])
def test_every_attribute_refuses_hostile_values_through_the_python_api(op_type, key):
    opdef = REGISTRY[op_type]
    kind = opdef.attrs[key]
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [2, 2], name="x")
    for value in HOSTILE:
        attrs = _examples(opdef)
        attrs[key] = value
        try:
            op = create_operation(g, op_type, _inputs(opdef, x), attrs)
        except (TypeError, ValueError) as e:
            text = str(e)  # the op (and, when its type refused the value, the attribute)
            assert op_type in text and "test_attr_types.py" in text, text  # and the line
            if f"attribute {key!r}" not in text:  # accepted by its type, refused by the rule
                assert _same(kind.check(value), kind.check(value)), (op_type, key, value)
            continue
        # accepted: then it is a value of the declared type, and its literal is data
        canonical = op.attrs[key]
        assert _same(kind.check(canonical), canonical), (op_type, key, value)
        _assert_literal_is_data(kind, canonical)


def _assert_literal_is_data(kind, value) -> None:
    try:
        text = kind.literal(value)
    except TypeError:
        return  # no source form: never written into code (arrays, in-process objects)
    tree = ast.parse(text if not isinstance(kind, T.IndexSpec) else f"x[{text}]", mode="eval")
    for node in ast.walk(tree):
        assert not isinstance(node, ast.Call | ast.Lambda | ast.NamedExpr), (kind, text)
        if isinstance(node, ast.Name):
            assert node.id in ("np", "x", "None", "True", "False"), (kind, text)
        if isinstance(node, ast.Attribute):
            assert isinstance(node.value, ast.Name) and node.value.id == "np", (kind, text)


@pytest.mark.parametrize("op_type", PUBLIC)
def test_an_undeclared_attribute_is_refused(op_type):
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [2, 2], name="x")
    opdef = REGISTRY[op_type]
    attrs = {**_examples(opdef), "not_an_attr": PAYLOAD}
    with pytest.raises(TypeError, match=f"{op_type} has no attribute 'not_an_attr'"):
        create_operation(g, op_type, _inputs(opdef, x), attrs)


@pytest.mark.parametrize("op_type", PUBLIC)
def test_a_wrong_number_of_inputs_is_refused_naming_the_op(op_type):
    opdef = REGISTRY[op_type]
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [2, 2], name="x")
    n = len(_inputs(opdef, x))
    for wrong in (n - 1, n + 1 if opdef.arity == n else None):
        if wrong is None or wrong < 0:
            continue
        with pytest.raises(ValueError, match=f"{op_type} .*takes .*input"):
            create_operation(g, op_type, [x] * wrong, _examples(opdef))


@pytest.mark.parametrize("op_type", INTERNAL)
def test_ops_only_the_compiler_makes_check_what_it_gives_them(op_type):
    """No graph holds one; the compiler's make_node checks their attributes and inputs as
    graph building checks everyone else's."""
    opdef = REGISTRY[op_type]
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [2, 2], name="x")
    with pytest.raises(ValueError, match=f"{op_type} ops are made only by the compiler"):
        create_operation(g, op_type, _inputs(opdef, x), _examples(opdef))
    v = Value(x.shape, x.dtype, name="x")
    for key in opdef.attrs:
        for value in HOSTILE:
            attrs = {**_examples(opdef), key: value}
            try:
                node = make_node(opdef, attrs, [v], None)
            except (TypeError, ValueError) as e:
                assert op_type in str(e), str(e)
                continue
            _assert_literal_is_data(opdef.attrs[key], node.attrs[key])
    with pytest.raises(TypeError, match=f"{op_type} has no attribute 'not_an_attr'"):
        make_node(opdef, {**_examples(opdef), "not_an_attr": PAYLOAD}, [v], None)
    with pytest.raises(ValueError, match=f"{op_type} takes .*input"):
        make_node(opdef, _examples(opdef), [v, v], None)


def test_a_missing_attribute_is_refused_naming_it():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [2, 2], name="x")
    with pytest.raises(TypeError, match="Softmax needs attribute 'axis'"):
        create_operation(g, "Softmax", [x], {})


# -- graph files ---------------------------------------------------------------------------------
JSON_HOSTILE = [
    {"type": "str", "value": PAYLOAD},
    {"type": "str", "value": "SAME'\n" + PAYLOAD},
    {"type": "int", "value": 2 ** 200},
    {"type": "float", "value": "nan"},
    {"type": "tuple", "value": [{"type": "str", "value": PAYLOAD}]},
    {"type": "tuple", "value": [{"type": "str", "value": "slice"},
                                {"type": "str", "value": PAYLOAD},
                                {"type": "none"}, {"type": "none"}]},
    {"type": "list", "value": [{"type": "list", "value": [{"type": "int", "value": 1}]}]},
    {"type": "dict", "value": {"k": {"type": "str", "value": PAYLOAD}}},
    {"type": "dtype", "value": "float32"},
    {"type": "shape", "value": [2, None]},
    {"type": "ndarray", "dtype": "float32", "shape": [2], "values": [1.0, 2.0]},
]


def _graph_doc(op_type: str, attrs: dict) -> dict:
    g = sg.Graph()
    with g.as_default():
        sg.placeholder(sg.float32, [2, 2], name="x")
        doc = sg.train.export_meta_graph()
    inputs = ["x:0"] * len(_inputs(REGISTRY[op_type], None))
    doc["ops"].append({"name": "victim", "type": op_type, "inputs": inputs,
                       "control_inputs": [], "attrs": attrs,
                       "outputs": [], "location": ["model.py", 3]})
    return doc


def _file_attrs(opdef) -> dict:
    out = {}
    for key, kind in opdef.attrs.items():
        if kind.in_files:
            out[key] = encode_value(kind.example())
    return out


@pytest.mark.parametrize("op_type, key", ATTRS, ids=[f"{t}.{k}" for t, k in ATTRS])
def test_every_attribute_refuses_hostile_values_from_a_graph_file(op_type, key):
    opdef = REGISTRY[op_type]
    kind = opdef.attrs[key]
    for value in JSON_HOSTILE:
        attrs = _file_attrs(opdef)
        attrs[key] = value
        with sg.Graph().as_default() as g:
            try:
                sg.train.import_meta_graph(_graph_doc(op_type, attrs))
            except GraphFormatError as e:
                assert "op #1 'victim'" in str(e), str(e)  # the file position
                continue
            op = g.get_operation_by_name("victim")
            canonical = op.attrs[key]
            assert _same(kind.check(canonical), canonical), (op_type, key, value)
            _assert_literal_is_data(kind, canonical)


def test_in_process_attributes_are_refused_from_a_graph_file():
    attrs = {"_gradient_op_type": encode_value("Custom")}
    with sg.Graph().as_default(), pytest.raises(GraphFormatError,
                                                match="'_gradient_op_type' of Exp holds"):
        sg.train.import_meta_graph(_graph_doc("Exp", attrs))


def test_a_softmax_axis_holding_code_in_a_graph_file_is_refused():
    """The original exploit: a string where Softmax's integer axis belongs ran as Python when
    the graph was loaded (constant folding) or at the first run."""
    attrs = {"axis": {"type": "str", "value": f"-1) or ({PAYLOAD}"}}
    with sg.Graph().as_default(), pytest.raises(
            GraphFormatError, match=r"op #1 'victim'.*attribute 'axis' of Softmax must be an int"):
        sg.train.import_meta_graph(_graph_doc("Softmax", attrs))


def test_a_strided_slice_grad_index_holding_code_in_a_graph_file_is_refused():
    bound = {"type": "str", "value": f"0]+[{PAYLOAD}"}
    index = {"type": "tuple", "value": [{"type": "tuple", "value": [
        {"type": "str", "value": "slice"}, bound, {"type": "none"}, {"type": "none"}]}]}
    with sg.Graph().as_default(), pytest.raises(GraphFormatError, match="attribute 'index'"):
        sg.train.import_meta_graph(_graph_doc("StridedSliceGrad", {"index": index}))


@pytest.mark.parametrize("command", ["source", "export", "draw"])
def test_the_cli_refuses_a_hostile_graph_file_and_runs_nothing(tmp_path, command):
    marker = tmp_path / "PWNED"
    payload = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    attrs = {"axis": {"type": "str", "value": f"-1) or ({payload}"}}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(_graph_doc("Softmax", attrs)))
    args = {"source": ["--fetch", "victim"],
            "export": ["--fetch", "victim", "-o", str(tmp_path / "out.py")],
            "draw": ["-o", str(tmp_path / "g.dot")]}[command]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "staticgrad", command, str(path), *args],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "attribute 'axis' of Softmax must be an int" in done.stderr
    assert not marker.exists()
    assert not (tmp_path / "out.py").exists()


# -- literals ------------------------------------------------------------------------------------
def _eval(text: str):
    return eval(text, {"np": np, "__builtins__": {}})  # noqa: S307 - the literal under test


@given(st.integers(-T.MAX_INT, T.MAX_INT))
def test_an_int_literal_reads_back(v):
    assert _eval(T.Int().literal(v)) == v


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_float_literal_reads_back_bit_for_bit(v):
    back = _eval(T.Float().literal(v))
    assert (math.isnan(back) and math.isnan(v)) or (back == v and math.copysign(1, back) ==
                                                    math.copysign(1, v))


@given(st.one_of(st.booleans(), st.integers(-2 ** 64, 2 ** 64), st.floats()))
def test_a_number_literal_reads_back_with_its_kind(v):
    back = _eval(T.Number().literal(v))
    assert type(back) is type(v)
    assert back == v or (math.isnan(back) and math.isnan(v))


@given(st.text(max_size=50))
def test_a_text_literal_is_a_string_literal(v):
    text = T.Text().literal(v)
    assert isinstance(ast.parse(text, mode="eval").body, ast.Constant)
    assert _eval(text) == v


_BOUND = st.one_of(st.none(), st.integers(-8, 8))
_INDEX_ITEM = st.one_of(st.none(), st.just(Ellipsis), st.integers(-3, 2),
                        st.tuples(st.just("slice"), _BOUND, _BOUND,
                                  _BOUND.filter(lambda s: s != 0)))


@given(st.lists(_INDEX_ITEM, max_size=4))
def test_an_index_spec_literal_indexes_as_python_does(items):
    spec = tuple(items)
    if spec.count(Ellipsis) > 1:
        with pytest.raises(ValueError):
            T.IndexSpec().check(spec)
        return
    x = np.arange(3 * 4 * 5).reshape(3, 4, 5)
    key = tuple(slice(*s[1:]) if isinstance(s, tuple) else s for s in spec)
    try:
        expected = x[key]
    except IndexError:
        return
    assert np.array_equal(eval(f"x[{T.IndexSpec().literal(spec)}]", {"x": x}), expected)


def test_dtype_literals_name_numpy_types():
    for dt in (sg.float16, sg.float32, sg.float64, sg.int8, sg.int16, sg.int32, sg.int64,
               sg.uint8, sg.bool):
        assert _eval(T.DType().literal(dt)) is dt.as_numpy_dtype


# -- the renderers -------------------------------------------------------------------------------
def _formatted_attr_reads(path: pathlib.Path):
    """f-string fields that read an `attrs` mapping, outside raise statements."""
    tree = ast.parse(path.read_text())
    in_raise = {id(n) for r in ast.walk(tree) if isinstance(r, ast.Raise) for n in ast.walk(r)}
    for node in ast.walk(tree):
        if isinstance(node, ast.FormattedValue) and id(node) not in in_raise:
            text = ast.unparse(node.value)
            if "attrs" in text:
                yield node.lineno, text


def test_emitters_write_attributes_only_through_their_literal_makers():
    """An emitter writes an attribute as `ctx.lit(name)`; reading `ctx.attrs` inside an
    f-string would format a value by hand."""
    found = [(p.name, line, text) for p in sorted((ROOT / "staticgrad").rglob("*.py"))
             if p.parent.name in ("ops", "codegen") or p.name == "autodiff.py"
             for line, text in _formatted_attr_reads(p)]
    assert found == []
