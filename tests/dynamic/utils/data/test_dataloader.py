"""DataLoader and default_collate against hand-made references: batches in order and
shuffled by a seeded generator, drop_last, len(), and collating tuples, dicts and numbers."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic.utils.data import DataLoader, TensorDataset, default_collate

X = np.arange(20.0, dtype=np.float32).reshape(10, 2)


def _dataset():
    return TensorDataset(dy.tensor(X), dy.arange(10))


@pytest.mark.parametrize("drop_last, sizes", [(False, [4, 4, 2]), (True, [4, 4])])
def test_batches_in_order(drop_last, sizes):
    loader = DataLoader(_dataset(), batch_size=4, drop_last=drop_last)
    batches = list(loader)
    assert len(loader) == len(batches) == len(sizes)
    start = 0
    for (xb, yb), size in zip(batches, sizes):
        np.testing.assert_array_equal(xb.numpy(), X[start:start + size])
        assert yb.tolist() == list(range(start, start + size)) and yb.dtype == dy.int64
        start += size


def test_shuffle_draws_a_fresh_permutation_from_the_generator_at_each_pass():
    loader = DataLoader(_dataset(), batch_size=3, shuffle=True,
                        generator=dy.Generator().manual_seed(0))
    reference = np.random.default_rng(0)  # dy.Generator is NumPy's default_rng
    for _ in range(2):
        order = reference.permutation(10).tolist()
        labels = [i for _, yb in loader for i in yb.tolist()]
        assert labels == order
    assert len(loader) == 4


def test_shuffle_without_a_generator_follows_dy_manual_seed():
    loader = DataLoader(_dataset(), batch_size=5, shuffle=True)
    dy.manual_seed(11)
    first = [yb.tolist() for _, yb in loader]
    dy.manual_seed(11)
    assert [yb.tolist() for _, yb in loader] == first
    assert sorted(sum(first, [])) == list(range(10))


def test_default_collate_batches_by_structure():
    samples = [{"x": dy.tensor([1.0, 2.0]), "label": 1, "weight": 0.5, "name": "a",
                "pair": (True, np.array([1, 2]))},
               {"x": dy.tensor([3.0, 4.0]), "label": 0, "weight": 1.5, "name": "b",
                "pair": (False, np.array([3, 4]))}]
    batch = default_collate(samples)
    assert batch["x"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert batch["label"].tolist() == [1, 0] and batch["label"].dtype == dy.int64
    assert batch["weight"].tolist() == [0.5, 1.5] and batch["weight"].dtype == dy.float64
    assert batch["name"] == ["a", "b"]
    flags, arrays = batch["pair"]
    assert flags.tolist() == [True, False] and flags.dtype == dy.bool
    assert arrays.tolist() == [[1, 2], [3, 4]]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([(1, 2), (3,)])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object()])


def test_a_collate_fn_and_bad_batch_sizes():
    loader = DataLoader(list(range(7)), batch_size=3, collate_fn=lambda b: sum(b))
    assert list(loader) == [3, 12, 6]
    for bad in (0, -1, 2.5, None):
        with pytest.raises(ValueError, match="batch_size should be a positive integer"):
            DataLoader(list(range(3)), batch_size=bad)


def test_a_training_loop_reads_as_pytorchs():
    dy.manual_seed(0)
    x = dy.randn(32, 3)
    y = x @ dy.tensor([[1.0], [-2.0], [0.5]])
    w = dy.zeros(3, 1, requires_grad=True)
    opt = dy.optim.SGD([w], lr=0.1)
    for _ in range(20):
        for xb, yb in DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True):
            opt.zero_grad()
            ((xb @ w - yb) ** 2).mean().backward()
            opt.step()
    np.testing.assert_allclose(w.detach().numpy().ravel(), [1.0, -2.0, 0.5], atol=1e-3)
