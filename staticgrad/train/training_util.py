"""The global step: an int64 variable named "global_step" that training ops count up."""

from __future__ import annotations

from .. import dtypes as _dt
from ..graph import GraphKeys, get_default_graph


def get_global_step(graph=None):
    """The graph's global step variable, or None if it has none."""
    g = graph or get_default_graph()
    steps = g.get_collection(GraphKeys.GLOBAL_STEP)
    if len(steps) > 1:
        raise TypeError(f"the graph has {len(steps)} global steps: {[s.name for s in steps]}")
    return steps[0] if steps else None


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
