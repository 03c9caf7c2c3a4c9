"""Export the computation of some fetches as a standalone Python module that needs only NumPy.

    sg.export([loss, train_op], [x, y], "out/step.py", session=sess)

writes `out/step.py` and, beside it, `out/step.npz` (the session's current values of the
variables the code reads or assigns, and the constants of the generated code). The module:

- defines `run(<feeds>)`, the feeds as arguments in `feed_list` order, returning the fetches
  flattened to a tuple (an operation fetches as None, a rank-0 tensor as a NumPy scalar);
- keeps the variables in the module-level dict `V` ({variable name: array}); a training step
  updates `V` in place, so a later `run` sees the new values (a large variable's update is
  written into its array itself, as `w -= lr * g` would be: copy an array of `V` to keep a
  past value); `reset()` reloads the exported values from the `.npz`;
- creates its own NumPy random generators (`R`), seeded from the graph seeds where set;
- carries a copy of the staticgrad runtime helpers its code calls (the `rt.<name>` calls),
  so it imports no staticgrad.

The two files are a pair: the `.npz` holds an `export_id` (a hash of both files' contents) that
the module checks whenever it reads it, so it never runs with another export's data. Both are
written to temporary files first and renamed into place only once both are complete, the
module first (`atomic_write_all`): a failed export leaves the previous pair as it was. A
failure or crash between the two renames leaves the new module beside the old data file; the
new module then refuses to load, naming the mismatch (export again), while a process running
the old module keeps reading the data file it was exported with. The other order would leave
the old module with new data, and a running old module's `reset()` would fail instead.

The code is the code `Session.run` executes, specialized to the feed shapes: they come from
`feed_shapes` or from the placeholders' static shapes. It is compiled with
`vector_math=False`: where the session computes exp, log, tanh or sigmoid in a float32
fused group with runtime_fast's kernels (the `[fast]` extra), the module calls NumPy's, and its
results may differ from the session's in the last bits (they are those of a session with
`CompileOptions(vector_math=False)`, bit for bit).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import inspect
import os
import sys
import types

import numpy as np

from . import runtime
from .backends import get_backend
from .backends.numpy import runtime as generated_rt
from .backends.numpy.parts import compile_module
from .codegen.templates import render_template
from .graph import Tensor, get_default_session
from .ops.py_func_ops import calls_python
from .session import Session, generator_seed
from .train.atomic_files import atomic_write_all

__all__ = ["export"]

# globals the exported module defines beside the generated code
_MODULE_NAMES = {"np", "os", "types", "rt", "V", "R", "run", "reset", "FEEDS", "FETCHES",
                 "_compute", "_DIR", "_DATA_FILE", "_VARIABLES", "_CONSTANTS", "_SEEDS",
                 "_EXPORT_ID", "_open_data", "_as_feed", "_data", "annotations"}


def export(fetches, feed_list, path, backend: str = "numpy", session: Session | None = None,
           feed_shapes=None) -> str:
    """Write a standalone NumPy module computing `fetches` from `feed_list`; return its path.

    `fetches`: a tensor, op, name, or nesting of them (the module returns the leaves as a
    flat tuple, in the order `Session.run` visits them). `feed_list`: the tensors (or names)
    fed, in the order of `run`'s arguments. `path`: the `.py` file to write; the variable
    values go to the `.npz` beside it. `feed_shapes`: a shape per feed (a list aligned with
    `feed_list`, or a dict keyed by tensor or name) where a placeholder's shape has unknown
    dimensions. `session`: whose variable values to store (the default session if None).

    >>> sg.export(y, [x], "model.py", session=sess)      # doctest: +SKIP
    >>> import model; model.run(np.ones((2, 3), np.float32))  # doctest: +SKIP
    """
    if get_backend(backend).name != "numpy":
        raise ValueError(f"sg.export writes a NumPy module; backend {backend!r} has no "
                         "exported form yet (export with backend='numpy')")
    path = os.fspath(path)
    folder, filename = os.path.split(os.path.abspath(path))
    stem, ext = os.path.splitext(filename)
    if ext != ".py" or not stem.isidentifier():
        raise ValueError(f"export path {path!r} must name a .py file whose name is a Python "
                         "identifier (the module's name)")
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot export to {path!r}: folder {folder!r} does not exist")
    session = session or get_default_session() or Session()
    session._check_open("export")
    feeds = [session._feed_tensor(k) for k in (feed_list or ())]
    shapes = _feed_shapes(session.graph, feeds, feed_shapes)
    feed_dict = {t: np.zeros(s, dtype=t.dtype.np) for t, s in zip(feeds, shapes)}
    # NumPy's ufuncs throughout, not runtime_fast's kernels: the module needs only NumPy
    plan = session.plan(fetches, feed_dict, dataclasses.replace(session.options,
                                                                vector_math=False))

    if any(calls_python(op) for op in plan.line_ops.ops):  # (the plan's ops, by line)
        raise ValueError("cannot export: the graph calls a Python function of this process "
                         "(sg.py_func), which an exported module cannot carry")
    namespace = plan.fn.__globals__
    tree = ast.parse(plan.source)
    var_names, rng_names, rt_names = _references(tree)
    imports, helpers = _runtime_source(rt_names)
    constants = {k: v for k, v in namespace.items() if isinstance(v, np.ndarray)
                 and k not in ("V", "R")}
    kernels = {k for k, v in namespace.items() if isinstance(v, types.FunctionType)} - {"run"}
    taken = _MODULE_NAMES | _top_level_names(imports + helpers)
    clash = sorted(taken & (set(constants) | kernels))
    if clash:
        raise ValueError(f"cannot export: generated names {clash} clash with the names of the "
                         "exported module's runtime section; rename those graph nodes")
    initialized = set(session.variable_names())
    missing = [v for v in var_names if v not in initialized and v in plan.var_reads]
    if missing:
        raise ValueError(f"cannot export: variable(s) {missing} have no value in the session; "
                         "run their initializers first")

    arrays = {}
    var_keys = {}
    for i, name in enumerate(var_names):
        if name in initialized:
            var_keys[name] = f"v{i}"
            arrays[f"v{i}"] = session.read_variable(name)
    for name, value in constants.items():
        arrays[f"c_{name}"] = value
    seeds = {op.name: generator_seed(op.attrs["seed"]) for op in plan.random_ops}
    for name in rng_names:
        seeds.setdefault(name, None)

    pieces = (stem, plan, tree, feeds, shapes, imports, helpers, rt_names, var_keys,
              sorted(constants), seeds)
    export_id = _export_id(_module_source(*pieces, export_id=""), arrays)
    source = _module_source(*pieces, export_id=export_id)
    del tree, pieces
    arrays["export_id"] = np.array(export_id)
    compile_module(source, path)  # a bug here should fail before anything is written
    # the module first: see the module docstring for what a crash between the renames leaves
    atomic_write_all([(os.path.join(folder, filename), lambda f: f.write(source.encode())),
                      (os.path.join(folder, stem + ".npz"), lambda f: np.savez(f, **arrays))])
    return os.path.join(folder, filename)


# -- the pieces -----------------------------------------------------------------------------------
def _given_feed_shapes(graph, feeds, feed_shapes) -> list:
    """The shape `feed_shapes` gives each feed (a dict by tensor or name, or a list in feed
    order), None where it gives none."""
    if feed_shapes is None:
        return [None] * len(feeds)
    if isinstance(feed_shapes, dict):
        by_tensor = {(k if isinstance(k, Tensor) else graph.as_graph_element(k)): s
                     for k, s in feed_shapes.items()}
        return [by_tensor.get(t) for t in feeds]
    given = list(feed_shapes)
    if len(given) != len(feeds):
        raise ValueError(f"feed_shapes has {len(given)} shapes for {len(feeds)} feeds")
    return given


def _check_feed_shape(t, shape) -> None:
    """Raise unless `shape`, given for feed t, is compatible with t's static shape."""
    if not t.shape.is_compatible_with(shape):
        raise ValueError(f"feed_shapes gives {shape} for {t.name}, which has shape "
                         f"{t.shape} ({t.op.where()})")


def _feed_shapes(graph, feeds, feed_shapes) -> list[tuple]:
    """The concrete shape of each feed: given in `feed_shapes`, or the static one."""
    shapes = []
    for t, shape in zip(feeds, _given_feed_shapes(graph, feeds, feed_shapes)):
        if shape is None:
            if not t.shape.is_fully_defined():
                raise ValueError(f"cannot export with feed {t.name} of shape {t.shape}: its "
                                 f"dimensions must be known; pass feed_shapes ({t.op.where()})")
            shape = t.shape.as_list()
        shape = tuple(int(d) for d in shape)
        _check_feed_shape(t, shape)
        shapes.append(shape)
    return shapes


def _references(tree) -> tuple[list[str], list[str], list[str]]:
    """What the generated code reads of its globals V, R and rt: the string keys of V[...]
    and of R[...] in first-use order, and the sorted names of rt.<name>; in one walk over
    the syntax tree (a 30,000-op chain's has millions of nodes)."""
    keys = {"V": {}, "R": {}}
    rt_names = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript):
            if isinstance(n.value, ast.Name) and n.value.id in keys \
                    and isinstance(n.slice, ast.Constant):
                keys[n.value.id].setdefault(n.slice.value)
        elif isinstance(n, ast.Attribute):
            if isinstance(n.value, ast.Name) and n.value.id == "rt":
                rt_names.add(n.attr)
    return list(keys["V"]), list(keys["R"]), sorted(rt_names)


def _runtime_source(rt_names: list[str]) -> tuple[list[str], list[str]]:
    """Source of the runtime helpers named, with their module-level dependencies: the import
    lines, and each definition (in its module's order)."""
    imports, defs, seen = [], {}, set()

    def visit(module, name):
        if (module.__name__, name) in seen:
            return
        seen.add((module.__name__, name))
        stmt = _top_level(module).get(name)
        if stmt is None:
            return  # a builtin
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType):
                line = f"import {obj.__name__}" + ("" if obj.__name__ == name else f" as {name}")
            elif getattr(obj, "__module__", "").startswith("staticgrad"):
                visit(sys.modules[obj.__module__], obj.__name__)
                return
            else:
                line = f"from {stmt.module} import {name}"
            if line not in imports:
                imports.append(line)
            return
        key = (module.__name__, stmt.lineno)
        if key in defs:
            return
        defs[key] = ast.get_source_segment(inspect.getsource(module), stmt)
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id != name:
                visit(module, n.id)

    for name in rt_names:
        obj = getattr(generated_rt, name)  # what the generated code's rt.<name> is
        home = sys.modules.get(getattr(obj, "__module__", None) or "")
        if home is not None and home.__name__.startswith("staticgrad"):
            visit(home, obj.__name__)  # defined in a staticgrad module
        else:  # a NumPy object that the runtime binds to a name (rt.clip)
            visit(runtime, name)
    order = {m: i for i, m in enumerate(dict.fromkeys(m for m, _ in defs))}
    body = [defs[k] for k in sorted(defs, key=lambda k: (order[k[0]], k[1]))]
    return [line for line in imports if line != "import numpy as np"], body


_TOP_LEVEL: dict = {}


def _top_level(module) -> dict:
    """name -> the top-level statement of `module` that binds it."""
    found = _TOP_LEVEL.get(module.__name__)
    if found is None:
        found = {}
        for stmt in ast.parse(inspect.getsource(module)).body:
            if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
                found[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    for n in ast.walk(target):
                        if isinstance(n, ast.Name):
                            found[n.id] = stmt
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                found[stmt.target.id] = stmt
            elif isinstance(stmt, ast.Import | ast.ImportFrom):
                for alias in stmt.names:
                    found[(alias.asname or alias.name).split(".")[0]] = stmt
        _TOP_LEVEL[module.__name__] = found
    return found


def _top_level_names(helpers: list[str]) -> set[str]:
    names = set()
    for text in helpers:
        for stmt in ast.parse(text).body:
            if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
                names.add(stmt.name)
            elif isinstance(stmt, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
            else:
                names.update(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name))
    return names


def _export_id(source: str, arrays: dict) -> str:
    """A hash of the module's source (without its id) and of the arrays of its data file: the
    same export gives the same id, and files from different exports do not pass for a pair."""
    digest = hashlib.sha256(source.encode())
    for key in sorted(arrays):
        value = np.ascontiguousarray(arrays[key])
        digest.update(f"\0{key}\0{value.dtype.str}\0{value.shape}\0".encode())
        digest.update(value.data if value.size else b"")
    return digest.hexdigest()[:16]


def _module_source(stem, plan, tree, feeds, shapes, imports, helpers, rt_names, var_keys,
                   constants, seeds, export_id: str) -> str:
    """The exported module, from codegen_templates/numpy/export.py.j2. Every value that comes
    from the graph reaches the text as a Python literal (repr of names already checked,
    numbers, tuples) or as the generated code itself."""
    doc_end = tree.body[0].end_lineno  # the generated module's docstring
    generated = plan.source.splitlines()[doc_end:]
    generated = "\n".join(generated).replace("\ndef run(", "\ndef _compute(", 1).strip("\n")
    params = [a.arg for a in next(s for s in tree.body if isinstance(s, ast.FunctionDef)
                                  and s.name == "run").args.args]
    fetch_names = [f.name for f in plan.fetches]
    helper_lines = []
    for text in helpers:  # a definition is followed by two blank lines, a binding is not
        helper_lines += [text, "", ""] if "\n" in text else [text]
    while helper_lines and helper_lines[-1] == "":
        helper_lines.pop()
    return render_template(
        "numpy/export.py.j2", stem=stem, params=params,
        feeds=[(p, t.name, t.dtype.name, str(tuple(s)), t.dtype.np.name, repr(tuple(s)),
                repr(t.name)) for p, t, s in zip(params, feeds, shapes)],
        fetches=fetch_names,
        imports=sorted({"import os", "import types"} | set(imports)
                       | ({"import threading"} if plan.locks else set())),
        data_file=repr(stem + ".npz"), export_id=repr(export_id), var_keys=repr(var_keys),
        seeds=repr(seeds), feed_names=repr([t.name for t in feeds]),
        fetch_names=repr(fetch_names), locks=repr(list(plan.locks)) if plan.locks else "",
        constants=[(name, repr("c_" + name)) for name in constants],
        generated=generated, helpers="\n".join(helper_lines),
        rt_names=", ".join(f"{n}={n}" for n in rt_names))
