"""sg.math: TF1's `tf.math`, the mathematical functions: the elementwise ones the op
vocabulary offers here (ops/vocabulary.py), and the arithmetic, comparisons and reductions.

    sg.math.tanh(x), sg.math.add(x, y), sg.math.reduce_sum(x, axis=1)
"""

from ._namespace import missing_name, public_dir
from .ops import vocabulary as _vocabulary
from .ops.cumulative_ops import cumprod, cumsum  # noqa: F401
from .ops.math_impl import l2_normalize, reduce_logsumexp  # noqa: F401
from .ops.math_ops import divide, truediv  # noqa: F401
from .ops.nn_impl import squared_difference  # noqa: F401
from .ops.reduction_ops import (  # noqa: F401
    argmax,
    argmin,
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)
from .ops.sort_ops import in_top_k, top_k  # noqa: F401

globals().update(_vocabulary.namespace("math"))

__all__ = sorted([
    "argmax", "argmin", "cumprod", "cumsum", "divide", "in_top_k", "l2_normalize",
    "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max", "reduce_mean",
    "reduce_min", "reduce_prod",
    "reduce_sum", "squared_difference", "top_k", "truediv",
    *_vocabulary.namespace("math")])
__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.math", "tf.math", globals())
