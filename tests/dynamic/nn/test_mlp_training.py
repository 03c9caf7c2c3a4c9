"""A PyTorch-style training loop, written as PyTorch users write it (`import ... as torch`):
an MLP of the 784-512-512-10 shape, scaled down, trained with hand-written SGD under
no_grad(); its loss goes down."""

from __future__ import annotations

import numpy as np

import staticgrad.dynamic as torch
from staticgrad.dynamic import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(7 * 7, 32), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(32, 32), nn.ReLU(),
            nn.Linear(32, 10),
        )

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


def test_mlp_loss_goes_down_with_hand_written_sgd():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    images = torch.tensor(rng.normal(size=(64, 1, 7, 7)).astype(np.float32))
    labels = torch.tensor(rng.integers(0, 10, size=64))
    model = MLP()
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    model.train()
    for _ in range(25):
        loss = loss_fn(model(images), labels)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.5 * p.grad
        losses.append(loss.item())
    assert losses[-1] < 0.75 * losses[0] and losses[-1] < min(losses[:5]), losses
    model.eval()
    with torch.no_grad():
        accuracy = (model(images).argmax(1) == labels).float().mean().item()
    assert accuracy > 0.3
