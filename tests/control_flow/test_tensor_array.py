"""sg.TensorArray (staticgrad/control_flow/tensor_array.py): written in a while_loop one
element an iteration, read, stacked, gathered, unstacked, scattered; its gradients against
finite differences, and the run-time errors TF1 gives for indices out of range."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from tests.conftest import numeric_grad

F = sg.float64
XV = np.arange(12.0).reshape(4, 3) / 7.0
RNG = np.random.default_rng(5)


def _squares(x, dynamic=False):
    ta = sg.TensorArray(F, size=0 if dynamic else 4, dynamic_size=dynamic, element_shape=[3])
    _, ta = sg.while_loop(lambda i, t: i < 4,
                          lambda i, t: (i + 1, t.write(i, sg.sin(sg.gather(x, i)) ** 2)),
                          (0, ta))
    return ta


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_loop_writes_one_element_an_iteration(g, dynamic):
    x = sg.placeholder(F, [4, 3], name="x")
    ta = _squares(x, dynamic)
    sess = sg.Session()
    got = sess.run([ta.stack(), ta.read(2), ta.gather([3, 0]), ta.size(), ta.concat()],
                   {x: XV})
    want = np.sin(XV) ** 2
    np.testing.assert_allclose(got[0], want)
    np.testing.assert_allclose(got[1], want[2])
    np.testing.assert_allclose(got[2], want[[3, 0]])
    assert got[3] == 4
    np.testing.assert_allclose(got[4], want.reshape(-1))


def test_gradients_flow_through_writes_and_reads(g):
    x = sg.placeholder(F, [4, 3], name="x")
    ta = _squares(x)
    loss = sg.reduce_sum(ta.stack() * ta.read(1))
    (dx,) = sg.gradients(loss, [x])

    def by_hand(v):
        s = np.sin(v) ** 2
        return (s * s[1]).sum()

    np.testing.assert_allclose(sg.Session().run(dx, {x: XV}), numeric_grad(by_hand, XV),
                               rtol=1e-6)


def test_unstack_scatter_and_split_fill_an_array(g):
    x = sg.placeholder(F, [4, 3], name="x")
    ta = sg.TensorArray(F, size=4).unstack(x)
    scattered = sg.TensorArray(F, size=4, element_shape=[3]).scatter([2, 0], x[:2])
    split = sg.TensorArray(F, size=2).split(x, [2, 2])
    sess = sg.Session()
    got = sess.run([ta.read(3), scattered.stack(), split.read(1)], {x: XV})
    np.testing.assert_allclose(got[0], XV[3])
    np.testing.assert_allclose(got[1], [XV[1], np.zeros(3), XV[0], np.zeros(3)])
    np.testing.assert_allclose(got[2], XV[2:])


@pytest.mark.parametrize("use, message", [
    (lambda ta, i: ta.read(i), r"GatherV2 op .* created at \S*test_tensor_array.py:\d+ "
                               r"failed at run time: IndexError: indices\[\] = {i} is not in "
                               r"\[0, 4\)"),
    (lambda ta, i: ta.write(i, [1.0, 2, 3]).stack(),
     r"TensorArrayWrite op .* created at \S*test_tensor_array.py:\d+ failed at run time: "
     r"IndexError: TensorArray write: index {i} is not in \[0, 4\)"),
    (lambda ta, i: sg.TensorArray(F, size=0, dynamic_size=True).write(i, [1.0, 2, 3]).stack(),
     r"TensorArrayWrite op .* created at \S*test_tensor_array.py:\d+ failed at run time: "
     r"IndexError: TensorArray write: index {i} is negative")])
def test_an_index_out_of_range_is_an_error_naming_the_line(g, use, message):
    x = sg.placeholder(F, [4, 3], name="x")
    i = sg.placeholder(sg.int32, [], name="i")
    out = use(_squares(x), i)
    sess = sg.Session()
    sess.run(out, {x: XV, i: 3})
    bad = -1 if "negative" in message else 7
    with pytest.raises(sg.errors.InvalidArgumentError, match=message.format(i=bad)):
        sess.run(out, {x: XV, i: bad})


def test_a_loop_learns_the_element_shape_from_its_bodys_write_as_tf1_does(g):
    x = sg.placeholder(F, [4, 3], name="x")
    ta = sg.TensorArray(F, size=4)  # (no element_shape, as TF1 programs write it)
    _, out = sg.while_loop(lambda i, t: i < 4, lambda i, t: (i + 1, t.write(i, x[i] * 2.0)),
                           (0, ta))
    assert out.stack().shape.as_list() == [4, 3] and out.element_shape.as_list() == [3]
    assert ta.waiting  # (the array given stays as it was: another loop may take it)
    grows = sg.TensorArray(F, size=0, dynamic_size=True)
    _, grown = sg.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t.write(i, x[i] ** 2)),
                             (0, grows))
    assert grown.stack().shape.as_list() == [None, 3]
    (dx,) = sg.gradients(sg.reduce_sum(grown.stack()), [x])
    got = sg.Session().run([out.stack(), grown.stack(), dx], {x: XV})
    np.testing.assert_allclose(got[0], XV * 2.0)
    np.testing.assert_allclose(got[1], XV[:3] ** 2)
    np.testing.assert_allclose(got[2], np.vstack([2 * XV[:3], np.zeros((1, 3))]))
    with pytest.raises(ValueError, match=r"while_loop at \S*test_tensor_array.py:\d+: <sg "
                                         r"TensorArray float64 elements <unknown>> enters the "
                                         r"loop with no element shape, and the body does not "
                                         r"write an element of a known shape"):
        sg.while_loop(lambda i, t: i < 4, lambda i, t: (i + 1, t), (0, sg.TensorArray(F, 4)))
    first = sg.TensorArray(F, size=4).write(0, sg.gather(x, 0))  # a first write says it
    assert first.element_shape.as_list() == [3]


def test_waiting_arrays_beside_growing_ones_nested_and_taken_twice(g):
    x = sg.placeholder(F, [3, 2], name="x")
    fixed, grows = sg.TensorArray(F, size=3), sg.TensorArray(F, 0, dynamic_size=True)

    def inner(j, acc):
        _, t = sg.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t.write(i, x[i])),
                             (0, fixed))
        return j + 1, acc + t.stack()
    _, twice = sg.while_loop(lambda j, a: j < 2, inner, (0, sg.zeros_like(x)))
    _, a, b = sg.while_loop(lambda i, a, b: i < 3,
                            lambda i, a, b: (i + 1, a.write(i, x[i] * 3.0), b.write(i, x[i])),
                            (0, fixed, grows))
    got = sg.Session().run([twice, a.stack(), b.stack()], {x: XV[:3, :2]})
    np.testing.assert_allclose(got[0], 2 * XV[:3, :2])
    np.testing.assert_allclose(got[1], 3 * XV[:3, :2])
    np.testing.assert_allclose(got[2], XV[:3, :2])


def test_second_derivatives_through_writes_in_a_counted_loop(g):
    x = sg.placeholder(F, [None, 3], name="x")
    n = sg.shape(x)[0]
    ta = sg.TensorArray(F, size=n, element_shape=[3])
    _, ta = sg.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t.write(i, x[i] ** 3)),
                          (0, ta), maximum_iterations=2)
    (dx,) = sg.gradients(sg.reduce_sum(ta.stack() ** 2), [x])
    (ddx,) = sg.gradients(sg.reduce_sum(dx), [x])
    np.testing.assert_allclose(sg.Session().run(ddx, {x: XV[:2]}), 30 * XV[:2] ** 4)


def test_a_waiting_array_in_the_dynamic_mode_says_what_it_needs():
    import staticgrad.dynamic as dy
    with dy.eager_mode(), pytest.raises(ValueError, match=r"its element shape is not known "
                                                          r"yet; give element_shape"):
        sg.while_loop(lambda i, t: i < 2, lambda i, t: (i + 1, t.write(i, 1.0)),
                      (0, sg.TensorArray(F, size=2)))


def test_a_relaxed_loop_variable_is_compiled_at_its_fed_shape_while_the_body_keeps_it(g):
    x = sg.placeholder(F, [3], name="x")
    free = (sg.TensorShape([]), sg.TensorShape(None))
    _, kept = sg.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), (0, x),
                            shape_invariants=free)
    _, grown = sg.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, sg.concat([v, v], 0)),
                             (0, x), shape_invariants=free)
    sess = sg.Session()
    np.testing.assert_allclose(sess.run(kept, {x: XV[0]}), XV[0] * 8)
    with pytest.raises(sg.errors.UnimplementedError, match=r"loop variable 1 changes shape "
                                                           r"from one iteration to the next, "
                                                           r"and its shape invariant does not "
                                                           r"say its rank"):
        sess.run(grown, {x: XV[0]})
    # a shape only partly known when fed ((?, 3): rows picked by a mask) that the body
    # changes to (?, ?) is specialized by the invariant, not by the entry's (?, 3)
    mask = sg.placeholder(sg.bool, [4], name="mask")
    picked = sg.gather(sg.ones([4, 3], F), sg.where(mask)[:, 0])
    _, cut = sg.while_loop(
        lambda i, v: i < 2, lambda i, v: (i + 1, sg.gather(v, sg.range(1, sg.shape(v)[1]),
                                                           axis=1)),
        (0, picked), shape_invariants=(sg.TensorShape([]), sg.TensorShape([None, None])))
    got = sess.run(sg.shape(cut + sg.zeros([1, 3], F)), {mask: [True, False, True, True]})
    assert got.tolist() == [3, 3]
    # a loop variable that grows, differentiated (the first specialization fails inside)
    _, y = sg.while_loop(lambda i, v: i < 2,
                         lambda i, v: (i + 1, sg.gather(v, sg.range(sg.shape(v)[0] + 1) %
                                                        sg.shape(v)[0]) * x[0]),
                         (0, x), shape_invariants=(sg.TensorShape([]), sg.TensorShape([None])))
    (dx,) = sg.gradients(sg.reduce_sum(y), [x])
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(sess.run(dx, {x: v}), [19.0, 1.0, 1.0])


def test_what_a_growing_array_gives_reshapes_and_differentiates_outside_the_loop(g):
    # (its first dim is known only when the run runs: Reshape with a -1 and the gradient's
    # BroadcastTo take their shapes then; they used to write `tuple(None)` or refuse)
    x = sg.placeholder(F, [4, 3], name="x")
    w = sg.placeholder(F, [3], name="w")
    stacked = _squares(x, dynamic=True).stack()
    assert stacked.shape.as_list() == [None, 3]
    column = sg.reshape(stacked, [-1, 1])
    (dw,) = sg.gradients(sg.reduce_sum(stacked * w), [w])
    got_column, got_dw = sg.Session().run([column, dw], {x: XV, w: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(got_column, (np.sin(XV) ** 2).reshape(-1, 1))
    np.testing.assert_allclose(got_dw, (np.sin(XV) ** 2).sum(axis=0))


def test_the_gradient_of_a_growing_array_written_in_a_loop_of_data_dependent_length(g):
    x = sg.placeholder(F, [None, 3], name="x")
    ta = sg.TensorArray(F, size=0, dynamic_size=True, element_shape=[3])
    _, ta = sg.while_loop(lambda i, ta: i < sg.shape(x)[0],
                          lambda i, ta: (i + 1, ta.write(i, sg.sin(sg.gather(x, i)) * 2.0)),
                          (0, ta))
    loss = sg.reduce_sum(ta.stack() ** 2)
    (dx,) = sg.gradients(loss, [x])
    sess = sg.Session()
    for rows in (4, 1, 6):  # (one compiled plan a feed shape; the loop's length is data)
        xv = RNG.normal(size=(rows, 3))
        got_loss, got = sess.run([loss, dx], {x: xv})
        np.testing.assert_allclose(got_loss, (4 * np.sin(xv) ** 2).sum(), rtol=1e-12)
        np.testing.assert_allclose(got, 8 * np.sin(xv) * np.cos(xv), rtol=1e-12)


def test_the_modules_example_runs_as_written(g):
    x = sg.placeholder(sg.float32, [5, 3], name="x")
    n = 5
    ta = sg.TensorArray(sg.float32, size=n)
    _, ta = sg.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, x[i] * 2.0)),
                          (0, ta))
    doubled = ta.stack()
    xv = np.arange(15, dtype=np.float32).reshape(5, 3)
    np.testing.assert_array_equal(sg.Session().run(doubled, {x: xv}), xv * 2)
