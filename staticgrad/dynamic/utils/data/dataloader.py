"""`DataLoader` (PyTorch's `torch.utils.data.DataLoader`): a dataset's samples in batches,
optionally shuffled afresh at each pass, each batch put together by `default_collate`.

Shuffling draws a permutation from `generator` (a `dy.Generator`), else from the global
generator that `dy.manual_seed` seeds: the same seed gives the same order (not torch's order
for that seed: the generators differ). Samples are loaded in this process, one by one.

>>> for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True):  # doctest: +SKIP
...     ...
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ...creation import float64, from_numpy, tensor
from ...dispatch import GENERATOR
from ...functions import stack
from ...tensor import Tensor


def default_collate(batch: list):
    """One batch from a list of samples, by the samples' structure: tensors (and NumPy
    arrays) are stacked along a new first axis; Python floats make a float64 tensor, ints
    an int64 one, bools a bool one; strings stay a list; dicts are collated per key, tuples
    and lists per position (giving a list), recursively.

    >>> default_collate([(dy.ones(2), 1), (dy.zeros(2), 0)])    # doctest: +SKIP
    [tensor([[1., 1.], [0., 0.]]), tensor([1, 0])]
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch)
    if isinstance(elem, np.ndarray) and elem.dtype.kind in "biuf":
        return from_numpy(np.stack(batch))
    if isinstance(elem, bool | int | float | np.bool_ | np.number):
        return tensor(batch, dtype=float64) if isinstance(elem, float) else tensor(batch)
    if isinstance(elem, str | bytes):
        return list(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([sample[key] for sample in batch]) for key in elem}
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(samples)) for samples in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"strings, dicts or lists; found {type(elem).__name__}")


class DataLoader:
    """Batches of `batch_size` samples of `dataset`, in order or (`shuffle=True`) in a fresh
    random order at each pass; `drop_last` leaves out a last, smaller batch; `collate_fn`
    puts a list of samples together (default_collate). `len()` is the number of batches."""

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False,
                 collate_fn=None, drop_last: bool = False, generator=None):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.collate_fn = collate_fn or default_collate
        self.drop_last, self.generator = drop_last, generator

    def __iter__(self):
        n = len(self.dataset)
        order = (self.generator or GENERATOR).rng.permutation(n).tolist() if self.shuffle \
            else range(n)
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            indices = order[start:start + self.batch_size]
            yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
