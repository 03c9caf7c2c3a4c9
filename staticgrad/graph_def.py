"""TF1's GraphDef, as staticgrad has it: `graph.as_graph_def()` and `sg.import_graph_def`.

    graph_def = sess.graph.as_graph_def()
    len(graph_def.node), graph_def.node[0].op          # TF1's fields, read from the document
    sg.train.write_graph(graph_def, "logs", "graph.json")
    with sg.Graph().as_default():
        loss, = sg.import_graph_def(graph_def, return_elements=["loss:0"], name="copy")

A GraphDef wraps the graph file's JSON document (graph_io.py): `SerializeToString()` gives
its bytes (JSON, never a pickle) and `ParseFromString` reads them back through the same
checks as a graph file. Its nodes are read-only views: a graph is changed by building.
"""

from __future__ import annotations

import collections
import json

from . import graph_io
from .graph import Graph, get_default_graph

NodeDef = collections.namedtuple("NodeDef", ["name", "op", "input", "device", "attr"])
NodeDef.__doc__ = ("One node of a GraphDef: its name, op type, inputs ('op:index', '^op' for "
                   "a control input), device and attrs (as the graph file encodes them).")


class GraphDef:
    """A graph's document (see the module's docstring)."""

    def __init__(self, doc: dict | None = None):
        self.doc = doc if doc is not None else graph_io.graph_to_dict(Graph())

    @property
    def node(self) -> list[NodeDef]:
        return [NodeDef(op["name"], op["type"],
                        [*op["inputs"], *("^" + c for c in op["control_inputs"])],
                        op.get("device", ""), op["attrs"]) for op in self.doc["ops"]]

    @property
    def versions(self) -> dict:
        return {"producer": self.doc["version"]}

    def SerializeToString(self) -> bytes:  # noqa: N802 - TF1's (protobuf's) name
        return json.dumps(self.doc, allow_nan=False).encode("utf-8")

    def ParseFromString(self, data: bytes) -> None:  # noqa: N802
        self.doc = graph_io.load_document(data)

    def __str__(self) -> str:
        return json.dumps(self.doc, indent=1, allow_nan=False)

    def __repr__(self) -> str:
        return f"<sg.GraphDef of {len(self.doc['ops'])} nodes>"


def as_graph_def(graph: Graph, from_version=None, add_shapes=False) -> GraphDef:
    """The GraphDef of `graph` (its document as a graph file holds it)."""
    return GraphDef(graph_io.graph_to_dict(graph))


Graph.as_graph_def = as_graph_def  # (installed from here: the graph layer is below this one)


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None):
    """Build `graph_def`'s ops into the default graph, under the name scope `name` ("import"
    by default, as TF1's); return the tensors and operations named in `return_elements`
    ("op:0" a tensor, "op" an operation), or None."""
    if input_map:
        raise ValueError("import_graph_def: input_map is not offered; import, then connect "
                         "by feeding the imported placeholders")
    doc = graph_def.doc if isinstance(graph_def, GraphDef) else graph_def
    graph = get_default_graph()
    prefix = ("import" if name is None else name).rstrip("/")
    graph_io.import_meta_graph(doc, import_scope=prefix or None)
    if return_elements is None:
        return None
    scope = f"{prefix}/" if prefix else ""
    return [graph.as_graph_element(scope + element) for element in return_elements]
