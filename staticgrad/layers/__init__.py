"""`sg.layers`: TF1's layers, as functions (`tf.layers.dense` and kin: functional.py,
normalization.py) and as classes (`tf.layers.Dense` and kin: classes.py).

A layer opens a variable scope (`dense`, `dense_1`, ... unless named), creates its variables
with `get_variable` (so `reuse=True` shares them), and applies ops in that scope:

    h = sg.layers.dense(x, 512, activation=sg.nn.relu)     # variables dense/kernel, dense/bias
"""

from .. import _namespace
from .classes import (  # noqa: F401
    AveragePooling2D,
    BatchNormalization,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    Layer,
    MaxPooling2D,
)
from .functional import (  # noqa: F401
    average_pooling2d,
    conv2d,
    dense,
    dropout,
    flatten,
    max_pooling2d,
)
from .normalization import batch_normalization  # noqa: F401

__all__ = _namespace.public_names(globals())
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.layers", "tf.layers", globals())
