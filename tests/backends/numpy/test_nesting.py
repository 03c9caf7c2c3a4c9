"""Nested expressions (backends/numpy/nesting.py): in a long program, a value one node reads
is written inside that node's expression. The same values bit for bit as one line per node,
every op still commented and in the line map, errors naming the same op, and no value read
after what frees it or writes over it."""

import ast

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.backends.numpy import memory, nesting, parts
from tests.conftest import lineno


@pytest.fixture
def nest_all(monkeypatch):
    """Every program nests, however short."""
    monkeypatch.setattr(nesting, "NEST_ABOVE", 0)


def _both(fetches, feeds, monkeypatch):
    """(results, source, plan) with nesting, then the same one line per node."""
    out = []
    for above in (0, 10 ** 9):
        with monkeypatch.context() as m:
            m.setattr(nesting, "NEST_ABOVE", above)
            sess = sg.Session()
            try:
                got = sess.run(fetches, feeds)
            except sg.errors.OpError as e:
                got = e
            out.append((got, sess.source(fetches, feeds)))
    return out


def _statements(source: str) -> list[ast.stmt]:
    tree = ast.parse(source)
    run = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "run")
    return [s for s in run.body if isinstance(s, ast.Assign)]


def _chain(steps):
    x = sg.placeholder(sg.float32, [16], name="x")
    y = x
    for _ in range(steps):
        y = sg.tanh(sg.sin(y) * 1.0001 + 0.01)
    loss = sg.reduce_sum(y)
    dx, = sg.gradients(loss, [x])
    return x, [loss, dx]


def test_a_long_program_nests_what_one_node_reads_and_computes_the_same(g, monkeypatch):
    monkeypatch.setattr(nesting, "NEST_ABOVE", 100)
    x, fetches = _chain(30)  # 30 x 8 nodes
    feeds = {x: np.linspace(0.1, 1.6, 16, dtype=np.float32)}
    (nested, source), (flat, flat_source) = _both(fetches, feeds, monkeypatch)
    for a, b in zip(nested, flat):
        np.testing.assert_array_equal(a, b)
    # the forward step is one line: tanh(sin(y) * 1.0001 + 0.01)
    assert "Tanh_1 = np.tanh((np.sin(Tanh) * 1.0001) + 0.01)" in source
    assert len(_statements(source)) * 2 < len(_statements(flat_source))
    # every op keeps its comment, with the user's line
    for op in ("Sin", "Mul", "Add", "Tanh", "Cos", "TanhGrad"):
        assert source.count(f"# {op} '") == flat_source.count(f"# {op} '") >= 30


def test_a_short_program_keeps_one_line_per_node(g):
    x = sg.placeholder(sg.float32, [3], name="x")
    y = sg.tanh(sg.sin(x) * 2.0)
    source = sg.Session().source(y, {x: np.ones(3, np.float32)})
    assert "Sin = np.sin(x)" in source and "Mul = Sin * 2.0" in source


def test_the_line_map_holds_every_op_of_a_nested_line(g, monkeypatch):
    x, fetches = _chain(3)
    ops = []
    for above in (0, 10 ** 9):
        monkeypatch.setattr(nesting, "NEST_ABOVE", above)
        plan = sg.Session().plan(fetches, {x: np.ones(16, np.float32)})
        ops.append(sorted(op.name for op in plan.line_ops.ops))
    assert ops[0] == ops[1] and len(ops[0]) > 20


def test_an_error_in_a_nested_line_names_its_reader(g, nest_all):
    x = sg.placeholder(sg.float32, [3], name="x")
    idx = sg.placeholder(sg.int32, [1], name="idx")
    y = sg.gather(sg.sin(x) * 2.0, idx, name="pick"); line = lineno()  # noqa: E702
    sess = sg.Session()
    assert "rt.gather(np.sin(x) * 2.0, idx" in sess.source(y, {x: np.ones(3), idx: [0]})
    with pytest.raises(sg.errors.InvalidArgumentError) as info:
        sess.run(y, {x: np.ones(3), idx: [7]})
    assert "pick" in str(info.value) and f":{line}" in str(info.value)


def test_check_numerics_says_the_same_of_a_nested_value(g, monkeypatch):
    x = sg.placeholder(sg.float32, [2], name="x")
    y = sg.debugging.check_numerics(sg.log(x) * 3.0, "log of x")
    (nested, source), (flat, _) = _both(y, {x: np.array([1.0, -1.0], np.float32)},
                                        monkeypatch)
    assert "rt.check_numerics(np.log(x) * 3.0, 'log of x')" in source
    assert isinstance(nested, sg.errors.InvalidArgumentError)
    assert str(nested) == str(flat)


def test_a_value_read_twice_has_a_line_of_its_own(g, nest_all):
    x = sg.placeholder(sg.float32, [3], name="x")
    s = sg.sin(x)
    y = s * s
    source = sg.Session().source(y, {x: np.ones(3, np.float32)})
    assert "Sin = np.sin(x)" in source


def test_values_nest_at_most_nest_depth_deep(g, nest_all):
    x = sg.placeholder(sg.float32, [3], name="x")
    y = x
    for _ in range(20):
        y = y * 1.5
    source = sg.Session().source(y, {x: np.ones(3, np.float32)})
    for statement in _statements(source):
        muls = sum(isinstance(n, ast.BinOp) for n in ast.walk(statement.value))
        assert muls <= nesting.NEST_DEPTH + 1
    assert len(_statements(source)) == 4  # 20 products, 5 a line


def test_a_value_is_computed_before_a_line_frees_what_it_reads(g, monkeypatch):
    # (found by tests/test_fuzz.py) concat waited to nest in its reader, past the product that
    # freed ExpandDims, which it reads
    monkeypatch.setattr(memory, "MIN_BYTES", 0)
    p = sg.placeholder(sg.float32, [4, 1, 1], name="p")
    e = sg.expand_dims(p, -2)
    c = sg.concat([e, e, e], axis=-2)
    m = e * 2.0
    m1 = c * 3.0
    (nested, source), (flat, _) = _both([m, m1], {p: np.arange(4.0).reshape(4, 1, 1)},
                                        monkeypatch)
    assert not isinstance(nested, Exception), f"{nested}\n{source}"
    for a, b in zip(nested, flat):
        np.testing.assert_array_equal(a, b)


def test_a_value_is_computed_before_a_line_writes_into_what_it_reads(g, monkeypatch):
    monkeypatch.setattr(memory, "MIN_BYTES", 0)
    x = sg.placeholder(sg.float32, [5], name="x")
    a = sg.exp(x)
    pending = sg.sin(a)         # reads a; its reader (the gather) comes after the next line
    over = sg.sqrt(a)           # a dies here: its buffer takes this result (out=)
    y = sg.gather(pending, [4, 3, 2, 1, 0])
    (nested, source), (flat, _) = _both([y, over],
                                        {x: np.linspace(0, 1, 5, dtype=np.float32)},
                                        monkeypatch)
    assert "np.sqrt(Exp, out=Exp)" in source
    for a, b in zip(nested, flat):
        np.testing.assert_array_equal(a, b)


def test_a_variable_update_between_a_value_and_its_reader_comes_after_the_value(
        g, monkeypatch):
    x = sg.placeholder(sg.float32, [3], name="x")
    v = sg.Variable(np.ones(3, np.float32), name="v")
    a = sg.sin(x * v) * 2.0  # pending: its reader is the last line
    with sg.control_dependencies([a]):
        step = sg.assign_add(v, np.full(3, 10.0, np.float32))
    y = a + step * 0.0
    results = []
    for above in (0, 10 ** 9):
        with monkeypatch.context() as m:
            m.setattr(nesting, "NEST_ABOVE", above)
            with sg.Session() as sess:
                sess.run(v.initializer)
                results.append(sess.run(y, {x: np.arange(3.0)}))
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], np.sin(np.arange(3.0)) * 2.0, rtol=1e-6)


def test_a_nested_program_cut_in_parts_computes_the_same(g, monkeypatch):
    monkeypatch.setattr(parts, "SPLIT_ABOVE", 60)
    monkeypatch.setattr(parts, "PART_LINES", 30)
    x, fetches = _chain(40)
    feeds = {x: np.linspace(0.1, 1.6, 16, dtype=np.float32)}
    (nested, source), (flat, _) = _both(fetches, feeds, monkeypatch)
    assert source.count("\ndef _part_") >= 2
    for a, b in zip(nested, flat):
        np.testing.assert_array_equal(a, b)


def test_what_dies_at_a_nested_value_is_freed_after_its_reader(g, monkeypatch):
    # (review) the values whose last use is a nested node were never deleted: a 64 KiB
    # exp(...) summed by a nested reduction stayed alive until run() returned, each step
    monkeypatch.setattr(memory, "MIN_BYTES", 0)
    x = sg.placeholder(sg.float32, [3], name="x")
    a = sg.exp(x)
    b = sg.exp(x + 1.0)
    keep, keep2 = a * 2.0, b * 3.0   # a and b have lines of their own; they die nested
    y = sg.pow(sg.ceil(a, name="P1"), sg.round(b, name="P2"), name="R")
    fetches, feeds = [y, keep, keep2], {x: np.linspace(0.1, 1.0, 3, dtype=np.float32)}
    (nested, source), (flat, flat_source) = _both(fetches, feeds, monkeypatch)
    assert "R_1 = np.ceil(Exp) ** np.round(Exp_1)" in source
    run = source[source.index("def run("):]
    assert "del Exp" in run and "del Exp_1" in run or "del Exp, Exp_1" in run
    for a_, b_ in zip(nested, flat):
        np.testing.assert_array_equal(a_, b_)
    # the ops nested in the line map to it, not to the `del` lines after it
    monkeypatch.setattr(nesting, "NEST_ABOVE", 0)
    plan = sg.Session().plan(fetches, feeds)
    lines = plan.source.splitlines()
    for line, op in plan.line_ops.items():
        if op.name in ("R", "P1", "P2"):
            assert lines[line - 1].strip().startswith("R_1 = "), (op.name, lines[line - 1])


def _same_error(build, monkeypatch):
    fetches, feeds = build()
    (nested, source), (flat, _) = _both(fetches, feeds, monkeypatch)
    assert isinstance(flat, sg.errors.OpError), flat
    assert str(nested) == str(flat), f"{nested}\n{source}"


def test_an_integer_power_that_fails_nested_names_the_power(g, monkeypatch):
    # (review) "only its reader can fail at run time" is not so: x ** e raises for integers
    # and a negative exponent, and the error named the gather that the power nested in
    def build():
        x = sg.placeholder(sg.int32, [3], name="x")
        e = sg.placeholder(sg.int32, [3], name="e")
        y = sg.gather(sg.pow(x, e, name="the_power"), [0, 1], name="reader")
        return y, {x: np.array([1, 2, 3], np.int32), e: np.array([1, -1, 2], np.int32)}
    _same_error(build, monkeypatch)


def test_a_reduction_over_an_empty_axis_that_fails_nested_names_the_reduction(g, monkeypatch):
    def build():
        x = sg.placeholder(sg.float32, [0, 3], name="x")
        m = sg.reduce_max(x, axis=0, name="the_max")
        y = sg.gather(m * 2.0, [0, 1], name="reader")
        return y, {x: np.zeros((0, 3), np.float32)}
    _same_error(build, monkeypatch)


def test_a_floating_point_error_raised_nested_names_its_op(g, monkeypatch):
    # under np.errstate(all="raise") (which blocks.py and runtime.py take care to honour) any
    # float op may raise: log(0) nested in a gather was reported as the gather's error
    def build():
        x = sg.placeholder(sg.float32, [3], name="x")
        y = sg.gather(sg.log(x, name="the_log") * 2.0, [0, 1], name="reader")
        return y, {x: np.array([0.0, 1.0, 2.0], np.float32)}
    with np.errstate(all="raise"):
        _same_error(build, monkeypatch)


def test_no_part_begins_at_a_noop_while_a_value_is_pending(g, monkeypatch):
    # (review) a NoOp (sg.group) writes no line, so node() never marked it no_cut: a part
    # began there, and the reader's part read a name (Add) that only the part before knew
    monkeypatch.setattr(parts, "SPLIT_ABOVE", 10)
    monkeypatch.setattr(parts, "PART_LINES", 8)
    x = sg.placeholder(sg.float32, [3], name="x")
    z = sg.exp(x) * 0.5 + sg.cos(x)
    p = sg.sin(z) * 3.0                        # pending: its reader is the last node
    qs = [sg.tanh(z) + float(i) for i in range(2)]
    qs2 = [q * q for q in qs]                  # lines of their own meanwhile
    group = sg.group(*[q.op for q in qs2])     # a NoOp between p and its reader
    y = sg.gather(p, [2, 1, 0], name="reader")
    (nested, source), (flat, _) = _both([y, group] + qs2, {x: np.ones(3, np.float32)},
                                        monkeypatch)
    assert not isinstance(nested, Exception), f"{nested}\n{source}"
    assert "np.sin(Add) * 3.0" in source and "\ndef _part_" in source
    for a, b in zip(nested, flat):
        if b is None:
            assert a is None
        else:
            np.testing.assert_array_equal(a, b)
