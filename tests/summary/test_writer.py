"""sg.summary.FileWriter: event files that TensorBoard's own reader (its EventAccumulator)
reads back with the values, steps, images, text and graph a TF1 program wrote."""

import io

import numpy as np
import pytest

import staticgrad as sg

pytest.importorskip("tensorboardX")
accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _read(logdir):
    acc = accumulator.EventAccumulator(str(logdir), size_guidance={
        accumulator.SCALARS: 0, accumulator.IMAGES: 0, accumulator.HISTOGRAMS: 0,
        accumulator.TENSORS: 0})
    acc.Reload()
    return acc


def _training_graph():
    x = sg.placeholder(sg.float32, [None, 2], name="x")
    with sg.name_scope("model"):
        w = sg.Variable([[0.5], [-1.0]], name="w")
        y = sg.matmul(x, w, name="y")
    with sg.name_scope("train"):
        loss = sg.reduce_mean(sg.square(y - 1.0), name="mean_loss")
        step = sg.train.GradientDescentOptimizer(0.1).minimize(loss)
        sg.summary.scalar("loss", loss)
    sg.summary.histogram("weights", w)
    sg.summary.image("picture", sg.reshape(sg.tile(sg.abs(w), [2, 6]), [1, 4, 6, 1]),
                     max_outputs=1)
    sg.summary.text("note", sg.string_join(["loss is ", sg.as_string(loss, precision=3)]))
    return x, w, loss, step, sg.summary.merge_all()


def test_scalars_histograms_images_and_text_read_back_by_step(g, tmp_path):
    x, w, loss, step, merged = _training_graph()
    feed = {x: [[1.0, 2.0], [0.5, -1.0]]}
    losses, weights = [], []
    with sg.Session() as sess, sg.summary.FileWriter(tmp_path, sess.graph) as writer:
        sess.run(sg.global_variables_initializer())
        for i in range(5):
            summary, loss_now, w_now = sess.run([merged, loss, w], feed)
            assert type(summary) is bytes
            writer.add_summary(summary, global_step=10 * i)
            losses.append(float(loss_now))
            weights.append(w_now.copy())
            sess.run(step, feed)
    acc = _read(tmp_path)
    tags = acc.Tags()
    assert tags["scalars"] == ["train/loss"] and tags["histograms"] == ["weights"]
    assert tags["images"] == ["picture/image"] and tags["graph"]
    scalars = acc.Scalars("train/loss")
    assert [e.step for e in scalars] == [0, 10, 20, 30, 40]
    np.testing.assert_allclose([e.value for e in scalars], losses, rtol=1e-6)
    last = acc.Histograms("weights")[-1]
    assert last.step == 40 and last.histogram_value.num == 2
    assert last.histogram_value.min == pytest.approx(weights[-1].min(), rel=1e-6)
    assert last.histogram_value.sum == pytest.approx(weights[-1].sum(), rel=1e-6)
    assert sum(last.histogram_value.bucket) == 2
    image = acc.Images("picture/image")[0]
    assert (image.width, image.height) == (6, 4)
    from PIL import Image
    pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    assert pixels.shape == (4, 6) and pixels.max() == 255  # scaled as TF1: the largest is 255
    text = acc.Tensors("note")[2]
    assert text.step == 20
    assert text.tensor_proto.string_val == [f"loss is {losses[2]:.3f}".encode()]


def test_the_graph_tab_gets_the_graph_with_its_name_scopes(g, tmp_path):
    _training_graph()
    with sg.device("/cpu:0"):
        sg.constant(1.0, name="pinned")
    writer = sg.summary.FileWriter(str(tmp_path))
    writer.add_graph(sg.get_default_graph())
    writer.close()
    graph = _read(tmp_path).Graph()
    nodes = {node.name: node for node in graph.node}
    assert set(nodes) == {op.name for op in sg.get_default_graph().get_operations()}
    assert nodes["model/y"].op == "MatMul" and list(nodes["model/y"].input) == ["x", "model/w"]
    assert any(name.startswith("train/gradients/") for name in nodes)
    assert nodes["pinned"].device == "/device:CPU:0"
    shape = nodes["x"].attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [-1, 2]


def test_a_closed_writer_refuses_and_reopens_into_a_new_file(g, tmp_path):
    writer = sg.summary.FileWriter(tmp_path)
    summary = sg.Session().run(sg.summary.scalar("a", 1.5))
    writer.add_summary(summary, 1)
    writer.close()
    with pytest.raises(RuntimeError, match="closed; reopen"):
        writer.add_summary(summary, 2)
    writer.reopen()
    writer.add_summary(summary, 3)
    by_hand = sg.Summary(value=[sg.Summary.Value(tag="a", simple_value=2.5)])
    assert isinstance(by_hand, sg.summary.Summary)
    writer.add_summary(by_hand, 4)
    writer.flush()
    writer.close()
    assert [(e.step, e.value) for e in _read(tmp_path).Scalars("a")] == [
        (1, 1.5), (3, 1.5), (4, 2.5)]
    assert len(list(tmp_path.iterdir())) == 2
    with pytest.raises(TypeError, match="serialized Summary"):
        sg.summary.FileWriter(tmp_path).add_summary(1.5)


def test_a_logdir_that_is_not_a_folder_name_is_refused_and_bytes_are_a_path(g, tmp_path,
                                                                           monkeypatch):
    # str() of the logdir once made None the folder "None" and b"logs" the folder "b'logs'".
    monkeypatch.chdir(tmp_path)
    for logdir in (None, 3, ""):
        with pytest.raises(TypeError, match="FileWriter takes a folder"):
            sg.summary.FileWriter(logdir)
    with sg.summary.FileWriter(b"logs") as writer:
        assert writer.get_logdir() == "logs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]


def test_add_summary_of_bytes_that_are_not_a_summary_says_so(g, tmp_path):
    with sg.summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(ValueError, match=r"add_summary: b'\\xff\\xff' is not a serialized"):
            writer.add_summary(b"\xff\xff", 1)
