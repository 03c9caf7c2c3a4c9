"""`save` and `load` (PyTorch's `torch.save` / `torch.load`) for tensors and state dicts,
in a file that is data only: nothing is pickled, so loading a file can run no code.

The file is an `.npz` archive (staticgrad's checkpoint format: train/checkpoint_format.py)
holding one `.npy` entry per tensor ("t0", "t1"...) and the entry ":structure", the UTF-8
bytes of a JSON document that says how they nest:

    {"format": "staticgrad-dynamic-save", "version": 1, "value": <value>}

where a <value> is JSON's null, true/false, a number or a string for Python's None, bools,
ints, finite floats and strings; {"float": "nan" | "inf" | "-inf"}; {"list": [<value>...]};
{"tuple": [...]}; {"dict": [[<key>, <value>]...]} (a key: None, bool, number or string); or
{"tensor": "t0", "requires_grad": false} (a tensor saved twice is one entry, and loads as one
tensor). It is written atomically (a temporary file renamed over the path: atomic_files.py).

`load` checks everything before it trusts it: a truncated file, one that is not a zip, a
damaged or hostile entry (Python objects that would need unpickling, a shape that its bytes
do not fill...) raise checkpoint_format's DataLossError naming the file and entry; so does a
structure that is not JSON, is nested deeper than MAX_DEPTH, has a node of unknown form, or
names an entry the archive lacks.

>>> dy.save({"model": model.state_dict(), "optim": opt.state_dict()}, "ckpt.npz")  # doctest: +SKIP
>>> opt.load_state_dict(dy.load("ckpt.npz")["optim"])                             # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from ..errors import DataLossError
from ..train.atomic_files import atomic_write
from ..train.checkpoint_format import open_archive, write_npz
from .creation import from_numpy
from .tensor import Tensor

FORMAT = "staticgrad-dynamic-save"
VERSION = 1
STRUCTURE = ":structure"  # the JSON entry's name (a tensor's entry is t<number>)
MAX_DEPTH = 100           # nesting beyond this is damage, not a state dict
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_KEY_TYPES = (type(None), bool, int, float, str)


def save(obj, f) -> None:
    """Write `obj` -- a tensor, or dicts, lists and tuples of tensors, numbers, strings, bools
    and None (a state_dict) -- to the file at path `f`, atomically.

    >>> dy.save(model.state_dict(), "model.npz")        # doctest: +SKIP
    """
    arrays: dict[str, np.ndarray] = {}
    names: dict[int, str] = {}  # id(tensor) -> its entry (a tensor saved twice is one entry)

    def encode(value, depth):
        if depth > MAX_DEPTH:
            raise ValueError(f"dy.save: the object is nested deeper than {MAX_DEPTH} levels")
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(value, Tensor):
            if id(value) not in names:
                names[id(value)] = f"t{len(names)}"
                arrays[names[id(value)]] = value._data
            return {"tensor": names[id(value)], "requires_grad": value.requires_grad}
        if isinstance(value, list | tuple):
            kind = "list" if isinstance(value, list) else "tuple"
            return {kind: [encode(v, depth + 1) for v in value]}
        if isinstance(value, dict):
            for key in value:
                if not isinstance(key, _KEY_TYPES):
                    raise TypeError(f"dy.save: a dict key must be None, a bool, a number or a "
                                    f"string, not {type(key).__name__} ({key!r})")
            return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)]
                             for k, v in value.items()]}
        raise TypeError(_unsavable(value))

    doc = {"format": FORMAT, "version": VERSION, "value": encode(obj, 0)}
    text = json.dumps(doc, allow_nan=False, ensure_ascii=False).encode("utf-8")
    arrays[STRUCTURE] = np.frombuffer(text, np.uint8)
    atomic_write(os.fspath(_path(f, "save")), lambda file: write_npz(file, arrays))


def _unsavable(value) -> str:
    kind = type(value).__name__
    if callable(getattr(value, "state_dict", None)):
        return (f"dy.save cannot save a {kind}: it saves tensors, numbers, strings and "
                f"dicts/lists of them, never objects (that would need pickling). Save its "
                f"state_dict() instead: dy.save(model.state_dict(), path), and load it with "
                f"model.load_state_dict(dy.load(path))")
    return (f"dy.save cannot save a {kind}: it saves tensors, numbers, strings, bools, None "
            "and dicts/lists/tuples of them")


def load(f, map_location=None, weights_only: bool = True):
    """What `save` wrote to the file at path `f`; DataLossError naming the file and entry if
    it is damaged. Nothing is ever unpickled (`weights_only` is always in effect);
    `map_location` may only be None or "cpu".

    >>> model.load_state_dict(dy.load("model.npz"))     # doctest: +SKIP
    """
    if map_location not in (None, "cpu"):
        raise ValueError(f"dy.load: map_location must be None or 'cpu' (the dynamic mode runs "
                         f"on the CPU), got {map_location!r}")
    path = os.fspath(_path(f, "load"))
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "No such file", path)
    with open_archive(path) as archive:
        entries = set(archive.names)

        def damaged(what: str):
            return DataLossError(None, None, f"dy.load: file {path}: {what}")
        if STRUCTURE not in entries:
            raise damaged(f"no {STRUCTURE!r} entry: not a file that dy.save wrote")
        raw = archive.read(STRUCTURE)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise damaged(f"entry {STRUCTURE!r} is {raw.dtype} of shape {raw.shape}, not the "
                          "bytes of a JSON document")
        try:
            doc = json.loads(raw.tobytes().decode("utf-8"))
        except (ValueError, RecursionError) as e:  # (UnicodeDecodeError is a ValueError)
            raise damaged(f"entry {STRUCTURE!r} is not valid JSON ({type(e).__name__}: "
                          f"{e})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or "value" not in doc:
            raise damaged(f"entry {STRUCTURE!r} is not a dy.save structure (no \"format\": "
                          f"{FORMAT!r})")
        if doc.get("version") != VERSION or isinstance(doc.get("version"), bool):
            raise damaged(f"entry {STRUCTURE!r} is version {doc.get('version')!r}; this "
                          f"staticgrad reads version {VERSION}")
        loaded: dict[str, Tensor] = {}

        def tensor(name, requires_grad, where):
            if not isinstance(name, str) or name == STRUCTURE or not isinstance(
                    requires_grad, bool):
                raise damaged(f"{where} is not a tensor reference")
            if name not in entries:
                raise damaged(f"{where} refers to entry {name!r}, which the file lacks")
            if name not in loaded:
                array = archive.read(name)
                if array.dtype.kind not in "biuf":
                    raise damaged(f"entry {name!r} holds {array.dtype} values, which the "
                                  "dynamic mode has no tensor for")
                t = from_numpy(array)
                if requires_grad and not t.is_floating_point():
                    raise damaged(f"entry {name!r} requires grad but holds {array.dtype}")
                loaded[name] = t.requires_grad_(requires_grad)
            return loaded[name]

        def decode(node, where, depth):
            if depth > MAX_DEPTH:
                raise damaged(f"entry {STRUCTURE!r} is nested deeper than {MAX_DEPTH} levels "
                              f"(at {where})")
            if node is None or isinstance(node, bool | int | float | str):
                return node
            if not isinstance(node, dict) or len(node) not in (1, 2):
                raise damaged(f"entry {STRUCTURE!r}: {where} is not a saved value "
                              f"({_brief(node)})")
            if len(node) == 2:
                if "tensor" not in node:
                    raise damaged(f"entry {STRUCTURE!r}: {where} is not a saved value "
                                  f"({_brief(node)})")
                return tensor(node["tensor"], node.get("requires_grad"), where)
            [(kind, body)] = node.items()
            if kind == "float" and body in _NON_FINITE:
                return _NON_FINITE[body]
            if kind in ("list", "tuple") and isinstance(body, list):
                items = [decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(body)]
                return items if kind == "list" else tuple(items)
            if kind == "dict" and isinstance(body, list):
                out = {}
                for i, pair in enumerate(body):
                    if not (isinstance(pair, list) and len(pair) == 2):
                        raise damaged(f"entry {STRUCTURE!r}: {where} item {i} is not a "
                                      "[key, value] pair")
                    key = decode(pair[0], f"{where} key {i}", depth + 1)
                    if not isinstance(key, _KEY_TYPES):
                        raise damaged(f"entry {STRUCTURE!r}: {where} key {i} is a "
                                      f"{type(key).__name__}")
                    out[key] = decode(pair[1], f"{where}[{key!r}]", depth + 1)
                return out
            raise damaged(f"entry {STRUCTURE!r}: {where} is not a saved value "
                          f"({_brief(node)})")

        return decode(doc["value"], "value", 0)


def _path(f, what: str):
    if not isinstance(f, str | bytes | os.PathLike):
        raise TypeError(f"dy.{what} takes a file path (str or os.PathLike), not "
                        f"{type(f).__name__}")
    return f


def _brief(node, limit: int = 60) -> str:
    text = json.dumps(node)
    return text if len(text) <= limit else text[:limit - 3] + "..."
