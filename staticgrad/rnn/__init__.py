"""Recurrent networks as TF1 users write them: the cells (`sg.nn.rnn_cell`: cells.py,
wrappers.py) and the loops that run them over sequences (`sg.nn.dynamic_rnn`,
`bidirectional_dynamic_rnn`, `static_rnn`: loops.py, on control_flow's Scan).

`install(nn)` adds them to the `sg.nn` namespace (ops/nn_ops.py, a layer below: it cannot
import them itself)."""

from . import rnn_cell
from .loops import bidirectional_dynamic_rnn, dynamic_rnn, static_rnn

NN_NAMES = {"rnn_cell": rnn_cell, "dynamic_rnn": dynamic_rnn,
            "bidirectional_dynamic_rnn": bidirectional_dynamic_rnn, "static_rnn": static_rnn}


def install(nn) -> None:
    """Make the RNN names part of the namespace module `nn` (sg.nn)."""
    for name, value in NN_NAMES.items():
        setattr(nn, name, value)
    nn.__all__ = sorted({*nn.__all__, *NN_NAMES})
