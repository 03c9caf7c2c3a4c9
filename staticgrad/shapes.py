"""Partially known shapes, as in TF1: a rank that may be unknown, dimensions that may be `None`.

>>> s = TensorShape([None, 10])
>>> str(s), s.as_list(), s[1].value
('(?, 10)', [None, 10], 10)
"""

from __future__ import annotations

import math
from collections.abc import Iterable


class Dimension:
    """One dimension: an int, or `None` when unknown. `int(d)` and `d.value` read it."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = None if value is None else int(value)

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
            if isinstance(dims, int | Dimension):
                dims = [dims]
            dims = tuple([_dim_value(d) for d in dims])
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
        if self.dims is None or other.dims is None:
            return True
        if len(self.dims) != len(other.dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.dims, other.dims))

    def merge_with(self, other) -> TensorShape:
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"shapes {self} and {other} are not compatible")
        if self.dims is None:
            return other
        if other.dims is None:
            return self
        return TensorShape([a if a is not None else b for a, b in zip(self.dims, other.dims)])

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
    if isinstance(d, Dimension):
        return d.value
    if d is None:
        return None
    d = int(d)
    if d < -1:
        raise ValueError(f"dimension {d} must be >= 0 (or None for unknown)")
    return None if d == -1 else d


def as_shape(shape) -> TensorShape:
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape() -> TensorShape:
    return TensorShape(None)


def broadcast_shapes(shapes: Iterable[TensorShape]):
    """NumPy broadcasting over partially known shapes. Returns the result, or raises ValueError."""
    shapes = list(shapes)
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
