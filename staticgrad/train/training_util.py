"""The global step: an int64 variable named "global_step" that training ops count up."""

from __future__ import annotations

from .. import dtypes as _dt
from ..graph import GraphKeys, get_default_graph


def get_global_step(graph=None):
    """The graph's global step: the one variable of the GLOBAL_STEP collection, else a
    variable named "global_step" (a TF1 program may make its own), else None."""
    g = graph or get_default_graph()
    steps = g.get_collection(GraphKeys.GLOBAL_STEP)
    if len(steps) > 1:
        raise TypeError(f"the graph has {len(steps)} global steps: {[s.name for s in steps]}")
    if not steps:
        steps = [v for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES)
                 if v.op.name == "global_step"]
        if not steps:
            return None
    assert_global_step(steps[0])
    return steps[0]


def assert_global_step(global_step_tensor) -> None:
    """A global step must be an integer scalar variable."""
    from ..variables import Variable
    if not isinstance(global_step_tensor, Variable):
        raise TypeError(f"the global step must be a variable, got {global_step_tensor!r}")
    if not global_step_tensor.dtype.is_integer or global_step_tensor.shape.ndims != 0:
        raise TypeError(f"the global step {global_step_tensor.name} must be an integer scalar, "
                        f"not {global_step_tensor.dtype.name} of shape "
                        f"{global_step_tensor.shape} ({global_step_tensor.op.where()})")


def create_global_step(graph=None):
    """Create the global step (an error if the graph has one already)."""
    from ..ops.array_ops import zeros
    from ..variables import Variable
    g = graph or get_default_graph()
    if get_global_step(g) is not None:
        raise ValueError("the graph already has a global step")
    with g.as_default(), g.name_scope(None):
        return Variable(lambda: zeros([], _dt.int64), trainable=False, name="global_step",
                        collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    """The graph's global step, created the first time."""
    return get_global_step(graph) or create_global_step(graph)


def global_step(sess, global_step_tensor) -> int:
    """The global step's current value in `sess`, as a Python int."""
    return int(sess.run(global_step_tensor))
