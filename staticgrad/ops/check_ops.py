"""TF1's assertions (`tf.assert_equal` and kin, also in `tf.debugging`), built on Assert:

    check = sg.assert_positive(x, message="x must be positive")
    with sg.control_dependencies([check]):
        y = sg.log(x)

Each returns an op that raises InvalidArgumentError when a run finds the condition false,
naming the line that made it and showing the values. A condition known when the graph is
built is checked then, as TF1 does: false raises at once, true gives a no_op. The checks of
a static property (rank, dtype) raise at once when it is known (ValueError, TypeError).
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, here
from ..graph import name_scope
from . import math_ops as M
from .array_ops import rank as rank_of
from .conversion import convert_to_tensor
from .debug_ops import Assert
from .reduction_ops import reduce_all
from .state_ops import no_op

__all__ = ["assert_equal", "assert_none_equal", "assert_less", "assert_less_equal",
           "assert_greater", "assert_greater_equal", "assert_positive", "assert_negative",
           "assert_non_negative", "assert_non_positive", "assert_rank", "assert_rank_at_least",
           "assert_type", "assert_integer", "assert_scalar"]


def _prefix(message) -> str:
    return f"{message}: " if message else ""


def _check(condition, what: str, message, data, summarize, name, default: str):
    """The op checking `condition` (every element true), whose failure says `what`."""
    where = here()
    text = _prefix(message) + what
    with name_scope(name, default):
        holds = reduce_all(condition)
        known = holds._static
        if holds.graph.eager:  # (the dynamic mode: Assert checks at once)
            return Assert(holds, [text, *data], summarize=summarize)
        if known is not None:
            if not bool(known):
                raise InvalidArgumentError(None, None, f"{text} ({where})")
            return no_op()
        return Assert(holds, [text, *data], summarize=summarize)


def _binary(op, symbol: str, default: str):
    def check(x, y, data=None, summarize=None, message=None, name=None):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype_hint=x.dtype)
        what = (f"Condition x {symbol} y did not hold element-wise: x ({x.name}), "
                f"y ({y.name})")
        return _check(op(x, y), what, message, [x, y] if data is None else data, summarize,
                      name, default)
    check.__name__ = check.__qualname__ = default
    check.__doc__ = (f"An op raising InvalidArgumentError when x {symbol} y does not hold "
                     "for every element (broadcast), showing `data` (default: x and y).")
    return check


assert_equal = _binary(M.equal, "==", "assert_equal")
assert_none_equal = _binary(M.not_equal, "!=", "assert_none_equal")
assert_less = _binary(M.less, "<", "assert_less")
assert_less_equal = _binary(M.less_equal, "<=", "assert_less_equal")
assert_greater = _binary(M.greater, ">", "assert_greater")
assert_greater_equal = _binary(M.greater_equal, ">=", "assert_greater_equal")


def _against_zero(op, words: str, default: str):
    def check(x, data=None, summarize=None, message=None, name=None):
        x = convert_to_tensor(x)
        what = f"Condition x {words} did not hold element-wise: x ({x.name})"
        return _check(op(x, M.zeros_like(x)), what, message, [x] if data is None else data,
                      summarize, name, default)
    check.__name__ = check.__qualname__ = default
    check.__doc__ = (f"An op raising InvalidArgumentError unless every element x of x holds "
                     f"x {words}, showing `data` (default: x).")
    return check


assert_positive = _against_zero(M.greater, "> 0", "assert_positive")
assert_negative = _against_zero(M.less, "< 0", "assert_negative")
assert_non_negative = _against_zero(M.greater_equal, ">= 0", "assert_non_negative")
assert_non_positive = _against_zero(M.less_equal, "<= 0", "assert_non_positive")


def assert_rank(x, rank, message=None, name=None):
    """Check that x has rank `rank`: at once where x's rank is known (ValueError), else an
    op checking it when the graph runs."""
    return _rank(x, rank, message, name, "==", "assert_rank")


def assert_rank_at_least(x, rank, message=None, name=None):
    """Check that x has rank `rank` or more (see assert_rank)."""
    return _rank(x, rank, message, name, ">=", "assert_rank_at_least")


def _rank(x, rank, message, name, symbol, default):
    x = convert_to_tensor(x)
    rank = int(rank)
    known = x.shape.ndims
    prefix = _prefix(message)
    if known is not None:
        if not (known == rank if symbol == "==" else known >= rank):
            least = "" if symbol == "==" else "at least "
            raise ValueError(f"{prefix}{x.name} must have rank {least}{rank}; it has rank "
                             f"{known}, shape {x.shape} ({here()})")
        return no_op()
    op = M.equal if symbol == "==" else M.greater_equal
    return _check(op(rank_of(x), rank), f"{x.name} must have rank {symbol} {rank}",
                  message, [rank_of(x)], None, name, default)


def assert_type(tensor, tf_type, message=None, name=None):
    """TypeError unless `tensor` has dtype `tf_type` (a static check); a no_op."""
    tensor = convert_to_tensor(tensor)
    want = _dt.as_dtype(tf_type)
    if tensor.dtype is not want:
        prefix = _prefix(message)
        raise TypeError(f"{prefix}{tensor.name} must be of type {want.name}, not "
                        f"{tensor.dtype.name} ({here()})")
    return no_op(name=name)


def assert_integer(x, message=None, name=None):
    """TypeError unless x has an integer dtype (a static check); a no_op."""
    x = convert_to_tensor(x)
    if not x.dtype.is_integer:
        prefix = _prefix(message)
        raise TypeError(f"{prefix}{x.name} must be of integer dtype, not {x.dtype.name} ("
                        f"{here()})")
    return no_op(name=name)


def assert_scalar(tensor, name=None):
    """ValueError unless `tensor` is known to be a scalar; `tensor` itself."""
    tensor = convert_to_tensor(tensor)
    if tensor.shape.ndims != 0:
        raise ValueError(f"{tensor.name} must be a scalar, got shape {tensor.shape} ("
                         f"{here()})")
    return tensor
