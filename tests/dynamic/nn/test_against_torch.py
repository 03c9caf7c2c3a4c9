"""dy.nn next to real PyTorch (skipped where torch is not installed): the same layers given the
same weights give the same outputs, gradients and reprs."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy
import staticgrad.dynamic.nn.functional as F
from staticgrad.dynamic import nn

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)


def copy_weights(ours, theirs):
    """Give `ours` the weights of the torch module `theirs` (through state_dict)."""
    state = {k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()}
    result = ours.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys


def compare(ours, theirs, *inputs, rtol=1e-10, atol=1e-12):
    """Outputs and the gradients of sum(out**2) w.r.t. inputs and parameters, in float64."""
    ours.double()
    theirs.double()
    copy_weights(ours, theirs)
    xs = [dy.tensor(x, requires_grad=x.dtype.kind == "f") for x in inputs]
    ts = [torch.tensor(x, requires_grad=x.dtype.kind == "f") for x in inputs]
    out, ref = ours(*xs), theirs(*ts)
    out, ref = (out if isinstance(out, tuple) else (out,)), \
        (ref if isinstance(ref, tuple) else (ref,))
    for o, r in zip(out, ref):
        np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=rtol, atol=atol)
    sum(o.pow(2).sum() for o in out).backward()
    sum(r.pow(2).sum() for r in ref).backward()
    for x, t in zip(xs, ts):
        if t.requires_grad:
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-8, atol=1e-10,
                                   err_msg=name)


CASES = [
    ("Linear", lambda m: m.Linear(4, 3), (5, 4)),
    ("Conv2d", lambda m: m.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 7, 6)),
    ("Conv2d same", lambda m: m.Conv2d(2, 4, (2, 3), padding="same", dilation=(1, 2)),
     (1, 2, 6, 7)),
    ("Conv2d groups", lambda m: m.Conv2d(4, 6, 3, groups=2, bias=False), (2, 4, 5, 5)),
    ("MaxPool2d", lambda m: m.MaxPool2d(3, 2, 1), (2, 3, 7, 6)),
    ("AvgPool2d", lambda m: m.AvgPool2d(3, 2, 1, count_include_pad=False), (2, 3, 7, 6)),
    ("BatchNorm2d", lambda m: m.BatchNorm2d(3), (4, 3, 5, 5)),
    ("BatchNorm1d", lambda m: m.BatchNorm1d(3, affine=False, momentum=None), (6, 3)),
    ("Sequential", lambda m: m.Sequential(m.Flatten(), m.Linear(12, 5), m.GELU(), m.Linear(5, 2),
                                          m.LogSoftmax(dim=1)), (3, 3, 2, 2)),
    ("activations", lambda m: m.Sequential(m.ELU(0.5), m.LeakyReLU(0.2), m.Tanh(), m.SiLU(),
                                           m.Softplus(2.0), m.Softmax(dim=-1)), (3, 4)),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note on its speed
@pytest.mark.parametrize("name, make, shape", CASES, ids=[c[0] for c in CASES])
def test_layers_match_torch(name, make, shape):
    compare(make(nn), make(torch.nn), RNG.normal(size=shape))


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(cls):
    x, h = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 5))
    ours, theirs = getattr(nn, cls)(4, 5), getattr(torch.nn, cls)(4, 5)
    if cls == "LSTMCell":
        c = RNG.normal(size=(3, 5))

        class Wrap:  # a cell that takes (x, h, c) as three inputs, for compare()
            def __init__(self, cell):
                self.cell = cell

            def __getattr__(self, name):
                return getattr(self.cell, name)

            def __call__(self, x, h, c):
                return self.cell(x, (h, c))
        compare(Wrap(ours), Wrap(theirs), x, h, c)
    else:
        compare(ours, theirs, x, h)


def test_embedding_matches_torch():
    ours, theirs = nn.Embedding(6, 3, padding_idx=2), torch.nn.Embedding(6, 3, padding_idx=2)
    compare(ours, theirs, np.array([[0, 2, 5], [2, 1, 1]]))


def test_batchnorm_running_stats_and_eval_match_torch():
    ours, theirs = nn.BatchNorm2d(3, momentum=0.3).double(), torch.nn.BatchNorm2d(3, momentum=0.3)
    theirs.double()
    for _ in range(3):
        x = RNG.normal(1.0, 2.0, size=(4, 3, 2, 2))
        ours(dy.tensor(x))
        theirs(torch.tensor(x))
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-12,
                                   err_msg=key)
    ours.eval()
    theirs.eval()
    x = RNG.normal(size=(2, 3, 2, 2))
    np.testing.assert_allclose(ours(dy.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12)


LOSSES = [
    ("MSELoss", {}, "regression"), ("L1Loss", {}, "regression"),
    ("CrossEntropyLoss", {}, "classes"), ("CrossEntropyLoss", {"label_smoothing": 0.2}, "classes"),
    ("CrossEntropyLoss", {"weight": [1.0, 2.0, 0.5, 3.0], "ignore_index": 1}, "classes"),
    ("NLLLoss", {"weight": [1.0, 2.0, 0.5, 3.0]}, "log_probs"),
    ("BCELoss", {}, "probs"), ("BCEWithLogitsLoss", {"pos_weight": [1.0, 2.0, 3.0, 0.5]}, "bin"),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("cls, kwargs, kind", LOSSES, ids=[f"{c}-{k}" for c, _, k in LOSSES])
def test_losses_match_torch(cls, kwargs, kind, reduction):
    x = RNG.normal(size=(6, 4))
    if kind == "regression":
        target = RNG.normal(size=(6, 4))
    elif kind in ("classes", "log_probs"):
        target = np.array([0, 1, 3, 2, 1, 3])
        if kind == "log_probs":
            x = x - np.log(np.exp(x).sum(1, keepdims=True))
    else:
        target = RNG.integers(0, 2, size=(6, 4)).astype(np.float64)
        if kind == "probs":
            x = 1 / (1 + np.exp(-x))
    ours = getattr(nn, cls)(reduction=reduction, **{
        k: dy.tensor(np.array(v)) if isinstance(v, list) else v for k, v in kwargs.items()})
    theirs = getattr(torch.nn, cls)(reduction=reduction, **{
        k: torch.tensor(v, dtype=torch.float64) if isinstance(v, list) else v
        for k, v in kwargs.items()})
    xd, xt = dy.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, ref = ours(xd, dy.tensor(target)), theirs(xt, torch.tensor(target))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_functional_pad_matches_torch():
    x = RNG.normal(size=(2, 3, 4))
    for pad, mode in (((1, 2), "constant"), ((1, 0, 2, 1), "constant"), ((2, 1), "reflect")):
        np.testing.assert_allclose(
            F.pad(dy.tensor(x), pad, mode=mode, value=None if mode == "reflect" else 0.5)
            .numpy(), torch.nn.functional.pad(torch.tensor(x), pad, mode=mode,
                                              value=None if mode == "reflect" else 0.5).numpy())


MODULES = [
    lambda m: m.Linear(3, 2, bias=False), lambda m: m.Conv2d(3, 8, 5, stride=2, padding=2),
    lambda m: m.Conv2d(3, 8, (3, 1), padding="same", dilation=2, groups=1),
    lambda m: m.Conv2d(4, 8, 3, groups=2, bias=False), lambda m: m.MaxPool2d(2),
    lambda m: m.AvgPool2d(3, stride=1, padding=1), lambda m: m.BatchNorm1d(4),
    lambda m: m.BatchNorm2d(3, momentum=None, affine=False), lambda m: m.Dropout(0.3),
    lambda m: m.Embedding(10, 4, padding_idx=0), lambda m: m.RNNCell(3, 4, nonlinearity="relu"),
    lambda m: m.LSTMCell(3, 4, bias=False), lambda m: m.GRUCell(3, 4), lambda m: m.Flatten(),
    lambda m: m.Identity(), lambda m: m.ReLU(), lambda m: m.Softmax(dim=1),
    lambda m: m.LogSoftmax(dim=-1), lambda m: m.LeakyReLU(0.2), lambda m: m.ELU(),
    lambda m: m.GELU(approximate="tanh"), lambda m: m.Sigmoid(), lambda m: m.Tanh(),
    lambda m: m.CrossEntropyLoss(), lambda m: m.MSELoss(reduction="sum"),
    lambda m: m.Sequential(m.Linear(784, 512), m.ReLU(), m.Dropout(0.2),
                           m.Sequential(m.Linear(512, 10)), m.LogSoftmax(dim=1)),
    lambda m: m.ModuleList([m.Linear(2, 2), m.ModuleDict({"act": m.ReLU()})]),
]


@pytest.mark.parametrize("make", MODULES, ids=range(len(MODULES)))
def test_reprs_match_torch(make):
    assert repr(make(nn)) == repr(make(torch.nn))


def test_parameter_repr_and_state_dict_keys_match_torch():
    assert repr(nn.Parameter(dy.tensor([1.0, 2.0]))) == \
        repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))
    ours = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 2))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2),
                                 torch.nn.Flatten(), torch.nn.Linear(8, 2))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_weights(ours, theirs)
    x = RNG.normal(size=(3, 1, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(ours(dy.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
