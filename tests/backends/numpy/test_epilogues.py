"""A layer's epilogue in one pass (backends/numpy/epilogues.py): the bias add with its ReLU,
and the ReLU's gradient with the bias gradient, against hand NumPy and against the same plan
without the pass."""

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.backends.numpy import conv_fast
from staticgrad.backends.numpy.epilogues import fuse_epilogues
from staticgrad.verify import verify
from tests.passes.helpers import program_for, types

needs_loops = pytest.mark.skipif(not conv_fast.available(),
                                 reason=f"conv_fast's loops unavailable: {conv_fast.why_not()}")
pytestmark = pytest.mark.usefixtures("loops_at_every_size")  # (conftest.py)

OFF = sg.CompileOptions(disable={"epilogues"}, verify=True)
ON = sg.CompileOptions(verify=True)


def _both_ways(monkeypatch, loops: bool):
    """conv_fast as it is, or with its loops switched off (NumPy's steps inside rt's)."""
    if not loops:
        monkeypatch.setattr(conv_fast, "_state", {"why": "switched off by the test"})


def _hand_bias_relu(x, b):
    return np.maximum(x + b, 0)


def _hand_relu_grad_bias_sum(dy, f):
    with np.errstate(invalid="ignore"):  # (inf * 0, as ReluGrad's NumPy form)
        g = dy * (f > 0)
    return g, g.reshape(-1, g.shape[-1]).sum(axis=0, dtype=np.float64)


def _awkward(shape, dtype, seed=0):
    """Normal values with a NaN, infinities, and zeros of both signs among them."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30]
    return a


@pytest.mark.parametrize("loops", [pytest.param(True, marks=needs_loops), False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_relu_against_hand_numpy(monkeypatch, loops, dtype):
    _both_ways(monkeypatch, loops)
    x, b = _awkward((3, 5, 7, 6), dtype), _awkward((6,), dtype, seed=1)
    b[:4] = [0.5, -0.0, 0.0, -2.0]  # (the -0.0 + -0.0 sums to -0: maximum makes it +0)
    x.reshape(-1)[6] = -0.0
    want = _hand_bias_relu(x, b)
    got = conv_fast.bias_relu(x, b)
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got).any()  # maximum's zeros are +0
    into = x.copy()
    assert conv_fast.bias_relu(into, b, out=into) is into  # in place, as the memory plan asks
    np.testing.assert_array_equal(into, want)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # (inf * 0, in NumPy)
@pytest.mark.parametrize("loops", [pytest.param(True, marks=needs_loops), False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("into", [None, "dy", "f"])
def test_relu_grad_bias_sum_against_hand_numpy(monkeypatch, loops, dtype, into):
    _both_ways(monkeypatch, loops)
    dy, f = _awkward((4, 3, 5, 6), dtype), _awkward((4, 3, 5, 6), dtype, seed=2)
    dy.reshape(-1)[:6] = [1.5, -2.0, np.nan, np.inf, -0.0, 3.0]  # the NaN and inf kept...
    f.reshape(-1)[:6] = [1.0, 0.0, 2.0, -1.0, -0.0, np.nan]      # ...or masked to 0 * inf
    want_g, _ = _hand_relu_grad_bias_sum(dy, f)
    want_db = np.sum(want_g, axis=(0, 1, 2))  # NumPy's order, which the kernel keeps
    dy_copy, f_copy = dy.copy(), f.copy()
    out = {None: None, "dy": dy_copy, "f": f_copy}[into]
    g, db = conv_fast.relu_grad_bias_sum(dy_copy, f_copy, out=out)
    if out is not None:
        assert g is out
    np.testing.assert_array_equal(g, want_g)
    np.testing.assert_array_equal(db, want_db)
    assert db.dtype == dtype and db.shape == (6,)
    finite = np.isfinite(want_g).all(axis=(0, 1, 2))  # columns holding no NaN or inf
    np.testing.assert_allclose(db[finite],
                               _hand_relu_grad_bias_sum(dy, f)[1][finite], rtol=1e-5)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # (inf * 0, in NumPy)
@needs_loops
@pytest.mark.parametrize("into", [None, "dy", "f"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [6, 17, 64])
def test_split_between_threads_the_results_are_the_same_bit_for_bit(monkeypatch, dtype,
                                                                     channels, into):
    # every call large enough to split: the ReLU's rows in three parts; the gradient and its
    # sum on one thread whatever the size (each channel's rows summed in order)
    monkeypatch.setattr(conv_fast, "EPILOGUE_MIN_SPLIT", 0)
    monkeypatch.setattr(conv_fast, "MIN_SPLIT", 0)
    monkeypatch.setitem(conv_fast._state, "threads", 3)
    kernels, calls = conv_fast._load(), {"rows": [], "sums": 0}
    real_relu, real_grad = kernels.bias_relu, kernels.relu_grad_bias_sum
    monkeypatch.setattr(kernels, "bias_relu",
                        lambda x, b, y: calls["rows"].append(len(x)) or real_relu(x, b, y))

    def counted(*args):
        calls["sums"] += 1
        return real_grad(*args)

    monkeypatch.setattr(kernels, "relu_grad_bias_sum", counted)
    x, b = _awkward((5, 7, 3, channels), dtype), _awkward((channels,), dtype, seed=1)
    want = _hand_bias_relu(x, b)
    assert conv_fast.bias_relu(x, b).tobytes() == want.tobytes()
    assert calls["rows"] == [35, 35, 35]
    dy, f = _awkward((5, 7, 3, channels), dtype, seed=2), _awkward((5, 7, 3, channels), dtype,
                                                                     seed=3)
    want_g, _ = _hand_relu_grad_bias_sum(dy, f)
    want_db = np.sum(want_g, axis=(0, 1, 2))
    out = {None: None, "dy": dy, "f": f}[into]  # (the memory plan's in-place forms)
    g, db = conv_fast.relu_grad_bias_sum(dy, f, out=out)
    assert g.tobytes() == want_g.tobytes() and db.tobytes() == want_db.tobytes()
    assert calls["sums"] == 1


def _conv_net(batch=4, hw=16, channels=16):
    """A conv -> bias -> relu -> pool -> dense training step on variables: (graph, feed,
    its tensors). The activations are batch x hw x hw x channels: 16,384 by default, under
    the fusion threshold (65,536); 131,072 at batch 8 of 32 x 32."""
    g = sg.Graph()
    with g.as_default():
        rng = np.random.default_rng(0)
        x = sg.placeholder(sg.float32, [batch, hw, hw, 3], name="x")
        w = sg.Variable(rng.normal(0, 0.3, (3, 3, 3, channels)).astype(np.float32), name="w")
        b = sg.Variable(rng.normal(0, 0.3, channels).astype(np.float32), name="b")
        pre = sg.nn.bias_add(sg.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), b)
        act = sg.nn.relu(pre)
        pooled = sg.nn.max_pool(act, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        v = sg.Variable(rng.normal(0, 0.1, ((hw // 2) ** 2 * channels, 3)).astype(np.float32))
        loss = sg.reduce_mean(sg.square(sg.matmul(sg.reshape(pooled, [batch, -1]), v)))
        train = sg.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = sg.global_variables_initializer()
    feed = {x: rng.standard_normal((batch, hw, hw, 3)).astype(np.float32)}
    return g, feed, dict(loss=loss, train=train, init=init, pre=pre, act=act, w=w, b=b)


def _steps(g, feed, t, options, fetch_pre=False, n=3):
    with g.as_default(), sg.Session(graph=g, options=options) as sess:
        sess.run(t["init"])
        fetches = [t["loss"], t["train"]] + ([t["pre"]] if fetch_pre else [])
        out = [sess.run(fetches, feed) for _ in range(n)]
        return out, sess.run([t["w"], t["b"]]), sess.source(fetches, feed)


@pytest.mark.parametrize("loops", [pytest.param(True, marks=needs_loops), False])
def test_a_training_step_is_the_same_with_and_without_the_pass(monkeypatch, loops):
    _both_ways(monkeypatch, loops)
    g, feed, t = _conv_net(batch=8, hw=32, channels=16)  # 131,072 activations: large
    on, on_vars, source = _steps(g, feed, t, ON)
    off, off_vars, off_source = _steps(g, feed, t, OFF)
    assert [o[0] for o in on] == [o[0] for o in off]  # the same losses, bit for bit
    for a, b in zip(on_vars, off_vars):
        np.testing.assert_array_equal(a, b)
    lines = source.splitlines()
    fwd = next(i for i, line in enumerate(lines) if "rt.bias_relu(" in line)
    assert "out=Conv2D)" in lines[fwd]  # into the convolution's dying buffer
    assert lines[fwd - 2].strip().startswith("# Add 'BiasAdd' at test_epilogues.py:")
    assert lines[fwd - 1].strip().startswith("# Relu 'Relu' at test_epilogues.py:")
    bwd = next(i for i, line in enumerate(lines) if "rt.relu_grad_bias_sum(" in line)
    assert lines[bwd].strip().startswith(
        "gradients_Relu_grad_ReluGrad, gradients_BiasAdd_grad_SumTo = ")
    assert "# ReluGrad 'gradients/Relu_grad/ReluGrad'" in lines[bwd - 2]
    assert "# SumTo 'gradients/BiasAdd_grad/SumTo'" in lines[bwd - 1]
    assert "rt.bias_relu" not in off_source and "np.greater" in off_source


def test_left_as_it_is_where_the_bias_add_is_read_elsewhere():
    g, feed, t = _conv_net(batch=8, hw=32, channels=16)
    (on, _, source), (off, _, _) = (_steps(g, feed, t, o, fetch_pre=True) for o in (ON, OFF))
    assert "rt.bias_relu" not in source  # the pre-activation is fetched: it stays a node
    assert "rt.relu_grad_bias_sum" in source  # (the gradient's pair does not depend on it)
    np.testing.assert_array_equal(on[-1][2], off[-1][2])


def test_small_values_and_the_numpy_only_path_keep_numpy_steps():
    g, feed, t = _conv_net()  # 4 x 16 x 16 x 16: under the fusion threshold
    assert "rt.bias_relu" not in _steps(g, feed, t, ON, n=1)[2]
    g, feed, t = _conv_net(batch=8, hw=32, channels=16)
    numpy_only = sg.CompileOptions(vector_math=False)
    source = _steps(g, feed, t, numpy_only, n=1)[2]  # (as an export: rt's own kernels only)
    assert "rt.bias_relu" not in source and "relu_grad_bias_sum" not in source


def test_a_node_between_the_add_and_the_relu_keeps_them_apart():
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [64, 32, 32], name="x")
        b = sg.placeholder(sg.float32, [32], name="b")
        pre = x + b
        other = sg.exp(x)  # made between them: the Add is not just before the Relu
        y = sg.reduce_sum(sg.nn.relu(pre)) + sg.reduce_sum(other)
        rng = np.random.default_rng(3)
        feed = {x: rng.standard_normal((64, 32, 32)).astype(np.float32),
                b: rng.standard_normal(32).astype(np.float32)}
        with sg.Session(options=ON) as sess:
            assert "rt.bias_relu" not in sess.source(y, feed)
            np.testing.assert_allclose(
                sess.run(y, feed),
                np.maximum(feed[x] + feed[b], 0).sum() + np.exp(feed[x]).sum(), rtol=1e-5)


@pytest.mark.parametrize("loops", [pytest.param(True, marks=needs_loops), False])
def test_a_last_axis_of_one_sums_as_numpy_does(monkeypatch, loops):
    _both_ways(monkeypatch, loops)  # (np.sum adds a column of [N, 1] pairwise, not in order)
    rng = np.random.default_rng(5)
    dy, f = rng.standard_normal((2, 65536, 1)).astype(np.float32)
    g, db = conv_fast.relu_grad_bias_sum(dy, f)
    want = np.multiply(dy, np.greater(f, 0))
    np.testing.assert_array_equal(g, want)
    assert db.tobytes() == np.sum(want, axis=(0,)).tobytes()


@pytest.mark.parametrize("loops", [pytest.param(True, marks=needs_loops), False])
def test_a_transposed_input_keeps_numpys_layout_and_sum(monkeypatch, loops):
    _both_ways(monkeypatch, loops)  # (a later reduction's order follows the layout)
    rng = np.random.default_rng(6)
    x, dy, f = (a.T for a in rng.standard_normal((3, 512, 256)).astype(np.float32))
    b = rng.standard_normal(512).astype(np.float32)
    got, want = conv_fast.bias_relu(x, b), np.maximum(x + b, 0)
    np.testing.assert_array_equal(got, want)
    assert got.strides == want.strides
    g, db = conv_fast.relu_grad_bias_sum(dy, f)
    want = np.multiply(dy, np.greater(f, 0))
    assert g.strides == want.strides
    assert db.tobytes() == np.sum(want, axis=(0,)).tobytes()


def test_a_transposed_layer_is_the_same_with_and_without_the_pass():
    rng = np.random.default_rng(7)
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [512, 256], name="x")
        b = sg.Variable(rng.standard_normal(512).astype(np.float32), name="b")
        y = sg.nn.relu(sg.transpose(x) + b)
        w = sg.constant(rng.standard_normal((512, 256)).astype(np.float32))
        loss = sg.reduce_sum(sg.transpose(y) * w)
        fetches = [sg.reduce_sum(y, axis=1), sg.gradients(loss, [b])[0]]
        init = sg.global_variables_initializer()
    feed = {x: rng.standard_normal((512, 256)).astype(np.float32)}
    results = []
    for off in ({"fuse"}, {"fuse", "epilogues"}):  # (fuse's own blocks lay out as C arrays)
        with g.as_default(), sg.Session(options=sg.CompileOptions(disable=off)) as sess:
            sess.run(init)
            results.append(sess.run(fetches, feed))
            assert ("rt.bias_relu" in sess.source(fetches, feed)) == ("epilogues" not in off)
    for on, off in zip(*results):
        assert on.tobytes() == off.tobytes()


def _two_layers(x, w1, b1, w2, b2):
    h = sg.nn.relu(sg.matmul(x, w1) + b1)
    return sg.nn.relu(sg.matmul(h, w2) + b2)


def _layer_vars(rng):
    return [sg.Variable(rng.normal(0, 0.2, s).astype(np.float32))
            for s in [(64, 256), (256,), (256, 256), (256,)]]


def _sources_on_and_off(g, init, fetches, feed):
    """The plan's source with the pass on and off, once every fetch has been found the same
    byte for byte both ways."""
    results, sources = [], []
    for options in (ON, OFF):
        with sg.Session(graph=g, options=options) as sess:
            sess.run(init)
            results.append(sess.run(fetches, feed))
            sources.append(sess.source(fetches, feed))
    for a, b in zip(*results):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    return sources


def _two_layers_in_a_cond():
    """Two dense layers with bias and ReLU inside a cond's branch (a region, whose program
    is not owned: a node there is copied with values of its own when an earlier one is
    replaced), their loss differentiated through the cond: (graph, init, fetches, feed)."""
    g = sg.Graph()
    with g.as_default():
        rng = np.random.default_rng(3)
        x = sg.placeholder(sg.float32, [512, 64], name="x")
        p = sg.placeholder(sg.bool, [], name="p")
        params = _layer_vars(rng)
        y = sg.cond(p, lambda: _two_layers(x, *params), lambda: sg.matmul(x, params[0]))
        loss = sg.reduce_sum(sg.square(y))
        fetches = [loss, *sg.gradients(loss, params)]
        init = sg.global_variables_initializer()
    feed = {x: rng.standard_normal((512, 64)).astype(np.float32), p: True}
    return g, init, fetches, feed


@pytest.mark.parametrize("loops", [pytest.param(True, marks=needs_loops), False])
def test_in_a_conds_branches_every_layer_is_fused_and_the_same(monkeypatch, loops):
    _both_ways(monkeypatch, loops)
    on, off = _sources_on_and_off(*_two_layers_in_a_cond())
    assert on.count("= rt.bias_relu(") == 4  # both layers, in the branch and its gradient's
    assert on.count("= rt.relu_grad_bias_sum(") == 2
    assert "rt.bias_relu" not in off and "rt.relu_grad_bias_sum" not in off


def test_a_program_not_owned_has_every_layer_fused():
    # (what a region's program is: a node copied when one before it is replaced gets values
    # of its own, which the pass must still know)
    with sg.Graph().as_default():
        rng = np.random.default_rng(4)
        x = sg.placeholder(sg.float32, [512, 64], name="x")
        params = _layer_vars(rng)
        loss = sg.reduce_sum(sg.square(_two_layers(x, *params)))
        grads = sg.gradients(loss, params)
        program = program_for([loss, *grads], {x: np.zeros((512, 64), np.float32)})
    assert not program.owned
    fused = fuse_epilogues(program)
    verify(fused, "epilogues")
    assert types(fused).count("BiasRelu") == 2 and types(fused).count("ReluGradBiasSum") == 2


def test_an_op_that_made_two_nodes_is_left_alone():
    # two Adds of one graph op (no pass makes such a pair today): taking the op's Add into
    # the Relu would drop the other one too, whose reader would then read nothing
    with sg.Graph().as_default():
        rng = np.random.default_rng(5)
        x = sg.placeholder(sg.float32, [512, 256], name="x")
        b, b2 = (sg.constant(rng.standard_normal(256).astype(np.float32)) for _ in range(2))
        y = sg.reduce_sum(sg.nn.relu(x + b)) + sg.reduce_sum(x + b2)
        program = program_for([y], {x: np.zeros((512, 256), np.float32)})
    adds = [n for n in program.nodes if n.type == "Add" and n.outputs[0].shape.ndims == 2]
    assert len(adds) == 2
    adds[1].origin = adds[0].origin
    fused = fuse_epilogues(program)
    verify(fused, "epilogues")
    assert "BiasRelu" not in types(fused)


def test_a_bias_add_read_elsewhere_in_a_branch_stays():
    g = sg.Graph()
    with g.as_default():
        rng = np.random.default_rng(6)
        x = sg.placeholder(sg.float32, [512, 256], name="x")
        b = sg.Variable(rng.standard_normal(256).astype(np.float32))

        def branch():  # the bias add read by its ReLU and by a square
            pre = x * 2.0 + b
            return sg.reduce_sum(sg.nn.relu(pre)) + sg.reduce_sum(pre * pre)

        y = sg.cond(sg.constant(True), branch, lambda: sg.reduce_sum(x))
        init = sg.global_variables_initializer()
    feed = {x: rng.standard_normal((512, 256)).astype(np.float32)}
    on, _ = _sources_on_and_off(g, init, [y], feed)
    assert "rt.bias_relu" not in on


def test_in_a_while_loops_body_the_layers_and_their_gradients_are_fused():
    g = sg.Graph()
    with g.as_default():
        rng = np.random.default_rng(7)
        x = sg.placeholder(sg.float32, [512, 64], name="x")
        params = _layer_vars(rng)
        w_in = sg.Variable(rng.normal(0, 0.2, (256, 64)).astype(np.float32))

        def body(i, h):
            return i + 1, sg.matmul(_two_layers(h, *params), w_in) * 0.5

        _, out = sg.while_loop(lambda i, h: i < 2, body, [sg.constant(0), x])
        loss = sg.reduce_sum(sg.square(out))
        fetches = [loss, *sg.gradients(loss, params)]
        init = sg.global_variables_initializer()
    feed = {x: rng.standard_normal((512, 64)).astype(np.float32)}
    on, _ = _sources_on_and_off(g, init, fetches, feed)
    assert on.count("= rt.bias_relu(") >= 2  # the body's two layers
    assert on.count("= rt.relu_grad_bias_sum(") >= 2  # and the gradient's
