"""The nested structures of tensors that control-flow functions take and return (tuples,
lists, dicts, namedtuples, defaultdicts, at any depth), flattened to their tensors in one
order and packed back; dict keys in sorted order (by repr where they do not sort)."""

from __future__ import annotations

import collections

from .tensor_array import TensorArray


def _keys(mapping) -> list:
    """A dict's keys in the order both branches' dicts agree on: sorted (by repr where they
    do not sort, keys of mixed types)."""
    try:
        return sorted(mapping)
    except TypeError:
        return sorted(mapping, key=repr)


def _is_array(value) -> bool:
    """A TensorArray (tensor_array.py): one leaf, its buffer."""
    return isinstance(value, TensorArray)


def dynamic_flows(structure) -> set:
    """id() of the buffers of the dynamic_size TensorArrays in `structure` (their first dim
    may change from one iteration of a loop to the next)."""
    return {id(v.flow) for v in _arrays(structure) if v.dynamic_size and not v.waiting}


def _arrays(structure) -> list:
    if _is_array(structure):
        return [structure]
    if isinstance(structure, dict):
        return [a for k in _keys(structure) for a in _arrays(structure[k])]
    if isinstance(structure, list | tuple):
        return [a for item in structure for a in _arrays(item)]
    return []


def flatten(structure) -> list:
    """The leaves of `structure`: its tensors, and the buffer of each TensorArray (or the
    array itself while it waits for its element shape: see while_loop)."""
    if _is_array(structure):
        return [structure if structure.waiting else structure.flow]
    if isinstance(structure, dict):
        return [v for k in _keys(structure) for v in flatten(structure[k])]
    if isinstance(structure, list | tuple):
        return [v for item in structure for v in flatten(item)]
    return [structure]


def shape_of(structure, loose: bool = False):
    """The structure with every leaf made alike: two branches' must be equal. `loose`: a
    list and a tuple of the same items alike (a loop body may return either, as in TF1)."""
    if _is_array(structure):
        return "TensorArray"
    if isinstance(structure, dict):
        return ("dict", tuple((k, shape_of(structure[k], loose)) for k in _keys(structure)))
    if isinstance(structure, list | tuple):
        kind = type(structure).__qualname__
        if loose and type(structure) in (list, tuple):
            kind = "sequence"
        return (kind, tuple(shape_of(v, loose) for v in structure))
    return "tensor"


def describe(structure) -> str:
    if _is_array(structure):
        return "a TensorArray"
    if isinstance(structure, dict):
        return "{" + ", ".join(f"{k!r}: {describe(structure[k])}"
                               for k in _keys(structure)) + "}"
    if isinstance(structure, list):
        return "[" + ", ".join(describe(v) for v in structure) + "]"
    if isinstance(structure, tuple):
        items = ", ".join(describe(v) for v in structure)
        if hasattr(structure, "_fields"):
            return f"{type(structure).__qualname__}({items})"
        return f"({items}{',' if len(structure) == 1 else ''})"
    return "a tensor"


def pack(structure, leaves):
    if _is_array(structure):  # the same array around its new buffer
        return structure._with(next(leaves))
    if isinstance(structure, dict):
        packed = {k: pack(structure[k], leaves) for k in _keys(structure)}
        items = [(k, packed[k]) for k in structure]
        if isinstance(structure, collections.defaultdict):
            return type(structure)(structure.default_factory, items)
        try:
            return type(structure)(items)
        except TypeError:  # a dict subclass that is not made from pairs
            return dict(items)
    if isinstance(structure, list):
        return [pack(v, leaves) for v in structure]
    if isinstance(structure, tuple):
        items = [pack(v, leaves) for v in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    return next(leaves)


def unpacked(out, strict: bool):
    if not strict and isinstance(out, list | tuple) and not hasattr(out, "_fields") \
            and len(out) == 1:
        return out[0]
    return out


def matched(result, like, label: str, what: str, where: str):
    """`result` (what `label`, a user's function, returned) checked to have the structure of
    `like` (`what`: "loop_vars"); a lone tensor for a list or tuple of one is taken as that
    list, and lists and tuples stand for each other, as in TF1."""
    if isinstance(like, list | tuple) and len(like) == 1 and not hasattr(like, "_fields") \
            and not isinstance(result, list | tuple | dict):
        result = type(like)([result])
    if shape_of(result, loose=True) != shape_of(like, loose=True):
        raise ValueError(f"{where}: {label} must return the structure of {what}, "
                         f"{describe(like)}; it returned {describe(result)}")
    return result
