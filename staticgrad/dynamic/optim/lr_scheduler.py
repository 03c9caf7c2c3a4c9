"""Learning-rate schedules: PyTorch's `torch.optim.lr_scheduler` StepLR, ExponentialLR and
CosineAnnealingLR. Each `step()` moves to the next epoch and writes each group's new "lr"
into the optimizer, by PyTorch's recursive forms (each lr from the one before, so that a
schedule can follow another's changes); their closed forms, which the tests check, are

    StepLR:             lr = base_lr * gamma ** (epoch // step_size)
    ExponentialLR:      lr = base_lr * gamma ** epoch
    CosineAnnealingLR:  lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2

>>> sched = dy.optim.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)   # doctest: +SKIP
>>> for epoch in range(90): train(); sched.step()                        # doctest: +SKIP
"""

from __future__ import annotations

import math

from ... import _namespace
from .optimizer import Optimizer

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "StepLR"]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.optim.lr_scheduler",
                                      "torch.optim.lr_scheduler", globals())


class LRScheduler:
    """The base of the schedules: `last_epoch` (-1 before the first step; the constructor
    takes that step), `base_lrs` (each group's "initial_lr"), `get_last_lr()`."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()

    def get_lr(self) -> list[float]:
        """Each group's lr at epoch `last_epoch`, from the lr it has now."""
        raise NotImplementedError

    def step(self) -> None:
        """Move to the next epoch and set each group's lr for it."""
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The lr of each group that the last step() set."""
        return self._last_lr

    def state_dict(self) -> dict:
        """The schedule's attributes (but its optimizer), as PyTorch saves them."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """Multiply each group's lr by `gamma` every `step_size` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return lrs
        return [lr * self.gamma for lr in lrs]


class ExponentialLR(LRScheduler):
    """Multiply each group's lr by `gamma` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        return lrs if self.last_epoch == 0 else [lr * self.gamma for lr in lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal each group's lr from its base down to `eta_min` along half a cosine over `T_max`
    epochs (then back up, and so on: SGDR without its restarts)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        epoch, period, eta_min = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if epoch == 0:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and epoch > 0:  # resumed at last_epoch: the closed form
            return [eta_min + (base - eta_min) * (1 + math.cos(epoch * math.pi / period)) / 2
                    for base in self.base_lrs]
        if (epoch - 1 - period) % (2 * period) == 0:  # at the bottom: the cosine turns up
            return [group["lr"] + (base - eta_min) * (1 - math.cos(math.pi / period)) / 2
                    for base, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * epoch / period))
                / (1 + math.cos(math.pi * (epoch - 1) / period)) * (group["lr"] - eta_min)
                + eta_min for group in groups]
