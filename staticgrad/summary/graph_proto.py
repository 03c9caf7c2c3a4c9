"""A graph as TensorBoard's graph tab reads it: a `GraphDef` protocol buffer (tensorboardX's
classes), made from the graph's document (graph_io.py) node by node.

Each node keeps its scoped name (`train/gradients/Mul`), which the graph tab folds into name
scopes; its op type, device, inputs (`x` for output 0, `x:1`, `^x` for a control input), the
dtype of its first output and the shapes of all of them (`_output_shapes`, which label the
edges). Sub-graphs of control flow (a cond's branches, a loop's body) stay inside their op.
"""

from __future__ import annotations

_DATA_TYPES = {"float16": "DT_HALF", "float32": "DT_FLOAT", "float64": "DT_DOUBLE",
               "int8": "DT_INT8", "int16": "DT_INT16", "int32": "DT_INT32",
               "int64": "DT_INT64", "uint8": "DT_UINT8", "bool": "DT_BOOL",
               "string": "DT_STRING"}


def graph_def_proto(doc: dict):
    """The tensorboardX GraphDef of graph document `doc`."""
    from tensorboardX.proto import (
        attr_value_pb2,
        graph_pb2,
        node_def_pb2,
        tensor_shape_pb2,
        types_pb2,
        versions_pb2,
    )

    def shape(dims):
        if dims is None:
            return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
        return tensor_shape_pb2.TensorShapeProto(dim=[
            tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else d) for d in dims])

    nodes = []
    for op in doc["ops"]:
        inputs = [_input_name(name) for name in op["inputs"]]
        inputs += ["^" + name for name in op["control_inputs"]]
        attr = {}
        outputs = op.get("outputs", [])
        if outputs:
            attr["_output_shapes"] = attr_value_pb2.AttrValue(
                list=attr_value_pb2.AttrValue.ListValue(
                    shape=[shape(out["shape"]) for out in outputs]))
            attr["dtype"] = attr_value_pb2.AttrValue(
                type=types_pb2.DataType.Value(_DATA_TYPES[outputs[0]["dtype"]]))
        nodes.append(node_def_pb2.NodeDef(name=op["name"], op=op["type"], input=inputs,
                                          device=op.get("device") or "", attr=attr))
    return graph_pb2.GraphDef(node=nodes, versions=versions_pb2.VersionDef(producer=22))


def _input_name(tensor_name: str) -> str:
    """`op:0` as GraphDef names it (`op`); other outputs keep their index."""
    op, _, index = tensor_name.rpartition(":")
    return op if index == "0" else tensor_name
