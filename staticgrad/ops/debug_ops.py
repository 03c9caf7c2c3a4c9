"""Debugging ops (`sg.debugging`): check_numerics, add_check_numerics_ops and Assert.

`check_numerics(t, message)` passes `t` through unchanged and raises InvalidArgumentError
when it holds a NaN or an infinity; the error names the op that produced `t`, the line of
the user's program that created it, and `message`. `add_check_numerics_ops()` checks every
floating-point tensor of the graph, so the first failing check of a run (the checks run in
the graph's order) names the first op that produced a NaN or an infinity.

    y = sg.log(x)
    y = sg.debugging.check_numerics(y, "log of the input")
    sess.run(y, {x: [-1.0]})
    # InvalidArgumentError: log of the input : Tensor had NaN values; tensor Log:0 was made by
    # Log op "Log" created at model.py:3
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..graph import get_default_graph, name_scope
from . import math_ops as M
from .attr_types import Int, Text
from .conversion import convert_to_tensor
from .creation import apply1
from .state_ops import group
from .table import register


def _check_numerics_infer(ctx):
    M.check_kind(ctx, 0, "f")
    return [(ctx.in_shapes[0], ctx.in_dtypes[0])]


def _check_numerics_grad(op, g):  # TF1's rule: the gradient is checked too
    message = ("Not a number (NaN) or infinity (Inf) values detected in gradient. "
               + op.attrs["message"])
    return [check_numerics(g, message[:Text().max_length])]


# The input itself when it is finite (a view: nothing is copied); rt.check_numerics raises
# FloatingPointError("<message> : Tensor had NaN values") otherwise, which the session reports
# naming the checked tensor's op (checks_input, session._run_error).
register("CheckNumerics", _check_numerics_infer, "rt.check_numerics({0}, {message})",
         _check_numerics_grad, saves=(), view=True, arity=1, checks_input=0,
         attrs={"message": Text()})


def check_numerics(tensor, message, name=None):
    """`tensor`, checked for NaN and infinite values each time it is computed.

    >>> y = check_numerics(sg.log(x), "log of x")   # doctest: +SKIP
    """
    tensor = convert_to_tensor(tensor)
    return apply1("CheckNumerics", [tensor], {"message": message}, name=name)


def verify_tensor_all_finite(t, msg, name=None):
    """TF1's older name of check_numerics (arguments in the order t, msg)."""
    return check_numerics(t, msg, name=name)


def add_check_numerics_ops():
    """A `group` of check_numerics ops, one for every floating-point tensor of the default
    graph (TF1's `tf.add_check_numerics_ops`); run it beside a training step to find the
    first op that produces a NaN or an infinity. Each check's message is its tensor's name.

    >>> check = sg.add_check_numerics_ops()             # doctest: +SKIP
    >>> sess.run([train_op, check], feed)                # doctest: +SKIP
    """
    graph = get_default_graph()
    checks = []
    with name_scope("CheckNumerics"):
        for op in graph.get_operations():
            if op.type == "CheckNumerics":
                continue
            checks += [check_numerics(t, t.name) for t in op.outputs if t.dtype.is_floating]
    return group(*checks, name="add_check_numerics_ops")


# -- Assert ---------------------------------------------------------------------------------------
def _assert_infer(ctx):
    if ctx.in_dtypes[0] is not _dt.bool_:
        raise TypeError(f"its condition has dtype {ctx.in_dtypes[0].name}; it needs a bool")
    if ctx.in_shapes[0].ndims not in (None, 0):
        raise ValueError(f"its condition has shape {ctx.in_shapes[0]}; it needs a scalar")
    return []


def _assert_numpy(args, ctx) -> str:
    data = f"({', '.join(args[1:])},)" if len(args) > 1 else "()"
    return f"rt.assert_true({args[0]}, {ctx.lit('message')}, {ctx.lit('summarize')}, {data})"


def _assert_static_check(ctx):
    """An Assert whose condition is known to be false once the feeds' shapes are (a shape
    check): it fails when the session compiles, before anything runs, with the same words."""
    condition = ctx.in_values[0]
    if condition is not None and not bool(condition):
        from ..runtime import assert_true
        assert_true(False, ctx.attrs["message"], ctx.attrs["summarize"],
                    tuple("?" if v is None else v for v in ctx.in_values[1:]))


# An op of no outputs, run when fetched or waited on (control_dependencies), as TF1's: it
# raises InvalidArgumentError("assertion failed: [message] [data]...") naming it when its
# condition is false (rt.assert_true, session._run_error).
register("Assert", _assert_infer, _assert_numpy, None, differentiable=False, stateful=True,
         arity=(1, None), attrs={"message": Text(default=""), "summarize": Int(lo=0, default=3)},
         static_check=_assert_static_check)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF1's name
    """An op that raises InvalidArgumentError when `condition` (a bool scalar) is false,
    printing the tensors `data` (their first `summarize` elements). Run it by fetching it
    or waiting on it: `with sg.control_dependencies([sg.Assert(x > 0, [x])]): ...`."""
    condition = convert_to_tensor(condition)
    data = list(data) if isinstance(data, list | tuple) else [data]
    message = ""
    tensors = []
    for d in data:
        if isinstance(d, str):  # TF1 users put the message first among the data
            message += ("" if not message else " ") + d
        else:
            tensors.append(convert_to_tensor(d))
    attrs = {"message": message[:Text().max_length],
             "summarize": 3 if summarize is None else summarize}
    return get_default_graph().create_op("Assert", [condition, *tensors], attrs,
                                         name=name or "Assert") \
        if not condition.graph.eager else _eager_assert(condition, tensors, attrs)


def _eager_assert(condition, tensors, attrs):
    """The dynamic mode: checked at once, raising what a session would."""
    from ..errors import InvalidArgumentError, format_location, user_location
    from ..runtime import AssertionFailed, assert_true
    from ..shapes import TensorShape
    from .table import NodeCtx
    ctx = NodeCtx("Assert", attrs, [TensorShape(list(condition.shape))], [condition.dtype],
                  [None])
    try:
        _assert_infer(ctx)
    except (TypeError, ValueError) as e:
        raise type(e)(f"Assert at {format_location(user_location())}: {e}") from None
    try:
        assert_true(condition.numpy(), attrs["message"], attrs["summarize"],
                    tuple(t.numpy() for t in tensors))
    except AssertionFailed as e:
        raise InvalidArgumentError(None, None, f"{e} (Assert at "
                                               f"{format_location(user_location())})") from None
    return None
