"""What the NumPy backend's tests share as fixtures."""

import pytest

from staticgrad.backends.numpy import conv_fast


@pytest.fixture
def loops_at_every_size(monkeypatch):
    """conv_fast's numba loops for calls of every size: else the small arrays of a test stay
    with runtime_conv's NumPy kernels (LOOPS_MIN_MACS, LOOPS_MIN_ELEMENTS)."""
    monkeypatch.setattr(conv_fast, "LOOPS_MIN_MACS", 0)
    monkeypatch.setattr(conv_fast, "LOOPS_MIN_ELEMENTS", 0)
