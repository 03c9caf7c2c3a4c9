"""Running sums and products along an axis: TF1's `cumsum` and `cumprod`, with TF1's
`exclusive` (each position leaves itself out) and `reverse` (from the last to the first).

    sg.cumsum([1., 2., 3.])                   # [1., 3., 6.]
    sg.cumsum([1., 2., 3.], exclusive=True)   # [0., 1., 3.]
    sg.cumprod([1., 2., 3.], reverse=True)    # [6., 6., 3.]
"""

from __future__ import annotations

from ..graph import name_scope
from . import math_ops as M
from .attr_types import Axis, Bool
from .conversion import convert_to_tensor
from .creation import apply1
from .table import register

_ATTRS = {"axis": Axis(), "exclusive": Bool(), "reverse": Bool()}


def _infer(ctx):
    M.check_kind(ctx, 0, "fi")
    rank = ctx.in_shapes[0].ndims
    axis = ctx.attrs["axis"]
    if rank == 0:
        raise ValueError(f"{ctx.type} needs a tensor of rank >= 1, got a scalar")
    if rank is not None and not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for a tensor of rank {rank}")
    return [(ctx.in_shapes[0], ctx.in_dtypes[0])]


def _cumsum_grad(op, g):
    """The sum of the later positions' gradients (the earlier ones, reversed)."""
    attrs = op.attrs
    return [cumsum(g, attrs["axis"], attrs["exclusive"], not attrs["reverse"])]


def _cumprod_grad(op, g):
    """As TF1: sum over the later positions of (their product * their gradient), over x
    (undefined where x is 0, as TF1's)."""
    x, attrs = op.inputs[0], op.attrs
    prod = op.outputs[0]
    return [M.divide(cumsum(prod * g, attrs["axis"], attrs["exclusive"], not attrs["reverse"]),
                     x)]


_NUMPY = "rt.cumulative(np.{kind}, {{0}}, {{axis}}, {{exclusive}}, {{reverse}})"
register("Cumsum", _infer, _NUMPY.format(kind="cumsum"), _cumsum_grad, saves=(), attrs=_ATTRS,
         arity=1,
         new_array=True, doc="the running sum along `axis`")
register("Cumprod", _infer, _NUMPY.format(kind="cumprod"), _cumprod_grad, saves=("x0", "y0"),
         attrs=_ATTRS,
         arity=1, new_array=True, doc="the running product along `axis`")


def _cumulative(op_type, x, axis, exclusive, reverse, name):
    with name_scope(name, op_type):
        x = convert_to_tensor(x)
        return apply1(op_type, [x], {"axis": int(axis), "exclusive": bool(exclusive),
                                     "reverse": bool(reverse)})


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """The running sum of x along `axis`: out[i] = x[0] + ... + x[i] (x[i] left out with
    `exclusive`; from the end with `reverse`)."""
    return _cumulative("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """The running product of x along `axis` (see cumsum for `exclusive` and `reverse`)."""
    return _cumulative("Cumprod", x, axis, exclusive, reverse, name)
