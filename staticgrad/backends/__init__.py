"""Backends: what a compiled plan runs on. One folder a backend (`backends/numpy/`), and one
entry in BACKENDS naming the module that defines it.

    get_backend("numpy")      # the Backend object (see base.py for the interface)
    available_backends()      # {"numpy": None, ...}: None, or why that backend cannot run here

A backend's module is imported when first asked for; one whose libraries are missing (CuPy
for a GPU backend) raises BackendUnavailableError from `get_backend`, saying why, and
`Session(backend=...)`, `sg.export(..., backend=...)` and the CLI report that error, with the
backends that are available.
"""

from __future__ import annotations

import importlib

from .base import Backend, BackendUnavailableError, Rendered  # noqa: F401

# name -> the module (relative to this package) whose BACKEND is that backend
BACKENDS: dict[str, str] = {
    "numpy": ".numpy",
    "cuda": ".cuda",
}

_loaded: dict[str, Backend] = {}


def register_backend(name: str, module: str) -> None:
    """Make `name` a backend, defined as `BACKEND` by `module` (an absolute module name, or
    one relative to staticgrad.backends), imported when first used."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a backend name must be an identifier, got {name!r}")
    if not isinstance(module, str) or not module:
        raise TypeError(f"backend {name!r}: its module must be a module's name (a str), got "
                        f"{module!r}")
    if name in BACKENDS and BACKENDS[name] != module:
        raise ValueError(f"backend {name!r} is already registered (by {BACKENDS[name]!r})")
    BACKENDS[name] = module


def get_backend(name) -> Backend:
    """The backend called `name`; ValueError for a name that is none, BackendUnavailableError
    for one that cannot run here (both list the backends that can, and why the others can't)."""
    if isinstance(name, Backend):
        why = name.unavailable() or _host_missing(name)
        if why is not None:
            raise BackendUnavailableError(f"backend {name.name!r} is not available here: {why}")
        return name
    backend = _loaded.get(name) if isinstance(name, str) else None
    if backend is not None:
        return backend
    if not isinstance(name, str) or name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; {_summary()}")
    why = _why_not(name)
    if why is not None:
        raise BackendUnavailableError(f"backend {name!r} is not available here: {why}; "
                                      f"{_summary()}")
    return _loaded[name]


def available_backends() -> dict[str, str | None]:
    """{name: None if it can run here, else why not}, for every registered backend."""
    return {name: _why_not(name) for name in BACKENDS}


def _why_not(name: str) -> str | None:
    if name not in _loaded:
        try:
            module = importlib.import_module(BACKENDS[name], __name__)
        except Exception as e:  # (a GPU library may fail on import with its own error)
            return f"importing {BACKENDS[name]!r} failed: {type(e).__name__}: {e}"
        backend = getattr(module, "BACKEND", None)
        if not isinstance(backend, Backend):
            return f"{BACKENDS[name]!r} defines no BACKEND"
        try:
            why = backend.unavailable()
        except Exception as e:
            why = f"checking it failed: {type(e).__name__}: {e}"
        if why is None:
            why = _host_missing(backend)
        if why is not None:
            return why
        _loaded[name] = backend
    return None


def _host_missing(backend: Backend) -> str | None:
    """Resolve `backend.host` (the backend that runs what it leaves) to its Backend, once, as
    `backend.host_backend`; None, or why that host cannot run here."""
    if backend.host is None or backend.host == backend.name or backend.host_backend is not None:
        return None
    if backend.host not in BACKENDS:
        return f"its host {backend.host!r} is not a backend"
    why = _why_not(backend.host)
    if why is not None:
        return f"its host {backend.host!r} is not available: {why}"
    backend.host_backend = _loaded[backend.host]
    return None


def _summary() -> str:
    states = available_backends()
    ok = [n for n, why in states.items() if why is None]
    text = "available: " + (", ".join(repr(n) for n in ok) or "none")
    missing = [f"{n!r} ({why})" for n, why in states.items() if why is not None]
    return text + ("; not available: " + ", ".join(missing) if missing else "")
