"""dy.optim.lr_scheduler's StepLR, ExponentialLR and CosineAnnealingLR: their recursions
follow the closed forms PyTorch documents, per parameter group, and a state_dict resumes
a schedule."""

from __future__ import annotations

import math

import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic.optim import lr_scheduler

BASE_LRS = (0.1, 0.04)

SCHEDULES = {
    "StepLR": (lambda opt: lr_scheduler.StepLR(opt, step_size=3, gamma=0.5),
               lambda base, epoch: base * 0.5 ** (epoch // 3)),
    "ExponentialLR": (lambda opt: lr_scheduler.ExponentialLR(opt, gamma=0.9),
                      lambda base, epoch: base * 0.9 ** epoch),
    "CosineAnnealingLR": (lambda opt: lr_scheduler.CosineAnnealingLR(opt, T_max=5,
                                                                     eta_min=0.01),
                          lambda base, epoch: 0.01 + (base - 0.01)
                          * (1 + math.cos(math.pi * epoch / 5)) / 2),
}


def _optimizer():
    w = dy.zeros(2, requires_grad=True)
    b = dy.zeros(1, requires_grad=True)
    return dy.optim.SGD([{"params": [w]}, {"params": [b], "lr": BASE_LRS[1]}], lr=BASE_LRS[0])


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedules_follow_their_closed_forms(name):
    make, closed_form = SCHEDULES[name]
    opt = _optimizer()
    sched = make(opt)
    assert sched.last_epoch == 0 and sched.get_last_lr() == list(BASE_LRS)
    assert sched.base_lrs == list(BASE_LRS)
    for epoch in range(1, 23):  # (the cosine goes down and up twice)
        opt.step()
        sched.step()
        assert sched.last_epoch == epoch
        want = [closed_form(base, epoch) for base in BASE_LRS]
        assert sched.get_last_lr() == pytest.approx(want, rel=1e-9, abs=1e-12), \
            f"{name} at epoch {epoch}"
        assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()
        assert [g["initial_lr"] for g in opt.param_groups] == list(BASE_LRS)


@pytest.mark.parametrize("name", SCHEDULES)
def test_a_state_dict_resumes_a_schedule(name):
    make, _ = SCHEDULES[name]
    opt = _optimizer()
    sched = make(opt)
    for _ in range(4):
        sched.step()
    saved_opt, saved_sched = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in saved_sched and saved_sched["last_epoch"] == 4
    opt2 = _optimizer()
    opt2.load_state_dict(saved_opt)
    sched2 = make(opt2)
    sched2.load_state_dict(saved_sched)
    for _ in range(6):
        sched.step()
        sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()


def test_resuming_needs_initial_lr():
    with pytest.raises(KeyError, match="'initial_lr' is not specified in param_groups\\[0\\]"):
        lr_scheduler.StepLR(_optimizer(), step_size=2, last_epoch=3)
    opt = _optimizer()
    for group in opt.param_groups:
        group["initial_lr"] = 1.0
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=4, last_epoch=1)  # resumed: closed form
    assert sched.last_epoch == 2
    assert sched.get_last_lr() == pytest.approx([0.5, 0.5])
