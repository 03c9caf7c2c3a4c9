"""sg.compat.v1: every name of staticgrad (TF1's API), for programs that import
`tf.compat.v1`: `import staticgrad.compat.v1 as tf` runs them as `import staticgrad as tf`.
Names are looked up in staticgrad when asked for (PEP 562), so this is the same API."""

import importlib


def _staticgrad():
    return importlib.import_module("staticgrad")


def __getattr__(name):
    if name == "__all__":
        return list(_staticgrad().__all__)
    if name.startswith("_"):  # (a forwarded __path__ would make this a package of copies)
        raise AttributeError(f"module 'staticgrad.compat.v1' has no attribute {name!r}")
    try:
        return getattr(_staticgrad(), name)
    except AttributeError as e:  # staticgrad's message, under this namespace's names
        text = str(e).replace("staticgrad has", "staticgrad.compat.v1 has", 1)
        raise AttributeError(text.replace("TF1's tf.", "TF1's tf.compat.v1.", 1)) from None


def __dir__():
    return sorted(_staticgrad().__all__)
