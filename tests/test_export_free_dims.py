"""sg.export with free dimensions: a None size in a placeholder's shape or in `feed_shapes`
stays free in the exported module, which reads it from its feeds, accepts any size there and
checks the rest (rank, known sizes, dtype, and the sizes the graph relates)."""

import numpy as np
import pytest

import staticgrad as sg
from tests.test_export import _import_exported, assert_same, run_exported

BATCHES = (1, 5, 32)


def _mlp(optimizer):
    """A two-layer classifier's training step on x: [None, 4], labels y: [None, 3]."""
    x = sg.placeholder(sg.float32, [None, 4], name="x")
    y = sg.placeholder(sg.float32, [None, 3], name="y")
    rng = np.random.default_rng(0)
    w1 = sg.Variable(rng.normal(size=(4, 8)).astype(np.float32), name="dense/w")
    b1 = sg.Variable(np.full(8, 0.1, np.float32), name="dense/b")
    w2 = sg.Variable(rng.normal(size=(8, 3)).astype(np.float32), name="out/w")
    b2 = sg.Variable(np.zeros(3, np.float32), name="out/b")
    logits = sg.matmul(sg.nn.relu(sg.matmul(x, w1) + b1), w2) + b2
    loss = sg.reduce_mean(sg.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
    right = sg.reduce_sum(sg.cast(sg.equal(sg.argmax(logits, 1), sg.argmax(y, 1)), sg.float32))
    probs = sg.nn.softmax(logits)
    grads = sg.gradients(loss, [w1, b2])
    step = optimizer.minimize(loss)
    return x, y, [loss, right, probs, grads, step], [w1, b1, w2, b2]


def _batch(n):
    rng = np.random.default_rng(n)
    return (rng.normal(size=(n, 4)).astype(np.float32),
            np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)])


@pytest.mark.parametrize("optimizer", [lambda: sg.train.GradientDescentOptimizer(0.5),
                                       lambda: sg.train.AdamOptimizer(0.05)],
                         ids=["sgd", "adam"])
def test_a_training_step_runs_at_any_batch_size_as_the_session_does(tmp_path, optimizer):
    with sg.Graph().as_default():
        x, y, fetches, variables = _mlp(optimizer())
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            sg.export(fetches, [x, y], tmp_path / "mlp.py")
            module = _import_exported(str(tmp_path / "mlp.py"))
            for n in BATCHES:
                feeds = _batch(n)
                want = sess.run(fetches, dict(zip([x, y], feeds)))
                loss, right, probs, (g_w1, g_b2), _ = want
                got = module.run(*feeds)
                for g, w in zip(got, [loss, right, probs, g_w1, g_b2, None]):
                    if w is None:
                        assert g is None  # the training op
                    else:
                        assert_same(np.asarray(g), w)
                assert probs.shape == (n, 3)
                for v in variables:  # the variables moved as the session's did
                    assert_same(module.V[v.op.name], sess.run(v))
    assert "x: x:0, float32 array of shape (?, 4)" in module.__doc__


def test_the_module_needs_only_numpy_at_any_batch_size(tmp_path):
    with sg.Graph().as_default():
        x, y, fetches, _ = _mlp(sg.train.GradientDescentOptimizer(0.5))
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            sg.export(fetches[:3], [x, y], tmp_path / "mlp.py")
            for n in (2, 9):
                feeds = _batch(n)
                want = sess.run(fetches[:3], dict(zip([x, y], feeds)))
                got = run_exported(tmp_path, "mlp", feeds)
                for i, w in enumerate(want):
                    assert_same(got[f"r0_{i}"], w)


def _exported_mlp(tmp_path):
    with sg.Graph().as_default():
        x, y, fetches, _ = _mlp(sg.train.GradientDescentOptimizer(0.5))
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            sg.export(fetches[:3], [x, y], tmp_path / "mlp.py")
    return _import_exported(str(tmp_path / "mlp.py"))


@pytest.mark.parametrize("feeds, error, message", [
    ((np.ones((5, 3)), np.ones((5, 3))), ValueError,
     r"x:0 must have shape \(\?, 4\) \(\? any size\), got shape \(5, 3\)"),
    ((np.ones((5, 4)), np.ones((5, 3, 1))), ValueError,
     r"y:0 must have shape \(\?, 3\) \(\? any size\), got shape \(5, 3, 1\)"),
    ((np.ones(4), np.ones((1, 3))), ValueError, r"x:0 must have shape \(\?, 4\)"),
    ((np.ones((5, 4), np.complex64), np.ones((5, 3))), TypeError,
     "cannot feed complex64 values for x:0 of dtype float32"),
    ((np.ones((5, 4)), np.full((5, 3), "a")), TypeError, "for y:0 of dtype float32"),
])
def test_a_feed_of_the_wrong_rank_size_or_dtype_is_refused_by_name(tmp_path, feeds, error,
                                                                   message):
    module = _exported_mlp(tmp_path)
    with pytest.raises(error, match=message):
        module.run(*feeds)


def test_free_dims_the_graph_relates_must_agree(tmp_path):
    """Labels and logits must be of one batch size (the session refuses others, even a batch
    of 1 that NumPy would broadcast): the module checks the sizes the graph relates."""
    module = _exported_mlp(tmp_path)
    assert "x:0 dimension 0 and y:0 dimension 0" in module.__doc__
    for n_x, n_y in ((5, 4), (1, 5), (5, 1)):
        with pytest.raises(ValueError, match=f"the feeds disagree: x:0 dimension 0 is {n_x}, "
                                             f"y:0 dimension 0 is {n_y}"):
            module.run(np.ones((n_x, 4)), np.ones((n_y, 3)))


def test_free_dims_the_graph_does_not_relate_are_free_of_each_other(tmp_path):
    with sg.Graph().as_default():
        a = sg.placeholder(sg.float32, [None, 2], name="a")
        b = sg.placeholder(sg.float32, [None], name="b")
        c = sg.placeholder(sg.float32, [None], name="c")
        fetches = [sg.reduce_sum(a, 1), b * c, sg.reduce_mean(b)]
        with sg.Session() as sess:
            sg.export(fetches, [a, b, c], tmp_path / "m.py")
            module = _import_exported(str(tmp_path / "m.py"))
            feeds = [np.ones((3, 2), np.float32), np.arange(4, dtype=np.float32),
                     np.full(4, 2, np.float32)]
            for g, w in zip(module.run(*feeds), sess.run(fetches, dict(zip([a, b, c], feeds)))):
                assert_same(np.asarray(g), w)
            with pytest.raises(ValueError, match="b:0 dimension 0 is 4, c:0 dimension 0 is 5"):
                module.run(feeds[0], feeds[1], np.ones(5, np.float32))
    assert "b:0 dimension 0 and c:0 dimension 0" in module.__doc__
    assert "a:0" not in module.__doc__.split("of one size each")[1]


def test_feed_shapes_may_leave_sizes_free(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, None, name="x")  # rank unknown: feed_shapes gives it
        w = sg.placeholder(sg.float32, [3, None], name="w")
        y = sg.matmul(x, w)
        with sg.Session() as sess:
            sg.export(y, [x, w], tmp_path / "m.py", feed_shapes=[(None, 3), (None, 2)])
            module = _import_exported(str(tmp_path / "m.py"))
            for n in (1, 6):
                feeds = [np.arange(3 * n, dtype=np.float32).reshape(n, 3),
                         np.ones((3, 2), np.float32)]
                assert_same(module.run(*feeds)[0], sess.run(y, dict(zip([x, w], feeds))))
            with pytest.raises(ValueError, match=r"w:0 must have shape \(3, 2\)"):
                module.run(feeds[0], np.ones((3, 5), np.float32))  # (3, None) + (None, 2)
            with pytest.raises(ValueError, match="unknown rank.*feed_shapes"):
                sg.export(y, [x, w], tmp_path / "n.py")
    assert "x: x:0, float32 array of shape (?, 3)" in module.__doc__
    assert "w: w:0, float32 array of shape (3, 2)" in module.__doc__


def test_a_size_the_code_needs_when_compiled_is_an_export_error_naming_op_and_line(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [None, 3], name="x")
        line = _line() + 1
        doubled = sg.fill(sg.shape(x), 2.0, name="twos") * x
        with sg.Session() as sess:
            with pytest.raises(sg.errors.UnimplementedError) as e:
                sg.export(doubled, [x], tmp_path / "m.py", session=sess)
            message = str(e.value)
            assert 'Fill op "twos"' in message and f"test_export_free_dims.py:{line}" in message
            assert "x:0 dimension 0 free" in message and "feed_shapes" in message
            assert e.value.op.name == "twos"
            # at a fixed size it exports
            sg.export(doubled, [x], tmp_path / "m.py", session=sess, feed_shapes=[(2, 3)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz", "m.py"]


def test_the_error_names_only_the_free_dims_the_op_is_computed_from(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [None, 3], name="x")
        z = sg.placeholder(sg.float32, [None], name="z")
        padded = sg.pad(x, [[1, 1], [0, 0]])
        line = _line() + 1
        (grad,) = sg.gradients(sg.reduce_sum(padded * padded), [x])
        with sg.Session() as sess, pytest.raises(sg.errors.UnimplementedError,
                                                 match=r"with x:0 dimension 0 free \(None\): "
                                                       r"Slice op .* created at .*"
                                                       f"test_export_free_dims.py:{line}"):
            sg.export([grad, z * 2.0], [x, z], tmp_path / "m.py", session=sess)


def _line() -> int:
    """The caller's line number."""
    import inspect
    return inspect.currentframe().f_back.f_lineno


def test_related_free_dims_must_agree_even_where_the_session_would_broadcast_a_1(tmp_path):
    """The documented price of checking related sizes: x + y at batches 1 and 5 broadcasts in
    a session; the module, which cannot tell a 1 that broadcasts from a batch gone wrong,
    asks for one size."""
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [None, 3], name="x")
        y = sg.placeholder(sg.float32, [None, 3], name="y")
        with sg.Session() as sess:
            sg.export(x + y, [x, y], tmp_path / "m.py")
            assert sess.run(x + y, {x: np.ones((1, 3)), y: np.ones((5, 3))}).shape == (5, 3)
    module = _import_exported(str(tmp_path / "m.py"))
    assert_same(module.run(np.ones((5, 3)), np.ones((5, 3)))[0], np.full((5, 3), 2, np.float32))
    with pytest.raises(ValueError, match="x:0 dimension 0 is 1, y:0 dimension 0 is 5"):
        module.run(np.ones((1, 3)), np.ones((5, 3)))


def test_a_random_draw_of_a_free_size_draws_what_the_session_draws(tmp_path):
    """Dropout draws a mask of the batch's shape: the module reads it when it runs."""
    with sg.Graph().as_default():
        sg.set_random_seed(4)
        x = sg.placeholder(sg.float32, [None, 4], name="x")
        w = sg.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), name="w")
        h = sg.nn.dropout(sg.matmul(x, w), keep_prob=0.5, seed=2)
        noise = sg.random_normal([sg.shape(x)[0], 1], seed=3)
        loss = sg.reduce_mean(sg.square(h + noise))
        step = sg.train.GradientDescentOptimizer(0.1).minimize(loss)
        with sg.Session() as sess:
            sess.run(w.initializer)
            sg.export([h, loss, step], [x], tmp_path / "m.py")  # before the session draws
            module = _import_exported(str(tmp_path / "m.py"))
            for n in BATCHES:
                feed = _batch(n)[0]
                want = sess.run([h, loss, step], {x: feed})
                got = module.run(feed)
                assert_same(got[0], want[0])
                assert_same(np.asarray(got[1]), want[1])
                assert_same(module.V["w"], sess.run(w))
    assert "rt.normal(R['random_normal/RandomStandardNormal'], tuple(" in \
        (tmp_path / "m.py").read_text()


def test_top_k_over_a_free_dimension_smaller_than_k_is_refused_as_a_session_refuses(
        tmp_path):
    # The module once sliced the k largest of a row of 1 and gave 1, where a session refuses.
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [3, None], name="x")
        top = sg.nn.top_k(x, 2).values
        with sg.Session() as sess:
            sg.export(top, [x], tmp_path / "top.py")
            module = _import_exported(str(tmp_path / "top.py"))
            feed = np.arange(6, dtype=np.float32).reshape(3, 2)
            assert_same(module.run(feed)[0], sess.run(top, {x: feed}))
            with pytest.raises(sg.errors.InvalidArgumentError, match="k .2. is more"):
                sess.run(top, {x: feed[:, :1]})
            with pytest.raises(ValueError, match=r"k \(2\) is more than the last dimension"):
                module.run(feed[:, :1])


def test_convolution_gradients_refuse_an_out_backprop_of_the_wrong_size(tmp_path):
    """A convolution's gradients exported with free sizes: an out_backprop whose size is not
    the convolution's output (which the session's shape rules catch, but the exported module
    meets only when it runs) raises, naming the op, where runtime_conv's turned-filter input
    gradient and its filter gradient's windows would take their sizes from it."""
    with sg.Graph().as_default():
        dy = sg.placeholder(sg.float32, [2, None, None, 4], name="dy")
        x = sg.placeholder(sg.float32, [2, None, None, 3], name="x")
        w = sg.constant(np.ones((3, 3, 3, 4), np.float32))
        dx = sg.nn.conv2d_backprop_input([2, 6, 6, 3], w, dy, [1, 1, 1, 1], "VALID")
        dw = sg.nn.conv2d_backprop_filter(x, [3, 3, 3, 4], dy, [1, 1, 1, 1], "VALID")
        with sg.Session() as sess:
            sg.export([dx], [dy], tmp_path / "dx.py", session=sess)
            sg.export([dw], [x, dy], tmp_path / "dw.py", session=sess)
    exported_dx = _import_exported(str(tmp_path / "dx.py"))
    exported_dw = _import_exported(str(tmp_path / "dw.py"))
    right, x_value = np.ones((2, 4, 4, 4), np.float32), np.ones((2, 6, 6, 3), np.float32)
    assert exported_dx.run(right)[0].shape == (2, 6, 6, 3)
    assert exported_dw.run(x_value, right)[0].shape == (3, 3, 3, 4)
    for wrong in (np.ones((2, 5, 5, 4), np.float32), np.ones((2, 3, 3, 4), np.float32)):
        with pytest.raises(ValueError, match=r"Conv2DBackpropInput: out_backprop has shape"):
            exported_dx.run(wrong)
        with pytest.raises(ValueError, match=r"Conv2DBackpropFilter: out_backprop has shape"):
            exported_dw.run(x_value, wrong)
