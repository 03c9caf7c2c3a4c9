"""Namespaces hold only public names. Each namespace (sg and the sub-namespaces its `__all__`
lists, recursively: sg.nn, sg.train, sg.dynamic, sg.dynamic.nn.functional...; and
staticgrad.onnx) lists its public API in `__all__`, and `dir()` shows exactly that: no helper
import, no internal function, no module but a sub-namespace. Every public callable has a
docstring of its own (what `help()` shows), and what the README, docs, examples and tests call
through a namespace is in it (see staticgrad/_namespace.py for how)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOTS = {"sg": "staticgrad", "staticgrad.onnx": "staticgrad.onnx"}

# Functions and classes a namespace module defines that are the package's own, not its API.
INTERNAL = {
    "staticgrad.errors": {"user_location", "pinned_location", "is_package_code",
                          "format_location", "here"},  # where a node was created
}


def _namespaces() -> dict[str, ModuleType]:
    """Each namespace by the path a user writes (sg.nn), walking the modules in `__all__`."""
    found, stack = {}, [(path, importlib.import_module(name)) for path, name in ROOTS.items()]
    seen = set()  # (sg.compat.v1 is sg again: each module is walked once, by its shortest
    while stack:  # path: breadth first, sg.app before sg.compat.v1.app)
        path, module = stack.pop(0)
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        found[path] = module
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name, None)
            if isinstance(value, ModuleType):
                stack.append((f"{path}.{name}", value))
    return dict(sorted(found.items()))


NAMESPACES = _namespaces()


def _has_own_doc(value) -> bool:
    doc = vars(value).get("__doc__") if isinstance(value, type) else inspect.getdoc(value)
    return bool(doc and doc.strip())


@pytest.mark.parametrize("path", NAMESPACES)
def test_dir_shows_only_the_public_names(path):
    module = NAMESPACES[path]
    public = getattr(module, "__all__", None)
    assert public is not None, (f"{path} ({module.__name__}) has no __all__ (a module in a "
                                "namespace's __all__ is a sub-namespace: it needs one too)")
    problems = [f"{name} is listed twice" for name in set(public) if public.count(name) > 1]
    problems += [f"{name} is in __all__ but not in the module" for name in public
                 if not hasattr(module, name)]
    shown = {name for name in dir(module) if not name.startswith("__")}
    problems += [f"dir() shows {name}, which is not in __all__" for name in shown - set(public)]
    problems += [f"dir() hides {name}, which is in __all__" for name in set(public) - shown]
    for name in public:
        value = getattr(module, name, None)
        if name.startswith("_"):
            problems.append(f"{name}: a private name in __all__")
        elif isinstance(value, ModuleType) and not value.__name__.startswith("staticgrad."):
            problems.append(f"{name}: the module {value.__name__}, not a staticgrad namespace")
        elif (inspect.isroutine(value) or isinstance(value, type)) and \
                not getattr(value, "__module__", "").startswith("staticgrad"):
            problems.append(f"{name}: {value!r} comes from {value.__module__}, not staticgrad")
    assert not problems, f"{path}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NAMESPACES)
def test_what_a_namespace_module_defines_is_public_or_private(path):
    """A function or class a namespace module defines has an underscore, is in `__all__`, or
    is listed in INTERNAL: a new public function is not left out of dir() by mistake."""
    module = NAMESPACES[path]
    internal = INTERNAL.get(module.__name__, set())
    left_out = [name for name, value in vars(module).items()
                if (inspect.isfunction(value) or isinstance(value, type))
                and value.__module__ == module.__name__ and not name.startswith("_")
                and name not in module.__all__ and name not in internal]
    assert not left_out, (f"{path} defines {left_out}: add them to its __all__, or name them "
                          "with a leading underscore if they are its own helpers")


@pytest.mark.parametrize("path", NAMESPACES)
def test_every_public_callable_has_a_docstring(path):
    module = NAMESPACES[path]
    missing = [name for name in module.__all__
               if callable(value := getattr(module, name)) and not isinstance(value, ModuleType)
               and (inspect.isroutine(value) or isinstance(value, type))
               and not _has_own_doc(value)]
    assert not missing, f"{path}: no docstring for help() to show: {missing}"


# -- what the README, the docs, the examples and the tests call through a namespace ------------
ROOT = Path(__file__).resolve().parents[1]
MODULE_PATHS = {"staticgrad": "sg", "staticgrad.dynamic": "sg.dynamic",
                "staticgrad.dynamic.nn.functional": "sg.dynamic.nn.functional"}
PROSE_ALIASES = {"sg": "sg", "tf": "sg", "staticgrad": "sg", "dy": "sg.dynamic",
                 "F": "sg.dynamic.nn.functional"}  # what the README and docs write
_IMPORT_AS = re.compile(r"import (staticgrad[\w.]*) as (\w+)|from staticgrad import (\w+) as (\w+)")


def _aliases(text: str, prose: bool) -> dict[str, str]:
    """Name in the file -> namespace path: `import staticgrad.dynamic as dy` gives dy."""
    aliases = dict(PROSE_ALIASES) if prose else {}
    if "import staticgrad" in text:
        aliases["staticgrad"] = "sg"
    for module, alias, submodule, sub_alias in _IMPORT_AS.findall(text):
        module, alias = (module, alias) if module else (f"staticgrad.{submodule}", sub_alias)
        if module in MODULE_PATHS:
            aliases[alias] = MODULE_PATHS[module]
    return aliases


def _is_submodule(module: ModuleType, name: str) -> bool:
    """staticgrad.viz, staticgrad.cli: modules of the package, imported by their own path."""
    return hasattr(module, "__path__") and \
        importlib.util.find_spec(f"{module.__name__}.{name}") is not None


def _uses():
    """(namespace path, name, where) for each `sg.nn.relu`-like use in the project's text."""
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("*.py"),
             *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    for file in files:
        text = file.read_text(encoding="utf-8")
        aliases = _aliases(text, prose=file.suffix == ".md")
        if not aliases:
            continue
        use = re.compile(r"(?<![\w.])(%s)((?:\.[A-Za-z_]\w*)+)(?![\w*])" % "|".join(aliases))
        for lineno, line in enumerate(text.splitlines(), 1):
            for alias, dotted in use.findall(line):
                path = aliases[alias]
                for name in dotted.lstrip(".").split("."):
                    if path not in NAMESPACES or name.startswith("_"):
                        break
                    yield path, name, f"{file.relative_to(ROOT)}:{lineno}"
                    path = f"{path}.{name}"


def test_the_names_the_project_uses_are_public():
    """Hiding helpers hid no API: what the README, docs, examples, benchmarks and tests call
    through a namespace (sg.nn.relu, dy.no_grad, F.linear...) is in its __all__."""
    hidden = sorted({f"{path}.{name} ({where})" for path, name, where in _uses()
                     if name not in NAMESPACES[path].__all__
                     and not _is_submodule(NAMESPACES[path], name)})
    assert not hidden, "used but not public:\n" + "\n".join(hidden)


@pytest.mark.parametrize("path", [p for p in NAMESPACES if p.split(".")[0] == "sg"])
def test_a_missing_name_is_named_with_the_namespace_users_import(path):
    """`staticgrad.nn has no 'nce_loss' (TF1's tf.nn.nce_loss)`, not the internal module that
    holds sg.nn; with the closest names it has."""
    module = NAMESPACES[path]
    public = "staticgrad" + path[2:]
    original = "torch" + path[len("sg.dynamic"):] if path.startswith("sg.dynamic") else \
        "tf" + path[2:]
    with pytest.raises(AttributeError) as info:
        module.no_such_name_anywhere  # noqa: B018
    who = "PyTorch" if original.startswith("torch") else "TF1"
    stands_for = "" if path == "sg.runtime_fast" else \
        f" ({who}'s {original}.no_such_name_anywhere)"  # (staticgrad's own namespace)
    assert str(info.value) == f"{public} has no 'no_such_name_anywhere'{stands_for}"
    if module.__all__:
        near = module.__all__[0] + "x"
        with pytest.raises(AttributeError, match=rf"did you mean '{module.__all__[0]}'"):
            getattr(module, near)


def test_a_subpackage_not_yet_imported_says_to_import_it_and_private_names_stay_plain():
    import staticgrad as sg
    import staticgrad.onnx  # noqa: F401  (so that the name is bound...)
    del sg.onnx  # (...then unbound again, as before its import)
    try:
        with pytest.raises(AttributeError, match=r"^staticgrad has no 'onnx' until it is "
                                                 r"imported: import staticgrad.onnx$"):
            sg.onnx  # noqa: B018
    finally:
        sg.onnx = importlib.import_module("staticgrad.onnx")
    with pytest.raises(AttributeError, match=r"^module 'staticgrad' has no attribute '_x'$"):
        sg._x  # noqa: B018


def test_staticgrad_works_under_python_OO():
    """`python -OO` drops every docstring: the namespaces and the dynamic mode's functions,
    which build some of theirs, must still import, and a graph and a tape still run."""
    import subprocess
    import sys
    script = ("import numpy as np, staticgrad as sg, staticgrad.dynamic as d\n"
              "x = sg.placeholder(sg.float32, [3])\n"
              "y = sg.reduce_sum(sg.sin(x) * 2.0)\n"
              "g, = sg.gradients(y, [x])\n"
              "v, dv = sg.Session().run([y, g], {x: np.ones(3, np.float32)})\n"
              "t = d.tensor([1.0, 2.0], requires_grad=True)\n"
              "(t * t).sum().backward()\n"
              "print(round(float(v), 4), round(float(dv[0]), 4), t.grad.numpy().tolist())\n")
    proc = subprocess.run([sys.executable, "-OO", "-c", script], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["5.0488", "1.0806", "[2.0,", "4.0]"]
