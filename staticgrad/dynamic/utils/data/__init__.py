"""dy.utils.data: PyTorch's `torch.utils.data` -- datasets, and a DataLoader that batches
them (in this process: there are no worker processes).

    dataset = dy.utils.data.TensorDataset(x, y)
    train, val = dy.utils.data.random_split(dataset, [0.8, 0.2],
                                            generator=dy.Generator().manual_seed(0))
    for xb, yb in dy.utils.data.DataLoader(train, batch_size=32, shuffle=True):
        ...

Modules: `dataset` (Dataset, TensorDataset, Subset, random_split), `dataloader` (DataLoader,
default_collate).
"""

from .... import _namespace
from .dataloader import DataLoader, default_collate  # noqa: F401
from .dataset import Dataset, Subset, TensorDataset, random_split  # noqa: F401

__all__ = ["DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate",
           "random_split"]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.utils.data", "torch.utils.data",
                                      globals())
