"""staticgrad's dynamic mode: define-by-run, in PyTorch's vocabulary, for contrast with graphs.

    import staticgrad.dynamic as dy

    w = dy.tensor([2.0, 5.0], requires_grad=True)
    x = dy.tensor([4.0, 4.0])
    loss = (10 - (w * x).sum()) ** 2          # each op runs at once, recorded on a tape
    loss.backward()                           # walks the tape back, freeing it
    print(w.grad)                             # tensor([144., 144.]); accumulates until zeroed
    with dy.no_grad():
        w -= 0.01 * w.grad
    w.grad.zero_()

One source of truth with the graph side. An op on dynamic tensors goes through the graph
API's own `create_operation`: a dynamic tensor's graph is the eager context, on which an op
runs at once (`dispatch.py`) -- with the registry's shape rule (the same errors, at the
user's line) and the registry's kernel (the NumPy expression that generated code and constant
folding use). Gradients run the registry's gradient rules on the recorded nodes (`tape.py`,
`autograd.py`), through the very per-op step `sg.gradients` uses (`autodiff.backward_step`):
there is no second set of derivatives. Rules call the graph API (`M.where`, `zeros_like`...),
and in the eager context those calls compute too, recording themselves when
`create_graph=True`: higher derivatives come for free, as they do on the graph side.

As PyTorch's, a tape node keeps only what its op's gradient rule reads (each op declares it:
`OpDef.saves`; `x + 1` keeps nothing, `exp` its output), and a backward without
retain_graph frees each node it runs through: a second one fails only where a node needs a
value it freed (through `(x * x).sum()`, not `(x + 1).sum()`), naming the op and the line
that recorded it.

Where it differs from PyTorch (known, kept for simplicity):
- gradients at ties are the graph side's rules: max(dim) and maximum share a tie equally
  (PyTorch picks the returned index, or 0.5 for maximum); d(x**0)/dx at 0 is nan.
- var() of one element is 0 (PyTorch: nan); NumPy's RuntimeWarnings (log(0)...) show.
- grad_fn names and next_functions follow the graph ops that ran: a view gets an extra
  `(None, 0)` edge, float32 * float64 shows a ToCopyBackward0, mv shows SqueezeBackward1.
- smaller API gaps: add_(alpha=), in-place ops on non-leaf tensors that need grad,
  x.type() as a string, x == None, bool + bool, and tensor([np.float64(1.0)]) gives float32.

Graph-API functions accept dynamic tensors (`sg.reduce_sum(x, 1)` runs at once); those that
make constants from Python values (`sg.zeros`, a list of labels) need `eager_mode()`.

Modules: `mode` (grad mode, the eager context), `tensor` (the Tensor), `dispatch` (running an
op), `tape` (nodes; `tape_nodes_created()` counts them), `autograd` (backward, grad,
Function), `creation` (making tensors), `functions` (PyTorch-named ops), `trace` (dynamic to
static: functions and modules, and `Traced.train_step`), `printing` (PyTorch's repr), `optim`
(SGD, Adam, AdamW, RMSprop, Adagrad; `optim.lr_scheduler`), `serialization` (save, load:
tensors and state dicts in an .npz that is never unpickled), `utils.data` (Dataset,
TensorDataset, DataLoader, random_split), and `nn` (PyTorch's torch.nn: `Module` and
`Parameter`, layers, activations and losses as modules, `init`, `utils.clip_grad_norm_`,
`functional`; layers run the registry's ops, so their gradients are the shared rules'):

    model = dy.nn.Sequential(dy.nn.Linear(784, 512), dy.nn.ReLU(), dy.nn.Linear(512, 10))
    loss = dy.nn.CrossEntropyLoss()(model(x), labels)

`nn`'s gaps: no GPU (`to('cuda')` raises), Conv2d without padding_mode other than zeros,
pooling without ceil_mode/dilation/return_indices, Embedding without max_norm/sparse, no
full RNN/LSTM/GRU layers (the cells only), pad's constant and reflect modes only.
"""

from .. import _namespace
from . import autograd, nn, optim, utils  # noqa: F401
from . import functions as _functions
from .autograd import Function, backward, grad  # noqa: F401
from .creation import (  # noqa: F401
    DoubleTensor,
    FloatTensor,
    LongTensor,
    arange,
    as_tensor,
    bool,
    double,
    empty,
    empty_like,
    eye,
    float,
    float16,
    float32,
    float64,
    from_numpy,
    full,
    full_like,
    get_default_dtype,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    is_tensor,
    linspace,
    long,
    manual_seed,
    numel,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tensor,
    uint8,
    zeros,
    zeros_like,
)
from .dispatch import Generator  # noqa: F401
from .functions import (  # noqa: F401
    add,
    all,
    allclose,
    amax,
    amin,
    any,
    argmax,
    argmin,
    bmm,
    broadcast_to,
    cat,
    chunk,
    clamp,
    clip,
    clone,
    concat,
    concatenate,
    detach,
    div,
    divide,
    dot,
    equal,
    flatten,
    index_select,
    log_softmax,
    logical_and,
    logical_or,
    matmul,
    max,
    mean,
    min,
    mm,
    mv,
    permute,
    pow,
    prod,
    reshape,
    result_type,
    rsub,
    softmax,
    split,
    squeeze,
    stack,
    std,
    sub,
    sum,
    swapaxes,
    t,
    transpose,
    true_divide,
    unbind,
    unsqueeze,
    var,
    where,
)
from .mode import (  # noqa: F401
    eager_mode,
    enable_grad,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .serialization import load, save  # noqa: F401
from .tape import nodes_created as tape_nodes_created  # noqa: F401
from .tensor import RemovableHandle, Size, Tensor, TracerWarning  # noqa: F401
from .trace import Traced, trace  # noqa: F401

# the names imported above, and the namespaces autograd, nn, optim and utils (PyTorch's
# torch.autograd, torch.nn, torch.optim and torch.utils); the other modules (tape,
# dispatch...) are not part of it
# the elementwise functions the op vocabulary offers here (dy.tanh...): ops/vocabulary.py
globals().update(_functions.ELEMENTWISE)

__all__ = _namespace.public_names(globals(), subnamespaces=("autograd", "nn", "optim", "utils"))
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic", "torch", globals())
