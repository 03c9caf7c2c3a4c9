"""Modules that hold modules: `Sequential` (runs them in order), `ModuleList` and
`ModuleDict` (register them, as a list or a dict would hold them), as PyTorch's.

>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))     # doctest: +SKIP
"""

from __future__ import annotations

import operator
from collections import OrderedDict

from .module import Module


def _index(idx, size: int) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


class Sequential(Module):
    """Its modules (given in order, or as an OrderedDict of names) called one after another."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return type(self)(OrderedDict(items[idx]))
        return items[_index(idx, len(items))][1]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self._modules))]
        setattr(self, key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]]):
            del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):  # noqa: A002
        for module in self:
            input = module(input)  # noqa: A001
        return input


class ModuleList(Module):
    """A list of modules, registered (so their parameters are the holder's); no forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_index(idx, len(self))), module)

    def __delitem__(self, idx):
        modules = list(self._modules.values())
        del modules[idx]
        self._modules.clear()
        for i, module in enumerate(modules):
            self.add_module(str(i), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """A dict of modules by name, registered; no forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module
