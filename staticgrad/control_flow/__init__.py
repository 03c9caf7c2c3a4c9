"""Control flow held inside the graph: `cond` and `case` (cond.py, case.py), `while_loop`
(while_loop.py), `scan`, `map_fn` and the folds (scan.py): ops holding sub-graphs
(branches.py) that the compiler lowers into regions (ir.py)."""

from . import scan_op  # noqa: F401 - (registers the Scan op)
from .case import case  # noqa: F401
from .cond import cond  # noqa: F401
from .scan import foldl, foldr, map_fn, scan  # noqa: F401
from .tensor_array import TensorArray  # noqa: F401
from .while_loop import while_loop  # noqa: F401
