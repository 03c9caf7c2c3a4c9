"""`dy.nn`: for now only `functional` (PyTorch's torch.nn.functional, a small part of it)."""

from ... import _namespace
from . import functional

__all__ = ["functional"]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.nn", "torch.nn", globals())
