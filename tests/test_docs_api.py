"""docs/api.md is what docs/make_api.py makes of the registry now: an op added, renamed or
given an ONNX form shows there (run `python docs/make_api.py` to rewrite it)."""

import importlib.util
from pathlib import Path

from staticgrad.ops.table import REGISTRY

ROOT = Path(__file__).resolve().parents[1]


def _maker():
    spec = importlib.util.spec_from_file_location("make_api", ROOT / "docs" / "make_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_op_reference_is_current():
    made = _maker().render()
    assert (ROOT / "docs" / "api.md").read_text(encoding="utf-8") == made, \
        "docs/api.md is out of date: run python docs/make_api.py"
    public = [t for t, d in REGISTRY.items() if not d.internal]
    assert all(f"| `{t}` |" in made for t in public)
    assert "| `MatMul` | `sg.matmul` | yes | numpy, cuda | exported |" in made
    assert ("| `Tanh` | `sg.math.tanh`, `sg.nn.tanh`, `sg.tanh` | yes | numpy, cuda | exported | "
            "`dy.tanh` |") in made
