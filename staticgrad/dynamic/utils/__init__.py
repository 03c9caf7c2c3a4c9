"""dy.utils: PyTorch's `torch.utils`; so far its `data` (Dataset, DataLoader...)."""

from ... import _namespace
from . import data  # noqa: F401

__all__ = ["data"]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.utils", "torch.utils", globals())
