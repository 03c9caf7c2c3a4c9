"""`sg.debugging`: checks for NaN and infinite values (TF1's `tf.debugging`): the check ops,
Assert, the assertions (assert_equal and kin: ops/check_ops.py), and the elementwise tests
the op vocabulary offers here (is_nan, is_inf, is_finite).

>>> y = sg.debugging.check_numerics(sg.log(x), "log of x")   # doctest: +SKIP
"""

from __future__ import annotations

from . import _namespace
from .ops import check_ops as _check_ops
from .ops import vocabulary as _vocabulary
from .ops.debug_ops import (  # noqa: F401
    Assert,
    add_check_numerics_ops,
    check_numerics,
    verify_tensor_all_finite,
)

globals().update(_vocabulary.namespace("debugging"))
globals().update({name: getattr(_check_ops, name) for name in _check_ops.__all__})

__all__ = sorted(["Assert", "add_check_numerics_ops", "check_numerics", "verify_tensor_all_finite",
                  *_vocabulary.namespace("debugging"), *_check_ops.__all__])
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.debugging", "tf.debugging", globals())
