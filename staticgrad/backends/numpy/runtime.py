"""`rt` in the generated NumPy code: staticgrad.runtime's kernels (what the ops compute, which
constant folding and the dynamic mode call too) and the block runner of fused groups."""

from ...runtime import *  # noqa: F403 (the kernels, as rt.<name>)
from .blocks import run_blocks  # noqa: F401
