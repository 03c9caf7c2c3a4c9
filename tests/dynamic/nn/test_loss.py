"""dy.nn losses (modules and functional) against NumPy from PyTorch's documented formulas,
for each reduction; class weights, ignore_index, label smoothing, pos_weight."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy
import staticgrad.dynamic.nn.functional as F
from staticgrad.dynamic import nn
from tests.conftest import numeric_grad

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=(5, 4))
LABELS = np.array([0, 3, 1, 1, 2])
WEIGHT = np.array([1.0, 2.0, 0.5, 3.0])


def log_softmax(v):
    shifted = v - v.max(1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(1, keepdims=True))


def reduce(loss, reduction, weights=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / weights.sum() if weights is not None else loss.mean()


REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction):
    x, y = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    np.testing.assert_allclose(nn.MSELoss(reduction=reduction)(dy.tensor(x), dy.tensor(y))
                               .numpy(), reduce((x - y) ** 2, reduction), rtol=1e-12)
    np.testing.assert_allclose(nn.L1Loss(reduction=reduction)(dy.tensor(x), dy.tensor(y))
                               .numpy(), reduce(np.abs(x - y), reduction), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_and_nll(reduction):
    picked = -log_softmax(LOGITS)[np.arange(5), LABELS]
    x, t = dy.tensor(LOGITS), dy.tensor(LABELS)
    np.testing.assert_allclose(nn.CrossEntropyLoss(reduction=reduction)(x, t).numpy(),
                               reduce(picked, reduction), rtol=1e-10)
    np.testing.assert_allclose(nn.NLLLoss(reduction=reduction)(F.log_softmax(x, 1), t).numpy(),
                               reduce(picked, reduction), rtol=1e-10)
    w = WEIGHT[LABELS]  # weighted: the mean divides by the sum of the picked weights
    np.testing.assert_allclose(
        nn.CrossEntropyLoss(weight=dy.tensor(WEIGHT), reduction=reduction)(x, t).numpy(),
        reduce(picked * w, reduction, w), rtol=1e-10)
    ignored = np.array([0, -100, 1, 1, -100])
    kept = ignored != -100
    np.testing.assert_allclose(
        nn.CrossEntropyLoss(reduction=reduction)(x, dy.tensor(ignored)).numpy(),
        reduce(np.where(kept, -log_softmax(LOGITS)[np.arange(5), np.maximum(ignored, 0)], 0),
               reduction, kept.astype(float)), rtol=1e-10)
    smooth = 0.1 * -log_softmax(LOGITS).mean(1) + 0.9 * picked
    np.testing.assert_allclose(
        nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.1)(x, t).numpy(),
        reduce(smooth, reduction), rtol=1e-10)


def test_cross_entropy_spatial_targets_probabilities_and_gradient():
    scores = RNG.normal(size=(2, 3, 4))  # [N, C, d]
    labels = RNG.integers(0, 3, size=(2, 4))
    logp = log_softmax(np.moveaxis(scores, 1, -1).reshape(-1, 3)).reshape(2, 4, 3)
    expected = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(F.cross_entropy(dy.tensor(scores), dy.tensor(labels),
                                               reduction="none").numpy(), expected, rtol=1e-10)
    probs = np.exp(log_softmax(RNG.normal(size=(5, 4))))
    np.testing.assert_allclose(F.cross_entropy(dy.tensor(LOGITS), dy.tensor(probs)).item(),
                               -(probs * log_softmax(LOGITS)).sum(1).mean(), rtol=1e-10)
    x = dy.tensor(LOGITS, requires_grad=True)
    F.cross_entropy(x, dy.tensor(LABELS), weight=dy.tensor(WEIGHT)).backward()
    w = WEIGHT[LABELS]
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(
        lambda v: float((-log_softmax(v)[np.arange(5), LABELS] * w).sum() / w.sum()), LOGITS),
        rtol=1e-6)


@pytest.mark.filterwarnings("ignore:divide by zero")  # log(0), the clamped case, as NumPy's
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    logits, z = RNG.normal(size=(4, 3)) * 3, RNG.integers(0, 2, size=(4, 3)).astype(float)
    p = 1 / (1 + np.exp(-logits))
    bce = -(z * np.log(p) + (1 - z) * np.log(1 - p))
    np.testing.assert_allclose(nn.BCELoss(reduction=reduction)(dy.tensor(p), dy.tensor(z))
                               .numpy(), reduce(bce, reduction), rtol=1e-9)
    np.testing.assert_allclose(
        nn.BCEWithLogitsLoss(reduction=reduction)(dy.tensor(logits), dy.tensor(z)).numpy(),
        reduce(bce, reduction), rtol=1e-9)
    pos = np.array([1.0, 2.0, 3.0])
    weighted = -(pos * z * np.log(p) + (1 - z) * np.log(1 - p))
    np.testing.assert_allclose(
        nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=dy.tensor(pos))(
            dy.tensor(logits), dy.tensor(z)).numpy(), reduce(weighted, reduction), rtol=1e-9)
    # PyTorch clamps each log at -100: a certain wrong answer costs 100, not inf
    assert F.binary_cross_entropy(dy.tensor([0.0]), dy.tensor([1.0])).item() == 100.0


def test_reduction_checks_and_legacy_arguments():
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.MSELoss(reduction="avg")(dy.zeros(2), dy.zeros(2))
    assert nn.MSELoss(size_average=False).reduction == "sum"
    assert nn.L1Loss(reduce=False).reduction == "none"
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert "weight" in nn.CrossEntropyLoss(weight=dy.ones(3)).state_dict()
