"""Datasets (PyTorch's `torch.utils.data.Dataset` and friends): anything with `__getitem__`
and `__len__`; `TensorDataset` pairs up the rows of tensors; `random_split` deals a dataset
into non-overlapping `Subset`s.

>>> ds = TensorDataset(dy.randn(10, 3), dy.arange(10)); ds[2]    # doctest: +SKIP
(tensor([...]), tensor(2))
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...dispatch import GENERATOR
from ...tensor import Tensor


class Dataset:
    """A map-style dataset: subclasses give `__getitem__(index)` (one sample) and
    `__len__()`."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")


class TensorDataset(Dataset):
    """Sample i is `(t[i] for t in tensors)`: the tensors' rows, side by side.

    >>> TensorDataset(x, y)[0] == (x[0], y[0])    # doctest: +SKIP
    """

    def __init__(self, *tensors: Tensor):
        for t in tensors:
            if not isinstance(t, Tensor) or t.dim() == 0:
                raise TypeError("TensorDataset takes dynamic tensors of at least one dimension")
        if any(t.size(0) != tensors[0].size(0) for t in tensors):
            raise ValueError(f"Size mismatch between tensors: first dimensions "
                             f"{[t.size(0) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0) if self.tensors else 0


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths: Sequence, generator=None) -> list[Subset]:
    """Deal `dataset`'s samples, shuffled, into Subsets of `lengths` (counts that sum to its
    length, or fractions that sum to 1: floors, the remainder dealt one each from the
    first, as PyTorch deals it), drawing from `generator` (else the global one).

    >>> train, val = random_split(ds, [0.8, 0.2], dy.Generator().manual_seed(0))  # doctest: +SKIP
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [math.floor(n * frac) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if any(not isinstance(k, int) or k < 0 for k in lengths) or sum(lengths) != n:
        raise ValueError(f"Sum of input lengths ({lengths}) does not equal the length of the "
                         f"input dataset ({n})!")
    order = (generator or GENERATOR).rng.permutation(n).tolist()
    subsets, start = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[start:start + length]))
        start += length
    return subsets
