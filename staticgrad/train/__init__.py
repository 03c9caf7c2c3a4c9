"""`sg.train`: optimizers, the global step, learning-rate schedules, and checkpoints (TF1's
`tf.train`)."""

from .. import _namespace
from ..graph_io import export_meta_graph, import_meta_graph, write_graph  # noqa: F401
from .learning_rate_decay import (  # noqa: F401
    cosine_decay,
    exponential_decay,
    inverse_time_decay,
    natural_exp_decay,
    piecewise_constant,
    polynomial_decay,
)
from .moving_averages import ExponentialMovingAverage  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .optimizers import (  # noqa: F401
    AdadeltaOptimizer,
    AdagradOptimizer,
    AdamOptimizer,
    FtrlOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    RMSPropOptimizer,
)
from .saver import (  # noqa: F401
    CheckpointState,
    Saver,
    checkpoint_exists,
    get_checkpoint_state,
    latest_checkpoint,
    list_variables,
    load_variable,
)
from .training_util import (  # noqa: F401
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)

# the names imported above; the submodules (optimizer, saver...) are not part of sg.train
__all__ = _namespace.public_names(globals())
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.train", "tf.train", globals())
