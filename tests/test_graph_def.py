"""Graph.as_graph_def, sg.GraphDef and sg.import_graph_def (staticgrad/graph_def.py): TF1's
GraphDef fields read from the graph file's document, a round trip through its bytes, and an
import under a name scope giving the same numbers."""

import numpy as np
import pytest

import staticgrad as sg


def _model():
    x = sg.placeholder(sg.float32, [None, 2], name="x")
    w = sg.constant([[1.0], [2.0]], name="w")
    y = sg.matmul(x, w, name="y")
    with sg.control_dependencies([y]):
        loss = sg.reduce_sum(y, name="loss")
    return x, loss


def test_a_graph_def_has_tf1s_fields_and_round_trips_through_its_bytes(g, tmp_path):
    _model()
    graph_def = g.as_graph_def()
    nodes = {n.name: n for n in graph_def.node}
    assert nodes["y"].op == "MatMul" and nodes["y"].input == ["x:0", "w:0"]
    assert "^y" in nodes["loss"].input  # (a control input, as TF1 writes it)
    assert graph_def.versions["producer"] >= 1 and "<sg.GraphDef of" in repr(graph_def)
    again = sg.GraphDef()
    again.ParseFromString(graph_def.SerializeToString())
    assert again.doc == graph_def.doc
    path = sg.train.write_graph(graph_def, str(tmp_path), "graph.json")
    assert sg.GraphDef(sg.graph_io.load_document(open(path, "rb").read())).doc == graph_def.doc


def test_import_graph_def_builds_it_under_a_scope_and_returns_what_is_asked(g):
    _model()
    graph_def = g.as_graph_def()
    with sg.Graph().as_default():
        loss, y_op = sg.import_graph_def(graph_def, return_elements=["loss:0", "y"])
        assert loss.name == "import/loss:0" and y_op.name == "import/y"
        got = sg.Session().run(loss, {"import/x:0": np.ones((3, 2), np.float32)})
    assert got == 9.0
    with sg.Graph().as_default():
        assert sg.import_graph_def(graph_def, name="") is None
        assert sg.get_default_graph().get_tensor_by_name("loss:0") is not None


def test_damaged_bytes_and_input_maps_are_refused(g):
    with pytest.raises(sg.graph_io.GraphFormatError, match=r"the graph document is not valid "
                                                           r"JSON"):
        sg.GraphDef().ParseFromString(b'{"format": ')
    with pytest.raises(ValueError, match=r"input_map is not offered"):
        sg.import_graph_def(sg.GraphDef(), input_map={"x:0": sg.constant(1.0)})
