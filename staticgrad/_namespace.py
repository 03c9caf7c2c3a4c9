"""What a namespace module (sg, sg.nn, sg.train, sg.dynamic...) shows: its `__all__`.

A namespace lists its public API in `__all__`, which `help()` and `from ... import *` already
follow, and sets `__dir__ = public_dir(globals())` so that `dir()` and tab completion show
the same names (PEP 562). Its helper imports stay where its code reads them, and so do the
submodules the import system binds on a package once they are imported (`sg.compiler`,
`sg.train.saver`): `import staticgrad.compiler`, `staticgrad.train.saver.Saver` and mock
paths keep working; they are simply not part of the namespace.

    __all__ = ["softmax", "relu"]
    __dir__ = public_dir(globals())
    __getattr__ = missing_name("staticgrad.nn", "tf.nn", globals())

A name the namespace lacks raises AttributeError with the namespace's public name (not the
module that holds it) and the name it stands in for: `staticgrad.nn has no 'nce_loss' (TF1's
tf.nn.nce_loss)`, with the closest names it has.
"""

import difflib
import importlib.util
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


def missing_name(public: str, original: str, namespace: dict):
    """A module-level `__getattr__` (PEP 562: asked only for a name the module lacks) that
    raises AttributeError naming `public` (this namespace as users import it), the name
    asked for as `original` spells it (TF1's `tf.nn`, PyTorch's `torch`; None for a
    namespace of staticgrad's own), and the closest public names.

    >>> __getattr__ = missing_name("staticgrad", "tf", globals())  # doctest: +SKIP
    """
    who = "PyTorch" if original and original.split(".")[0] == "torch" else "TF1"

    def __getattr__(name: str):
        if name.startswith("_"):  # (private names, probes of tools: no TF1 name, no hint)
            raise AttributeError(f"module {public!r} has no attribute {name!r}")
        if namespace.get("__path__") and name.isidentifier() and \
                importlib.util.find_spec(f"{namespace['__name__']}.{name}") is not None:
            raise AttributeError(f"{public} has no {name!r} until it is imported: "
                                 f"import {public}.{name}")  # (a subpackage: staticgrad.onnx)
        close = difflib.get_close_matches(name, namespace.get("__all__", ()), n=3)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        stands_for = f" ({who}'s {original}.{name})" if original else ""
        raise AttributeError(f"{public} has no {name!r}{stands_for}{hint}")
    return __getattr__
