"""`sg.debugging`: checks for NaN and infinite values (TF1's `tf.debugging`).

>>> y = sg.debugging.check_numerics(sg.log(x), "log of x")   # doctest: +SKIP
"""

from __future__ import annotations

from . import _namespace
from .ops.debug_ops import add_check_numerics_ops, check_numerics, verify_tensor_all_finite

__all__ = ["add_check_numerics_ops", "check_numerics", "verify_tensor_all_finite"]
__dir__ = _namespace.public_dir(globals())
