"""The package's layers, bottom to top: no module imports one above its own layer, at its
top or inside a function (the `ast` of every module, not only what runs at import). A lower
layer that needs something of a higher one gets it installed from above (Graph.create_op by
the op table, Graph._repr_svg_ by viz) or through a protocol (`_as_graph_element`)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "staticgrad"

# bottom to top; a module belongs to the layer of its longest matching prefix
LAYERS = [
    ("base", ["dtypes", "shapes", "errors", "gcpause", "_namespace", "runtime", "runtime_conv",
              "runtime_strings", "runtime_summary",
              "devices", "platform"]),
    ("graph", ["graph"]),
    ("ops", ["ops", "variables", "variable_scope", "initializers", "autodiff", "layers",
             "losses", "debugging", "math", "random", "control_flow", "rnn", "metrics",
             "strings"]),
    ("ir and passes", ["ir", "verify", "passes", "codegen"]),
    ("backends", ["backends"]),
    ("session", ["compiler", "config", "session"]),
    ("train, export, onnx, viz, cli, dynamic",
     ["train", "graph_io", "graph_def", "summary", "export", "onnx", "viz", "cli", "dynamic",
      "compat", "demo", "__main__", ""]),
]


def _layer(module: str) -> int:
    """The layer of staticgrad.<module> (module "" is the package's __init__), or None for a
    module no layer names (a new one must be given its place)."""
    best, length = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or (p and module.startswith(p + "."))) and len(p) > length:
                best, length = i, len(p)
    return best


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(module: str, path: Path):
    """(imported staticgrad module, line) for every import in the module, at any depth."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = [p for p in package if p]
    known = _modules()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("staticgrad"):
                target = node.module[len("staticgrad."):] if node.module != "staticgrad" else ""
            else:
                continue
            for alias in node.names:  # `from . import viz` imports the module viz
                full = f"{target}.{alias.name}" if target else alias.name
                yield (full if full in known else target), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "staticgrad" or alias.name.startswith("staticgrad."):
                    yield alias.name[len("staticgrad."):], node.lineno


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for module, path in sorted(_modules().items()):
        own = _layer(module)
        for target, line in _imports(module, path):
            if own is not None and (_layer(target) or 0) > own:  # (unplaced: the test below)
                upward.append(f"staticgrad/{path.relative_to(PACKAGE)}:{line} ({LAYERS[own][0]}) "
                              f"imports {target or 'staticgrad'} ({LAYERS[_layer(target)][0]})")
    assert not upward, "imports that go up the layers:\n" + "\n".join(upward)


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in _modules() if _layer(m) is None)
    assert not unplaced, f"modules in no layer of LAYERS (give each its place): {unplaced}"
    assert _layer("graph") == 1 and _layer("ops.table") == 2 and _layer("") == len(LAYERS) - 1


def test_import_circles_stay_inside_one_folder():
    """Modules that import each other in a circle are one folder's (ops/, dynamic/): a
    circle across folders would tie their layers together."""
    import networkx as nx
    graph = nx.DiGraph()
    for module, path in _modules().items():
        graph.add_node(module)
        for target, _ in _imports(module, path):
            if target != module:
                graph.add_edge(module, target)
    crossing = []
    for circle in nx.strongly_connected_components(graph):
        folders = {m if (PACKAGE / m.replace(".", "/")).is_dir() else m.rpartition(".")[0]
                   for m in circle}
        if len(circle) > 1 and len(folders) > 1:
            crossing.append(sorted(circle))
    assert not crossing, f"import circles across folders: {crossing}"
