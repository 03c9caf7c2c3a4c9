"""dy.optim: PyTorch's optimizers and learning-rate schedules for dynamic tensors.

    opt = dy.optim.Adam(model_params, lr=1e-3)
    sched = dy.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    for x, y in batches:
        opt.zero_grad()
        loss_fn(x, y).backward()
        opt.step()
    sched.step()

Each optimizer is PyTorch's documented algorithm (its module's docstring shows it), written
with the dynamic tensors' ops and run under no_grad(), writing the parameters' data in place.
The graph side's TF1 optimizers are staticgrad.train's; where the two families' rules agree,
and where they differ, see tests/dynamic/optim/test_graph_parity.py. A traced training step
(`dy.trace(...).train_step(opt)`) runs these optimizers' own rules, written as graph ops in
staticgrad/dynamic/trace_optim_rules.py.

Modules: `optimizer` (the base: groups, state, state_dict), `sgd`, `adam` (Adam, AdamW),
`rmsprop`, `adagrad`, `lr_scheduler`.
"""

from ... import _namespace
from . import lr_scheduler  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .sgd import SGD  # noqa: F401

__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.optim", "torch.optim", globals())
