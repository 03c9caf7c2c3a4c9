"""merge_scans (staticgrad/passes/scans.py), and what it joins: the gradient of a Scan keeps
the values its backward loop reads in a second forward Scan (control_flow/scan_grad.py),
which the pass runs in place of the user's, so that the loop runs once."""

import re

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import compiler
from staticgrad.ir import walk
from staticgrad.passes.scans import merge_scans
from tests.conftest import numeric_grad
from tests.passes.helpers import program_for

F = sg.float64
RNG = np.random.default_rng(3)
XS = RNG.normal(size=(6, 3))
W0 = RNG.normal(size=(3, 3)) * 0.5


def rnn_loss(w, xs):
    hs = sg.scan(lambda h, x: sg.tanh(sg.reshape(sg.matmul(sg.reshape(h, [1, 3]), w), [3]) + x),
                 xs, initializer=sg.zeros([3], F))
    return sg.reduce_sum(hs * hs)


def by_hand(wv):
    h, total = np.zeros(3), 0.0
    for x in XS:
        h = np.tanh(h @ wv + x)
        total += (h * h).sum()
    return total


def compiled(fetches, feeds, disable=()):
    """The program a session runs: lowered, then through the pipeline."""
    return compiler.run_passes(program_for(fetches, feeds),
                               sg.CompileOptions(disable=set(disable), verify=True))


def scans(program):
    return [n for n in walk(program) if n.type == "Scan"]


@pytest.fixture(autouse=True)
def fresh_graph(g):
    return g


def test_the_forward_loop_runs_once_and_the_backward_loop_computes_no_forward_value():
    w = sg.placeholder(F, [3, 3], name="w")
    xs = sg.placeholder(F, [6, 3], name="xs")
    loss = rnn_loss(w, xs)
    (dw,) = sg.gradients(loss, [w])
    feeds = {w: W0, xs: XS}
    merged = compiled([loss, dw], feeds)
    forward, backward = [n for n in merged.nodes if n.type == "Scan"]
    assert forward.origin.name == "scan/Scan"  # (the user's loop: its name, its line)
    (body,) = backward.regions
    assert "Tanh" not in [n.type for n in walk(body)]  # kept by the forward loop, not redone
    assert len(scans(compiled([loss, dw], feeds, disable={"merge_scans"}))) == 3
    with sg.Session(options=sg.CompileOptions(verify=True)) as sess:
        got_loss, got = sess.run([loss, dw], feeds)
        assert sess.source([loss, dw], feeds).count("for step") == 2
    np.testing.assert_allclose(got_loss, by_hand(W0), rtol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(by_hand, W0), rtol=1e-6)


def test_the_gradient_alone_runs_the_keeping_loop_and_is_the_same():
    w = sg.placeholder(F, [3, 3], name="w")
    xs = sg.placeholder(F, [6, 3], name="xs")
    (dw,) = sg.gradients(rnn_loss(w, xs), [w])
    assert len(scans(compiled([dw], {w: W0, xs: XS}))) == 2
    with sg.Session() as sess:
        np.testing.assert_allclose(sess.run(dw, {w: W0, xs: XS}), numeric_grad(by_hand, W0),
                                   rtol=1e-6)


@pytest.mark.parametrize("disable", [(), ("merge_scans",), ("merge_scans", "cse")])
def test_results_do_not_depend_on_the_pass(disable):
    w = sg.Variable(W0, name="w")
    xs = sg.placeholder(F, [6, 3], name="xs")
    loss = rnn_loss(w, xs)
    (dw,) = sg.gradients(loss, [w])
    v = RNG.normal(size=(3, 3))
    (hv,) = sg.gradients(sg.reduce_sum(dw * v), [w])  # (through the kept values too)
    with sg.Session(options=sg.CompileOptions(disable=set(disable), verify=True)) as sess:
        sess.run(w.initializer)
        got = sess.run([loss, dw, hv], {xs: XS})
        grad_at = sess.make_callable(dw, [w, xs])
        want_hv = numeric_grad(lambda wv: float((grad_at(wv, XS) * v).sum()), W0)
    np.testing.assert_allclose(got[1], numeric_grad(by_hand, W0), rtol=1e-6)
    np.testing.assert_allclose(got[2], want_hv, rtol=1e-5, atol=1e-8)


def test_loops_waiting_on_other_ops_are_left_apart_and_stay_right():
    w = sg.placeholder(F, [3, 3], name="w")
    xs = sg.placeholder(F, [6, 3], name="xs")
    counter = sg.Variable(0.0, name="counter")
    loss = rnn_loss(w, xs)
    with sg.control_dependencies([sg.assign_add(counter, 1.0)]):
        (dw,) = sg.gradients(loss, [w])  # (its forward loop waits on the count; the user's not)
    with sg.Session(options=sg.CompileOptions(verify=True)) as sess:
        sess.run(counter.initializer)
        got = sess.run([loss, dw], {w: W0, xs: XS})
        assert sess.run(counter) == 1.0
    np.testing.assert_allclose(got[1], numeric_grad(by_hand, W0), rtol=1e-6)


def test_a_batch_of_unknown_size_keeps_static_shapes_in_the_backward_loop():
    x = sg.placeholder(sg.float32, [None, 5, 2], name="x")
    cell = sg.nn.rnn_cell.BasicLSTMCell(4)
    _, state = sg.nn.dynamic_rnn(cell, x, dtype=sg.float32)
    loss = sg.reduce_sum(state.h * state.h)
    kernel, bias = cell.variables
    grads = sg.gradients(loss, [kernel, bias])
    xv = RNG.normal(size=(3, 5, 2)).astype(np.float32)
    with sg.Session(options=sg.CompileOptions(verify=True)) as sess:
        sess.run(sg.global_variables_initializer())
        k0, b0 = sess.run([kernel, bias])
        got = sess.run(grads, {x: xv})
        loss_at = sess.make_callable(loss, [kernel, bias, x])
        want_k = numeric_grad(lambda k: float(loss_at(k.astype(np.float32), b0, xv)), k0,
                              eps=1e-2)
    np.testing.assert_allclose(got[0], want_k, rtol=2e-2, atol=2e-3)


def _stacks_never_read(source: str) -> list[str]:
    """The arrays or lists that run() allocates for a loop and fills, but nothing reads."""
    run = source[source.index("def run"):source.index("\ndef ", source.index("def run") + 1)]
    made = re.findall(r"(\w+) = (?:np\.empty|\[None\])", run)
    return [n for n in made if len(re.findall(rf"\b{n}\b", run)) < 3]


def test_second_derivatives_and_second_gradients_run_the_forward_loop_once():
    w = sg.placeholder(F, [3, 3], name="w")
    xs = sg.placeholder(F, [6, 3], name="xs")
    loss = rnn_loss(w, xs)
    (dw,) = sg.gradients(loss, [w])
    (again,) = sg.gradients(loss * 2.0, [w])  # (reads what the first one's loop keeps)
    (hv,) = sg.gradients(sg.reduce_sum(dw * dw), [w])
    feeds = {w: W0, xs: XS}
    program = compiled([loss, dw, again, hv], feeds)
    forward = [n for n in program.nodes if n.type == "Scan" and "grad" not in n.origin.name]
    assert [n.origin.name for n in forward] == ["scan/Scan"]
    with sg.Session(options=sg.CompileOptions(verify=True)) as sess:
        assert _stacks_never_read(sess.source([loss, dw, again, hv], feeds)) == []
        got = sess.run([dw, again, hv], feeds)
        grad_at = sess.make_callable(dw, [w, xs])
        want_hv = numeric_grad(lambda wv: float((grad_at(wv, XS) ** 2).sum()), W0)
    np.testing.assert_allclose(got[1], 2 * got[0], rtol=1e-12)
    np.testing.assert_allclose(got[2], want_hv, rtol=1e-5, atol=1e-8)


def test_shapes_the_gradient_knows_once_compiled_are_not_kept_for_it():
    x = sg.placeholder(sg.float32, [None, 5, 2], name="x")
    cell = sg.nn.rnn_cell.BasicLSTMCell(4)
    _, state = sg.nn.dynamic_rnn(cell, x, dtype=sg.float32)
    grads = sg.gradients(sg.reduce_sum(state.h), cell.variables)
    source = sg.Session().source(grads, {x: np.zeros((3, 5, 2), np.float32)})
    assert "int32" not in source and _stacks_never_read(source) == []
    assert "kept_Sigmoid" in source  # (the gradient's rows named after what they keep)


def test_a_program_without_scans_is_returned_as_it_is():
    x = sg.placeholder(F, [3], name="x")
    program = program_for([sg.exp(x) * 2.0], {x: np.ones(3)})
    assert merge_scans(program) is program
