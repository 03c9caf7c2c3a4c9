"""`paused_gc()`: Python's cycle collector off while a large graph is built or compiled.

Building gradients and compiling create hundreds of thousands of objects that all live on;
each full collection walks all of them, so collections make bulk work grow faster than
linearly (a 20,000-op chain compiled a third slower). Nothing made here becomes garbage
in a cycle meanwhile, so collecting can wait until the work is done.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused_gc():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
