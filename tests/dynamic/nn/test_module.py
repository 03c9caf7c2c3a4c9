"""dy.nn.Module: registration through attributes, walking the tree, state_dict round trips
and their errors, modes, to(), hooks, zero_grad, apply, and PyTorch's repr; Parameter."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2, bias=False)
        self.register_buffer("steps", dy.tensor(0))
        self.register_buffer("scratch", dy.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_parameter_is_a_leaf_that_requires_grad_and_runs_ops():
    p = nn.Parameter(dy.ones(2))
    assert p.requires_grad and p.is_leaf and isinstance(p, dy.Tensor)
    assert repr(p) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    out = p * 2.0  # ops take a Parameter and give a plain tensor
    assert type(out) is dy.Tensor
    out.sum().backward()
    assert p.grad.tolist() == [2.0, 2.0]
    assert not nn.Parameter(dy.ones(1), requires_grad=False).requires_grad


def test_attributes_register_parameters_buffers_and_children():
    m = MLP()
    assert [n for n, _ in m.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "scratch"]
    assert len(list(m.parameters())) == 3 and len(list(m.modules())) == 4
    assert list(m.children())[0] is m.fc1
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        m.fc1.weight = dy.ones(4, 3)
    m.fc1.bias = None  # a slot for a parameter may be emptied
    assert [n for n, _ in m.named_parameters()] == ["fc1.weight", "fc2.weight"]
    with pytest.raises(AttributeError, match="'MLP' object has no attribute 'nothing'"):
        m.nothing  # noqa: B018
    del m.act
    assert [n for n, _ in m.named_children()] == ["fc1", "fc2"]


def test_shared_modules_and_parameters_are_listed_once():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, shared)
    assert len(list(seq.parameters())) == 2 and len(list(seq.modules())) == 2


def test_state_dict_round_trip_and_strict_errors():
    dy.manual_seed(0)
    a, b = MLP(), MLP()
    sd = a.state_dict()
    # own tensors first, then the children's (as PyTorch orders them); not `scratch`
    assert list(sd) == ["steps", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert not sd["fc1.weight"].requires_grad
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        np.testing.assert_array_equal(pa.detach().numpy(), pb.detach().numpy(), err_msg=name)
    x = dy.randn(5, 3)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())

    broken = OrderedDict(sd)
    del broken["fc1.bias"]
    broken["extra"] = dy.zeros(1)
    with pytest.raises(RuntimeError) as info:
        b.load_state_dict(broken)
    assert str(info.value) == ('Error(s) in loading state_dict for MLP:\n\t'
                               'Missing key(s) in state_dict: "fc1.bias". \n\t'
                               'Unexpected key(s) in state_dict: "extra". ')
    result = b.load_state_dict(broken, strict=False)
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["extra"]
    wrong = OrderedDict(sd, **{"fc2.weight": dy.zeros(3, 3)})
    with pytest.raises(RuntimeError, match="size mismatch for fc2.weight"):
        b.load_state_dict(wrong, strict=False)


def test_train_eval_and_requires_grad():
    m = MLP()
    assert m.training and m.fc1.training
    assert m.eval() is m and not m.training and not m.fc1.training
    m.train()
    assert m.act.training
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_to_float64_cpu_and_cuda():
    m = MLP()
    assert m.to("cpu") is m and m.to(dy.float64) is m
    assert all(p.dtype is dy.float64 for p in m.parameters())
    assert m.steps.dtype is dy.int64  # integer buffers keep their dtype
    assert isinstance(m.fc1.weight, nn.Parameter) and m.fc1.weight.requires_grad
    assert m(dy.randn(2, 3, dtype=dy.float64)).dtype is dy.float64
    with pytest.raises(RuntimeError, match="cuda.*CPU only"):
        m.to("cuda")
    with pytest.raises(RuntimeError, match="CPU only"):
        m.cuda()
    with pytest.raises(TypeError, match="floating point"):
        m.to(dy.int32)
    assert m.float().fc1.weight.dtype is dy.float32


def test_zero_grad_apply_and_call():
    m = MLP()
    m(dy.randn(2, 3)).sum().backward()
    assert m.fc1.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert m.fc1.weight.grad.abs().sum().item() == 0.0
    m.zero_grad()
    assert m.fc1.weight.grad is None
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "ReLU", "Linear", "MLP"]
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


def test_forward_hooks_and_removable_handles():
    lin = nn.Linear(2, 2)
    calls = []
    pre = lin.register_forward_pre_hook(lambda mod, args: (args[0] * 0.0,))
    post = lin.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    out = lin(dy.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None] + 1,
                               rtol=1e-6)
    assert calls == [(1, 2)]
    pre.remove()
    post.remove()
    np.testing.assert_allclose(lin(dy.ones(1, 2)).detach().numpy(),
                               (lin.weight.sum(1) + lin.bias).detach().numpy()[None], rtol=1e-6)
    assert calls == [(1, 2)]


def test_repr_as_pytorch_prints_it():
    assert repr(nn.Linear(3, 2)) == "Linear(in_features=3, out_features=2, bias=True)"
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Sequential(nn.Tanh()))
    assert repr(model) == ("Sequential(\n"
                           "  (0): Linear(in_features=3, out_features=2, bias=True)\n"
                           "  (1): ReLU()\n"
                           "  (2): Sequential(\n"
                           "    (0): Tanh()\n"
                           "  )\n"
                           ")")
    assert repr(MLP()) == ("MLP(\n"
                           "  (fc1): Linear(in_features=3, out_features=4, bias=True)\n"
                           "  (act): ReLU()\n"
                           "  (fc2): Linear(in_features=4, out_features=2, bias=False)\n"
                           ")")


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    assert [n for n, _ in seq[1:].named_children()] == ["1", "2"]
    named = nn.Sequential(OrderedDict([("lin", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert [n for n, _ in named.named_parameters()] == ["lin.weight", "lin.bias"]
    assert named(dy.ones(4, 2)).shape == (4, 2)
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.ReLU())
    assert len(layers) == 4 and len(list(layers.parameters())) == 6
    assert repr(layers).startswith("ModuleList(\n  (0): Linear(")
    heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Linear(2, 3)})
    assert list(heads) == ["a", "b"] and "b" in heads and heads["b"].out_features == 3
    assert [n for n, _ in heads.named_parameters()][:2] == ["a.weight", "a.bias"]
