"""`sg.nn.rnn_cell`: TF1's RNN cells (cells.py) and the cells made of cells (wrappers.py)."""

from .. import _namespace
from .cells import BasicLSTMCell, BasicRNNCell, GRUCell, LSTMCell, LSTMStateTuple, RNNCell
from .wrappers import DropoutWrapper, MultiRNNCell

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LSTMCell",
           "LSTMStateTuple", "MultiRNNCell", "RNNCell"]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.nn.rnn_cell", "tf.nn.rnn_cell", globals())
