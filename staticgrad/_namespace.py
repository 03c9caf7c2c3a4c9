"""What a namespace module (sg, sg.nn, sg.train, sg.dynamic...) shows: its `__all__`.

A namespace lists its public API in `__all__`, which `help()` and `from ... import *` already
follow, and sets `__dir__ = public_dir(globals())` so that `dir()` and tab completion show
the same names (PEP 562). Its helper imports stay where its code reads them, and so do the
submodules the import system binds on a package once they are imported (`sg.compiler`,
`sg.train.saver`): `import staticgrad.compiler`, `staticgrad.train.saver.Saver` and mock
paths keep working; they are simply not part of the namespace.

    __all__ = ["softmax", "relu"]
    __dir__ = public_dir(globals())
"""

from types import ModuleType


def public_dir(namespace: dict):
    """A module-level `__dir__` for the module whose globals are `namespace`: its `__all__`
    and its dunder names.

    >>> __dir__ = public_dir(globals())  # doctest: +SKIP
    """
    def __dir__() -> list[str]:
        dunders = (name for name in namespace if name.startswith("__") and name.endswith("__"))
        return sorted({*namespace["__all__"], *dunders})
    return __dir__


def public_names(namespace: dict, subnamespaces=()) -> list[str]:
    """The `__all__` of a namespace made of imports (a package's `__init__`): the names it
    binds that do not start with an underscore, less modules other than `subnamespaces`.

    >>> __all__ = public_names(globals(), subnamespaces=("nn", "train"))  # doctest: +SKIP
    """
    return sorted(name for name, value in namespace.items()
                  if not name.startswith("_")
                  and (name in subnamespaces or not isinstance(value, ModuleType)))
