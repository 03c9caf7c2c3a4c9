"""staticgrad.onnx.export_onnx: each exported model passes the ONNX checker and gives, in ONNX
Runtime, the arrays sess.run gives."""

import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import staticgrad as sg  # noqa: E402
from staticgrad.onnx import OnnxExportError, export_onnx  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def fresh_graph():
    with sg.Graph().as_default():
        yield


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def check_parity(tmp_path, fetches, feeds: dict, feed_values: list[dict], **kw):
    """Export, check the model, and compare ONNX Runtime with sess.run for each feed dict."""
    fetch_list = fetches if isinstance(fetches, list) else [fetches]
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        path = export_onnx(fetches, list(feeds.values()), tmp_path / "model.onnx",
                           session=sess, **kw)
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        runner = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for values in feed_values:
            want = sess.run(fetch_list, {feeds[k]: v for k, v in values.items()})
            got = runner.run(None, values)
            for name, w, g in zip([f.name for f in fetch_list], want, got):
                assert g.shape == np.shape(w), (name, g.shape, np.shape(w))
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)
    return model


def test_mlp_forward_with_softmax(tmp_path):
    x = sg.placeholder(sg.float32, [8, 5], name="x")
    w1 = sg.Variable(randn(5, 16), name="w1")
    b1 = sg.Variable(randn(16), name="b1")
    w2 = sg.Variable(randn(10, 16), name="w2")
    h = sg.nn.relu(sg.matmul(x, w1) + b1)
    logits = sg.matmul(h, w2, transpose_b=True)
    probs = sg.nn.softmax(logits)
    logp = sg.nn.log_softmax(logits)
    model = check_parity(tmp_path, [probs, logp], {"x": x}, [{"x": randn(8, 5)}])
    node_names = {n.name for n in model.graph.node}
    assert "Softmax" in node_names and "MatMul" in node_names
    assert {i.name for i in model.graph.initializer} >= {"w1:0", "b1:0", "w2:0"}


def test_elementwise(tmp_path):
    a = sg.placeholder(sg.float32, [3, 4], name="a")
    b = sg.placeholder(sg.float32, [4], name="b")
    pos = sg.abs(b) + 0.5
    out = [a + b, a - b, a * b, a / pos, -a, sg.exp(a), sg.log(pos), sg.sqrt(pos),
           sg.square(a), sg.pow(pos, 1.5), sg.tanh(a), sg.sigmoid(a), sg.maximum(a, b),
           sg.minimum(a, b), sg.where(a > b, a, b * 2.0), sg.cast(a > 0, sg.float32),
           sg.identity(a), sg.broadcast_to(b, [3, 4]), sg.concat([a, a * 2.0], 1),
           sg.squeeze(sg.expand_dims(a, 0), [0]), sg.transpose(a),
           sg.reshape(a, [2, 6])]
    check_parity(tmp_path, out, {"a": a, "b": b}, [{"a": randn(3, 4), "b": randn(4)}])


def test_gradients_of_tanh_sigmoid_and_relu(tmp_path):
    """The activations' gradient ops (TanhGrad, SigmoidGrad, ReluGrad) export, so a gradient
    graph does."""
    x = sg.placeholder(sg.float32, [3, 4], name="x")
    h = sg.tanh(x) * sg.sigmoid(x * 2.0) + sg.nn.relu(x - 0.25)
    loss = sg.reduce_sum(h * h)
    (dx,) = sg.gradients(loss, [x])
    model = check_parity(tmp_path, [loss, dx], {"x": x}, [{"x": randn(3, 4)}])
    names = {n.name for n in model.graph.node}
    assert {"gradients/Tanh_grad/TanhGrad", "gradients/Sigmoid_grad/SigmoidGrad",
            "gradients/Relu_grad/ReluGrad"} <= names


@pytest.mark.filterwarnings("ignore:.*encountered:RuntimeWarning")  # log1p(-1) = -inf
def test_elementwise_ops_of_a_few_nodes(tmp_path):
    """NotEqual, Rsqrt, Relu6, LeakyRelu, Elu, Expm1 and Log1p (accurate near 0, where
    exp(x) - 1 and log(1 + x) lose digits), FloorDiv and FloorMod of floats of either sign."""
    a = sg.placeholder(sg.float32, [2, 6], name="a")
    b = sg.placeholder(sg.float32, [2, 6], name="b")
    out = [sg.not_equal(a, b), sg.rsqrt(sg.abs(a) + 0.5), sg.nn.relu6(a * 4.0),
           sg.nn.leaky_relu(a), sg.nn.leaky_relu(a, alpha=3.0), sg.nn.elu(a), sg.expm1(a),
           sg.log1p(a), sg.floordiv(a, b), sg.floormod(a, b)]
    small = np.array([[1e-8, -1e-7, 3e-6, -2e-4, 0.0, 0.75],
                      [-0.999, 2.5, -60.0, 40.0, -1.0, 1e-30]], np.float32)
    divisors = np.array([[3.0, -3.0, 0.5, -0.25, 2.0, -1.5], [7.0, -0.5, 3.0, -3.0, 1.0, -2.0]],
                        np.float32)
    check_parity(tmp_path, out, {"a": a, "b": b},
                 [{"a": small, "b": divisors},
                  {"a": RNG.uniform(-0.9, 8, (2, 6)).astype(np.float32), "b": divisors}])


def test_integer_floordiv_floormod_and_not_equal(tmp_path):
    """Integers round down, toward -inf, where ONNX's Div rounds toward zero."""
    a = sg.placeholder(sg.int32, [8], name="a")
    b = sg.placeholder(sg.int32, [8], name="b")
    out = [sg.floordiv(a, b), sg.floormod(a, b), sg.not_equal(a, b), sg.nn.relu6(a)]
    check_parity(tmp_path, out, {"a": a, "b": b},
                 [{"a": np.array([7, -7, 7, -7, 0, 6, -6, 9], np.int32),
                   "b": np.array([2, 2, -2, -2, 3, 3, 3, 9], np.int32)}])


def test_any_all_argmax_argmin(tmp_path):
    m = sg.placeholder(sg.bool, [3, 4], name="m")
    x = sg.placeholder(sg.float32, [3, 4], name="x")
    out = [sg.reduce_any(m), sg.reduce_all(m), sg.reduce_any(m, axis=1),
           sg.reduce_all(m, axis=0, keepdims=True), sg.reduce_all(m, axis=[]),
           sg.argmax(x, 1), sg.argmin(x, 0), sg.argmax(x, -1, output_type=sg.int32),
           sg.argmin(x, 1, output_type=sg.int32)]
    masks = [RNG.random((3, 4)) > 0.5, np.ones((3, 4), bool), np.zeros((3, 4), bool)]
    ties = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [-1, 5, 0, 5]], np.float32)
    check_parity(tmp_path, out, {"m": m, "x": x},
                 [{"m": mask, "x": v} for mask, v in zip(masks, [randn(3, 4), ties, ties])])


def test_sizes_fills_and_sequences(tmp_path):
    """Size, Rank and Fill of known and unknown shapes; Eye; Range of a fed limit."""
    x = sg.placeholder(sg.float32, [None, 4], name="x")
    n = sg.placeholder(sg.int32, [], name="n")
    v = sg.placeholder(sg.float32, [], name="v")
    out = [sg.size(x), sg.size(x, out_type=sg.int64), sg.rank(x), sg.fill([2, 3], v),
           sg.size(sg.ones([2, 5])), sg.eye(3, 4), sg.eye(40, dtype=sg.int32),
           sg.range(n), sg.range(1, n, 2), sg.range(0.5, sg.cast(n, sg.float32), 0.75),
           sg.zeros_like(sg.exp(sg.ones([50, 30]) * v))]  # its shape only: no Exp exported
    model = check_parity(tmp_path, out, {"x": x, "n": n, "v": v},
                         [{"x": randn(3, 4), "n": np.array(7, np.int32),
                           "v": np.array(1.5, np.float32)},
                          {"x": randn(1, 4), "n": np.array(0, np.int32),
                           "v": np.array(-2.0, np.float32)}])
    assert "Exp" not in {node.op_type for node in model.graph.node}


def test_indexing(tmp_path):
    """Gather, where(cond) (the coordinates), Slice, and tensor[...] indexing: ints, slices
    with negative bounds and steps, None and '...'."""
    x = sg.placeholder(sg.float32, [4, 5, 6], name="x")
    i = sg.placeholder(sg.int32, [3], name="i")
    out = [sg.gather(x, i), sg.gather(x, sg.reshape(i, [3, 1]), axis=1), sg.where(x > 0.5),
           sg.slice(x, [1, 0, 2], [2, -1, 3]), x[1], x[-1], x[:, 1:3], x[::-1], x[..., None, 0],
           x[None], x[1::2, ::-2, -3:], x[:], x[2, -2, 3:0:-2], x[-3:-1, ..., 5]]
    check_parity(tmp_path, out, {"x": x, "i": i},
                 [{"x": randn(4, 5, 6), "i": np.array([0, 3, 2], np.int32)}])


def test_indices_computed_when_the_graph_runs(tmp_path):
    x = sg.placeholder(sg.float32, [4, 3], name="x")
    i = sg.placeholder(sg.int32, [], name="i")
    small = sg.placeholder(sg.uint8, [], name="small")
    out = [x[i], x[:, small], x[i, 1:]]
    check_parity(tmp_path, out, {"x": x, "i": i, "small": small},
                 [{"x": randn(4, 3), "i": np.array(k, np.int32),
                   "small": np.array(2, np.uint8)} for k in (0, -1, 3)])


def test_a_tensor_array_written_at_a_fed_index(tmp_path):
    x = sg.placeholder(sg.float32, [4, 3], name="x")
    i = sg.placeholder(sg.int32, [], name="i")
    written = sg.TensorArray(sg.float32, size=4).unstack(x).write(i, x[0] * 2.0).stack()
    check_parity(tmp_path, written, {"x": x, "i": i},
                 [{"x": randn(4, 3), "i": np.array(k, np.int32)} for k in (0, 3)])
    grown = sg.TensorArray(sg.float32, size=0, dynamic_size=True).write(i, x[0]).stack()
    with sg.Session() as sess, pytest.raises(OnnxExportError, match="dynamic_size"):
        export_onnx(grown, [x, i], tmp_path / "grown.onnx", session=sess)


def test_cumsum_every_way(tmp_path):
    x = sg.placeholder(sg.float32, [3, 4], name="x")
    out = [sg.cumsum(x, axis, exclusive=e, reverse=r)
           for axis in (0, -1) for e in (False, True) for r in (False, True)]
    check_parity(tmp_path, out, {"x": x}, [{"x": randn(3, 4)}])


def test_top_k_sort_and_argsort(tmp_path):
    x = sg.placeholder(sg.float32, [3, 5], name="x")
    values, indices = sg.nn.top_k(x, 3)
    out = [values, indices, sg.sort(x), sg.argsort(x, axis=0, direction="DESCENDING")]
    ties = np.array([[1, 2, 2, 0, 2]] * 3, np.float32)
    check_parity(tmp_path, out, {"x": x}, [{"x": randn(3, 5)}, {"x": ties}])


def test_gather_nd_and_scatter_nd(tmp_path):
    x = sg.placeholder(sg.float32, [3, 2, 4], name="x")
    picked = sg.gather_nd(x, [[0, 1], [2, 0], [0, 1]])
    placed = sg.scatter_nd([[1], [3], [1]], picked, [5, 4])
    check_parity(tmp_path, [picked, placed], {"x": x}, [{"x": randn(3, 2, 4)}])


def test_einsum(tmp_path):
    a = sg.placeholder(sg.float32, [2, 3], name="a")
    b = sg.placeholder(sg.float32, [3, 4], name="b")
    out = [sg.einsum("ij,jk->ik", a, b), sg.einsum("ij->j", a), sg.einsum("ij,jk", a, b)]
    check_parity(tmp_path, out, {"a": a, "b": b}, [{"a": randn(2, 3), "b": randn(3, 4)}])


def test_one_hot(tmp_path):
    """As TF's: an index outside [0, depth), a negative one too, gives a row of off_value
    (ONNX's own OneHot counts a negative index from the end)."""
    i = sg.placeholder(sg.int32, [3], name="i")
    out = [sg.one_hot(i, 5), sg.one_hot(i, 4, on_value=2.0, off_value=-1.0, axis=0),
           sg.one_hot(sg.reshape(i, [1, 3]), 3, axis=1, dtype=sg.int32),
           sg.one_hot(i, 6, dtype=sg.bool)]
    check_parity(tmp_path, out, {"i": i}, [{"i": np.array([0, 3, 2], np.int32)},
                                           {"i": np.array([3, 7, -1], np.int32)}])


def test_joining_and_splitting(tmp_path):
    a = sg.placeholder(sg.float32, [2, 6], name="a")
    b = sg.placeholder(sg.float32, [2, 6], name="b")
    out = [sg.stack([a, b]), sg.stack([a, b, a], axis=-1), *sg.unstack(a), *sg.unstack(a, axis=1),
           *sg.split(a, 3, axis=1), *sg.split(b, [1, 5], axis=1), sg.tile(a, [2, 3]),
           sg.pad(a, [[1, 2], [0, 3]]), sg.pad(a, [[1, 0], [2, 2]], constant_values=-1.5),
           sg.pad(a, [[1, 1], [3, 2]], mode="REFLECT")]
    check_parity(tmp_path, out, {"a": a, "b": b}, [{"a": randn(2, 6), "b": randn(2, 6)}])


def test_cross_entropies_and_a_custom_gradient_forward(tmp_path):
    logits = sg.placeholder(sg.float32, [4, 5], name="logits")
    labels = sg.placeholder(sg.float32, [4, 5], name="labels")
    classes = sg.placeholder(sg.int64, [4], name="classes")

    @sg.custom_gradient
    def log1pexp(v):
        e = sg.exp(v)
        return sg.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))

    out = [sg.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits),
           sg.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=0),
           sg.nn.sparse_softmax_cross_entropy_with_logits(labels=classes, logits=logits),
           log1pexp(logits)]
    check_parity(tmp_path, out, {"logits": logits, "labels": labels, "classes": classes},
                 [{"logits": randn(4, 5) * 3, "labels": RNG.random((4, 5)).astype(np.float32),
                   "classes": np.array([0, 4, 2, 2])}])


def test_gradient_of_a_broadcast(tmp_path):
    """SumTo, which sums a broadcast gradient back to its input's shape."""
    x = sg.placeholder(sg.float32, [3, 4], name="x")
    b = sg.placeholder(sg.float32, [4], name="b")
    c = sg.placeholder(sg.float32, [3, 1], name="c")
    loss = sg.reduce_sum(sg.tanh(x + b) * c)
    check_parity(tmp_path, sg.gradients(loss, [b, c]), {"x": x, "b": b, "c": c},
                 [{"x": randn(3, 4), "b": randn(4), "c": randn(3, 1)}])


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_conv2d_transpose(tmp_path, padding):
    """Conv2DBackpropInput as ONNX's ConvTranspose, output sizes a stride does not divide."""
    v = sg.placeholder(sg.float32, [2, 4, 5, 3], name="v")
    w = sg.Variable(randn(3, 3, 2, 3), name="w")
    size = {"SAME": [2, 8, 9, 2], "VALID": [2, 10, 12, 2]}[padding]
    y = sg.nn.conv2d_transpose(v, w, size, strides=2, padding=padding)
    check_parity(tmp_path, y, {"v": v}, [{"v": randn(2, 4, 5, 3)}])


def test_clip_by_value_with_scalar_and_tensor_bounds(tmp_path):
    """TF's raw ClipByValue (what the compiler's expand pass writes log1p with): bounds that
    are numbers, or tensors of t's shape, which ONNX's own Clip does not take."""
    from staticgrad.ops.creation import apply1
    a = sg.placeholder(sg.float32, [3, 4], name="a")
    lo = sg.placeholder(sg.float32, [3, 4], name="lo")
    out = [apply1("ClipByValue", [a, sg.constant(-0.5), sg.constant(0.5)]),
           apply1("ClipByValue", [a, lo, lo + 1.0])]
    check_parity(tmp_path, out, {"a": a, "lo": lo}, [{"a": randn(3, 4), "lo": randn(3, 4)}])


@pytest.mark.parametrize("opset", [13, 17, 18])  # axes as attributes / inputs
def test_reductions(tmp_path, opset):
    x = sg.placeholder(sg.float32, [2, 3, 4], name="x")
    out = [sg.reduce_sum(x), sg.reduce_sum(x, axis=1), sg.reduce_mean(x, axis=[0, 2]),
           sg.reduce_max(x, axis=-1, keepdims=True), sg.reduce_mean(x, keepdims=True),
           sg.reduce_min(x, axis=0), sg.reduce_sum(x, axis=[]), sg.reduce_max(x, axis=[])]
    check_parity(tmp_path, out, {"x": x}, [{"x": randn(2, 3, 4)}], opset=opset)


def test_fetching_a_feed_a_variable_and_one_tensor_twice(tmp_path):
    x = sg.placeholder(sg.float32, [2], name="x")
    w = sg.Variable(randn(2), name="w")
    y = x * w
    check_parity(tmp_path, [x, w.value(), y, y],
                 {"x": x}, [{"x": randn(2)}])


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_conv2d_max_pool(tmp_path, padding):
    x = sg.placeholder(sg.float32, [2, 9, 9, 3], name="x")
    w = sg.Variable(randn(3, 3, 3, 4), name="w")
    c = sg.nn.relu(sg.nn.conv2d(x, w, strides=2, padding=padding))
    p = sg.nn.max_pool(c, 2, 2, padding)
    a = sg.nn.avg_pool(c, 3, 2, padding)
    check_parity(tmp_path, [p, a], {"x": x}, [{"x": randn(2, 9, 9, 3)}])


def test_unknown_batch_runs_at_two_batch_sizes(tmp_path):
    x = sg.placeholder(sg.float32, [None, 6, 6, 2], name="x")
    w = sg.Variable(randn(3, 3, 2, 4), name="w")
    c = sg.nn.max_pool(sg.nn.conv2d(x, w, strides=1, padding="SAME"), 2, 2, "VALID")
    flat = sg.reshape(c, [-1, 36])
    v = sg.Variable(randn(36, 3), name="v")
    y = sg.nn.softmax(sg.matmul(flat, v))
    model = check_parity(tmp_path, y, {"x": x}, [{"x": randn(1, 6, 6, 2)},
                                                  {"x": randn(5, 6, 6, 2)}])
    dim0 = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim0.dim_param and not dim0.HasField("dim_value")


def test_unsupported_op_names_op_type_and_place(tmp_path):
    x = sg.placeholder(sg.float32, [3], name="x")
    y = sg.random_uniform([3], name="noise") + x
    z = sg.random_normal([3], name="more_noise") * y  # every op without a form is named
    with sg.Session() as sess, pytest.raises(OnnxExportError) as e:
        export_onnx(z, [x], tmp_path / "m.onnx", session=sess)
    msg = str(e.value)
    assert "RandomUniform" in msg and '"noise"' in msg and "test_onnx.py" in msg
    assert "RandomStandardNormal" in msg
    assert "random generator" in msg  # why (staticgrad.onnx.NO_ONNX)
    assert not (tmp_path / "m.onnx").exists()


def test_an_assignment_brought_in_by_a_control_dependency_says_why(tmp_path):
    x = sg.placeholder(sg.float32, [3], name="x")
    w = sg.Variable(np.zeros(3, np.float32), name="w")
    with sg.control_dependencies([sg.assign_add(w, x, name="accumulate")]):
        y = sg.identity(x * 2.0)
    with sg.Session() as sess, pytest.raises(OnnxExportError) as e:
        sess.run(sg.global_variables_initializer())
        export_onnx(y, [x], tmp_path / "m.onnx", session=sess)
    assert 'AssignAdd op "accumulate"' in str(e.value) and "stateless" in str(e.value)


def test_linspace_exports_where_its_values_are_known(tmp_path):
    """LinSpace has no ONNX form; its values, known when the graph was built, export as a
    constant, fetched or read by another op; a linspace of a fed value says why it cannot."""
    x = sg.placeholder(sg.float32, [5], name="x")
    check_parity(tmp_path, [sg.linspace(0.0, 1.0, 5) * x, sg.linspace(-1.0, 2.0, 7)], {"x": x},
                 [{"x": randn(5)}])
    stop = sg.placeholder(sg.float32, [], name="stop")
    with sg.Session() as sess, pytest.raises(OnnxExportError, match="ONNX has no linspace"):
        export_onnx(sg.linspace(0.0, stop, 4), [stop], tmp_path / "m.onnx", session=sess)


def test_symmetric_pad_has_no_onnx_form(tmp_path):
    x = sg.placeholder(sg.float32, [3, 4], name="x")
    y = sg.pad(x, [[1, 1], [2, 2]], mode="SYMMETRIC", name="mirror")
    with sg.Session() as sess, pytest.raises(OnnxExportError, match="no SYMMETRIC mode") as e:
        export_onnx(y, [x], tmp_path / "m.onnx", session=sess)
    assert 'Pad op "mirror"' in str(e.value)


def test_missing_variable_value(tmp_path):
    x = sg.placeholder(sg.float32, [3], name="x")
    w = sg.Variable(np.ones(3, np.float32), name="w")
    with sg.Session() as sess, pytest.raises(OnnxExportError, match="initializer"):
        export_onnx(x * w, [x], tmp_path / "m.onnx", session=sess)


def test_missing_onnx_package_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now raises ImportError
    x = sg.placeholder(sg.float32, [3], name="x")
    hint = r"pip install 'staticgrad\[onnx\]'"
    with sg.Session() as sess, pytest.raises(ImportError, match=hint):
        export_onnx(x * 2.0, [x], tmp_path / "m.onnx", session=sess)


def _vocabulary_with_rules():
    from staticgrad.onnx import RULES
    from staticgrad.ops import vocabulary
    return [(t, b) for t, _, b in vocabulary.entries() if t in RULES and t != "LogicalNot"]


def _grid(interval) -> np.ndarray:
    """Values across a REFERENCES interval (tests/ops/test_vocabulary.py): its ends, points
    between, a few round numbers inside it, and NaN and the infinities if it says "special"."""
    low, high, *kind = interval
    if kind == ["bool"]:
        return np.array([False, True])
    values = np.concatenate([np.linspace(low, high, 13), [low, high, 0.5, -0.5, 2.5, -2.5, 0]])
    values = values[(values >= low) & (values <= high)]
    if kind == ["halves"]:
        values = np.unique(np.round(values * 2) / 2)
    if kind == ["special"]:
        values = np.concatenate([values, [np.nan, np.inf, -np.inf]])
    return values.astype(np.float32)


@pytest.mark.parametrize("op_type, builder", _vocabulary_with_rules(),
                         ids=[t for t, _ in _vocabulary_with_rules()])
def test_every_offered_elementwise_op_with_a_rule_matches_onnx_runtime(tmp_path, op_type,
                                                                       builder):
    """Each op of the op vocabulary that has an ONNX rule, on inputs from its reference row's
    range (tests/ops/test_vocabulary.py), special values included; a two-input op on every
    pair of its inputs' values."""
    from tests.ops.test_vocabulary import REFERENCES, arity
    intervals = REFERENCES[op_type][1]
    grids = [_grid(intervals)] if arity(op_type) == 1 else [_grid(i) for i in intervals]
    columns = [g.ravel() for g in np.meshgrid(*grids, indexing="ij")]
    names = ["x", "y"][:len(columns)]
    feeds = {n: sg.placeholder(sg.as_dtype(c.dtype), [len(c)], name=n)
             for n, c in zip(names, columns)}
    check_parity(tmp_path, builder(*feeds.values()), feeds, [dict(zip(names, columns))])
