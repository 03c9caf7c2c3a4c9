"""`dy.nn`: PyTorch's `torch.nn` on the registry's ops -- `Module` and `Parameter`, layers,
activations and losses as modules, `init`, `utils` (gradient clipping) and `functional`.

    import staticgrad.dynamic as torch
    from staticgrad.dynamic import nn

    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10))
    loss = nn.CrossEntropyLoss()(model(x), labels)
    loss.backward()

Layers call `functional`, whose functions run registry ops at once (recorded on the tape),
so their gradients are the shared rules'. Modules: `module` (Module), `parameter`,
`container` (Sequential, ModuleList, ModuleDict), `linear` (Identity, Linear, Flatten,
Dropout, Embedding), `conv` (Conv2d and pooling, NCHW), `batchnorm`, `rnn` (the cells),
`activation`, `loss`, `init`, `utils`, `functional`.
"""

from ... import _namespace
from . import functional, init, utils  # noqa: F401
from .activation import (  # noqa: F401
    ELU,
    GELU,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from .batchnorm import BatchNorm1d, BatchNorm2d  # noqa: F401
from .container import ModuleDict, ModuleList, Sequential  # noqa: F401
from .conv import AvgPool2d, Conv2d, MaxPool2d  # noqa: F401
from .linear import Dropout, Embedding, Flatten, Identity, Linear  # noqa: F401
from .loss import (  # noqa: F401
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
)
from .module import Module  # noqa: F401
from .parameter import Parameter  # noqa: F401
from .rnn import GRUCell, LSTMCell, RNNCell  # noqa: F401

__all__ = _namespace.public_names(globals(), subnamespaces=("functional", "init", "utils"))
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.nn", "torch.nn", globals())
