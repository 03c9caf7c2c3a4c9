"""Save a graph to JSON and load it back: `export_meta_graph`, `import_meta_graph`, `write_graph`.

    sg.train.export_meta_graph("model.json")              # in the process that built the graph
    saver.save(sess, "ckpt/model")
    ...
    saver = sg.train.import_meta_graph("model.json")      # in a new process
    with sg.Session() as sess:
        saver.restore(sess, "ckpt/model")
        sess.run("loss:0", feed_dict={"x:0": batch})

The format is plain JSON (strict: no NaN or Infinity literals), one object:

    {"format": "staticgrad-graph", "version": 1,
     "seed": 42,                        # the graph-level seed (sg.set_random_seed), or null
     "ops": [                           # every operation, in creation order
        {"name": "dense/MatMul", "type": "MatMul",
         "inputs": ["x:0", "dense/kernel:0"],       # "op_name:output_index", earlier ops only
         "control_inputs": ["init"],                # op names, earlier ops only
         "attrs": {"transpose_a": {"type": "bool", "value": false}, ...},
         "outputs": [{"dtype": "float32", "shape": [null, 10]}],   # checked on import
         "location": ["train.py", 12],              # where the op was built (for messages)
         "device": "/device:GPU:0"},                # where sg.device placed it (if it did)
        ...],
     "variables": [                     # the Variable objects over VariableV2 ops
        {"name": "dense/kernel", "initializer": "dense/kernel/Assign",
         "initial_value": "dense/kernel/initial_value:0", "trainable": true}, ...],
     "collections": {                   # by name; each item tagged with what it refers to
        "variables": [{"variable": "dense/kernel"}, ...],
        "train_op": [{"operation": "Adam"}],
        "losses": [{"tensor": "loss:0"}],
        "some_key": [{"value": <attr value>}]}}

Attribute values carry explicit type tags, so nothing is guessed from JSON's own types:

    {"type": "none"}                              None
    {"type": "bool",  "value": true}              bool
    {"type": "int",   "value": 3}                 int (any size)
    {"type": "float", "value": 0.5}               float; "inf", "-inf" and "nan" as strings
    {"type": "str",   "value": "SAME"}            str
    {"type": "ellipsis"}                          ... (in slicing specs)
    {"type": "tuple", "value": [<value>, ...]}    tuple (and "list" for a list)
    {"type": "dict",  "value": {"key": <value>}}  dict with string keys
    {"type": "dtype", "value": "float32"}         a staticgrad DType
    {"type": "shape", "value": [2, null]}         a TensorShape (value null: unknown rank)
    {"type": "ndarray", "dtype": "float32", "shape": [2, 3], "data": "<base64>"}
                                                  the array's little-endian bytes in C order
                                                  (a hand-written file may give "values": a
                                                  nested list, in place of "data")
    {"type": "ndarray", "dtype": "string", "shape": [2], "strings": ["<base64>", ...]}
                                                  a string array: each element's bytes, in C
                                                  order
    {"type": "scalar", "dtype": "float32", "data": "<base64>"}   a NumPy scalar (np.float32(1))
    {"type": "bytes", "value": "<base64>"}        bytes (a separator)
    {"type": "region", "ops": [<op>, ...],        a sub-graph (a cond's branch, a loop's body):
     "inputs": ["x:0", ...], "outputs": [...]}    its ops, as the graph's are, then its
                                                  placeholders and results by name; it is
                                                  closed (its ops read only its own tensors)

Loading rebuilds each op through the normal op-creation path, so shapes and dtypes are
inferred again and checked against the file's "outputs" (which may be more precise, where a
shape was refined with `set_shape` after the op was built); it never evaluates code from the file
(no pickle, no eval: op types are looked up in the registry, and every value is decoded by its
tag). A malformed file raises `GraphFormatError` (a ValueError) naming the op and the field.

An op whose attributes hold Python code cannot be saved: `custom_gradient` ops (their grad_fn)
and ops built under `gradient_override_map` raise ValueError at export, naming the op.

Departures from TF1: one JSON document in place of the MetaGraphDef protocol buffer; no
SaverDef (`import_meta_graph` returns a new Saver over the imported global variables).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import warnings

import numpy as np

from . import dtypes as _dt
from .control_flow.branches import Branch, BranchGraph, check_stateless
from .graph import Graph, GraphKeys, Operation, Tensor, get_default_graph
from .shapes import TensorShape
from .train.atomic_files import atomic_write
from .variables import Variable

FORMAT = "staticgrad-graph"
VERSION = 1


class GraphFormatError(ValueError):
    """A graph file that cannot be loaded: what is wrong, and in which op and field."""


# -- attribute values ---------------------------------------------------------------------------
class _Unserializable(TypeError):
    pass


def encode_value(value) -> dict:
    """The tagged JSON form of one attribute value (see the module docstring)."""
    if value is None:
        return {"type": "none"}
    if value is Ellipsis:
        return {"type": "ellipsis"}
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, int):
        return {"type": "int", "value": int(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"type": "float", "value": value}
        return {"type": "float", "value": "nan" if math.isnan(value) else
                ("inf" if value > 0 else "-inf")}
    if isinstance(value, str):
        return {"type": "str", "value": value}
    if isinstance(value, bytes):
        return {"type": "bytes", "value": base64.b64encode(value).decode("ascii")}
    if isinstance(value, tuple | list):
        return {"type": type(value).__name__, "value": [encode_value(v) for v in value]}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _Unserializable("a dict with keys that are not strings")
        return {"type": "dict", "value": {k: encode_value(v) for k, v in value.items()}}
    if isinstance(value, _dt.DType):
        return {"type": "dtype", "value": value.name}
    if isinstance(value, TensorShape):
        return {"type": "shape", "value": None if value.dims is None else list(value.dims)}
    if isinstance(value, Branch):
        return {"type": "region", "ops": [_op_to_dict(op) for op in value.graph.get_operations()],
                "inputs": [t.name for t in value.inputs],
                "outputs": [t.name for t in value.outputs]}
    if isinstance(value, np.ndarray) and value.dtype.kind == "O":
        return {"type": "ndarray", "dtype": "string", "shape": list(value.shape),
                "strings": [base64.b64encode(b).decode("ascii")
                            for b in value.reshape(-1)]}
    if isinstance(value, np.ndarray | np.generic):
        dtype = _array_dtype_name(value.dtype)
        data = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
        out = {"type": "ndarray" if isinstance(value, np.ndarray) else "scalar", "dtype": dtype}
        if isinstance(value, np.ndarray):
            out["shape"] = list(value.shape)
        out["data"] = base64.b64encode(data).decode("ascii")
        return out
    raise _Unserializable(f"a {type(value).__module__}.{type(value).__qualname__}")


def _array_dtype_name(dtype: np.dtype) -> str:
    try:
        return _dt.as_dtype(dtype).name
    except TypeError:
        raise _Unserializable(f"an array of dtype {dtype}") from None


MAX_VALUE_DEPTH = 64  # attribute values nest at most this deep (a tuple in a tuple in ...)


def decode_value(enc, where: str, depth: int = 0):
    """The Python value of a tagged attribute value; `where` names it in errors. A value nested
    deeper than MAX_VALUE_DEPTH levels raises GraphFormatError, as does anything malformed.

    >>> decode_value({"type": "tuple", "value": [{"type": "int", "value": 1}]}, "attr")
    (1,)
    """
    if depth > MAX_VALUE_DEPTH:
        where = where if len(where) <= 100 else f"{where[:60]}...{where[-30:]}"
        raise GraphFormatError(f"{where}: values nested more than {MAX_VALUE_DEPTH} levels "
                               "deep")
    if not isinstance(enc, dict) or not isinstance(enc.get("type"), str):
        raise GraphFormatError(f"{where}: expected a tagged value {{\"type\": ...}}, "
                               f"got {_short(enc)}")
    tag = enc["type"]
    if tag == "none":
        return None
    if tag == "ellipsis":
        return Ellipsis
    if tag == "ndarray":
        return _decode_array(enc, where, scalar=False)
    if tag == "scalar":
        return _decode_array(enc, where, scalar=True)
    if tag == "region":  # (built into a sub-graph by _rebuild_ops, which knows the graph)
        return _RegionDoc(enc, where)
    if "value" not in enc:
        raise GraphFormatError(f"{where}: a {tag!r} value needs a \"value\" field")
    value = enc["value"]
    if tag == "bool" and isinstance(value, bool):
        return value
    if tag == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tag == "float":
        if isinstance(value, float) or isinstance(value, int) and not isinstance(value, bool) \
                and abs(value) < 2 ** 1024:
            return float(value)
        if value in ("inf", "-inf", "nan"):
            return float(value)
    if tag == "str" and isinstance(value, str):
        return value
    if tag == "bytes" and isinstance(value, str):
        return _b64decode(value, f"{where}.value")
    if tag in ("tuple", "list") and isinstance(value, list):
        items = [decode_value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
        return tuple(items) if tag == "tuple" else items
    if tag == "dict" and isinstance(value, dict):
        return {k: decode_value(v, f"{where}[{k!r}]", depth + 1) for k, v in value.items()}
    if tag == "dtype" and isinstance(value, str):
        return _decode_dtype(value, where)
    if tag == "shape" and (value is None or isinstance(value, list) and all(
            d is None or isinstance(d, int) and not isinstance(d, bool) and 0 <= d < _MAX_DIM
            for d in value)):
        return TensorShape(value)
    known = ("none", "bool", "int", "float", "str", "bytes", "ellipsis", "tuple", "list", "dict",
             "dtype", "shape", "ndarray", "scalar", "region")
    if tag not in known:
        raise GraphFormatError(f"{where}: unknown value type {tag!r}; known: {', '.join(known)}")
    raise GraphFormatError(f"{where}: {_short(value)} is not a valid {tag!r} value")


_MAX_DIM = 1 << 62  # a dimension NumPy can hold (larger ones overflow a C long)


def _decode_dtype(name, where: str) -> _dt.DType:
    if not isinstance(name, str) or name not in {d.name for d in _dt.ALL}:
        raise GraphFormatError(f"{where}: unknown dtype {_short(name)}; known: "
                               f"{', '.join(d.name for d in _dt.ALL)}")
    return _dt.as_dtype(name)


def _decode_array(enc, where: str, scalar: bool):
    dtype = _decode_dtype(enc.get("dtype"), f"{where}.dtype").np
    shape = [] if scalar else enc.get("shape")
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < _MAX_DIM for d in shape):
        raise GraphFormatError(f"{where}.shape: expected a list of non-negative ints below "
                               f"2**62, got {_short(shape)}")
    count = math.prod(shape)
    if dtype.kind == "O":
        strings = enc.get("strings")
        if scalar or not isinstance(strings, list) or len(strings) != count:
            raise GraphFormatError(f"{where}: a string array of shape {shape} needs "
                                   f"\"strings\", a list of {count} base64 texts")
        arr = np.empty(count, dtype=object)
        for i, text in enumerate(strings):
            arr[i] = _b64decode(text, f"{where}.strings[{i}]")
        arr = arr.reshape(shape)
    elif "data" in enc:
        raw = _b64decode(enc["data"], f"{where}.data")
        if len(raw) != count * dtype.itemsize:
            raise GraphFormatError(
                f"{where}: shape {shape} of {dtype.name} needs {count * dtype.itemsize} bytes "
                f"of data, the file has {len(raw)}")
        arr = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    elif "values" in enc and not scalar:
        _check_leaves(enc["values"], dtype, f"{where}.values")
        try:
            arr = np.array(enc["values"], dtype=dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise GraphFormatError(f"{where}.values: not a nested list of {dtype.name} "
                                   f"numbers ({e})") from None
        if list(arr.shape) != shape:
            raise GraphFormatError(f"{where}: values of shape {list(arr.shape)} do not match "
                                   f"the declared shape {shape}")
    else:
        raise GraphFormatError(f"{where}: an array needs a \"data\" field (base64)")
    if scalar:
        return arr[()]
    arr.setflags(write=False)
    return arr


def _b64decode(text, where: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise GraphFormatError(f"{where}: not valid base64") from None


def _check_leaves(values, dtype: np.dtype, where: str) -> None:
    """A hand-written array's numbers must be JSON values of its kind: no "False" read as True,
    no 2.5 cut to 2. Walked without recursion, so any nesting depth is safe here."""
    if dtype.kind == "b":
        def fits(v):
            return isinstance(v, bool)
    elif dtype.kind in "iu":
        def fits(v):
            return isinstance(v, int) and not isinstance(v, bool)
    else:
        def fits(v):
            return (isinstance(v, int | float) and not isinstance(v, bool)
                    or v in ("inf", "-inf", "nan"))
    pending = [values]
    while pending:
        v = pending.pop()
        if isinstance(v, list):
            pending.extend(v)
        elif not fits(v):
            raise GraphFormatError(f"{where}: {_short(v)} is not a {dtype.name} value")


def _short(value, limit: int = 60) -> str:
    """A one-line excerpt of a value for a message; never raises, not even for a value nested
    too deep for json.dumps or repr."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except RecursionError:
            text = f"<a {type(value).__name__} nested too deep to show>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- export -------------------------------------------------------------------------------------
def graph_to_dict(graph: Graph | None = None, collection_list=None,
                  clear_devices: bool = False) -> dict:
    """The JSON-able description of `graph` (default: the default graph); see the module doc.
    `clear_devices`: leave out the ops' devices."""
    graph = graph or get_default_graph()
    ops = [_op_to_dict(op, clear_devices) for op in graph.get_operations()]
    variables = _graph_variables(graph)
    keys = graph.get_all_collection_keys() if collection_list is None else list(collection_list)
    collections = {}
    for key in keys:
        items = [_collection_item(item) for item in graph.get_collection(key)]
        if any(item is None for item in items):
            warnings.warn(f"collection {key!r} holds values that are not variables, tensors, "
                          "operations or plain values; they are left out of the saved graph",
                          stacklevel=3)
        collections[key] = [item for item in items if item is not None]
    return {"format": FORMAT, "version": VERSION, "seed": graph.seed, "ops": ops,
            "variables": [{"name": v.op.name, "initializer": v.initializer.name,
                           "initial_value": v.initial_value.name, "trainable": v.trainable}
                          for v in variables],
            "collections": collections}


def _op_to_dict(op: Operation, clear_devices: bool = False) -> dict:
    if "_gradient_op_type" in op.attrs:
        raise ValueError(f"cannot save {op.where()}: it was built under gradient_override_map "
                         f"(its gradient is {op.attrs['_gradient_op_type']!r}, registered by "
                         "Python code that a graph file cannot hold); build it outside "
                         "gradient_override_map to save the graph")
    attrs = {}
    for key, value in op.attrs.items():
        try:
            attrs[key] = encode_value(value)
        except _Unserializable as e:
            hint = (" (custom_gradient's grad_fn is Python code, which a graph file cannot "
                    "hold)" if op.type == "CustomGradient" else "")
            raise ValueError(f"cannot save {op.where()}: its attr {key!r} holds {e}, which has "
                             f"no JSON form{hint}") from None
    filename, line = op.location
    record = {"name": op.name, "type": op.type,
              "inputs": [t.name for t in op.inputs],
              "control_inputs": [c.name for c in op.control_inputs],
              "attrs": attrs,
              "outputs": [{"dtype": t.dtype.name,
                           "shape": None if t.shape.dims is None else list(t.shape.dims)}
                          for t in op.outputs],
              "location": [str(filename), int(line)]}
    if op.device and not clear_devices:
        record["device"] = op.device
    return record


def _graph_variables(graph: Graph) -> list[Variable]:
    seen, out = set(), []
    for key in graph.get_all_collection_keys():
        for item in graph.get_collection(key):
            if isinstance(item, Variable) and item.op not in seen:
                seen.add(item.op)
                out.append(item)
    return sorted(out, key=lambda v: v.op._id)


def _collection_item(item):
    if isinstance(item, Variable):
        return {"variable": item.op.name}
    if isinstance(item, Tensor):
        return {"tensor": item.name}
    if isinstance(item, Operation):
        return {"operation": item.name}
    try:
        return {"value": encode_value(item)}
    except _Unserializable:
        return None


def export_meta_graph(filename: str | None = None, graph: Graph | None = None,
                      collection_list=None, as_text: bool = True,
                      clear_devices: bool = False) -> dict:
    """Describe `graph` (default: the default graph) as a JSON-able dict; write it to
    `filename` too when given (atomically: a temporary file renamed into place).

    >>> doc = sg.train.export_meta_graph("model.json")     # doctest: +SKIP
    >>> doc["ops"][0]["name"]                               # doctest: +SKIP
    'x'

    `collection_list`: the collections to save (default: all). `as_text=False` writes compact
    JSON with no indentation. `clear_devices=True` leaves out the ops' devices (`sg.device`).
    Raises ValueError naming the op when an op cannot be saved (see the module docstring).
    """
    doc = graph_to_dict(graph, collection_list, clear_devices)
    if filename is not None:
        _write_json(filename, doc, as_text)
    return doc


def write_graph(graph_or_graph_def, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a graph (a `Graph`, its GraphDef, or a dict from `export_meta_graph`) as JSON to
    `logdir/name`,
    creating `logdir` if needed; returns the path. The file loads with `import_meta_graph`.

    >>> sg.train.write_graph(sg.get_default_graph(), "/tmp/run", "graph.json")  # doctest: +SKIP
    '/tmp/run/graph.json'
    """
    doc = getattr(graph_or_graph_def, "doc", graph_or_graph_def)  # (a GraphDef: its doc)
    if isinstance(doc, Graph):
        doc = graph_to_dict(doc)
    elif not isinstance(doc, dict):
        raise TypeError("write_graph takes a Graph, a GraphDef or a dict from "
                        f"export_meta_graph, got {type(doc).__name__}")
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    _write_json(path, doc, as_text)
    return path


def _write_json(path: str, doc: dict, as_text: bool) -> None:
    text = json.dumps(doc, indent=1 if as_text else None, allow_nan=False) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


# -- import -------------------------------------------------------------------------------------
def import_meta_graph(path_or_dict, import_scope: str | None = None, clear_devices: bool = False):
    """Rebuild a saved graph into the default graph; return a `Saver` over its global variables
    (None when it has none), as TF1 does.

    >>> saver = sg.train.import_meta_graph("model.json")       # doctest: +SKIP
    >>> with sg.Session() as sess:                              # doctest: +SKIP
    ...     saver.restore(sess, "ckpt/model")
    ...     sess.run("loss:0", {"x:0": batch})

    `path_or_dict`: a file written by `export_meta_graph`/`write_graph`, or the dict itself.
    `import_scope`: a prefix for every imported name ("scope/w"); the returned Saver still reads
    checkpoints under the original names. `clear_devices=True` drops the ops' devices. Ops
    are created through the normal path, so shapes are inferred and checked again; Variables
    are recreated with their initializers and collections, and the graph seed is set when the
    default graph has none. The fetches are
    found by name afterwards (`graph.get_tensor_by_name`, or the name given to `sess.run`).
    Raises `GraphFormatError` naming the op and field when the file is malformed (the ops
    built before the faulty one stay in the graph: import into a fresh `sg.Graph()` to discard
    them with it).
    """
    doc = _load(path_or_dict)
    graph = get_default_graph()
    prefix = "" if not import_scope else import_scope.rstrip("/") + "/"
    ops = _rebuild_ops(graph, doc, prefix, clear_devices)
    variables = _rebuild_variables(doc, ops)
    _rebuild_collections(graph, doc, ops, variables)
    seed = doc.get("seed")
    if seed is not None and not (isinstance(seed, int) and not isinstance(seed, bool)):
        raise GraphFormatError(f"field \"seed\": expected an int or null, got {_short(seed)}")
    if seed is not None and graph.seed is None:
        graph.seed = seed
    in_global = {id(v) for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)}
    global_vars = [v for v in variables.values() if id(v) in in_global]
    if not global_vars:
        return None
    from .train.saver import Saver
    return Saver({v.op.name[len(prefix):]: v for v in global_vars})


def _load(path_or_dict) -> dict:
    """The checked top level of a graph file (a path) or of its parsed dict. Any damage, from
    bad UTF-8 to nesting deeper than the JSON parser can follow, is a GraphFormatError."""
    if isinstance(path_or_dict, dict):
        return _checked(path_or_dict, "")
    path = os.fspath(path_or_dict)
    with open(path, "rb") as f:
        return load_document(f.read(), path)


def load_document(raw: bytes, label: str = "the graph document") -> dict:
    """The checked top level of a graph file's bytes (`label` names them in errors)."""
    try:
        text = raw.decode("utf-8")  # (json.loads would guess UTF-16 or -32 from bytes)
    except UnicodeDecodeError as e:
        raise GraphFormatError(f"{label} is not UTF-8 text (damaged?): {e}") from None
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise GraphFormatError(f"{label} nests its JSON deeper than the parser can follow "
                               "(damaged or hostile)") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, a 5000-digit number
        raise GraphFormatError(f"{label} is not valid JSON (truncated or damaged?): {e}") \
            from None
    return _checked(doc, f"{label}: ")


def _checked(doc, where: str) -> dict:
    if not isinstance(doc, dict):
        raise GraphFormatError(f"{where}a graph file holds a JSON object, got {type(doc).__name__}")
    if doc.get("format") != FORMAT:
        raise GraphFormatError(f"{where}field \"format\" is {_short(doc.get('format'))}, not "
                               f"{FORMAT!r}: this is not a staticgrad graph file")
    if doc.get("version") != VERSION:
        raise GraphFormatError(f"{where}field \"version\" is {_short(doc.get('version'))}; this "
                               f"staticgrad reads version {VERSION}")
    for key, kind in (("ops", list), ("variables", list), ("collections", dict)):
        if not isinstance(doc.get(key), kind):
            raise GraphFormatError(f"{where}field {key!r} is missing or not a JSON "
                                   f"{'array' if kind is list else 'object'}")
    return doc


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON (a graph file writes non-finite floats as strings)")


def _field(record, key: str, kinds, where: str):
    if not isinstance(record, dict):
        raise GraphFormatError(f"{where}: expected a JSON object, got {_short(record)}")
    if key not in record:
        raise GraphFormatError(f"{where}: missing field {key!r}")
    value = record[key]
    if not isinstance(value, kinds) or isinstance(value, bool) and kinds is not bool:
        raise GraphFormatError(f"{where}: field {key!r} has the wrong type "
                               f"({_short(value)})")
    return value


class _RegionDoc:
    """A region's record, decoded once the graph it belongs to is known (_rebuild_region)."""

    def __init__(self, enc: dict, where: str):
        self.enc, self.where = enc, where

    def __repr__(self):
        return "a sub-graph's record"


MAX_REGION_DEPTH = 32  # regions nest at most this deep (a loop in a branch in a loop ...)


def _clipped(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit - 60]}...{text[-40:]}"


def _rebuild_region(outer: Graph, region: _RegionDoc, label: str, holder: str, depth: int):
    """The Branch a region's record describes, its ops rebuilt into a closed sub-graph of
    `outer` (the graph being loaded, or the sub-graph around this one)."""
    enc, where = region.enc, _clipped(region.where)  # (each op's messages start with it:
    #                                                   a long name must not repeat in each)
    if depth >= MAX_REGION_DEPTH:
        raise GraphFormatError(f"{where}: regions nested more than {MAX_REGION_DEPTH} deep")
    records = _field(enc, "ops", list, where)
    g = BranchGraph(outer, label, holder)
    ops = _rebuild_ops(g, {"ops": records}, "", depth=depth + 1, where=f"{where}: ")
    try:  # (what the API refuses in a sub-graph, a file may not bring in)
        check_stateless(g, label, where, "a sub-graph")
    except ValueError as e:
        raise GraphFormatError(str(e)) from None

    def tensors(key, placeholders):
        out = []
        for ref in _field(enc, key, list, where):
            name, _, index = ref.rpartition(":") if isinstance(ref, str) else ("", "", "")
            op = ops.get(name)
            if op is None or not index.isdigit() or int(index) >= len(op.outputs) or (
                    placeholders and op.type != "Placeholder"):
                raise GraphFormatError(f"{where}: {key} {_short(ref)} names no "
                                       f"{'placeholder' if placeholders else 'tensor'} of the "
                                       "region")
            out.append(op.outputs[int(index)])
        return out

    inputs, outputs = tensors("inputs", True), tensors("outputs", False)
    placeholders = [op.outputs[0] for op in g.get_operations() if op.type == "Placeholder"]
    if len(set(inputs)) != len(inputs) or set(inputs) != set(placeholders):
        raise GraphFormatError(f"{where}: its inputs must name each of its placeholders once "
                               f"(it has {len(placeholders)}, the file names "
                               f"{len(inputs)} inputs, {len(set(inputs))} of them distinct)")
    g.finalize()
    return Branch(g, inputs, outputs)


def _rebuild_ops(graph: Graph, doc: dict, prefix: str, clear_devices: bool = False,
                 depth: int = 0, where: str = "") -> dict[str, Operation]:
    from .ops.attr_types import check_file_attrs
    from .ops.creation import create_operation
    from .ops.table import REGISTRY
    ops: dict[str, Operation] = {}

    def resolve_tensor(ref, where):
        if not isinstance(ref, str) or ":" not in ref:
            raise GraphFormatError(f"{where}: input {_short(ref)} is not an \"op:index\" "
                                   "reference")
        name, _, index = ref.rpartition(":")
        if name not in ops:
            raise GraphFormatError(f"{where}: input {ref!r} names no earlier op in the file")
        op = ops[name]
        if not index.isdigit() or int(index) >= len(op.outputs):
            raise GraphFormatError(f"{where}: input {ref!r}: op {name!r} has "
                                   f"{len(op.outputs)} outputs")
        return op.outputs[int(index)]

    outer_where = where
    for i, record in enumerate(doc["ops"]):
        where = f"{outer_where}op #{i}"
        name = _field(record, "name", str, where)
        where = f"{outer_where}op #{i} {name!r}"
        op_type = _field(record, "type", str, where)
        if op_type not in REGISTRY or REGISTRY[op_type].internal:  # (Transfer: the compiler's)
            raise GraphFormatError(f"{where}: unknown op type {op_type!r}")
        if name in ops:
            raise GraphFormatError(f"{where}: a second op with this name")
        inputs = [resolve_tensor(ref, where) for ref in _field(record, "inputs", list, where)]
        control = []
        for ref in _field(record, "control_inputs", list, where):
            if not isinstance(ref, str) or ref not in ops:
                raise GraphFormatError(f"{where}: control input {_short(ref)} names no earlier "
                                       "op in the file")
            control.append(ops[ref])
        attrs = {key: decode_value(value, f"{where} attr {key!r}")
                 for key, value in _field(record, "attrs", dict, where).items()}
        for key, value in attrs.items():
            if isinstance(value, _RegionDoc):
                attrs[key] = _rebuild_region(graph, value, key, f"{op_type} op {name!r} of a "
                                             "graph file", depth)
        try:
            check_file_attrs(op_type, REGISTRY[op_type].attrs, attrs)
        except TypeError as e:
            raise GraphFormatError(f"{where}: {e}") from None
        if isinstance(attrs.get("var"), str) and op_type != "VariableV2":
            # assignments name their variable: follow it to its new (scoped) name
            if attrs["var"] not in ops or ops[attrs["var"]].type != "VariableV2":
                raise GraphFormatError(f"{where} attr 'var': {attrs['var']!r} names no "
                                       "earlier variable op in the file")
            attrs["var"] = ops[attrs["var"]].name
        outputs = _field(record, "outputs", list, where)
        _mark_scopes_used(graph, prefix + name)
        taken = (prefix + name) in graph._by_name
        try:
            with graph.control_dependencies(None), graph.control_dependencies(control):
                op = create_operation(graph, op_type, inputs, attrs, prefix + name + "/")
        except (ValueError, TypeError, KeyError) as e:
            hint = "; import into a fresh graph or pass import_scope" if taken else ""
            raise GraphFormatError(f"{where}: cannot be rebuilt: {e}{hint}") from None
        _check_outputs(op, outputs, where)
        device = record.get("device")
        if device is not None and not clear_devices:
            try:
                op._set_device(_devices_field(device))
            except (TypeError, ValueError) as e:
                raise GraphFormatError(f"{where}: device {_short(device)}: {e}") from None
        location = record.get("location")
        if (isinstance(location, list) and len(location) == 2 and isinstance(location[0], str)
                and isinstance(location[1], int)):
            op.location = (location[0], location[1])
        ops[name] = op
    return ops


def _devices_field(device) -> str:
    if not isinstance(device, str):
        raise TypeError(f"a device is a str, got {type(device).__name__}")
    return device


def _mark_scopes_used(graph: Graph, name: str) -> None:
    """Later name scopes avoid the imported ones ('dense' after importing 'dense/kernel')."""
    parts = name.split("/")
    for k in range(1, len(parts)):
        graph._names_in_use.setdefault("/".join(parts[:k]).lower(), 1)


def _check_outputs(op: Operation, outputs: list, where: str) -> None:
    if len(outputs) != len(op.outputs):
        raise GraphFormatError(f"{where}: the file lists {len(outputs)} outputs, the op has "
                               f"{len(op.outputs)}")
    for k, (record, t) in enumerate(zip(outputs, op.outputs)):
        here = f"{where} output {k}"
        dtype = _decode_dtype(_field(record, "dtype", str, here), f"{here}.dtype")
        if "shape" not in record:
            raise GraphFormatError(f"{here}: missing field 'shape'")
        shape = decode_value({"type": "shape", "value": record["shape"]}, f"{here}.shape")
        if dtype is not t.dtype or not shape.is_compatible_with(t.shape):
            raise GraphFormatError(f"{here}: the file says {dtype.name} {shape}, but the op "
                                   f"rebuilt from its inputs and attrs gives {t.dtype.name} "
                                   f"{t.shape}")
        t.set_shape(shape)  # a shape refined after creation (set_shape) is refined again


def _rebuild_variables(doc: dict, ops: dict[str, Operation]) -> dict[str, Variable]:
    variables: dict[str, Variable] = {}

    def op_named(name, kind, where):
        if not isinstance(name, str) or name not in ops:
            raise GraphFormatError(f"{where}: {kind} {_short(name)} names no op in the file")
        return ops[name]

    for i, record in enumerate(doc["variables"]):
        where = f"variable #{i}"
        name = _field(record, "name", str, where)
        where = f"variable #{i} {name!r}"
        var_op = op_named(name, "name", where)
        if var_op.type != "VariableV2":
            raise GraphFormatError(f"{where}: op {name!r} is a {var_op.type}, not a VariableV2")
        init = op_named(_field(record, "initializer", str, where), "initializer", where)
        value_ref = _field(record, "initial_value", str, where)
        value_op = op_named(value_ref.rpartition(":")[0], "initial_value", where)
        index = value_ref.rpartition(":")[2]
        if not index.isdigit() or int(index) >= len(value_op.outputs):
            raise GraphFormatError(f"{where}: initial_value {value_ref!r} is not an output")
        v = Variable.__new__(Variable)
        v._tensor = var_op.outputs[0]
        v._var_name = var_op.name
        v._initial_value = value_op.outputs[int(index)]
        v._initializer = init
        v.trainable = _field(record, "trainable", bool, where)
        variables[name] = v
    return variables


def _rebuild_collections(graph: Graph, doc: dict, ops: dict[str, Operation],
                         variables: dict[str, Variable]) -> None:
    # collections whose readers (initializers, Saver, optimizers, get_global_step) call
    # Variable methods on every item: a file may put only variables in them
    variables_only = {GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES,
                      GraphKeys.LOCAL_VARIABLES, GraphKeys.MODEL_VARIABLES,
                      GraphKeys.GLOBAL_STEP}
    for key, items in doc["collections"].items():
        if not isinstance(items, list):
            raise GraphFormatError(f"collection {key!r}: expected a JSON array")
        values = []
        for i, item in enumerate(items):
            where = f"collection {key!r} item #{i}"
            if not isinstance(item, dict) or len(item) != 1:
                raise GraphFormatError(f"{where}: expected one of {{\"variable\"|\"tensor\"|"
                                       f"\"operation\"|\"value\": ...}}, got {_short(item)}")
            (kind, ref), = item.items()
            if key in variables_only and kind in ("tensor", "operation", "value"):
                raise GraphFormatError(f"{where}: {key!r} holds only variables, but the file "
                                       f"puts {kind} {_short(ref)} in it")
            if kind == "variable":
                if not isinstance(ref, str) or ref not in variables:
                    raise GraphFormatError(f"{where}: {_short(ref)} is not a saved variable")
                values.append(variables[ref])
            elif kind == "operation":
                if not isinstance(ref, str) or ref not in ops:
                    raise GraphFormatError(f"{where}: {_short(ref)} names no op in the file")
                values.append(ops[ref])
            elif kind == "tensor":
                name, _, index = ref.rpartition(":") if isinstance(ref, str) else ("", "", "")
                if name not in ops or not index.isdigit() or int(index) >= len(
                        ops[name].outputs):
                    raise GraphFormatError(f"{where}: {_short(ref)} names no tensor in the file")
                values.append(ops[name].outputs[int(index)])
            elif kind == "value":
                value = decode_value(ref, where)
                if isinstance(value, _RegionDoc):
                    raise GraphFormatError(f"{where}: a sub-graph belongs only in an op's "
                                           "attribute")
                values.append(value)
            else:
                raise GraphFormatError(f"{where}: unknown item kind {kind!r}")
        for value in values:
            graph.add_to_collection(key, value)
