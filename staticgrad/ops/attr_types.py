"""Declared attribute types: what each op attribute may hold, and how it is written into source.

Every attribute of every op has a type, declared in the op's `register(..., attrs={...})`
call. A value is checked against it wherever it enters (the Python API and the dynamic mode
through `create_operation`, graph files through the same path, the compiler's own rewrites
through `ir.make_node`, the ONNX exporter before it writes), and becomes a *canonical* value:
a Python `int`, `float` or `bool`, a tuple of those, `None`, `Ellipsis`, a `DType`, a
`TensorShape`, a read-only NumPy array, or a string from a closed set or matching a name
pattern. Renderers write an attribute into generated source only through `literal`, which
re-checks the value and prints it from its type (`repr` of an int, `np.inf` for an infinite
float, `np.float32` for a dtype): no text a user or a file supplied is ever pasted into code.

    >>> Int(lo=0).check(np.int64(3)), Int(lo=0).literal(3)
    (3, '3')
    >>> Float().literal(float("-inf"))
    '(-np.inf)'
    >>> Choice("SAME", "VALID").check("import os")
    Traceback (most recent call last):
    ValueError: must be one of 'SAME', 'VALID', got 'import os'

Some types hold in-process Python objects (a custom gradient's function): they never reach
generated source, and a graph file may not carry them (`in_files` is False).
"""

from __future__ import annotations

import math
import re

import numpy as np

from .. import dtypes as _dt
from ..shapes import TensorShape

MAX_INT = 1 << 62    # the largest magnitude of an int attr (sizes, counts); dims fit a C long
MAX_RANK = 64        # NumPy's limit on dimensions: bounds axes, perms and index specs
_REQUIRED = object()
ABSENT = object()    # a default that leaves an attr out when it is not given

# an op or variable name: what graph.check_op_name accepts (no quotes, no newline)
_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*")


def show(value, limit: int = 60) -> str:
    """A short, printable description of a value for an error message."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not hide the real error
        text = "<unprintable>"
    text = text if len(text) <= limit else text[:limit - 3] + "..."
    return f"{type(value).__name__} {text}"


class AttrType:
    """One attribute's type. `check(value)` returns the canonical value or raises TypeError
    (wrong kind) or ValueError (right kind, bad value); `literal(value)` is its Python source.
    """

    describe = "a value"
    in_files = True      # may a graph file carry it (False: in-process Python objects)

    def __init__(self, default=_REQUIRED):
        self.default = default

    def check(self, value):
        raise NotImplementedError

    def literal(self, value) -> str:
        raise TypeError(f"{self.describe} has no source form")

    def example(self):
        """A valid value (for tests that try every attribute of every op)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe})"


def _is_int(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


class Int(AttrType):
    def __init__(self, lo: int = -MAX_INT, hi: int = MAX_INT, **kw):
        super().__init__(**kw)
        self.lo, self.hi = lo, hi
        self.describe = "an int" if (lo, hi) == (-MAX_INT, MAX_INT) else \
            f"an int in [{lo}, {hi}]"

    def check(self, value) -> int:
        if not _is_int(value):
            raise TypeError(f"must be an int, got {show(value)}")
        value = int(value)
        if not self.lo <= value <= self.hi:
            raise ValueError(f"must be an int in [{self.lo}, {self.hi}], got {value}")
        return value

    def literal(self, value) -> str:
        return repr(self.check(value))

    def example(self) -> int:
        return min(max(1, self.lo), self.hi)


def Axis(**kw) -> Int:  # noqa: N802 - a type, spelled as the others are
    """An axis: an int in [-64, 63] (the shape rule checks it against the input's rank)."""
    return Int(-MAX_RANK, MAX_RANK - 1, **kw)


def _float(value) -> float:
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"must be a float, got an int too large for one ({show(value)[:20]}"
                         "...)") from None


def float_literal(value: float) -> str:
    """Source for a Python float: `0.5`, `(-2.0)`, `np.inf`, `(-np.inf)`, `np.nan`."""
    if math.isnan(value):
        return "np.nan"
    if math.isinf(value):
        return "np.inf" if value > 0 else "(-np.inf)"
    text = repr(float(value))
    return f"({text})" if text.startswith("-") else text


class Float(AttrType):
    describe = "a float"

    def check(self, value) -> float:
        if isinstance(value, bool | np.bool_) or not isinstance(
                value, int | float | np.integer | np.floating):
            raise TypeError(f"must be a float, got {show(value)}")
        return _float(value)

    def literal(self, value) -> str:
        return float_literal(self.check(value))

    def example(self) -> float:
        return 0.5


class Bool(AttrType):
    describe = "a bool"

    def check(self, value) -> bool:
        if not isinstance(value, bool | np.bool_):
            raise TypeError(f"must be a bool, got {show(value)}")
        return bool(value)

    def literal(self, value) -> str:
        return repr(self.check(value))

    def example(self) -> bool:
        return False


class Number(AttrType):
    """A bool, int or float scalar that keeps its Python kind (a fill value, a bound)."""

    describe = "a number"

    def check(self, value):
        if isinstance(value, bool | np.bool_):
            return bool(value)
        if _is_int(value):
            value = int(value)
            if abs(value) > 1 << 64:
                raise ValueError(f"must be a number below 2**64 in magnitude, got {value}")
            return value
        if isinstance(value, float | np.floating):
            return _float(value)
        raise TypeError(f"must be a bool, int or float, got {show(value)}")

    def literal(self, value) -> str:
        value = self.check(value)
        if isinstance(value, float):
            return float_literal(value)
        text = repr(value)
        return f"({text})" if text.startswith("-") else text

    def example(self) -> float:
        return 1.0


class Ints(AttrType):
    """A tuple of ints (a list or a 1-D integer array is accepted and becomes a tuple)."""

    def __init__(self, length: int | None = None, lo: int = -MAX_INT, hi: int = MAX_INT,
                 max_length: int = MAX_RANK, **kw):
        super().__init__(**kw)
        self.length, self.max_length = length, max_length
        self.item = Int(lo, hi)
        count = f"{length} " if length is not None else ""
        self.describe = f"a tuple of {count}ints" + (
            "" if (lo, hi) == (-MAX_INT, MAX_INT) else f" in [{lo}, {hi}]")

    def check(self, value) -> tuple:
        if isinstance(value, np.ndarray) and value.ndim == 1:
            value = value.tolist()
        if not isinstance(value, tuple | list):
            raise TypeError(f"must be {self.describe}, got {show(value)}")
        if self.length is not None and len(value) != self.length:
            raise ValueError(f"must be {self.describe}, got {len(value)} items")
        if len(value) > self.max_length:
            raise ValueError(f"must have at most {self.max_length} items, got {len(value)}")
        try:
            return tuple(self.item.check(v) for v in value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"must be {self.describe}: an item {e}") from None

    def literal(self, value) -> str:
        return repr(self.check(value))

    def example(self) -> tuple:
        return (self.item.example(),) * (1 if self.length is None else self.length)


class Optional(AttrType):
    """None, or a value of another type."""

    def __init__(self, inner: AttrType, **kw):
        super().__init__(**kw)
        self.inner = inner
        self.describe = f"None or {inner.describe}"

    def check(self, value):
        return None if value is None else self.inner.check(value)

    def literal(self, value) -> str:
        return "None" if value is None else self.inner.literal(value)

    def example(self):
        return self.inner.example()


_DTYPE_IDS = frozenset(id(d) for d in _dt.ALL)


class DType(AttrType):
    describe = "a dtype"

    def check(self, value) -> _dt.DType:
        if id(value) not in _DTYPE_IDS:  # (the dtypes themselves, never a look-alike)
            raise TypeError(f"must be a staticgrad dtype ({', '.join(d.name for d in _dt.ALL)})"
                            f", got {show(value)}")
        return value

    def literal(self, value) -> str:
        value = self.check(value)
        return ("np.bool_" if value.is_bool else "np.object_" if value.is_string
                else f"np.{value.name}")

    def example(self) -> _dt.DType:
        return _dt.float32


class DTypes(AttrType):
    """A tuple of dtypes (a list is accepted), written into source as a tuple of names."""

    describe = "a tuple of dtypes"

    def check(self, value) -> tuple:
        if not isinstance(value, tuple | list) or len(value) > 1024:
            raise TypeError(f"must be {self.describe}, got {show(value)}")
        return tuple(DType().check(v) for v in value)

    def literal(self, value) -> str:
        return "(" + "".join(f"{DType().literal(d)}, " for d in self.check(value)) + ")"

    def example(self) -> tuple:
        return (_dt.float32,)


class Layout(AttrType):
    """What a print prints, in order: strings, and None where an input goes (a tuple; a list
    is accepted), written into source as a tuple literal."""

    describe = "a tuple of strings and Nones"

    def check(self, value) -> tuple:
        if not isinstance(value, tuple | list) or len(value) > 1024:
            raise TypeError(f"must be {self.describe}, got {show(value)}")
        return tuple(None if v is None else Text().check(v) for v in value)

    def literal(self, value) -> str:
        return "(" + "".join(f"{'None' if v is None else repr(v)}, "
                             for v in self.check(value)) + ")"

    def example(self) -> tuple:
        return ("x:", None)


class Choice(AttrType):
    """A string from a closed set; the canonical value is the set's own string."""

    def __init__(self, *options: str, **kw):
        super().__init__(**kw)
        self.options = options
        self.describe = "one of " + ", ".join(repr(o) for o in options)

    def check(self, value) -> str:
        if not isinstance(value, str):
            raise TypeError(f"must be {self.describe}, got {show(value)}")
        for option in self.options:
            if value == option:
                return option
        raise ValueError(f"must be {self.describe}, got {show(value)[4:]}")

    def literal(self, value) -> str:
        return repr(self.check(value))

    def example(self) -> str:
        return self.options[0]


class OneOf(AttrType):
    """A value of the first of several types that accepts it."""

    def __init__(self, *types: AttrType, **kw):
        super().__init__(**kw)
        self.types = types
        self.describe = " or ".join(t.describe for t in types)

    def _type_of(self, value) -> AttrType:
        for t in self.types:
            try:
                t.check(value)
                return t
            except (TypeError, ValueError):
                continue
        raise TypeError(f"must be {self.describe}, got {show(value)}")

    def check(self, value):
        return self._type_of(value).check(value)

    def literal(self, value) -> str:
        return self._type_of(value).literal(value)

    def example(self):
        return self.types[0].example()


class Tuple(AttrType):
    """A tuple of fixed length whose items have their own types."""

    def __init__(self, *items: AttrType, **kw):
        super().__init__(**kw)
        self.items = items
        self.describe = f"a tuple ({', '.join(t.describe for t in items)})"

    def check(self, value) -> tuple:
        if not isinstance(value, tuple | list) or len(value) != len(self.items):
            raise TypeError(f"must be {self.describe}, got {show(value)}")
        return tuple(t.check(v) for t, v in zip(self.items, value))

    def literal(self, value) -> str:
        parts = [t.literal(v) for t, v in zip(self.items, self.check(value))]
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"

    def example(self) -> tuple:
        return tuple(t.example() for t in self.items)


class Pairs(AttrType):
    """A tuple of (before, after) pairs of non-negative ints (explicit padding)."""

    def __init__(self, length: int, **kw):
        super().__init__(**kw)
        self.length = length
        self.pair = Ints(length=2, lo=0)
        self.describe = f"{length} (before, after) pairs of non-negative ints"

    def check(self, value) -> tuple:
        if not isinstance(value, tuple | list) or len(value) != self.length:
            raise TypeError(f"must be {self.describe}, got {show(value)}")
        return tuple(self.pair.check(p) for p in value)

    def literal(self, value) -> str:
        return repr(self.check(value))

    def example(self) -> tuple:
        return ((0, 1),) * self.length


class Shape(AttrType):
    """A TensorShape: unknown rank, or dims that are None or non-negative ints."""

    describe = "a TensorShape"

    def check(self, value) -> TensorShape:
        if not isinstance(value, TensorShape):
            raise TypeError(f"must be a TensorShape, got {show(value)}")
        dims = value.dims
        if dims is not None:
            if len(dims) > MAX_RANK:
                raise ValueError(f"must have at most {MAX_RANK} dims, got {len(dims)}")
            for d in dims:
                if d is not None and not (_is_int(d) and 0 <= d < MAX_INT):
                    raise ValueError(f"has a dimension {show(d)} that is not None or a "
                                     "non-negative int")
        if type(value) is not TensorShape:  # a subclass is rebuilt as the plain class
            value = TensorShape(None if dims is None else [None if d is None else int(d)
                                                           for d in dims])
        return value

    def literal(self, value) -> str:
        dims = self.check(value).dims
        if dims is None or None in dims:
            raise ValueError(f"shape {value} is not fully defined")
        return repr(tuple(int(d) for d in dims))

    def example(self) -> TensorShape:
        return TensorShape([2, None])


class Array(AttrType):
    """A NumPy array of one of staticgrad's dtypes (a constant's value). It is written into
    generated modules as a named constant, never as text; only a 0-d array has a literal."""

    describe = "a NumPy array"

    def check(self, value) -> np.ndarray:
        if not isinstance(value, np.ndarray):
            raise TypeError(f"must be a NumPy array, got {show(value)}")
        if value.dtype not in _NUMPY_DTYPES:
            raise TypeError(f"must hold one of staticgrad's dtypes, got dtype {value.dtype}")
        if value.dtype.kind == "O":  # a string array: every element must be bytes
            if value.flags.writeable or not all(type(b) is bytes for b in value.flat):
                value = _dt.string_array(value)  # (a copy, TypeError at anything not a string)
                value.setflags(write=False)
            return value
        if type(value) is not np.ndarray or value.flags.writeable or not value.flags.owndata:
            value = np.array(value, subok=False)  # a copy no one else can write to
            value.setflags(write=False)
        return value

    def literal(self, value) -> str:
        value = self.check(value)
        if value.ndim != 0 or value.dtype.kind == "O":
            raise TypeError("an array or a string is a module constant, not a literal")
        return Number().literal(value[()].item())

    def example(self) -> np.ndarray:
        value = np.zeros(2, np.float32)
        value.setflags(write=False)
        return value


_NUMPY_DTYPES = frozenset(d.np for d in _dt.ALL)


class IndexSpec(AttrType):
    """A static index (`x[0, 1:3, ..., None]`): a tuple of ints, None (a new axis), Ellipsis,
    and ("slice", start, stop, step) with each part None or an int (step not 0)."""

    describe = "an index spec"
    _bound = Optional(Int())

    def check(self, value) -> tuple:
        if not isinstance(value, tuple | list):
            raise TypeError(f"must be {self.describe} (a tuple), got {show(value)}")
        if len(value) > 2 * MAX_RANK:
            raise ValueError(f"must have at most {2 * MAX_RANK} items, got {len(value)}")
        out = []
        for item in value:
            if item is None or item is Ellipsis:
                out.append(item)
            elif _is_int(item):
                out.append(Int().check(item))
            elif isinstance(item, tuple | list) and len(item) == 4 and item[0] == "slice":
                start, stop, step = (self._bound.check(p) for p in item[1:])
                if step == 0:
                    raise ValueError("has a slice step of zero")
                out.append(("slice", start, stop, step))
            else:
                raise TypeError(f"must hold ints, None, Ellipsis or slices, got {show(item)}")
        if out.count(Ellipsis) > 1:
            raise ValueError("may hold at most one Ellipsis")
        return tuple(out)

    def literal(self, value) -> str:
        """Python source of the index, e.g. '0, 1:3, ..., None' (`()` when empty)."""
        parts = []
        for s in self.check(value):
            if s is None:
                parts.append("None")
            elif s is Ellipsis:
                parts.append("...")
            elif isinstance(s, int):
                parts.append(repr(s))
            else:
                _, a, b, c = s
                text = f"{'' if a is None else a}:{'' if b is None else b}"
                parts.append(text + (f":{c}" if c is not None else ""))
        return ", ".join(parts) if parts else "()"

    def example(self) -> tuple:
        return (0, ("slice", None, None, 2), Ellipsis, None)


class Name(AttrType):
    """The name of a graph object (a variable's op), as graph names are spelled."""

    describe = "a graph object's name"

    def check(self, value) -> str:
        if type(value) is not str:
            raise TypeError(f"must be a name (a str), got {show(value)}")
        if not _NAME.fullmatch(value):
            raise ValueError(f"is not a valid graph name: {show(value)[4:]}")
        return value

    def literal(self, value) -> str:
        return repr(self.check(value))

    def example(self) -> str:
        return "scope/w"


class Text(AttrType):
    """Free text (a message), written into source only as a string literal."""

    def __init__(self, max_length: int = 10_000, **kw):
        super().__init__(**kw)
        self.max_length = max_length
        self.describe = "a str"

    def check(self, value) -> str:
        if type(value) is not str:
            raise TypeError(f"must be a str, got {show(value)}")
        if len(value) > self.max_length:
            raise ValueError(f"must be at most {self.max_length} characters, got {len(value)}")
        return value

    def literal(self, value) -> str:
        return repr(self.check(value))

    def example(self) -> str:
        return "a message"


class Bytes(AttrType):
    """A byte string (a separator, a fill): a str is encoded as UTF-8. Written into source
    only as a bytes literal."""

    def __init__(self, max_length: int = 10_000, **kw):
        super().__init__(**kw)
        self.max_length = max_length
        self.describe = "a str or bytes"

    def check(self, value) -> bytes:
        if type(value) is str:
            try:
                value = value.encode("utf-8")
            except UnicodeEncodeError as e:  # (a lone surrogate: not text UTF-8 can hold)
                raise ValueError(f"must be text UTF-8 can encode, got {show(value)} "
                                 f"({e.reason} at index {e.start})") from None
        if type(value) is not bytes:
            raise TypeError(f"must be a str or bytes, got {show(value)}")
        if len(value) > self.max_length:
            raise ValueError(f"must be at most {self.max_length} bytes, got {len(value)}")
        return value

    def literal(self, value) -> str:
        return repr(self.check(value))

    def example(self) -> bytes:
        return b", "


_EINSUM_TERMS = re.compile(r"[a-zA-Z]*(,[a-zA-Z]*)*(->[a-zA-Z]*)?")


class Equation(AttrType):
    """An einsum equation: letters, commas and one "->" (an implicit output when it has
    none), each letter at most once in an operand, no "..." (ops/einsum_ops.py); kept in the
    explicit form, written into source as a string literal."""

    describe = "an einsum equation"

    @staticmethod
    def parse(equation) -> tuple[list[str], str]:
        """(the operands' subscripts, the output's); ValueError for what is refused."""
        if type(equation) is not str or \
                not _EINSUM_TERMS.fullmatch(equation.replace(" ", "")):
            raise ValueError(f"the equation {show(equation)} is not letters, commas and one "
                             "'->' ('...' is not offered)")
        equation = equation.replace(" ", "")
        inputs, _, output = equation.partition("->")
        terms = inputs.split(",")
        for t in terms:
            if len(set(t)) != len(t):
                raise ValueError(f"the operand {t!r} of {equation!r} repeats a letter "
                                 "(diagonals are not offered)")
        if "->" not in equation:  # NumPy's implicit output: the letters seen once, sorted
            letters = "".join(terms)
            output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
        if len(set(output)) != len(output) or not set(output) <= set("".join(terms)):
            raise ValueError(f"the output {output!r} of {equation!r} must name each of its "
                             "operands' letters at most once")
        return terms, output

    def check(self, value) -> str:
        terms, output = self.parse(value)
        return ",".join(terms) + "->" + output

    def literal(self, value) -> str:
        return repr(self.check(value))

    def example(self) -> str:
        return "ij,jk->ik"


class InProcess(AttrType):
    """A Python object of this process (a function, a list of variables): never written into
    source, and never carried by a graph file."""

    in_files = False

    def __init__(self, describe: str, accept, example=None, **kw):
        super().__init__(**kw)
        self.describe, self.accept, self._example = describe, accept, example

    def check(self, value):
        if not self.accept(value):
            raise TypeError(f"must be {self.describe}, got {show(value)}")
        return value

    def example(self):
        return self._example


# Attributes any op may carry, set by staticgrad itself.
GLOBAL_ATTRS: dict[str, AttrType] = {
    # gradient_override_map's choice: the name of a gradient registered in this process
    "_gradient_op_type": InProcess("the name of a registered gradient (a str)",
                                   lambda v: type(v) is str),
}


def check_attrs(op_type: str, declared: dict, attrs: dict) -> dict:
    """The canonical form of `attrs` for an op with `declared` attribute types; TypeError or
    ValueError naming the attribute otherwise. Declared attrs with a default may be left out
    (a default of ABSENT keeps them out).
    """
    out = {}
    for key, value in attrs.items():
        kind = declared.get(key) or GLOBAL_ATTRS.get(key)
        if kind is None:
            known = ", ".join(repr(k) for k in declared) or "none"
            raise TypeError(f"{op_type} has no attribute {show(key)[4:]} (its attributes: "
                            f"{known})")
        try:
            out[key] = kind.check(value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"attribute {key!r} of {op_type} {e}") from None
    if len(out) < len(declared) or (
            not GLOBAL_ATTRS.keys().isdisjoint(out)
            and len(out) - sum([key in GLOBAL_ATTRS for key in out]) < len(declared)):
        for key, kind in declared.items():
            if key not in out:
                if kind.default is _REQUIRED:
                    raise TypeError(f"{op_type} needs attribute {key!r} ({kind.describe})")
                if kind.default is not ABSENT:
                    out[key] = kind.default
    return out


def check_file_attrs(op_type: str, declared: dict, attrs: dict) -> None:
    """Refuse attributes a graph file may not carry (in-process objects)."""
    for key in attrs:
        kind = declared.get(key) or GLOBAL_ATTRS.get(key)
        if kind is not None and not kind.in_files:
            raise TypeError(f"attribute {key!r} of {op_type} holds {kind.describe}, which a "
                            "graph file cannot carry")
