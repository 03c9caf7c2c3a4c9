"""Debugging ops (`sg.debugging`): check_numerics and add_check_numerics_ops.

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

from ..graph import get_default_graph, name_scope
from . import math_ops as M
from .attr_types import Text
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
         _check_numerics_grad, view=True, arity=1, checks_input=0,
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
