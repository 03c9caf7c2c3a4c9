"""String ops: TF1's byte strings (`sg.string`), built and run as every other op.

    greeting = sg.constant("Hello, TensorFlow!")       # a fetched scalar string is bytes
    name = sg.placeholder(sg.string, [None])
    line = sg.string_join([greeting, name], separator=" ")
    label = sg.as_string(sg.argmax(logits, 1))          # numbers as text, printf's way
    sg.strings.length(line), sg.strings.upper(line), sg.strings.to_number(["1.5"])

A string tensor's value is a NumPy object array of `bytes`; its ops run in the Python process
(`host_only`), element by element (runtime_strings.py). A string reaches generated code only
through the constants table (a `Const`'s value) or as a feed, never as source text: the
separators, fills and patterns these ops take are attributes of declared types
(`Bytes`, `Choice`, `Text`), written into code as literals. No string op has a gradient.

Departures from TF1, for what TF1 offers and these do not: `regex_replace` and
`regex_full_match` take the pattern as a Python str (TF1 also takes a tensor), with Python's
`re` syntax, which agrees with RE2's on the common forms; `strings.split` (a SparseTensor in
TF1) is not offered.
"""

from __future__ import annotations

import re

from .. import dtypes as _dt
from ..shapes import TensorShape, broadcast_shapes
from . import math_ops as M
from .attr_types import Bool, Bytes, Choice, DType, Int, Ints, Optional, Text
from .conversion import convert_to_tensor
from .creation import apply1
from .table import register


def _check_strings(ctx, i=0):
    if not ctx.in_dtypes[i].is_string:
        raise TypeError(f"input {i} has dtype {ctx.in_dtypes[i].name}, but {ctx.type} needs "
                        "strings (dtype string)")


def _strings_like(ctx):
    _check_strings(ctx)
    return [(ctx.in_shapes[0], _dt.string)]


def _string_op(op_type, infer, numpy, doc, attrs=None, arity=1):
    register(op_type, infer, numpy, None, differentiable=False, host_only=True,
             new_array=True, attrs=attrs or {}, arity=arity, doc=doc)


# -- numbers to text --------------------------------------------------------------------------

def _as_string_infer(ctx):
    M.check_kind(ctx, 0, "fib")
    a, dtype = ctx.attrs, ctx.in_dtypes[0]
    if a["scientific"] and a["shortest"]:
        raise ValueError("cannot select both scientific and shortest notation")
    if not dtype.is_floating and (a["scientific"] or a["shortest"] or a["precision"] >= 0):
        raise ValueError(f"precision, scientific and shortest are for floats, not "
                         f"{dtype.name}")
    if dtype.is_bool and (a["width"] >= 0 or a["fill"]):
        raise ValueError("width and fill are not for bools")
    return [(ctx.in_shapes[0], _dt.string)]


_string_op("AsString", _as_string_infer,
           "rt.as_string({0}, {precision}, {scientific}, {shortest}, {width}, {fill})",
           "each number as text (printf's %d, %f, %e or %g)",
           attrs={"precision": Int(lo=-1, hi=1000), "scientific": Bool(), "shortest": Bool(),
                  "width": Int(lo=-1, hi=1000), "fill": Choice("", " ", "+", "-", "0", "#")})


def as_string(input, precision=-1, scientific=False, shortest=False,  # noqa: A002 - TF1's
              width=-1, fill="", name=None):
    """Each element of `input` as a string, as TF1: integers as %d, floats as %f (%e with
    `scientific`, %g with `shortest`) with `precision` digits after the point, each padded
    to `width` with `fill` (a printf flag: ' ', '0', '-'...), bools as b"true"/b"false".

    >>> as_string(3.5)  # b'3.500000' once run                                 # doctest: +SKIP
    """
    return apply1("AsString", [convert_to_tensor(input)],
                  {"precision": precision, "scientific": scientific, "shortest": shortest,
                   "width": width, "fill": fill}, name=name or "AsString")


# -- joining ------------------------------------------------------------------------------------

def _join_infer(ctx):
    shape = TensorShape([])
    for i in range(len(ctx.in_dtypes)):
        _check_strings(ctx, i)
        if ctx.in_shapes[i].ndims != 0:  # TF1: scalars repeat, the rest share one shape
            if shape.ndims == 0:
                shape = ctx.in_shapes[i]
            elif not shape.is_compatible_with(ctx.in_shapes[i]):
                raise ValueError(f"input {i} has shape {ctx.in_shapes[i]}, where the inputs "
                                 f"before it have {shape}: the inputs must be scalars or all "
                                 "of one shape")
            else:
                shape = broadcast_shapes([shape, ctx.in_shapes[i]])
    return [(shape, _dt.string)]


_string_op("StringJoin", _join_infer, lambda a, ctx: (
    f"rt.string_join({ctx.lit('separator')}, {', '.join(a)})"),
    "the inputs' strings joined, position by position", attrs={"separator": Bytes()},
    arity=(1, None))


def string_join(inputs, separator="", name=None):
    """The strings of `inputs` joined by `separator`, position by position (scalars are
    repeated): `string_join(["a", x], "-")`."""
    if not isinstance(inputs, list | tuple) or not inputs:
        raise TypeError(f"string_join takes a non-empty list of string tensors, got "
                        f"{inputs!r:.60}")
    tensors = [convert_to_tensor(x) for x in inputs]
    return apply1("StringJoin", tensors, {"separator": separator}, name=name or "StringJoin")


def _reduce_join_infer(ctx):
    _check_strings(ctx)
    dims, axis = ctx.in_shapes[0].dims, ctx.attrs["axis"]
    if dims is None:
        return [(TensorShape(None), _dt.string)]
    rank = len(dims)
    axes = range(rank) if axis is None else axis
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"axis {a} is out of range for a tensor of rank {rank}")
    joined = {a % rank for a in axes}
    if len(joined) < len(axes):
        raise ValueError(f"axis {list(axes)} names an axis twice (rank {rank})")
    keep = ctx.attrs["keep_dims"]
    out = [1 if i in joined else d for i, d in enumerate(dims) if keep or i not in joined]
    return [(TensorShape(out), _dt.string)]


_string_op("ReduceJoin", _reduce_join_infer,
           "rt.reduce_join({0}, {axis}, {keep_dims}, {separator})",
           "the strings joined along axes",
           attrs={"axis": Optional(Ints()), "keep_dims": Bool(), "separator": Bytes()})


def reduce_join(inputs, axis=None, keep_dims=False, separator="", name=None):
    """The strings of `inputs` joined along `axis` (an int, a list, or None for all), the
    first axis listed varying fastest, as in TF1: with a = [["a", "b"], ["c", "d"]],
    `reduce_join(a, 1)` is [b"ab", b"cd"], `reduce_join(a, [0, 1])` b"acbd" and
    `reduce_join(a)` b"abcd"."""
    if axis is not None:
        axis = (axis,) if isinstance(axis, int) else tuple(axis)
    return apply1("ReduceJoin", [convert_to_tensor(inputs)],
                  {"axis": axis, "keep_dims": keep_dims, "separator": separator},
                  name=name or "ReduceJoin")


# -- one string at a time ----------------------------------------------------------------------

def _length_infer(ctx):
    _check_strings(ctx)
    return [(ctx.in_shapes[0], _dt.int32)]


_UNIT = Choice("BYTE", "UTF8_CHAR")
_string_op("StringLength", _length_infer, "rt.string_length({0}, {unit})",
           "each string's length in bytes or UTF-8 characters", attrs={"unit": _UNIT})
_string_op("StringLower", _strings_like, "rt.string_lower({0}, {encoding})",
           "each string in lower case", attrs={"encoding": Choice("", "utf-8")})
_string_op("StringUpper", _strings_like, "rt.string_upper({0}, {encoding})",
           "each string in upper case", attrs={"encoding": Choice("", "utf-8")})
_string_op("StringStrip", _strings_like, "rt.string_strip({0})",
           "each string without leading and trailing whitespace")


def string_length(input, name=None, unit="BYTE"):  # noqa: A002 - TF1's name
    """The length of each string: in bytes, or in UTF-8 characters with unit="UTF8_CHAR"."""
    return apply1("StringLength", [convert_to_tensor(input)], {"unit": unit},
                  name=name or "StringLength")


def lower(input, encoding="", name=None):  # noqa: A002 - TF1's name
    """Each string in lower case: ASCII letters only, or all with encoding="utf-8"."""
    return apply1("StringLower", [convert_to_tensor(input)], {"encoding": encoding},
                  name=name or "StringLower")


def upper(input, encoding="", name=None):  # noqa: A002 - TF1's name
    """Each string in upper case: ASCII letters only, or all with encoding="utf-8"."""
    return apply1("StringUpper", [convert_to_tensor(input)], {"encoding": encoding},
                  name=name or "StringUpper")


def string_strip(input, name=None):  # noqa: A002 - TF1's name
    """Each string without its leading and trailing whitespace."""
    return apply1("StringStrip", [convert_to_tensor(input)], name=name or "StringStrip")


def _substr_infer(ctx):
    _check_strings(ctx)
    for i, what in ((1, "pos"), (2, "len")):
        if not ctx.in_dtypes[i].is_integer:
            raise TypeError(f"{what} has dtype {ctx.in_dtypes[i].name}, but Substr needs "
                            "integers")
    try:
        shape = broadcast_shapes(ctx.in_shapes)
    except ValueError:
        raise ValueError(f"the shapes {ctx.in_shapes[0]} of the strings, {ctx.in_shapes[1]} "
                         f"of pos and {ctx.in_shapes[2]} of len cannot be broadcast together"
                         ) from None
    return [(shape, _dt.string)]


_string_op("Substr", _substr_infer, "rt.substr({0}, {1}, {2}, {unit})",
           "the part of each string of a length from a position", attrs={"unit": _UNIT},
           arity=3)


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002 - TF1's names
    """The `len` bytes (UTF-8 characters with unit="UTF8_CHAR") of each string from `pos`
    (counted from the end where negative); pos and len broadcast against the strings. A
    position past the string's end is an error at run time, as in TF1."""
    inputs = [convert_to_tensor(input), convert_to_tensor(pos, dtype_hint=_dt.int32),
              convert_to_tensor(len, dtype_hint=_dt.int32)]
    return apply1("Substr", inputs, {"unit": unit}, name=name or "Substr")


_NUMBER_TYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)


def _to_number_infer(ctx):
    _check_strings(ctx)
    dtype = ctx.attrs["out_type"]
    if dtype not in _NUMBER_TYPES:
        raise TypeError(f"out_type must be one of {', '.join(d.name for d in _NUMBER_TYPES)}, "
                        f"got {dtype.name}")
    return [(ctx.in_shapes[0], dtype)]


_string_op("StringToNumber", _to_number_infer, "rt.string_to_number({0}, {out_type})",
           "each string read as a number", attrs={"out_type": DType()})


def string_to_number(string_tensor, out_type=_dt.float32, name=None):
    """Each string read as a number of `out_type` (float32, float64, int32 or int64); a
    string that is not one is an error at run time, in TF1's words."""
    return apply1("StringToNumber", [convert_to_tensor(string_tensor)],
                  {"out_type": _dt.as_dtype(out_type)}, name=name or "StringToNumber")


# -- regular expressions ----------------------------------------------------------------------

def _regex_infer(out_dtype):
    def infer(ctx):
        _check_strings(ctx)
        try:
            re.compile(ctx.attrs["pattern"].encode("utf-8"))
        except (re.error, UnicodeEncodeError) as e:  # (a lone surrogate: not UTF-8)
            raise ValueError(f"the pattern {ctx.attrs['pattern']!r:.60} is not a regular "
                             f"expression: {e}") from None
        return [(ctx.in_shapes[0], out_dtype or _dt.string)]
    return infer


_string_op("RegexReplace", _regex_infer(None),
           "rt.regex_replace({0}, {pattern}, {rewrite}, {replace_global})",
           "each string with the matches of a pattern replaced",
           attrs={"pattern": Text(max_length=1000), "rewrite": Bytes(),
                  "replace_global": Bool()})
_string_op("RegexFullMatch", _regex_infer(_dt.bool_), "rt.regex_full_match({0}, {pattern})",
           "whether each whole string matches a pattern",
           attrs={"pattern": Text(max_length=1000)})


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    r"""Each string with the matches of `pattern` (a Python str, `re` syntax) replaced by
    `rewrite`, where \1 stands for a group and \0 for the match: every match, or only the
    first with replace_global=False."""
    return apply1("RegexReplace", [convert_to_tensor(input)],
                  {"pattern": pattern, "rewrite": rewrite, "replace_global": replace_global},
                  name=name or "RegexReplace")


def regex_full_match(input, pattern, name=None):  # noqa: A002 - TF1's name
    """Whether each whole string matches `pattern` (a Python str, `re` syntax): a bool
    tensor."""
    return apply1("RegexFullMatch", [convert_to_tensor(input)], {"pattern": pattern},
                  name=name or "RegexFullMatch")
