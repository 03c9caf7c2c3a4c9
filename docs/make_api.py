"""Write docs/api.md, the reference of every op type of the registry, from the registry
itself: the public functions that build it (TF1's names: found in their source or their
factory's, and from the op vocabulary), whether it has a gradient, which backends run it,
its ONNX form, and its name in the dynamic mode. tests/test_docs_api.py keeps the file current:

    python docs/make_api.py            # rewrite docs/api.md
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import staticgrad as sg  # noqa: E402
from staticgrad.backends import BACKENDS, get_backend  # noqa: E402
from staticgrad.onnx.no_form import NO_ONNX  # noqa: E402
from staticgrad.onnx.rules import RULES  # noqa: E402
from staticgrad.ops import vocabulary  # noqa: E402
from staticgrad.ops.table import REGISTRY  # noqa: E402

OUT = ROOT / "docs" / "api.md"
NAMESPACES = {"sg": sg, "sg.nn": sg.nn, "sg.math": sg.math, "sg.debugging": sg.debugging,
              "sg.random": sg.random, "sg.layers": sg.layers, "sg.losses": sg.losses,
              "sg.train": sg.train, "sg.metrics": sg.metrics}
_QUOTED = re.compile(r"[\"']([A-Z][A-Za-z0-9]+)[\"']")
# ops made by classes, operators or helpers of other modules, which no source scan finds
MADE_ELSEWHERE = {
    "ClipByValue": ["sg.clip_by_value"], "StridedSlice": ["tensor[...]"],
    "Scan": ["sg.scan", "sg.map_fn", "sg.foldl", "sg.foldr", "sg.nn.dynamic_rnn"],
    "While": ["sg.while_loop"], "TensorArrayWrite": ["sg.TensorArray.write"],
    "VariableV2": ["sg.Variable", "sg.get_variable"],
}


def builders() -> dict[str, list[str]]:
    """op type -> the public functions whose source names it (sorted), and the vocabulary's."""
    found: dict[str, set] = {}
    for label, module in NAMESPACES.items():
        for name in getattr(module, "__all__", ()):
            fn = getattr(module, name, None)
            if not isinstance(fn, types.FunctionType):
                continue
            try:
                source = inspect.getsource(fn)
            except (OSError, TypeError):
                source = ""
            named = set(_QUOTED.findall(source))  # (in its code, or in a factory's closure)
            named |= {c.cell_contents for c in fn.__closure__ or ()
                      if isinstance(c.cell_contents, str)}
            for op_type in named & set(REGISTRY):
                found.setdefault(op_type, set()).add(f"{label}.{name}")
    for op_type, api, _ in vocabulary.entries():
        for ns in api.namespaces:
            label = "sg" if ns == "sg" else f"sg.{ns}"
            found.setdefault(op_type, set()).add(f"{label}.{api.name}")
    for op_type, names in MADE_ELSEWHERE.items():
        found.setdefault(op_type, set()).update(names)
    return {t: sorted(names) for t, names in found.items()}


def _dynamic_names() -> dict[str, str]:
    return {t: f"dy.{name}" for t, _, name, _ in vocabulary.dynamic_entries()}


def _onnx(op_type: str) -> str:
    if op_type in RULES:
        return "exported"
    return "none: " + NO_ONNX.get(op_type, "?").split(";")[0].split(":")[0]


def _backends(op_type: str) -> str:
    names = []
    for name in BACKENDS:
        try:
            if get_backend(name).supports(op_type):
                names.append(name)
        except (ValueError, RuntimeError):
            continue
    return ", ".join(names) or "none"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    built, dynamic = builders(), _dynamic_names()
    lines = ["# Op reference", "",
             "Every op type of the registry, generated from it by `python docs/make_api.py`",
             "(tests/test_docs_api.py keeps this file current). *Built by*: the public",
             "functions that make the op, by TF1's names (one function may make several",
             "ops; an op built by none is made by the compiler or by gradients); *gradient*:",
             "whether it has a gradient rule; *backends*: which backends run it; *ONNX*:",
             "whether `sg.onnx.export_onnx` maps it, or why not; *dynamic*: its function in",
             "the dynamic mode, where it has one of its own (the graph functions run there",
             "too, on dynamic tensors).", "",
             "| op | built by | gradient | backends | ONNX | dynamic |",
             "|---|---|---|---|---|---|"]
    for op_type in sorted(REGISTRY):
        opdef = REGISTRY[op_type]
        if opdef.internal:
            continue
        grad = "yes" if opdef.differentiable and opdef.grad is not None else \
            ("yes" if opdef.differentiable else "no")
        lines.append("| " + " | ".join([
            f"`{op_type}`",
            ", ".join(f"`{n}`" for n in built.get(op_type, [])) or "—", grad,
            _backends(op_type), _cell(_onnx(op_type)),
            f"`{dynamic[op_type]}`" if op_type in dynamic else "—"]) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT}")
