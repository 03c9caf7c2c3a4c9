"""Summary ops (ops/summary_ops.py): what each fetches, parsed back with tensorboardX's
Summary, against NumPy by hand and TF1's documented tags, buckets and image scaling."""

import io
import sys

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import runtime_summary
from staticgrad.errors import InvalidArgumentError

tbx = pytest.importorskip("tensorboardX.summary")


def _parse(data: bytes):
    proto = tbx.Summary()
    proto.ParseFromString(data)
    return proto


def _run(fetches, feeds=None):
    return sg.Session().run(fetches, feeds)


def test_tags_follow_name_scopes_and_families_and_land_in_the_collection(g):
    x = sg.placeholder(sg.float32, [])
    with sg.name_scope("train"):
        a = sg.summary.scalar("loss", x)
        b = sg.summary.scalar("loss", x * 2)
    c = sg.summary.scalar("rate", x, family="opt", collections=["mine"])
    got = [_parse(s).value[0] for s in _run([a, b, c], {x: 1.25})]
    assert [(v.tag, v.simple_value) for v in got] == [
        ("train/loss", 1.25), ("train/loss_1", 2.5), ("opt/rate", 1.25)]
    assert sg.get_collection(sg.GraphKeys.SUMMARIES) == [a, b]
    assert sg.get_collection("mine") == [c]


def test_merge_all_holds_every_summary_and_is_none_without_any(g):
    assert sg.summary.merge_all() is None
    x = sg.placeholder(sg.float32, [3])
    sg.summary.scalar("first", x[0])
    sg.summary.histogram("all", x)
    merged = _parse(_run(sg.summary.merge_all(), {x: [1.0, 2.0, 3.0]}))
    assert [v.tag for v in merged.value] == ["first", "all"]
    assert merged.value[0].simple_value == 1.0 and merged.value[1].histo.num == 3


def test_merging_two_summaries_of_one_tag_fails_naming_the_tag(g):
    x = sg.placeholder(sg.float32, [])
    a = sg.summary.scalar("same", x, collections=[])
    with pytest.raises(InvalidArgumentError, match="Duplicate tag same found"):
        _run(sg.summary.merge([a, a]), {x: 1.0})


def test_histograms_use_tf1s_buckets_and_count_every_value(g):
    values = np.array([-3.5, -0.001, 0.0, 0.0, 2.0, 2.01, 1e6], np.float64)
    histo = _parse(_run(sg.summary.histogram("h", sg.constant(values)))).value[0].histo
    assert (histo.min, histo.max, histo.num) == (values.min(), values.max(), values.size)
    assert histo.sum == pytest.approx(values.sum()) and histo.sum_squares == pytest.approx(
        values @ values)
    assert sum(histo.bucket) == values.size
    edges = runtime_summary._tf1_buckets()
    for limit in histo.bucket_limit[:-1]:  # each limit is one of TF1's edges
        assert np.isclose(edges, limit, rtol=1e-12, atol=0).any()
    ratio = edges[len(edges) // 2 + 2] / edges[len(edges) // 2 + 1]
    assert ratio == pytest.approx(1.1)
    x = sg.placeholder(sg.float32, [2])
    with pytest.raises(InvalidArgumentError, match=r"HistogramSummary .*Nan in summary "
                                                   r"histogram for: bad"):
        _run(sg.summary.histogram("bad", x), {x: [1.0, np.nan]})


@pytest.mark.parametrize("values, want", [
    (np.array([[0.0, 0.5], [1.0, 2.0]]), np.array([[0, 63], [127, 255]])),
    (np.array([[-1.0, 0.0], [0.5, 1.0]]), np.array([[0, 127], [190, 254]])),
    (np.array([[-4.0, 0.0], [1.0, 2.0]]), np.array([[0, 127], [159, 191]])),
])
def test_float_images_are_scaled_as_tf1_scales_them(g, values, want):
    from PIL import Image
    images = sg.constant(values.reshape(1, 2, 2, 1), dtype=sg.float32)
    image = _parse(_run(sg.summary.image("im", images))).value[0]
    assert image.tag == "im/image/0" and (image.image.width, image.image.height) == (2, 2)
    pixels = np.asarray(Image.open(io.BytesIO(image.image.encoded_image_string)))
    # (negatives: 0.0 at 127, scaled by min(127 / -min, 128 / max): 31.75 for the last)
    np.testing.assert_allclose(pixels, want, atol=1)


def test_uint8_images_keep_their_pixels_and_max_outputs_limits_them(g):
    from PIL import Image
    rgb = np.random.default_rng(1).integers(0, 256, (4, 3, 5, 3)).astype(np.uint8)
    values = _parse(_run(sg.summary.image("rgb", sg.constant(rgb), max_outputs=2))).value
    assert [v.tag for v in values] == ["rgb/image/0", "rgb/image/1"]
    for v, want in zip(values, rgb):
        assert v.image.colorspace == 3
        np.testing.assert_array_equal(
            np.asarray(Image.open(io.BytesIO(v.image.encoded_image_string))), want)


def test_text_summaries_keep_the_strings_and_their_shape(g):
    words = sg.constant([["a", "bé"], ["c", "d"]])
    value = _parse(_run(sg.summary.text("words", words))).value[0]
    assert value.tag == "words" and value.metadata.plugin_data.plugin_name == "text"
    assert value.tensor.string_val == [b"a", "bé".encode(), b"c", b"d"]
    assert [d.size for d in value.tensor.tensor_shape.dim] == [2, 2]


def test_bad_summaries_fail_where_they_are_made(g):
    with pytest.raises(ValueError, match=r"ScalarSummary .*must be a scalar, got shape \(2,\)"):
        sg.summary.scalar("s", sg.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"ImageSummary .*\[batch, height, width, channels\]"):
        sg.summary.image("i", sg.zeros([2, 3, 3, 2]))
    with pytest.raises(TypeError, match=r"TensorSummaryV2 .*takes strings.*sg.as_string"):
        sg.summary.text("t", sg.constant(1.0))
    with pytest.raises(TypeError, match="merge takes summaries"):
        sg.summary.merge([sg.constant(1.0)])


def test_without_tensorboardx_the_builder_names_the_extra(g, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    with pytest.raises(ImportError, match=r"sg.summary.scalar writes TensorBoard summaries "
                                          r"through tensorboardX.*staticgrad\[tensorboard\]"):
        sg.summary.scalar("loss", sg.constant(1.0))
