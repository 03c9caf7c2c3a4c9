"""Traced training steps with dy.optim optimizers (staticgrad/dynamic/trace_optim.py): a
float32 two-layer module trained N steps eagerly and N steps through `Traced.train_step`,
from the same start, ends with the same parameters, for each optimizer and its main options;
eager steps then traced ones (and traced then eager) are the eager loop's steps."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy

OPTIMIZERS = {
    "SGD": lambda ps: dy.optim.SGD(ps, lr=0.05),
    "SGD-momentum": lambda ps: dy.optim.SGD(ps, lr=0.05, momentum=0.9),
    "SGD-dampening": lambda ps: dy.optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.3),
    "SGD-nesterov": lambda ps: dy.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True),
    "SGD-weight_decay": lambda ps: dy.optim.SGD(ps, lr=0.05, momentum=0.5, weight_decay=0.1),
    "SGD-maximize": lambda ps: dy.optim.SGD(ps, lr=0.01, momentum=0.5, maximize=True),
    "Adam": lambda ps: dy.optim.Adam(ps, lr=0.01),
    "Adam-betas-eps": lambda ps: dy.optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-3),
    "Adam-weight_decay": lambda ps: dy.optim.Adam(ps, lr=0.01, weight_decay=0.1),
    "Adam-amsgrad": lambda ps: dy.optim.Adam(ps, lr=0.01, amsgrad=True),
    "Adam-maximize": lambda ps: dy.optim.Adam(ps, lr=0.01, maximize=True),
    "AdamW": lambda ps: dy.optim.AdamW(ps, lr=0.01),
    "AdamW-amsgrad": lambda ps: dy.optim.AdamW(ps, lr=0.01, weight_decay=0.2, amsgrad=True),
    "RMSprop": lambda ps: dy.optim.RMSprop(ps, lr=0.01),
    "RMSprop-alpha-eps": lambda ps: dy.optim.RMSprop(ps, lr=0.01, alpha=0.9, eps=1e-4),
    "RMSprop-momentum": lambda ps: dy.optim.RMSprop(ps, lr=0.01, momentum=0.7),
    "RMSprop-centered": lambda ps: dy.optim.RMSprop(ps, lr=0.01, centered=True),
    "RMSprop-all": lambda ps: dy.optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.5,
                                               weight_decay=0.1, maximize=True),
    "Adagrad": lambda ps: dy.optim.Adagrad(ps, lr=0.1),
    "Adagrad-lr_decay": lambda ps: dy.optim.Adagrad(ps, lr=0.1, lr_decay=0.1),
    "Adagrad-initial-eps": lambda ps: dy.optim.Adagrad(ps, lr=0.1, eps=1e-3,
                                                       initial_accumulator_value=0.5),
    "Adagrad-weight_decay": lambda ps: dy.optim.Adagrad(ps, lr=0.1, weight_decay=0.1),
    # parameter groups, each with hyper-parameters of its own
    "SGD-groups": lambda ps: dy.optim.SGD([{"params": ps[:2], "momentum": 0.9},
                                           {"params": ps[2:], "lr": 0.02}], lr=0.05),
    "Adam-groups": lambda ps: dy.optim.Adam([{"params": ps[:2], "betas": (0.5, 0.9)},
                                             {"params": ps[2:], "lr": 0.02, "amsgrad": True}],
                                            lr=0.01),
}
RTOL, ATOL = 1e-5, 1e-6  # float32


def _model(seed=0):
    dy.manual_seed(seed)
    return dy.nn.Sequential(dy.nn.Linear(3, 6), dy.nn.Tanh(), dy.nn.Linear(6, 2))


def _batches(n=6, size=8):
    rng = np.random.default_rng(2)
    return [(dy.tensor(rng.normal(size=(size, 3)).astype(np.float32)),
             dy.tensor(rng.normal(size=(size, 2)).astype(np.float32))) for _ in range(n)]


CRITERION = dy.nn.MSELoss()


def _eager_steps(model, optimizer, batches):
    for x, y in batches:
        optimizer.zero_grad()
        CRITERION(model(x), y).backward()
        optimizer.step()


def _traced_step(model, optimizer):
    traced = dy.trace(lambda x, y: CRITERION(model(x), y), *_batches(1)[0], module=model)
    return traced, traced.train_step(optimizer)


def _assert_same_parameters(got: dict, model, what: str):
    want = model.state_dict()
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name].numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=f"{what}: {name}")


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_n_traced_steps_give_the_eager_loops_parameters(name):
    make, batches = OPTIMIZERS[name], _batches(5)
    eager, graphed = _model(), _model()
    _eager_steps(eager, make(list(eager.parameters())), batches)
    traced, step = _traced_step(graphed, make(list(graphed.parameters())))
    for x, y in batches:
        step(x, y)
    _assert_same_parameters(traced.state_dict(), eager, name)
    assert not np.allclose(traced.state_dict()["0.weight"], _model().state_dict()["0.weight"])


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_eager_steps_then_traced_ones_are_the_eager_loops(name):
    make, batches = OPTIMIZERS[name], _batches(6)
    eager, model = _model(), _model()
    _eager_steps(eager, make(list(eager.parameters())), batches)
    optimizer = make(list(model.parameters()))
    _eager_steps(model, optimizer, batches[:3])  # the optimizer holds state: the graph's start
    traced, step = _traced_step(model, optimizer)
    for x, y in batches[3:]:
        step(x, y)
    _assert_same_parameters(traced.state_dict(), eager, name)


@pytest.mark.parametrize("name", ["SGD", "SGD-dampening", "Adam-amsgrad", "RMSprop-all",
                                  "Adagrad"])
def test_traced_steps_then_eager_ones_are_the_eager_loops(name):
    make, batches = OPTIMIZERS[name], _batches(6)
    eager, model = _model(), _model()
    _eager_steps(eager, make(list(eager.parameters())), batches)
    optimizer = make(list(model.parameters()))
    traced, step = _traced_step(model, optimizer)
    for x, y in batches[:3]:
        step(x, y)
    model.load_state_dict(traced.state_dict())  # the parameters ...
    step.write_back()  # ... and the optimizer's state, back to the eager side
    reference = _model()
    reference_optimizer = make(list(reference.parameters()))
    _eager_steps(reference, reference_optimizer, batches[:3])
    for p, q in zip(model.parameters(), reference.parameters()):  # the state 3 eager steps leave
        got, want = optimizer.state.get(p, {}), reference_optimizer.state.get(q, {})
        assert sorted(got) == sorted(want), name
        for key in want:
            np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), rtol=RTOL,
                                       atol=ATOL, err_msg=f"{name}: {key}")
    _eager_steps(model, optimizer, batches[3:])
    _assert_same_parameters({k: v.numpy() for k, v in model.state_dict().items()}, eager, name)


def test_a_schedulers_learning_rate_reaches_the_graph_at_each_step():
    batches = _batches(5)
    eager, graphed = _model(), _model()
    optimizer = dy.optim.Adam(eager.parameters(), lr=0.05)
    scheduler = dy.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
    for batch in batches:
        _eager_steps(eager, optimizer, [batch])
        scheduler.step()
    optimizer = dy.optim.Adam(graphed.parameters(), lr=0.05)
    scheduler = dy.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
    traced, step = _traced_step(graphed, optimizer)
    for x, y in batches:
        step(x, y)
        scheduler.step()
    _assert_same_parameters(traced.state_dict(), eager, "Adam with StepLR")


def test_the_optimizer_state_is_named_graph_variables():
    model = _model()
    traced, step = _traced_step(model, dy.optim.Adam(model.parameters(), amsgrad=True))
    names = {v.op.name for v in traced.graph.get_collection(sg.GraphKeys.GLOBAL_VARIABLES)}
    assert {"0.weight/Adam/step", "0.weight/Adam/exp_avg", "0.weight/Adam/exp_avg_sq",
            "0.weight/Adam/max_exp_avg_sq", "2.bias/Adam/exp_avg"} <= names
    step(*_batches(1)[0])
    assert traced.session.read_variable("0.weight/Adam/step:0") == 1.0


def test_a_parameter_the_loss_does_not_reach_is_left_alone():
    model, unused = _model(), dy.zeros(3, requires_grad=True)
    optimizer = dy.optim.SGD([*model.parameters(), unused], lr=0.1, momentum=0.9)
    x, y = _batches(1)[0]
    traced = dy.trace(lambda x, y: CRITERION(model(x), y) + 0 * unused.sum().detach(), x, y,
                      module=model)
    step = traced.train_step(optimizer)
    step(x, y)
    assert traced.session.read_variable(traced.variables[-1]).tolist() == [0, 0, 0]
    step.write_back()
    assert unused not in optimizer.state  # as eagerly: no gradient, no step, no state


def test_optimizers_train_step_cannot_write_as_graph_ops_raise_naming_them():
    class Signum(dy.optim.SGD):  # an update rule of its own
        def _update(self, group, param, grad, state):
            param.sub_(group["lr"] * grad.sign())

    class QuietAdam(dy.optim.Adam):  # PyTorch's rule still: traced as Adam's
        pass

    model = _model()
    traced = dy.trace(lambda x, y: CRITERION(model(x), y), *_batches(1)[0], module=model)
    with pytest.raises(NotImplementedError, match="Signum has an update rule of its own"):
        traced.train_step(Signum(model.parameters(), lr=0.1))
    traced.train_step(QuietAdam(model.parameters()))
    with pytest.raises(TypeError, match="sg.train optimizer or a dy.optim one"):
        traced.train_step("adam")


def test_a_hyper_parameter_changed_after_compiling_raises_naming_it():
    model = _model()
    optimizer = dy.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    traced, step = _traced_step(model, optimizer)
    x, y = _batches(1)[0]
    step(x, y)
    optimizer.param_groups[0]["lr"] = 0.05  # the lr is fed at each step: fine
    step(x, y)
    optimizer.param_groups[0]["momentum"] = 0.5
    with pytest.raises(ValueError, match=r"param group 0 has momentum=0.5 now, 0.9 when"):
        step(x, y)
    traced.train_step(optimizer)(x, y)  # compiled again, with the new momentum


def test_a_gathered_parameters_sparse_gradient_is_applied_as_the_eager_dense_one():
    def loss_of(w, rows):
        return (sg.gather(w, rows) ** 2).sum()

    start = np.random.default_rng(3).normal(size=(6, 2)).astype(np.float32)
    rows = dy.tensor(np.array([1, 3, 3, 0]))
    w, w_graph = dy.tensor(start, requires_grad=True), dy.tensor(start, requires_grad=True)
    optimizer = dy.optim.RMSprop([w], lr=0.01, momentum=0.5)  # its buffers decay everywhere
    for _ in range(3):
        optimizer.zero_grad()
        loss_of(w, rows).backward()
        optimizer.step()
    traced = dy.trace(lambda rows: loss_of(w_graph, rows), rows)
    with traced.graph.as_default():
        assert isinstance(sg.gradients(traced.outputs, traced.variables)[0], sg.IndexedSlices)
    step = traced.train_step(dy.optim.RMSprop([w_graph], lr=0.01, momentum=0.5))
    for _ in range(3):
        step(rows)
    np.testing.assert_allclose(traced.session.read_variable(traced.variables[0]),
                               w.detach().numpy(), rtol=RTOL, atol=ATOL)
