"""sg.compat: `sg.compat.v1` is staticgrad itself, for programs written against
`tf.compat.v1` (`import staticgrad.compat.v1 as tf`)."""

from .._namespace import missing_name, public_dir
from . import v1

__all__ = ["v1"]
__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.compat", "tf.compat", globals())
