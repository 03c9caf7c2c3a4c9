"""ops/kernels.py: a kernel whose expression is one C call is that call (`_direct`), and
gives what the expression gives, for every op whose emitter is a format string."""

import operator

import numpy as np
import pytest

from staticgrad import dtypes
from staticgrad.ops import kernels
from staticgrad.ops.table import REGISTRY, NodeCtx
from staticgrad.shapes import TensorShape


def test_direct_calls_are_the_c_functions_and_only_where_they_take_every_input():
    assert kernels._direct("a0 * a1", 2) is operator.mul
    assert kernels._direct("a0 // a1", 2) is operator.floordiv
    assert kernels._direct("np.exp(a0)", 1) is np.exp
    assert kernels._direct("np.arctan2(a0, a1)", 2) is np.arctan2
    assert kernels._direct("a0 * a1", 3) is None          # a third input the call would get
    assert kernels._direct("np.exp(a0)", 2) is None
    assert kernels._direct("np.maximum(a0, 0)", 1) is None  # a literal: the lambda keeps it
    assert kernels._direct("np.sum(a0)", 1) is None         # not a ufunc
    assert kernels._direct("np.nonexistent(a0)", 1) is None
    assert kernels._direct("a0 @ a1", 2) is None


def _takes_floats(op_type: str, n: int) -> bool:
    ctx = NodeCtx(op_type, {}, [TensorShape([6])] * n, [dtypes.float64] * n, [None] * n)
    try:
        REGISTRY[op_type].infer(ctx)
    except (TypeError, ValueError, IndexError, KeyError):  # (an attr it needs)
        return False
    return True


_FORMAT_OPS = sorted(name for name, d in REGISTRY.items()
                     if isinstance(d.numpy, str) and not d.format_attrs and d.computes
                     and not d.stateful and d.arity in (1, 2) and _takes_floats(name, d.arity))


@pytest.mark.parametrize("op_type", _FORMAT_OPS)
def test_a_kernel_computes_what_its_expression_does(op_type):
    opdef = REGISTRY[op_type]
    n = opdef.arity
    arrays = [np.linspace(0.25, 1.5, 6) + i for i in range(n)]
    ctx = NodeCtx(op_type, {}, [TensorShape([6])] * n, [dtypes.float64] * n, [None] * n)
    ctx.out_shapes, ctx.out_dtypes = [TensorShape([6])], [dtypes.float64]
    args = [f"a{i}" for i in range(n)]
    expr = kernels.render_numpy(opdef, args, ctx)
    by_hand = eval(f"lambda {', '.join(args)}: {expr}", dict(kernels.KERNEL_NAMESPACE))  # noqa: S307
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(kernels.kernel(opdef, ctx)(*arrays), by_hand(*arrays))
