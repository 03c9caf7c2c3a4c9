"""sg.while_loop (staticgrad/control_flow/while_loop.py): a While op whose cond and body are
closed sub-graphs, run as a Python loop by the generated code. Values against Python loops
written by hand, gradients against finite differences (the registry's rows are in
tests/ops/test_gradients.py), TF1's arguments, and the errors that name the loop's line."""

from __future__ import annotations

import collections
import importlib.util

import numpy as np
import pytest

import staticgrad as sg
from tests.conftest import numeric_grad

F = sg.float64
XV = np.array([0.1, 0.2, 0.3])


def test_the_trip_count_is_decided_by_the_values_fed():
    x = sg.placeholder(F, [3], name="x")
    n, y = sg.while_loop(lambda n, s: sg.reduce_sum(s) < 10.0,
                         lambda n, s: (n + 1, s * 1.5), (0, x))
    sess = sg.Session()
    for start in (XV, XV * 10, XV * 100):
        s, count = start.copy(), 0
        while s.sum() < 10.0:
            s, count = s * 1.5, count + 1
        got_n, got_y = sess.run([n, y], {x: start})
        assert got_n == count and got_n.dtype == np.int32
        np.testing.assert_allclose(got_y, s)


def test_gradients_flow_through_every_iteration_run():
    x = sg.placeholder(F, [3], name="x")
    y = sg.while_loop(lambda s: sg.reduce_sum(s * s) < 30.0, lambda s: sg.sin(s) + s * 1.4, [x])
    (dx,) = sg.gradients(sg.reduce_sum(y * y), [x])

    def loss(v):
        s = v
        while (s * s).sum() < 30.0:
            s = np.sin(s) + s * 1.4
        return (s * s).sum()

    sess = sg.Session()
    for start in (XV, XV * 3):
        np.testing.assert_allclose(sess.run(dx, {x: start}), numeric_grad(loss, start), rtol=1e-6)


def test_an_rnn_over_time_sums_its_weights_gradient_over_the_steps():
    w = sg.Variable(np.eye(3) * 0.5 + 0.1, name="W")
    xs = sg.placeholder(F, [5, 3], name="xs")

    def step(t, h):
        return t + 1, sg.tanh(sg.reshape(sg.matmul(w, sg.reshape(h, [3, 1])), [3]) +
                              sg.gather(xs, t))

    _, h = sg.while_loop(lambda t, h: t < sg.shape(xs)[0], step, (0, sg.zeros([3], F)))
    loss = sg.reduce_sum(h * h)
    dw, dxs = sg.gradients(loss, [w, xs])
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    xsv = np.random.default_rng(0).normal(size=(5, 3))

    def by_hand(wv, xv):
        hv = np.zeros(3)
        for t in range(5):
            hv = np.tanh(wv @ hv + xv[t])
        return (hv * hv).sum()

    got_w, got_xs = sess.run([dw, dxs], {xs: xsv})
    w0 = np.eye(3) * 0.5 + 0.1
    np.testing.assert_allclose(got_w, numeric_grad(lambda v: by_hand(v, xsv), w0), rtol=1e-6)
    np.testing.assert_allclose(got_xs, numeric_grad(lambda v: by_hand(w0, v), xsv), rtol=1e-6,
                               atol=1e-12)


def test_no_iteration_gives_the_first_values_and_their_gradient_unchanged():
    x = sg.placeholder(F, [3], name="x")
    c = sg.placeholder(F, [3], name="c")
    y = sg.while_loop(lambda s: sg.reduce_sum(s) > 100.0, lambda s: s * c, [x])
    dx, dc = sg.gradients(sg.reduce_sum(y * y), [x, c])
    got = sg.Session().run([y, dx, dc], {x: XV, c: XV})
    np.testing.assert_array_equal(got[0], XV)
    np.testing.assert_allclose(got[1], 2 * XV)
    np.testing.assert_array_equal(got[2], [0, 0, 0])


def test_maximum_iterations_stops_the_loop_as_a_counter_would():
    x = sg.placeholder(F, [3], name="x")
    limit = sg.placeholder(sg.int32, [], name="limit")
    fixed = sg.while_loop(lambda s: sg.reduce_sum(s) < 10.0, lambda s: s * 1.5, [x],
                          maximum_iterations=2)
    fed = sg.while_loop(lambda s: sg.reduce_sum(s) < 10.0, lambda s: s * 1.5, [x],
                        maximum_iterations=limit)
    sess = sg.Session()
    np.testing.assert_allclose(sess.run(fixed, {x: XV}), XV * 2.25)
    np.testing.assert_allclose(sess.run(fed, {x: XV, limit: 3}), XV * 1.5 ** 3)
    np.testing.assert_allclose(sess.run(fed, {x: XV, limit: 100}), XV * 1.5 ** 7)  # cond first
    (dx,) = sg.gradients(sg.reduce_sum(fixed), [x])
    np.testing.assert_allclose(sess.run(dx, {x: XV}), [2.25] * 3)


def test_nested_structures_come_back_as_they_went_in():
    Pair = collections.namedtuple("Pair", "a b")
    x = sg.placeholder(F, [3], name="x")
    out = sg.while_loop(lambda st: st["n"] < 3,
                        lambda st: {"n": st["n"] + 1,
                                    "p": Pair(st["p"].a * 2.0, [st["p"].b[0] + 1.0])},
                        {"n": 0, "p": Pair(x, [x])})
    assert isinstance(out, dict) and isinstance(out["p"], Pair) and isinstance(out["p"].b, list)
    got = sg.Session().run(out, {x: XV})
    assert got["n"] == 3
    np.testing.assert_allclose(got["p"].a, XV * 8)
    np.testing.assert_allclose(got["p"].b[0], XV + 3)
    single = sg.while_loop(lambda s: sg.reduce_sum(s) < 1.0, lambda s: [s * 2.0], [x])
    same = sg.while_loop(lambda s: sg.reduce_sum(s) < 1.0, lambda s: s * 2.0, [x],
                         return_same_structure=True)
    assert isinstance(single, sg.Tensor) and isinstance(same, list) and len(same) == 1


def test_a_shape_invariant_lets_a_loop_variable_grow():
    x = sg.placeholder(F, [3], name="x")
    v = sg.while_loop(lambda v: sg.size(v) < 10, lambda v: sg.concat([v, v * 2.0], 0), [x],
                      shape_invariants=[sg.TensorShape([None])])
    assert v.shape.as_list() == [None]
    np.testing.assert_allclose(sg.Session().run(v, {x: XV}),
                               np.concatenate([XV, XV * 2, XV * 2, XV * 4]))


@pytest.mark.parametrize("build, error, message", [
    (lambda x: sg.while_loop(lambda v: sg.size(v) < 10, lambda v: sg.concat([v, v], 0), [x]),
     ValueError, r"while_loop at \S*test_while_loop.py:\d+: loop variable 0 enters the loop "
                 r"with shape \(3,\), but has shape \(6,\) after one iteration; to let its "
                 r"shape change, give while_loop a less specific shape"),
    (lambda x: sg.while_loop(lambda v: v, lambda v: v, [x]),
     TypeError, r"while_loop at \S*test_while_loop.py:\d+: cond returned float64\(3,\); it "
                r"must return a bool scalar"),
    (lambda x: sg.while_loop(lambda v: True, lambda v: sg.cast(v, sg.float32), [x]),
     TypeError, r"loop variable 0 enters the loop as float64 but the body returns float32"),
    (lambda x: sg.while_loop(lambda a, b: True, lambda a, b: a, (x, x)),
     ValueError, r"body must return the structure of loop_vars, \(a tensor, a tensor\); it "
                 r"returned a tensor"),
    (lambda x: sg.while_loop(lambda v: True, "body", [x]),
     TypeError, r"while_loop at \S*test_while_loop.py:\d+: body must be callable"),
    (lambda x: sg.while_loop(lambda v: True, lambda v: v, []),
     ValueError, r"no loop variables were given"),
    (lambda x: sg.while_loop(lambda v: True, lambda v: v, [x], parallel_iterations=0),
     ValueError, r"parallel_iterations must be a positive int, got 0"),
    (lambda x: sg.while_loop(lambda v: True, lambda v: v, [x], maximum_iterations=2.5),
     ValueError, r"maximum_iterations must be an integer scalar, got float32\(\)"),
    (lambda x: sg.while_loop(lambda v: True, lambda v: v, [x],
                             shape_invariants=[sg.TensorShape([4])]),
     ValueError, r"loop variable 0 has shape \(3,\), which its shape invariant \(4,\) does "
                 r"not allow"),
    (lambda x: sg.while_loop(lambda v: True, lambda v: v, [x], shape_invariants=[[None]]),
     ValueError, r"shape_invariants must have the structure of loop_vars"),
    (lambda x: sg.while_loop(lambda v: True, lambda v: v + sg.random_normal([3], dtype=F),
                             [x]),
     ValueError, r"body creates .*, which reads or assigns variables or draws random "
                 r"numbers; a while_loop's cond or body may not"),
])
def test_mistakes_are_refused_at_the_loop_line(build, error, message):
    x = sg.placeholder(F, [3], name="x")
    with pytest.raises(error, match=message):
        build(x)


def test_a_tensor_made_inside_the_loop_cannot_be_used_after_it():
    x = sg.placeholder(F, [3], name="x")
    inside = []

    def body(v):
        inside.append(v * 2.0)
        return inside[-1]

    sg.while_loop(lambda v: sg.reduce_sum(v) < 5.0, body, [x])
    for use in (sg.reduce_sum, lambda t: t * x):  # (the second captures x on the way)
        with pytest.raises(ValueError, match=r"^at \S*test_while_loop.py:\d+: this uses a "
                                             r"tensor made inside body of the while_loop at "
                                             r"\S*test_while_loop.py:\d+, which exists only "
                                             r"there"):
            use(inside[0])


def test_tensors_from_outside_are_read_once_and_waited_on():
    x = sg.placeholder(F, [3], name="x")
    counter = sg.Variable(0.0, name="counter")
    bump = sg.assign_add(counter, 1.0)
    with sg.control_dependencies([bump]):
        scale = sg.identity(sg.constant(2.0, F))

    y = sg.while_loop(lambda s: sg.reduce_sum(s) < 5.0, lambda s: s * scale, [x])
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    np.testing.assert_allclose(sess.run(y, {x: XV}), XV * 16)
    assert sess.run(counter) == 1.0  # the captured tensor was computed once, not per step


def test_loops_nest_in_loops_and_in_conds():
    x = sg.placeholder(F, [3], name="x")
    p = sg.placeholder(sg.bool_, [], name="p")

    def outer_body(i, s):
        inner = sg.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + x), (0, s))[1]
        return i + 1, sg.cond(p, lambda: inner, lambda: inner * 0.5)

    _, y = sg.while_loop(lambda i, s: i < 4, outer_body, (0, sg.zeros([3], F)))
    (dx,) = sg.gradients(sg.reduce_sum(y), [x])

    def by_hand(xv, pv):
        s = np.zeros(3)
        for i in range(4):
            for _ in range(i):
                s = s + xv
            s = s if pv else s * 0.5
        return s

    sess = sg.Session()
    for pv in (True, False):
        np.testing.assert_allclose(sess.run(y, {x: XV, p: pv}), by_hand(XV, pv))
        np.testing.assert_allclose(sess.run(dx, {x: XV, p: pv}),
                                   numeric_grad(lambda v, pv=pv: by_hand(v, pv).sum(), XV),
                                   rtol=1e-6)


def test_back_prop_false_stops_gradients():
    x = sg.placeholder(F, [3], name="x")
    y = sg.while_loop(lambda s: sg.reduce_sum(s) < 5.0, lambda s: s * 2.0, [x],
                      back_prop=False)
    assert sg.gradients(sg.reduce_sum(y), [x]) == [None]


def test_the_generated_code_is_a_python_while_around_functions(g):
    x = sg.placeholder(F, [3], name="x")
    y = sg.while_loop(lambda s: sg.reduce_sum(s) < 5.0, lambda s: s * 2.0, [x], name="grow")
    (dx,) = sg.gradients(sg.reduce_sum(y), [x])
    source = sg.Session().source([y, dx], {x: XV})
    assert "    grow_While = x\n    while True:\n" in source  # (no unpacking of x)
    assert "        if not grow_Less:\n            break\n" in source
    assert "        grow_While = grow_Mul\n    # WhileGrad" in source
    assert "# Mul 'grow/Mul' at test_while_loop.py:" in source
    assert "for loop_var_0, in reversed(" in source  # (the gradient's backward loop)


def test_an_exported_module_carries_the_loop(tmp_path):
    x = sg.placeholder(F, [3], name="x")
    y = sg.while_loop(lambda s: sg.reduce_sum(s) < 5.0, lambda s: s * 2.0, [x])
    (dx,) = sg.gradients(sg.reduce_sum(y * y), [x])
    path = sg.export([y, dx], [x], str(tmp_path / "grower.py"))
    spec = importlib.util.spec_from_file_location("grower", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    got_y, got_dx = module.run(XV)
    np.testing.assert_allclose(got_y, XV * 16)
    np.testing.assert_allclose(got_dx, 2 * XV * 256)


def test_every_pass_switched_off_agrees():
    x = sg.placeholder(F, [3], name="x")
    y = sg.while_loop(lambda s: sg.reduce_sum(s) < 5.0, lambda s: sg.exp(s * 0.1) + s, [x])
    (dx,) = sg.gradients(sg.reduce_sum(y), [x])
    want = None
    for name in sg.compiler.PASS_NAMES:
        options = sg.CompileOptions(disable=frozenset([name]), verify=True)
        with sg.Session(options=options) as sess:
            got = sess.run([y, dx], {x: XV})
        if want is None:
            want = got
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=name)


def test_a_graph_file_carries_a_loop_and_its_gradient(g, tmp_path):
    x = sg.placeholder(F, [3], name="x")
    y = sg.while_loop(lambda s: sg.reduce_sum(s) < 5.0, lambda s: s * 2.0, [x],
                      maximum_iterations=10)
    (dx,) = sg.gradients(sg.reduce_sum(y * y), [x])
    (hx,) = sg.gradients(sg.reduce_sum(dx), [x])  # (the loop written as a Scan of ifs)
    path = str(tmp_path / "grower.json")
    sg.train.export_meta_graph(path)
    want = sg.Session().run([y, dx, hx], {x: XV})
    with sg.Graph().as_default():
        sg.train.import_meta_graph(path)
        got = sg.Session().run([y.name, dx.name, hx.name], {"x:0": XV})
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


def test_the_dynamic_mode_runs_a_python_loop_with_the_same_checks():
    import staticgrad.dynamic as dy
    x = dy.tensor(XV, requires_grad=True)
    n, y = sg.while_loop(lambda n, s: s.sum() < 10.0, lambda n, s: (n + 1, s * 1.5),
                         (dy.tensor(0), x))
    assert int(n) == 7
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.5 ** 7] * 3)
    limited = sg.while_loop(lambda s: s.sum() < 10.0, lambda s: s * 1.5, [x],
                            maximum_iterations=2)
    np.testing.assert_allclose(limited.detach().numpy(), XV * 2.25)
    with pytest.raises(TypeError, match=r"cond returned float64"):
        sg.while_loop(lambda s: s.sum(), lambda s: s, [x])


def test_a_dim_the_graph_leaves_unknown_may_change_as_tf1_allows():
    # (TF1 takes a loop variable's static shape, (?,) here, for its shape invariant)
    p = sg.placeholder(F, [None], name="p")
    _, grown = sg.while_loop(lambda i, a: i < 3,
                             lambda i, a: (i + 1, sg.concat([a, a[:1]], 0)), [0, p])
    _, kept = sg.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0), [0, p])
    (dp,) = sg.gradients(sg.reduce_sum(kept), [p])
    sess = sg.Session()
    np.testing.assert_array_equal(sess.run(grown, {p: [1.0, 2.0, 3.0]}), [1, 2, 3, 1, 1, 1])
    np.testing.assert_array_equal(sess.run(dp, {p: [1.0, 2.0, 3.0]}), [8, 8, 8])


def test_a_tensor_only_the_condition_reads_has_no_gradient():
    x = sg.placeholder(F, [3], name="x")
    limit = sg.placeholder(F, [], name="limit")
    y = sg.while_loop(lambda s: sg.reduce_sum(s) < limit, lambda s: s * 2.0, [x])
    dx, dlimit = sg.gradients(sg.reduce_sum(y), [x, limit])
    assert dlimit is None
    np.testing.assert_array_equal(sg.Session().run(dx, {x: XV, limit: 5.0}), [16, 16, 16])


@pytest.mark.parametrize("dtype", [sg.int8, sg.uint8, sg.int16, sg.int64])
def test_maximum_iterations_of_any_integer_dtype(dtype):
    x = sg.placeholder(F, [3], name="x")
    y = sg.while_loop(lambda s: sg.reduce_sum(s) < 10.0, lambda s: s * 2.0, [x],
                      maximum_iterations=sg.constant(2, dtype=dtype))
    np.testing.assert_allclose(sg.Session().run(y, {x: XV}), XV * 4)


def test_the_dynamic_mode_keeps_python_values_dynamic_and_honours_back_prop():
    import staticgrad.dynamic as dy
    x = dy.tensor(XV, requires_grad=True)
    n, y = sg.while_loop(lambda n, s: n < 3, lambda n, s: (n + 1, s * 2.0), (0, x))
    assert isinstance(n, dy.Tensor) and int(n) == 3  # (a Python 0 is a dynamic tensor too)
    assert sg.while_loop(lambda s: False, lambda s: s, [x]) is x  # a Python bool condition
    stopped = sg.while_loop(lambda s: s.sum() < 3.0, lambda s: s * 2.0, [x], back_prop=False)
    (stopped.sum() + x.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1])
    with pytest.raises(ValueError, match=r"maximum_iterations must be an integer scalar, got "
                                         r"float32\(\)"):
        sg.while_loop(lambda s: True, lambda s: s, [x], maximum_iterations=2.5)
    assert float(sg.cond(x.sum() > 0, lambda: 1.0, lambda: 2.0)) == 1.0


def test_the_docs_loop_is_what_the_session_runs_and_generates(g):
    # docs/static-vs-dynamic.md's "Control flow, both ways", its numbers and its code
    import re
    from pathlib import Path

    import staticgrad.dynamic as dy
    doc = (Path(__file__).resolve().parents[2] / "docs" / "static-vs-dynamic.md").read_text()
    x = dy.tensor([0.5, 1.0], requires_grad=True)
    s, n = x, 0
    while s.sum() < 10:
        s, n = s * 1.5, n + 1
    s.sum().backward()
    assert n == 5 and "print(n, s, x.grad)     # 5 tensor([3.7969, 7.5938], grad_fn=<Mul" \
                      "Backward0>) tensor([7.5938, 7.5938])" in doc
    np.testing.assert_allclose(x.grad.numpy(), [7.59375, 7.59375])
    x = sg.placeholder(sg.float32, [2], name="x")
    n, s = sg.while_loop(lambda n, s: sg.reduce_sum(s) < 10, lambda n, s: (n + 1, s * 1.5),
                         (0, x), name="grow")
    (dx,) = sg.gradients(sg.reduce_sum(s), [x])
    sess = sg.Session()
    got = sess.run([n, s, dx], {x: [0.5, 1.0]})
    assert got[0] == 5 and got[1].tolist() == [3.796875, 7.59375] and \
        got[2].tolist() == [7.59375, 7.59375]
    assert sess.run(n, {x: [4.0, 4.0]}) == 1
    source = sess.source([s], {x: np.array([0.5, 1.0], np.float32)})

    def code(text):  # from `def run` on, with each comment's file:line made alike
        text = text[text.index("def run(x):"):]
        return re.sub(r" at \S+:\d+", " at FILE", text[:text.index("```")] if "```" in text
                      else text).strip()

    assert code(source) == code(doc[doc.index("def run(x):\n    # While"):])


def test_variables_made_in_a_body_live_outside_it_as_tf1_lifts_them(g):
    x = sg.placeholder(F, [3], name="x")

    def body(i, s):
        with sg.variable_scope("cell", reuse=sg.AUTO_REUSE):
            w = sg.get_variable("w", [3], F, initializer=sg.constant_initializer(0.5))
        b = sg.Variable(np.float64(0.25), name="b")
        return i + 1, s * w + b

    with sg.variable_scope("rnn"):
        _, y = sg.while_loop(lambda i, s: i < 2, body, (0, x))
    names = sorted(v.op.name for v in sg.global_variables())
    # (named as TF1 names them: get_variable by the variable scope, Variable by the name scope,
    # which the loop's "while" is part of)
    assert names == ["rnn/cell/w", "rnn/while/b"]
    assert all(v.graph is g for v in sg.global_variables())
    w = [v for v in sg.global_variables() if v.op.name == "rnn/cell/w"][0]
    (dw,) = sg.gradients(sg.reduce_sum(y), [w])
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    np.testing.assert_allclose(sess.run(y, {x: XV}), (XV * 0.5 + 0.25) * 0.5 + 0.25)
    np.testing.assert_allclose(sess.run(dw, {x: XV}), 2 * XV * 0.5 + 0.25)


def test_stop_gradient_inside_a_body_stops_only_what_it_wraps(g):
    x = sg.placeholder(F, [3], name="x")
    w = sg.placeholder(F, [3], name="w")
    y = sg.while_loop(lambda i, s: i < 3,
                      lambda i, s: (i + 1, s * sg.stop_gradient(w * s) + w), (0, x))[1]
    dx, dw = sg.gradients(sg.reduce_sum(y), [x, w])

    def loss(xv, wv, frozen):  # frozen: the stopped factor's values, as the run computes them
        s = xv
        for k in range(3):
            s = s * frozen[k] + wv
        return s.sum()

    sess = sg.Session()
    s, frozen = XV.copy(), []
    for _ in range(3):
        frozen.append((XV + 1) * s)
        s = s * frozen[-1] + (XV + 1)
    got_dx, got_dw = sess.run([dx, dw], {x: XV, w: XV + 1})
    np.testing.assert_allclose(got_dx, numeric_grad(lambda v: loss(v, XV + 1, frozen), XV),
                               rtol=1e-6)
    np.testing.assert_allclose(got_dw, numeric_grad(lambda v: loss(XV, v, frozen), XV + 1),
                               rtol=1e-6)


def test_loops_nested_past_what_python_nests_inline_still_compile(g):
    # (each loop written inline is a block of its own: CPython refuses 21 in one function;
    # deeper loops call functions of the module)
    x = sg.placeholder(F, [3], name="x")

    def nest(k, v):
        if k == 0:
            return v * 2.0
        return sg.while_loop(lambda i, a: i < 1, lambda i, a: (i + 1, nest(k - 1, a)),
                             [0, v])[1]

    y = nest(25, x)
    (dx,) = sg.gradients(sg.reduce_sum(y), [x])
    got_y, got_dx = sg.Session().run([y, dx], {x: XV})
    np.testing.assert_allclose(got_y, XV * 2)
    np.testing.assert_allclose(got_dx, [2, 2, 2])
