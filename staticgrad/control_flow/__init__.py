"""Control flow held inside the graph: `cond` (cond.py) and `while_loop` (while_loop.py),
ops holding sub-graphs (branches.py) that the compiler lowers into regions (ir.py)."""

from .cond import cond  # noqa: F401
from .scan import foldl, foldr, map_fn, scan  # noqa: F401
from .while_loop import while_loop  # noqa: F401
