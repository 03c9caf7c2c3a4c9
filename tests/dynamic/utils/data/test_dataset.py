"""TensorDataset, Subset and random_split against hand-made references."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic.utils.data import Dataset, Subset, TensorDataset, random_split


def test_tensor_dataset_pairs_rows():
    x = dy.arange(12.0).reshape(6, 2)
    y = dy.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    xi, yi = ds[4]
    assert xi.tolist() == [8.0, 9.0] and yi.item() == 4
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(x, dy.arange(5))


def test_a_dataset_subclass_and_subset():
    class Squares(Dataset):
        def __getitem__(self, i):
            return i * i

        def __len__(self):
            return 5
    sub = Subset(Squares(), [4, 0, 2])
    assert [sub[i] for i in range(len(sub))] == [16, 0, 4]
    with pytest.raises(NotImplementedError):
        Dataset()[0]


def test_random_split_deals_a_seeded_permutation():
    ds = TensorDataset(dy.arange(10))
    a, b, c = random_split(ds, [5, 3, 2], generator=dy.Generator().manual_seed(1))
    order = np.random.default_rng(1).permutation(10).tolist()  # dy.Generator is NumPy's
    assert (a.indices, b.indices, c.indices) == (order[:5], order[5:8], order[8:])
    assert [a[i][0].item() for i in range(5)] == order[:5]


def test_random_split_by_fractions_deals_the_remainder_from_the_first():
    parts = random_split(list(range(11)), [0.5, 0.3, 0.2], generator=dy.Generator())
    assert [len(p) for p in parts] == [6, 3, 2]  # floors 5, 3, 2 -> 10; one more to the first
    assert sorted(i for p in parts for i in p.indices) == list(range(11))
    with pytest.raises(ValueError, match="does not equal the length"):
        random_split(list(range(11)), [5, 5])


def test_random_split_without_a_generator_follows_dy_manual_seed():
    dy.manual_seed(5)
    first = random_split(list(range(8)), [4, 4])[0].indices
    dy.manual_seed(5)
    assert random_split(list(range(8)), [4, 4])[0].indices == first
