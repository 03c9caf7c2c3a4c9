"""sg.random: TF1's `tf.random`, the random tensors and the graph-level seed.

    sg.random.normal([2, 3], stddev=0.1, seed=1)      # sg.random_normal
    sg.random.set_random_seed(7)                       # sg.set_random_seed
"""

from ._namespace import missing_name, public_dir
from .ops.state_ops import random_normal as normal
from .ops.state_ops import random_uniform as uniform
from .ops.state_ops import set_random_seed, truncated_normal

__all__ = ["normal", "set_random_seed", "truncated_normal", "uniform"]
__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.random", "tf.random", globals())
