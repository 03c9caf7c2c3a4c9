"""A long run() is split into part functions (backends/numpy/parts.py), compiled one at a time
(codegen.pycompile.compile_module): the same values, bit for bit, as one function; errors
still name the node and its line; the source stays valid, readable Python."""

import ast
import importlib.util

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.backends.numpy import parts
from staticgrad.codegen import pycompile
from tests.conftest import lineno


def _chain(steps, size=16):
    """`steps` x (sin, mul, add, tanh) on a placeholder of `size` values, summed, with the
    gradient: 20 lines of run() a step (10 nodes and their comments)."""
    x = sg.placeholder(sg.float32, [size], name="x")
    y = x
    for _ in range(steps):
        y = sg.tanh(sg.sin(y) * 1.0001 + 0.01)
    loss = sg.reduce_sum(y)
    dx, = sg.gradients(loss, [x])
    return x, [loss, dx, y]


@pytest.fixture(autouse=True)
def short_parts(monkeypatch):
    """Parts of 200 lines from 400 on, so that short chains (quick to build) are split."""
    monkeypatch.setattr(parts, "SPLIT_ABOVE", 400)
    monkeypatch.setattr(parts, "PART_LINES", 200)


@pytest.fixture
def whole(monkeypatch):
    """A function that runs `fetches` with run() kept whole, however long."""
    def run(fetches, feeds):
        with monkeypatch.context() as m:
            m.setattr(parts, "SPLIT_ABOVE", 10 ** 9)
            sess = sg.Session()
            return sess.run(fetches, feeds), sess.source(fetches, feeds)
    return run


@pytest.mark.parametrize("size", [1, 16, 40_000])  # the scalar path, small arrays, `del`s
def test_parts_compute_what_one_function_computes(g, whole, size):
    x, fetches = _chain(60, size)
    feeds = {x: np.linspace(0.1, 1.6, size, dtype=np.float32)}
    want, one = whole(fetches, feeds)
    sess = sg.Session()
    got = sess.run(fetches, feeds)
    source = sess.source(fetches, feeds)
    assert "_part_" not in one and source.count("\ndef _part_") >= 2
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    # each part is about PART_LINES long; run() only calls them
    tree = ast.parse(source)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    for name, f in functions.items():
        if name.startswith("_part_"):
            assert f.end_lineno - f.lineno < parts.PART_LINES + 60, name
    assert functions["run"].end_lineno - functions["run"].lineno < 150


def test_a_short_run_is_one_function(g, monkeypatch):
    monkeypatch.setattr(parts, "SPLIT_ABOVE", 4000)  # as made: every test graph stays whole
    x, fetches = _chain(195)  # 3,900 lines
    source = sg.Session().source(fetches, {x: np.ones(16, np.float32)})
    assert "_part_" not in source


def test_parts_hand_over_only_what_later_lines_read(g):
    x, fetches = _chain(80)
    source = sg.Session().source(fetches[:1], {x: np.ones(16, np.float32)})  # no gradient
    tree = ast.parse(source)
    calls = [s for s in next(f for f in tree.body if getattr(f, "name", "") == "run").body
             if isinstance(s, ast.Assign)]
    # a forward chain: each part reads the one value before it and gives one value on
    assert len(calls) >= 2
    for call in calls:
        assert isinstance(call.targets[0], ast.Name) and len(call.value.args) == 1


def test_an_error_in_a_part_names_the_node_and_its_line(g):
    x = sg.placeholder(sg.int32, [None], name="x")
    idx = sg.placeholder(sg.int32, [None], name="idx")
    y = sg.cast(x, sg.float32)
    for _ in range(100):
        y = sg.sin(y) + 1.0
    y = sg.gather(y, idx, name="pick"); line = lineno()  # noqa: E702
    for _ in range(100):
        y = sg.cos(y) * 2.0
    sess = sg.Session()
    assert "\ndef _part_3(" in sess.source(y, {x: [1, 2, 3], idx: [0]})
    with pytest.raises(sg.errors.InvalidArgumentError) as info:
        sess.run(y, {x: [1, 2, 3], idx: [5]})
    assert "pick" in str(info.value) and f":{line}" in str(info.value)


def test_compile_module_keeps_every_line_number(g, monkeypatch):
    monkeypatch.setattr(pycompile, "PIECE_CHARS", 1000)
    x, fetches = _chain(60)
    source = sg.Session().source(fetches, {x: np.ones(16, np.float32)})
    codes = pycompile.compile_module(source, "<check>")
    assert len(codes) > 3
    whole = compile(source, "<check>", "exec")

    def lines(code):
        out = {(code.co_name, code.co_firstlineno)}
        out.update((code.co_name, line) for _, _, line in code.co_lines() if line)
        for c in code.co_consts:
            if hasattr(c, "co_lines"):
                out |= lines(c)
        return out
    pieces = set().union(*(lines(c) for c in codes))
    assert {x for x in lines(whole) if x[0] != "<module>"} == \
        {x for x in pieces if x[0] != "<module>"}


def test_an_exported_module_with_parts_runs(g, tmp_path):
    x, fetches = _chain(60)
    feed = np.linspace(0.1, 1.6, 16, dtype=np.float32)
    sess = sg.Session()
    want = sess.run(fetches, {x: feed})
    path = sg.export(fetches, [x], str(tmp_path / "chain.py"), session=sess)
    spec = importlib.util.spec_from_file_location("chain", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(path) as f:
        assert "\ndef _part_2(" in f.read()
    for a, b in zip(module.run(feed), want):
        np.testing.assert_array_equal(a, b)
