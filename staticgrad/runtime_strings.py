"""The string kernels generated code calls as `rt.<name>` (staticgrad.runtime re-exports them).

A string tensor's value is a NumPy object array of `bytes` (staticgrad.dtypes.string). Each
kernel takes and gives such arrays, element by element through `np.frompyfunc` (which
broadcasts as ufuncs do), and needs only NumPy and `re`: exported programs copy these
functions as they copy the numeric helpers.
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np


def _strings(fn, nin: int = 1):
    """fn applied to each element (broadcast over `nin` arrays), as an object array; a 0-d
    result stays a 0-d array, so a fetched scalar string is its bytes, as in TF1."""
    ufunc = np.frompyfunc(fn, nin, 1)

    def run(*xs):
        return np.asarray(ufunc(*xs), dtype=object)
    return run


def as_string(x, precision, scientific, shortest, width, fill):
    """Each number of x as text, as TF1's AsString: printf's %d, %f (%e scientific, %g
    shortest) with `precision` digits after the point and padded to `width` with the flag
    `fill` ('' ' ' '+' '-' '0' '#'); bools as b"true" and b"false"."""
    x = np.asarray(x)
    if x.dtype.kind == "b":
        return _strings(lambda v: b"true" if v else b"false")(x)
    spec = "%" + fill + (str(width) if width >= 0 else "")
    if x.dtype.kind == "f":
        spec += (f".{precision}" if precision >= 0 else "") + \
            ("g" if shortest else "e" if scientific else "f")
        return _strings(lambda v: (spec % float(v)).encode("ascii"))(x)
    spec += "d"
    return _strings(lambda v: (spec % int(v)).encode("ascii"))(x)


def string_join(separator, *xs):
    """The elements of xs joined by `separator`, position by position (scalars repeated)."""
    if len(xs) == 1:
        return np.array(xs[0], dtype=object)
    return _strings(lambda *parts: separator.join(parts), len(xs))(*xs)


def reduce_join(x, axis, keepdims, separator):
    """x's strings joined along `axis` (a tuple of axes; None: all of them), as TF1 orders
    them: the first axis listed varies fastest (None joins in row-major order)."""
    x = np.asarray(x, dtype=object)
    axes = tuple(range(x.ndim))[::-1] if axis is None else tuple(a % x.ndim for a in axis)
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + list(axes[::-1]))
    outer = [x.shape[a] for a in kept]  # (sizes, not -1: NumPy cannot infer one beside a 0)
    out = np.empty(outer, dtype=object)
    flat_rows = moved.reshape(math.prod(outer), math.prod(x.shape[a] for a in axes))
    flat_out = out.reshape(-1)
    for i, row in enumerate(flat_rows):
        flat_out[i] = separator.join(row)
    if keepdims:
        out = out.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)])
    return out


def string_length(x, unit):
    """The length of each string in bytes, or in UTF-8 characters (`unit` "UTF8_CHAR")."""
    if unit == "UTF8_CHAR":
        count = _strings(lambda s: len(s.decode("utf-8")))
    else:
        count = _strings(len)
    return count(x).astype(np.int32)


def string_lower(x, encoding):
    """Each string in lower case: ASCII letters only (TF1's default), every letter with
    encoding "utf-8"."""
    if encoding:
        return _strings(lambda s: s.decode("utf-8").lower().encode("utf-8"))(x)
    return _strings(bytes.lower)(x)


def string_upper(x, encoding):
    """Each string in upper case (see string_lower)."""
    if encoding:
        return _strings(lambda s: s.decode("utf-8").upper().encode("utf-8"))(x)
    return _strings(bytes.upper)(x)


def string_strip(x):
    """Each string without its leading and trailing whitespace."""
    return _strings(bytes.strip)(x)


def substr(x, pos, length, unit):
    """The `length` bytes (or UTF-8 characters) of each string from `pos` (from the end where
    negative), as TF1's Substr: a length past the end stops there; a position past either end
    raises ValueError."""
    def cut(s, p, n):
        text = s.decode("utf-8") if unit == "UTF8_CHAR" else s
        size = len(text)
        if not -size <= p <= size:
            raise ValueError(f"pos {p} out of range for string {s[:40]!r} of length {size}")
        if n < 0:
            raise ValueError(f"the length {n} is negative")
        start = p if p >= 0 else size + p
        piece = text[start:start + n]
        return piece.encode("utf-8") if unit == "UTF8_CHAR" else piece
    return _strings(cut, 3)(x, pos, length)


def string_to_number(x, dtype):
    """Each string read as a number of `dtype` (ValueError naming the first that is not one,
    in TF1's words)."""
    out = np.empty(np.shape(x), dtype=dtype)
    flat, target = np.asarray(x, dtype=object).reshape(-1), out.reshape(-1)
    integral = np.dtype(dtype).kind == "i"
    for i, s in enumerate(flat):
        try:
            text = s.decode("ascii").strip()
            if "_" in text:  # (Python reads 1_000; TF1 does not)
                raise ValueError
            value = int(text) if integral else float(text)
            if integral:
                info = np.iinfo(dtype)
                if not info.min <= value <= info.max:
                    raise ValueError
            target[i] = value
        except (ValueError, UnicodeDecodeError):
            raise ValueError(f"StringToNumberOp could not correctly convert string: "
                             f"{s[:60]!r}") from None
    return out


@functools.lru_cache(maxsize=256)
def _regex(pattern: str):
    return re.compile(pattern.encode("utf-8"))


def _expander(rewrite: bytes):
    r"""A function of a match giving `rewrite` with RE2's \0..\9 (groups) and \\ replaced."""
    pieces = re.split(rb"\\([0-9\\])", rewrite)

    def expand(match):
        out = []
        for i, piece in enumerate(pieces):
            if i % 2 == 0:
                out.append(piece)
            elif piece == b"\\":
                out.append(b"\\")
            else:
                out.append(match.group(int(piece)) or b"")
        return b"".join(out)
    return expand


def regex_replace(x, pattern, rewrite, replace_global):
    r"""Each string with the matches of `pattern` replaced by `rewrite` (\1 its groups,
    \0 the whole match): all of them, or the first only unless `replace_global`."""
    regex, expand = _regex(pattern), _expander(rewrite)
    count = 0 if replace_global else 1
    return _strings(lambda s: regex.sub(expand, s, count=count))(x)


def regex_full_match(x, pattern):
    """Whether each whole string matches `pattern` (a bool array)."""
    regex = _regex(pattern)
    return _strings(lambda s: regex.fullmatch(s) is not None)(x).astype(np.bool_)


def to_strings(value, what: str = ""):
    """`value` (a str, bytes, or a nested list or array of them) as a string value: an object
    array of `bytes`, str encoded as UTF-8. TypeError naming `what` and the first element
    that is neither."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "S":
        arr = value.astype(object)  # (NumPy's fixed-width bytes drop trailing NULs already)
    else:
        if isinstance(value, np.ndarray) and value.dtype.kind not in "UO":
            raise TypeError(f"{what}{': ' if what else ''}an array of dtype {value.dtype} is "
                            "not strings")
        arr = np.array(value, dtype=object)
    flat = arr.reshape(-1)
    for i, item in enumerate(flat):
        if type(item) is bytes:
            continue
        if isinstance(item, str):  # (str's own encode: a subclass's may give anything)
            try:
                flat[i] = str.encode(item, "utf-8")
            except UnicodeEncodeError as e:
                raise ValueError(f"{what}{': ' if what else ''}{item!r:.40} is not text "
                                 f"UTF-8 can encode ({e.reason})") from None
        elif isinstance(item, bytes | np.bytes_):
            flat[i] = bytes(item)
        else:
            index = [int(j) for j in np.unravel_index(i, arr.shape)]
            at = f" at index {index}" if arr.ndim else ""
            raise TypeError(f"{what}{': ' if what else ''}{type(item).__name__} {item!r:.40}"
                            f"{at} is not a string (str or bytes)")
    return arr


def split_strings(value):
    """A string value as two numeric arrays, for files that hold numbers only (checkpoints,
    exported modules' .npz): each string's length (int64, the value's shape) and the strings'
    bytes one after another, in C order (uint8)."""
    flat = np.asarray(value, dtype=object).reshape(-1).tolist()
    lengths = np.array([len(b) for b in flat], np.int64).reshape(np.shape(value))
    return lengths, np.frombuffer(b"".join(flat), np.uint8)


def join_strings(lengths, data):
    """The string value `split_strings` gave these two arrays for; ValueError where they do
    not fit together (negative lengths, or not adding up to the bytes)."""
    # (each length at most the bytes' count first: an int64 sum of larger ones can wrap
    # around to the count, and the strings would be cut from the wrong places)
    if lengths.dtype != np.int64 or data.dtype != np.uint8 or data.ndim != 1 or \
            (lengths.size and (lengths.min() < 0 or lengths.max() > data.size)) or \
            int(lengths.sum()) != data.size:
        raise ValueError("the lengths do not add up to the bytes (or have the wrong dtype)")
    raw, out = data.tobytes(), np.empty(lengths.size, dtype=object)
    ends = np.cumsum(lengths.reshape(-1)).tolist()
    for i, (start, end) in enumerate(zip([0] + ends, ends)):
        out[i] = raw[start:end]
    return out.reshape(lengths.shape)
