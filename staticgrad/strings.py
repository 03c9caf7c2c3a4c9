"""sg.strings: TF1's `tf.strings`, the ops on byte strings (ops/string_ops.py).

    sg.strings.join([first, last], separator=" ")     # sg.string_join
    sg.strings.length(words), sg.strings.upper(words)
    sg.strings.to_number(["1.5", "2"])                # float32 [1.5, 2.0]
"""

from ._namespace import missing_name, public_dir
from .ops.string_ops import (
           as_string,
           lower,
           reduce_join,
           regex_full_match,
           regex_replace,
           substr,
           upper,
)
from .ops.string_ops import string_join as join
from .ops.string_ops import string_length as length
from .ops.string_ops import string_strip as strip
from .ops.string_ops import string_to_number as to_number

__all__ = ["as_string", "join", "length", "lower", "reduce_join", "regex_full_match",
           "regex_replace", "strip", "substr", "to_number", "upper"]
__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.strings", "tf.strings", globals())
