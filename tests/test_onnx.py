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


def test_clip_by_value_with_scalar_and_tensor_bounds(tmp_path):
    """TF's raw ClipByValue (what the compiler's expand pass writes log1p with): bounds that
    are numbers, or tensors of t's shape, which ONNX's own Clip does not take."""
    from staticgrad.ops.registry import apply1
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
    assert not (tmp_path / "m.onnx").exists()


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
