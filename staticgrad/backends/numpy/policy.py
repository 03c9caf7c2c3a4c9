"""The NumPy backend's policies for the shared passes (its own passes keep theirs:
memory.MIN_BYTES, the scalar fast path's one-element rule).

FUSE: what passes/fuse.py may group. Below 65,536 elements a group gains nothing from blocks
and threads; a block reads the same slice of each input, or a number (one-element values);
a group may end in sums of whole values (each block adds its part: fused.py); integer
groups are left alone, as NumPy's blockwise and whole-array integer results could differ.
"""

from __future__ import annotations

from ...passes.fuse import FusePolicy

FUSE = FusePolicy(min_elements=1 << 16, scalar_broadcasts=True, reductions={"Sum"},
                  integers=False)
