"""Device names (staticgrad/devices.py) and `sg.device` scopes: what each op records, as TF1
records it, and what graph files keep of it."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.devices import DeviceSpec, canonical, merged, parse
from staticgrad.graph_io import GraphFormatError

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


@pytest.mark.parametrize("name, spec, text", [
    ("", DeviceSpec(), ""),
    ("/cpu:0", DeviceSpec(device_type="CPU", device_index=0), "/device:CPU:0"),
    ("/GPU:1", DeviceSpec(device_type="GPU", device_index=1), "/device:GPU:1"),
    ("gpu:0", DeviceSpec(device_type="GPU", device_index=0), "/device:GPU:0"),
    ("/device:XLA_GPU:*", DeviceSpec(device_type="XLA_GPU"), "/device:XLA_GPU:*"),
    ("/job:ps", DeviceSpec(job="ps"), "/job:ps"),
    ("/job:localhost/replica:0/task:0/device:CPU:0",
     DeviceSpec("localhost", 0, 0, "CPU", 0), "/job:localhost/replica:0/task:0/device:CPU:0"),
    ("/job:worker-1/task:3", DeviceSpec(job="worker-1", task=3), "/job:worker-1/task:3"),
])
def test_device_names_parse_to_their_parts_and_back_to_tf1s_canonical_text(name, spec, text):
    assert parse(name) == spec
    assert spec.to_string() == canonical(name) == text


@pytest.mark.parametrize("name", ["/gpu", "/gpu:0x", "/cpu:-1", "/device:GPU:0/job:ps",
                                  "/job:a/job:b", "/job:ps\n/cpu:0", "/job:a'b", "//cpu:0",
                                  "/cpu:0/", "/device:GPU", "x" * 300])
def test_what_is_no_device_name_is_refused_naming_it(name):
    with pytest.raises(ValueError, match="device name"):
        parse(name)
    with pytest.raises(ValueError, match=r"sg.device at \S*test_devices.py:\d+"):
        sg.device(name)


def test_a_scope_inside_another_says_what_it_changes():
    assert merged(parse("/job:ps/device:GPU:1"), parse("/cpu:0")) == \
        DeviceSpec(job="ps", device_type="CPU", device_index=0)
    assert merged(parse("/job:ps/device:GPU:1"), parse("/task:2")) == \
        DeviceSpec(job="ps", task=2, device_type="GPU", device_index=1)


def test_ops_record_the_device_of_their_scopes():
    with sg.device("/gpu:0"):
        a = sg.constant([1.0, 2.0], name="a")
        with sg.device("/job:ps"):
            b = a * 2.0
        with sg.device(None):  # clears the enclosing scopes
            c = a + 1.0
        with sg.device(lambda op: "/cpu:0" if op.type == "Add" else None):
            d, e = a + b, a * b
    f = a - 1.0
    assert [t.device for t in (a, b, c, d, e, f)] == [
        "/device:GPU:0", "/job:ps/device:GPU:0", "", "/device:CPU:0", "/device:GPU:0", ""]
    assert a.op.device == a.device


def test_a_device_function_that_gives_no_device_name_is_refused_naming_the_op():
    with sg.device(lambda op: "/nowhere"), pytest.raises(ValueError, match=r'Const op "k"'):
        sg.constant(1.0, name="k")


def test_graph_files_keep_devices_and_clear_devices_drops_them():
    with sg.device("/gpu:1"):
        x = sg.placeholder(sg.float32, [2], name="x")
        sg.multiply(x, 3.0, name="y")
    doc = sg.train.export_meta_graph()
    assert [op["device"] for op in doc["ops"] if op["name"] in ("x", "y")] == \
        ["/device:GPU:1"] * 2
    assert all("device" not in op for op in sg.train.export_meta_graph(clear_devices=True)["ops"])
    for clear, want in ((False, "/device:GPU:1"), (True, "")):
        with sg.Graph().as_default() as g2:
            sg.train.import_meta_graph(doc, clear_devices=clear)
            assert g2.get_tensor_by_name("y:0").device == want
            with sg.Session(config=sg.ConfigProto(allow_soft_placement=True)) as sess:
                np.testing.assert_array_equal(sess.run("y:0", {"x:0": [1.0, 2.0]}), [3.0, 6.0])


def test_a_graph_file_with_a_bad_device_is_refused_naming_the_op():
    sg.placeholder(sg.float32, [2], name="x")
    doc = sg.train.export_meta_graph()
    doc["ops"][0]["device"] = "/gpu:0\nimport os"
    with sg.Graph().as_default(), pytest.raises(GraphFormatError, match=r"op #0 'x': device"):
        sg.train.import_meta_graph(doc)


def test_a_device_function_sees_the_finished_op_as_tf1s_do():
    with sg.device(lambda op: "/cpu:0" if op.outputs[0].dtype == sg.float32 else None):
        x = sg.placeholder(sg.float32, [3], name="x")
        i = sg.placeholder(sg.int32, [3], name="i")
    assert (x.device, i.device) == ("/device:CPU:0", "")


@pytest.mark.parametrize("device", [0, False, [], 1.5, ["/cpu:0"], {"d": 1}])
def test_a_graph_file_device_that_is_no_string_is_refused(device):
    sg.placeholder(sg.float32, [2], name="x")
    doc = sg.train.export_meta_graph()
    doc["ops"][0]["device"] = device
    with sg.Graph().as_default(), pytest.raises(GraphFormatError, match="a device is a str"):
        sg.train.import_meta_graph(doc)
