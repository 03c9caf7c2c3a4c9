"""Transfer: a value moved from one backend's memory to another's (host to GPU and back).

No user makes one. When a plan runs on a backend that leaves some ops to its host (ops it
cannot run, host-only ops), the partition pass (passes/partition.py) puts a Transfer on each
edge whose two ends run on different backends, so that every copy between memories is a node
of the plan, with its line in the generated code. Its attributes name the two backends. On
the host (NumPy) it is the value itself.
"""

from __future__ import annotations

from .attr_types import Name
from .table import register


def _transfer_infer(ctx):
    if ctx.attrs["source"] == ctx.attrs["target"]:
        raise ValueError(f"a Transfer from {ctx.attrs['source']} to itself moves nothing")
    return [(ctx.in_shapes[0], ctx.in_dtypes[0])]


register("Transfer", _transfer_infer, "np.asarray({0})", differentiable=False, view=True,
         internal=True,
         attrs={"source": Name(), "target": Name()},
         doc="the value of its input, moved from backend `source`'s memory to `target`'s")
