"""What every dy.optim optimizer shares (optim/optimizer.py): parameter groups, zero_grad,
step(closure), and state_dict / load_state_dict in PyTorch's structure."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy

from .quadratic import LR_B, loss_of, make_params

OPTIMIZERS = {
    "SGD": lambda groups: dy.optim.SGD(groups, lr=0.1, momentum=0.9, nesterov=True),
    "Adam": lambda groups: dy.optim.Adam(groups, lr=0.1, amsgrad=True),
    "AdamW": lambda groups: dy.optim.AdamW(groups, lr=0.1),
    "RMSprop": lambda groups: dy.optim.RMSprop(groups, lr=0.01, momentum=0.5, centered=True),
    "Adagrad": lambda groups: dy.optim.Adagrad(groups, lr=0.1, lr_decay=0.01),
}


def _train(opt, w, b, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss_of(w, b).backward()
        opt.step()


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_state_dict_round_trip_continues_identically(name):
    make = OPTIMIZERS[name]
    w, b = make_params()
    opt = make([{"params": [w]}, {"params": [b], "lr": LR_B}])
    _train(opt, w, b, 3)
    saved = opt.state_dict()
    w2, b2 = (dy.tensor(p.detach().numpy(), requires_grad=True) for p in (w, b))
    opt2 = make([{"params": [w2]}, {"params": [b2], "lr": 123.0}])  # (the load sets lr)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[1]["lr"] == LR_B and opt2.param_groups[1]["params"] == [b2]
    _train(opt, w, b, 3)
    _train(opt2, w2, b2, 3)
    np.testing.assert_array_equal(w2.detach().numpy(), w.detach().numpy(), err_msg=name)
    np.testing.assert_array_equal(b2.detach().numpy(), b.detach().numpy(), err_msg=name)
    for key, value in opt.state[w].items():  # the loaded state is a copy, not shared
        assert value is not opt2.state[w2][key]


def test_state_dict_numbers_parameters_across_groups_as_pytorch_does():
    w, b = make_params()
    c = dy.tensor([1.0], requires_grad=True)
    opt = dy.optim.Adam([{"params": [w, c]}, {"params": b, "lr": 0.5}], lr=0.1)
    loss = loss_of(w, b) + (c * c).sum()
    loss.backward()
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1] == {"lr": 0.5, "betas": (0.9, 0.999), "eps": 1e-8,
                                     "weight_decay": 0.0, "amsgrad": False, "maximize": False,
                                     "params": [2]}
    assert sorted(sd["state"]) == [0, 1, 2]
    assert sd["state"][1]["exp_avg"] is opt.state[c]["exp_avg"]


def test_load_state_dict_refuses_another_shape_of_groups_and_casts_to_the_params_dtype():
    w, b = make_params()
    opt = dy.optim.SGD([w, b], lr=0.1, momentum=0.9)
    loss_of(w, b).backward()
    opt.step()
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        dy.optim.SGD([{"params": [w]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        dy.optim.SGD([w], lr=0.1).load_state_dict(sd)
    w32 = dy.zeros(3, 2, requires_grad=True)
    b32 = dy.zeros(2, requires_grad=True)
    opt32 = dy.optim.SGD([w32, b32], lr=0.1, momentum=0.9)
    opt32.load_state_dict(sd)
    assert opt32.state[w32]["momentum_buffer"].dtype == dy.float32


def test_zero_grad_sets_none_or_zeros_in_place():
    w = dy.tensor([1.0, 2.0], requires_grad=True)
    opt = dy.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad and grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None
    opt.zero_grad()  # (nothing to do)
    (w * w * w).sum().backward(create_graph=True)  # a gradient in a graph: cut, then zeroed
    assert w.grad.grad_fn is not None
    opt.zero_grad(set_to_none=False)
    assert w.grad.grad_fn is None and not w.grad.requires_grad and w.grad.tolist() == [0, 0]


def test_step_runs_the_closure_with_grad_on_and_returns_its_loss():
    w = dy.tensor([3.0], requires_grad=True)
    opt = dy.optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    with dy.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0 and w.tolist() == [1.5]  # 3 - 0.25 * 6
    assert w.requires_grad and w.is_leaf
    assert opt.step() is None


def test_param_groups_take_the_defaults_and_refuse_bad_params():
    w, b = make_params()
    opt = dy.optim.RMSprop([w], lr=0.5, alpha=0.9)
    opt.add_param_group({"params": b, "momentum": 0.3})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.3
    assert opt.param_groups[1]["alpha"] == 0.9 and opt.param_groups[1]["params"] == [b]
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [w]})
    with pytest.raises(ValueError, match="empty parameter list"):
        dy.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts, but got dynamic Tensor"):
        dy.optim.SGD(w, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        dy.optim.SGD({w}, lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        dy.optim.SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimize dynamic tensors, but one of the params is "
                                        "ndarray"):
        dy.optim.SGD([np.zeros(2)], lr=0.1)
    assert "Parameter Group 1" in repr(opt) and "momentum: 0.3" in repr(opt)


def test_updates_write_the_parameters_in_place_and_record_nothing():
    w = dy.tensor([1.0, 2.0], requires_grad=True)
    data = w.detach()  # shares w's data
    opt = dy.optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    nodes = dy.tape_nodes_created()
    opt.step()
    assert dy.tape_nodes_created() == nodes
    assert data.tolist() == w.tolist() != [1.0, 2.0]
