"""`dy.nn`: for now only `functional` (PyTorch's torch.nn.functional, a small part of it)."""

from . import functional  # noqa: F401
