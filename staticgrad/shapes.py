"""Partially known shapes, as in TF1: a rank that may be unknown, dimensions that may be `None`.

>>> s = TensorShape([None, 10])
>>> str(s), s.as_list(), s[1].value
('(?, 10)', [None, 10], 10)

A dimension is an int (a Python or NumPy integer, or anything with `__index__`), `None` or
-1 for unknown, or a `Dimension`. A float is taken only when it is a whole number (TF1's
`as_dimension(2.0)` is 2); 2.5 raises TF1's "Ambiguous dimension: 2.5". Bools, strings,
negative sizes and sizes past int64 are errors: TF1 would read `True` as 1 and "3" as 3,
which hides a mistake rather than meaning something.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable

import numpy as np

from .errors import format_location, user_location

MAX_DIM = 2**63 - 1  # dimensions are int64, as in TF


class Dimension:
    """One dimension: an int, or `None` when unknown. `int(d)` and `d.value` read it."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = _dim_value(value)

    def __int__(self) -> int:
        if self.value is None:
            raise ValueError("cannot convert an unknown Dimension to int")
        return self.value

    __index__ = __int__

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self.value is None or other is None:
            return None
        return self.value == other

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"Dimension({self.value})"

    def __str__(self):
        return "?" if self.value is None else str(self.value)


class TensorShape:
    """A shape whose rank and dimensions may be partly unknown.

    `dims` is a tuple of ints and `None`s, or `None` when even the rank is unknown.
    """

    __slots__ = ("dims",)

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims.dims
        elif dims is not None:
            if type(dims) is not tuple and type(dims) is not list:
                dims = _dim_sequence(dims)
            try:
                dims = tuple([_dim_value(d) for d in dims])
            except (TypeError, ValueError) as e:
                raise _bad_shape(dims, e) from None
        self.dims = dims

    @property
    def ndims(self):
        return None if self.dims is None else len(self.dims)

    rank = ndims

    def as_list(self):
        if self.dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape")
        return list(self.dims)

    def as_tuple(self):
        """The dims as a tuple (ints and Nones), or None for unknown rank."""
        return self.dims

    def is_fully_defined(self) -> bool:
        return self.dims is not None and None not in self.dims

    def num_elements(self):
        if self.dims is None or None in self.dims:
            return None
        return math.prod(self.dims)

    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self.dims is None or other.dims is None or self.dims == other.dims:
            return True  # (equal dims, the common case: without the walk below)
        if len(self.dims) != len(other.dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.dims, other.dims))

    def merge_with(self, other) -> TensorShape:
        other = as_shape(other)
        if self.dims == other.dims:  # (the common case: nothing to merge, this shape is it)
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"shapes {self} and {other} are not compatible")
        if self.dims is None:
            return other
        if other.dims is None:
            return self
        return TensorShape([a if a is not None else b for a, b in zip(self.dims, other.dims)])

    def concatenate(self, other) -> TensorShape:
        """This shape's dims, then other's (unknown rank if either's is), as TF1's."""
        other = other if isinstance(other, TensorShape) else TensorShape(other)
        if self.dims is None or other.dims is None:
            return TensorShape(None)
        return TensorShape([*self.dims, *other.dims])

    def with_rank(self, rank: int) -> TensorShape:
        if self.dims is None:
            return TensorShape([None] * rank)
        if len(self.dims) != rank:
            raise ValueError(f"shape {self} must have rank {rank}")
        return self

    def __len__(self):
        if self.dims is None:
            raise ValueError("cannot take the length of a shape with unknown rank")
        return len(self.dims)

    def __iter__(self):
        if self.dims is None:
            raise ValueError("cannot iterate over a shape with unknown rank")
        return iter(Dimension(d) for d in self.dims)

    def __getitem__(self, key):
        if self.dims is None:
            return Dimension(None) if isinstance(key, int) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self.dims[key])
        return Dimension(self.dims[key])

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self.dims == other.dims

    def __hash__(self):
        return hash(self.dims)

    def __str__(self):
        if self.dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self.dims)
        return f"({inner},)" if len(self.dims) == 1 else f"({inner})"

    def __repr__(self):
        if self.dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self.dims)})"


def _dim_value(d):
    """One dimension as an int, or None for unknown; TypeError/ValueError naming it."""
    if type(d) is int and 0 <= d <= MAX_DIM:  # the common case, first
        return d
    if d is None:
        return None
    if isinstance(d, Dimension):
        return d.value
    if isinstance(d, np.integer):  # (NumPy's bool is no np.integer)
        d = int(d)
    elif isinstance(d, bool | np.bool_):
        raise TypeError(f"dimension {d!r} is a bool, not a size")
    elif isinstance(d, str | bytes):
        raise TypeError(f"dimension {d!r} is a string, not a size")
    elif isinstance(d, numbers.Real) and not isinstance(d, numbers.Integral):
        if not (math.isfinite(d) and d == math.floor(d)):
            raise ValueError(f"Ambiguous dimension: {d!r}")  # TF1's words
        d = int(d)
    else:
        try:
            d = operator.index(d)
        except TypeError:
            raise TypeError(f"dimension {d!r} ({type(d).__name__}) is not an integer or "
                            "None") from None
    if d == -1:
        return None
    if d < 0:
        raise ValueError(f"dimension {d} must be >= 0 (or None, or -1, for unknown)")
    if d > MAX_DIM:
        raise ValueError(f"dimension {d} is too large: a dimension is at most 2**63 - 1")
    return d


def _dim_sequence(dims) -> list:
    """The dimensions of a shape given as something other than a list or tuple: a lone
    dimension is a shape of one (as in TF1); text and unordered collections are errors."""
    if isinstance(dims, str | bytes):
        raise TypeError(f"a shape is a list of dimensions, got the string {dims!r} "
                        f"(given at {format_location(user_location())})")
    if isinstance(dims, set | frozenset | dict):
        raise TypeError(f"a shape is a list of dimensions, got a {type(dims).__name__} "
                        f"{dims!r}, which has no order (given at "
                        f"{format_location(user_location())})")
    if isinstance(dims, Dimension | numbers.Number | np.generic):
        return [dims]
    try:
        return list(dims)
    except TypeError:
        return [dims]  # not iterable: one dimension, checked as such


def _is_dim(d) -> bool:
    try:
        _dim_value(d)
    except (TypeError, ValueError):
        return False
    return True


def _bad_shape(dims, error: Exception) -> Exception:
    """`error` (from the first bad dimension of `dims`) with where it is in the shape and
    the user's line that gave the shape."""
    dims = list(dims)
    i = next((i for i, d in enumerate(dims) if not _is_dim(d)), None)
    shown = "[" + ", ".join(repr(d) for d in dims) + "]"
    at = f"dimension {i} of shape {shown}" if i is not None else f"shape {shown}"
    return type(error)(f"{error} ({at}, given at {format_location(user_location())})")


def as_shape(shape, what: str = "") -> TensorShape:
    """`shape` (a TensorShape, a list of dimensions, or None) as a TensorShape. `what` names
    the thing whose shape it is, for the error a bad dimension raises.

    >>> as_shape([None, 3.0]).as_list()
    [None, 3]
    """
    if isinstance(shape, TensorShape):
        return shape
    if not what:
        return TensorShape(shape)
    try:
        return TensorShape(shape)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what}: {e}") from None


def unknown_shape() -> TensorShape:
    return TensorShape(None)


_SHARED: dict = {}  # dims -> the one TensorShape of them that graph tensors share
SHARED_KEPT = 1 << 14


def shared(shape: TensorShape) -> TensorShape:
    """The one TensorShape of `shape`'s dims that the tensors of graphs share (a shape is
    never changed in place: `set_shape` gives its tensor another). A 100,000-op graph then
    holds a few shapes, not 100,000 objects that Python's cycle collector walks at each full
    collection while the user's loop builds it (a fifth of the objects it tracks)."""
    found = _SHARED.get(shape.dims)
    if found is None:
        if len(_SHARED) >= SHARED_KEPT:
            _SHARED.clear()
        found = _SHARED[shape.dims] = shape
    return found


def broadcast_shapes(shapes: Iterable[TensorShape]):
    """NumPy broadcasting over partially known shapes. Returns the result, or raises ValueError."""
    shapes = list(shapes)
    if len(shapes) == 2:  # the common case, as a binary op's shape rule asks: known shapes,
        a, b = shapes[0].dims, shapes[1].dims  # equal or one of them a scalar
        if a is not None and b is not None and None not in a and None not in b:
            if a == b or b == ():
                return shapes[0]
            if a == ():
                return shapes[1]
    if any(s.dims is None for s in shapes):
        return TensorShape(None)
    # the common cases: equal, known shapes, and scalars (which broadcast to anything)
    known = [s for s in shapes if s.dims != ()] or shapes[:1]
    first = known[0].dims
    if None not in first and all([s.dims == first for s in known]):
        return known[0]
    rank = max((len(s.dims) for s in shapes), default=0)
    out = []
    for i in range(rank):
        known, unknown = set(), False
        for s in shapes:
            j = i - (rank - len(s.dims))
            if j < 0:
                continue
            d = s.dims[j]
            if d is None:
                unknown = True
            elif d != 1:
                known.add(d)
        if len(known) > 1:
            raise ValueError("shapes " + ", ".join(str(s) for s in shapes)
                             + " cannot be broadcast together")
        if known:
            out.append(known.pop())
        elif unknown:
            out.append(None)
        else:
            out.append(1)
    return TensorShape(out)
