"""Export the computation of some fetches as a standalone Python module that needs only NumPy
(or, for the GPU, only NumPy and CuPy).

    sg.export([loss, train_op], [x, y], "out/step.py", session=sess)
    sg.export([loss, train_op], [x, y], "out/step.py", backend="cuda", session=sess)

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

With `backend="cuda"` the module is the CUDA backend's plan (backends/cuda/render.py) and
needs NumPy and CuPy (and, to run, a GPU; writing it needs neither). Its kernels' CUDA C goes
to `out/step.cu` beside it, which the module reads and compiles with `cupy.RawModule` at
import, after checking its SHA-256 against the one it holds (so a `.cu` from another export,
or edited, is refused by name). `V` holds the variables as CuPy arrays, made from the `.npz`
at import and by `reset()`; `R` holds CuPy's generators; feeds may be NumPy or CuPy arrays.
It carries copies of the CUDA runtime helpers its code calls (`crt.<name>`: runtime.py's
functions, and library.py's methods in a class over `cupy`; backends/cuda/export.py). Every
size must be known (CUDA kernels are compiled for whole shapes): a free dimension is refused,
naming it; give it in `feed_shapes`. The session only gives the variables' values: it may be
a NumPy session on a machine without a GPU.

A string value (a constant or a variable of dtype string) is kept in the `.npz` as two
numeric arrays, its strings' lengths and their bytes, which the module joins when it loads
them: the data file holds no pickles, and the strings never become source text.

The files are a set: the `.npz` holds an `export_id` (a hash of the module's and the data's
contents; the module holds the `.cu`'s hash, so that is in it too) that the module checks
whenever it reads it, so it never runs with another export's data. All are written to
temporary files first and renamed into place only once all are complete, the module first,
then the `.cu`, then the `.npz` (`atomic_write_all`): a failed export leaves the previous set
as it was. A failure or crash between two renames leaves the new module beside an old `.cu`
or data file; the new module then refuses to load, naming the mismatch (export again), while
a process running the old module keeps reading the data file it was exported with (it read
its `.cu` once, at import). The other order would leave the old module with new data, and a
running old module's `reset()` would fail instead.

The code is the code `Session.run` executes, specialized to the feed shapes: they come from
`feed_shapes` or from the placeholders' static shapes. A size left None there (a batch
dimension) stays free: the code is compiled at the partial shapes, reading such a size from
its arrays where it needs one (`np.reshape(x, (-1, 3))`, `np.zeros_like(x)`), and `run`
accepts any size there while it checks each feed's rank, known sizes and dtype, naming the
feed. Free sizes the graph relates (the batch of the labels and of the logits) must agree:
`run` checks that too (`_tied_dims` finds them with the session's own shape rules). Where the
code needs a free size when it is compiled (a fill of a fed tensor's shape, the gradients of
a slice, a pad or a concat along a free dimension), the export raises UnimplementedError
naming the op, the line of the program that made it and the free dimensions it is computed
from: give those sizes in `feed_shapes`. A session itself always compiles at the shapes it is
fed. The rank of every feed must be known. Values of a free size are neither fused into
block kernels nor freed or reused by the memory plan (both need sizes known when compiled):
the module computes them with whole-array NumPy calls, so where a session at a large batch
sums such a value block by block, the module's sum may differ in the last bits. It is
compiled with
`vector_math=False`: where the session computes exp, log, tanh or sigmoid in a float32
fused group with runtime_fast's kernels (the `[fast]` extra), the module calls NumPy's, and its
results may differ from the session's in the last bits (they are those of a session with
`CompileOptions(vector_math=False)`, bit for bit). Nor does it hold the one-pass numba kernels
such a session compiles for float32 fused groups (backends/numpy/one_pass.py): it runs with
NumPy alone.
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
from .codegen.pycompile import compile_module
from .codegen.templates import render_template
from .errors import OpError, UnimplementedError
from .graph import Tensor, get_default_session
from .ops.kernels import np_dtype
from .ops.py_func_ops import calls_python
from .passes.prune import prune
from .passes.specialize import specialize
from .runtime_strings import split_strings
from .session import Session, generator_seed
from .shapes import TensorShape
from .train.atomic_files import atomic_write_all

__all__ = ["export"]

# globals the exported module defines beside the generated code
_MODULE_NAMES = {"np", "os", "types", "rt", "V", "R", "run", "reset", "FEEDS", "FETCHES",
                 "_compute", "_DIR", "_DATA_FILE", "_VARIABLES", "_CONSTANTS", "_SEEDS",
                 "_EXPORT_ID", "_open_data", "_as_feed", "_same_sizes", "_data", "annotations",
                 "_value", "_fits", "_out_of_range", "threading", "L"}
# and those a CUDA export's module defines besides
_CUDA_MODULE_NAMES = {"cp", "crt", "CUDA_SOURCE", "hashlib", "_CUDA_FILE", "_CUDA_SHA256",
                      "_read_cuda", "_Library", "_library"}
# the backends an export writes a module for
BACKENDS = ("numpy", "cuda")


def export(fetches, feed_list, path, backend: str = "numpy", session: Session | None = None,
           feed_shapes=None) -> str:
    """Write a standalone module computing `fetches` from `feed_list`; return its path.

    `fetches`: a tensor, op, name, or nesting of them (the module returns the leaves as a
    flat tuple, in the order `Session.run` visits them). `feed_list`: the tensors (or names)
    fed, in the order of `run`'s arguments. `path`: the `.py` file to write; the variable
    values go to the `.npz` beside it. `feed_shapes`: a shape per feed (a list aligned with
    `feed_list`, or a dict keyed by tensor or name), to fix sizes the placeholders leave
    unknown or to give a rank; a size None there, or unknown in a placeholder's shape, stays
    free: the module accepts any size there. `backend`: "numpy" (a module needing only
    NumPy) or "cuda" (NumPy and CuPy, its kernels in a `.cu` beside it; no free size).
    `session`: whose variable values to store (the default session if None).

    >>> x = sg.placeholder(sg.float32, [None, 3])             # doctest: +SKIP
    >>> sg.export(y, [x], "model.py", session=sess)           # doctest: +SKIP
    >>> import model; model.run(np.ones((2, 3), np.float32))  # any batch size  # doctest: +SKIP
    >>> sg.export(y, [x], "gpu.py", backend="cuda", feed_shapes=[(2, 3)])  # doctest: +SKIP
    """
    target = get_backend(backend)
    if target.name not in BACKENDS:
        raise ValueError(f"sg.export writes a module for the backends {list(BACKENDS)}; "
                         f"backend {backend!r} has no exported form")
    cuda = target.name == "cuda"
    # (the CUDA backend's helpers, as the backend names them: no backend's module here)
    cuda_export, cuda_library = (target.export_helpers, target.library) if cuda else (None,) * 2
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
    free = _free_dims(feeds, shapes)
    if cuda and free:
        raise ValueError(f"cannot export for the cuda backend with {_describe_dims(free, feeds)}"
                         " free (None): CUDA kernels are compiled for shapes known in full; give "
                         f"{'its size' if len(free) == 1 else 'their sizes'} in feed_shapes")
    signature = [(s, t.dtype) for t, s in zip(feeds, shapes)]
    # NumPy's ufuncs throughout, not runtime_fast's kernels: the module needs only NumPy
    options = dataclasses.replace(session.options, vector_math=False)
    try:
        plan = session._plan_at(fetches, feeds, signature, options, backend=target)
    except UnimplementedError as e:
        if not free or e.op is None:
            raise
        dims = _upstream(e.op, free, feeds)
        raise UnimplementedError(
            e.node_def, e.op, f"cannot export with {_describe_dims(dims, feeds)} free (None): "
                              f"{e.message}; give {'its size' if len(dims) == 1 else 'their sizes'}"
                              " in feed_shapes to export at a fixed size") from None
    same_sizes = _tied_dims(plan, feeds, shapes)

    if any(calls_python(op) for op in plan.line_ops.ops):  # (the plan's ops, by line)
        raise ValueError("cannot export: the graph calls a Python function of this process "
                         "(sg.py_func), which an exported module cannot carry")
    tree = ast.parse(plan.source)
    var_names, rng_names, rt_names = _references(tree)
    constants = {k: v for k, v in plan.constants.items() if isinstance(v, np.ndarray)}
    if _holds_strings(session, feeds, constants, var_names):
        rt_names = sorted({*rt_names, "join_strings", "to_strings"})  # (the module's loaders)
    generated_names = set(constants) | {s.name for s in tree.body
                                        if isinstance(s, ast.FunctionDef) and s.name != "run"}
    taken = set(_MODULE_NAMES)
    if cuda:
        split = cuda_export.split_module(plan.source, tree)
        crt = cuda_export.crt_helpers(cuda_export.crt_references(tree))
        rt_names = sorted({*rt_names, *crt.rt_names})
        generated_names |= {ast.parse(line).body[0].targets[0].id for line in split.load}
        taken |= _CUDA_MODULE_NAMES | _top_level_names(
            [*crt.functions, crt.library] if crt.library else crt.functions)
    imports, helpers = _runtime_source(
        rt_names, [(cuda_library, name) for name in crt.library_globals] if cuda else ())
    if cuda:  # (the template imports NumPy and CuPy itself)
        imports = [*imports, "import hashlib", *(line for line in crt.imports
                                                 if line != "import cupy as cp")]
    taken |= _top_level_names(imports + helpers)
    clash = sorted(taken & generated_names)
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
            _store(arrays, f"v{i}", session.read_variable(name))
    for name, value in constants.items():
        _store(arrays, f"c_{name}", value)
    seeds = {op.name: generator_seed(op.attrs["seed"]) for op in plan.random_ops}
    for name in rng_names:
        seeds.setdefault(name, None)

    if cuda:
        generated = split.functions
        template, extra = "cuda/export.py.j2", _cuda_values(stem, split, crt)
    else:
        generated = "\n".join(plan.source.splitlines()[tree.body[0].end_lineno:])  # (no doc)
        template, extra = "numpy/export.py.j2", {}
    pieces = (template, extra, stem, plan, tree, generated, feeds, shapes, same_sizes, imports,
              helpers, rt_names, var_keys, sorted(constants), seeds)
    export_id = _export_id(_module_source(*pieces, export_id=""), arrays)
    source = _module_source(*pieces, export_id=export_id)
    del tree, pieces, generated
    arrays["export_id"] = np.array(export_id)
    compile_module(source, path)  # a bug here should fail before anything is written
    # the module first: see the module docstring for what a crash between the renames leaves
    files = [(os.path.join(folder, filename), lambda f: f.write(source.encode()))]
    if cuda:  # (the module holds the .cu's hash, and so does its export_id)
        files.append((os.path.join(folder, stem + ".cu"),
                      lambda f: f.write(split.cuda_source.encode())))
    files.append((os.path.join(folder, stem + ".npz"), lambda f: np.savez(f, **arrays)))
    atomic_write_all(files)
    return os.path.join(folder, filename)


def _definitions(texts: list[str]) -> str:
    """Top-level statements as module text: a definition is followed by two blank lines, a
    binding is not."""
    lines = []
    for text in texts:
        lines += [text, "", ""] if "\n" in text else [text]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)


def _cuda_values(stem: str, split, crt) -> dict:
    """What codegen_templates/cuda/export.py.j2 adds to the NumPy export's values."""
    return {"cuda_file": repr(stem + ".cu"),
            "cuda_sha256": repr(hashlib.sha256(split.cuda_source.encode()).hexdigest()),
            "crt_functions": _definitions(crt.functions), "crt_library": crt.library,
            "crt_names": crt.bindings, "load": split.load}


def _holds_strings(session, feeds, constants, var_names) -> bool:
    """Whether a feed, a constant of the code or a variable it reads is strings: then the
    module carries the helpers that take string feeds and load string values."""
    graph = session.graph
    return (any(t.dtype.is_string for t in feeds)
            or any(v.dtype.kind == "O" for v in constants.values())
            or any(graph.get_operation_by_name(v).outputs[0].dtype.is_string
                   for v in var_names if v in session.variable_names()))


def _store(arrays: dict, key: str, value: np.ndarray) -> None:
    """value into the data file's arrays under key; a string value as two numeric arrays,
    `key:lengths` and `key:bytes` (the file holds no pickles), which the module joins."""
    if value.dtype.kind == "O":
        arrays[key + ":lengths"], arrays[key + ":bytes"] = split_strings(value)
    else:
        arrays[key] = value


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
    """The shape of each feed, None where a dimension is free: given in `feed_shapes` (where
    it leaves a size None, the placeholder's own stands if known), or the static one. A
    feed's rank must be known."""
    shapes = []
    for t, shape in zip(feeds, _given_feed_shapes(graph, feeds, feed_shapes)):
        if shape is None:
            if t.shape.ndims is None:
                raise ValueError(f"cannot export with feed {t.name} of unknown rank: pass its "
                                 f"shape in feed_shapes ({t.op.where()})")
            shape = t.shape.as_list()
        shape = [None if d is None else int(d) for d in shape]
        _check_feed_shape(t, shape)
        shapes.append(tuple(TensorShape(shape).merge_with(t.shape).as_list()))
    return shapes


def _free_dims(feeds, shapes) -> list[tuple[int, int]]:
    """(feed index, axis) of each free dimension, in feed order."""
    return [(k, axis) for k, shape in enumerate(shapes) for axis, d in enumerate(shape)
            if d is None]


def _describe_dims(dims, feeds) -> str:
    return ", ".join(f"{feeds[k].name} dimension {axis}" for k, axis in dims)


def _upstream(op, free, feeds) -> list[tuple[int, int]]:
    """The free dimensions of the feeds that `op` is computed from (all of them where it is
    computed from none: a dimension may reach it through a sub-graph's inputs)."""
    fed = {t: k for k, t in enumerate(feeds)}
    seen, stack, found = set(), [op], set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for t in node.inputs:
            if t in fed:
                found.add(fed[t])
            else:
                stack.append(t.op)
    return [d for d in free if d[0] in found] or free
# at most this many free dimensions are related by trying each partition of them (there are
# 203 partitions of 6)
TIE_LIMIT = 6


def _tied_dims(plan, feeds, shapes) -> list[list[tuple[int, int]]]:
    """The groups of free dimensions (feed index, axis) that must be of one size, as the
    graph's shape rules say: a session that compiles at sizes putting them apart raises
    (labels and logits of different batch sizes); the exported module checks them. Found by
    specializing the plan's ops (shape inference only) at sizes for each partition of the
    free dimensions, finest first: the first that holds ties what it groups. Where none
    holds at these sizes (a dimension must be the sum of two others, or even...), or there
    are more than TIE_LIMIT free dimensions, none are tied: NumPy's own checks stand."""
    free = _free_dims(feeds, shapes)
    if len(free) < 2 or len(free) > TIE_LIMIT:
        return []
    ops = prune(list(plan.fetches), set(feeds))

    def holds(groups) -> bool:
        size = {d: 2 + g for g, group in enumerate(groups) for d in group}
        sig = {t: (tuple(size.get((k, axis), d) for axis, d in enumerate(shape)), t.dtype)
               for k, (t, shape) in enumerate(zip(feeds, shapes))}
        try:
            specialize(ops, sig)
        except (OpError, ValueError, TypeError):
            return False
        return True

    for groups in sorted(_partitions(free), key=len, reverse=True):
        if holds(groups):
            return [group for group in groups if len(group) > 1]
    return []


def _partitions(items: list) -> list[list[list]]:
    """Every partition of `items` into groups."""
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    found = []
    for part in _partitions(rest):
        found.append([[first], *part])
        for i in range(len(part)):
            found.append(part[:i] + [[first, *part[i]]] + part[i + 1:])
    return found


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


def _runtime_source(rt_names: list[str], others=()) -> tuple[list[str], list[str]]:
    """Source of the runtime helpers named, and of the `others` (module, name), with their
    module-level dependencies: the import lines, and each definition (in its module's
    order)."""
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
        # what the generated code's rt.<name> is; where the backend puts a faster kernel in
        # place of staticgrad.runtime's (conv_fast's numba loops), the reference NumPy one
        obj = getattr(runtime, name) if hasattr(runtime, name) else getattr(generated_rt, name)
        home = sys.modules.get(getattr(obj, "__module__", None) or "")
        if home is not None and home.__name__.startswith("staticgrad"):
            visit(home, obj.__name__)  # defined in a staticgrad module
        else:  # a NumPy object that the runtime binds to a name (rt.clip)
            visit(runtime, name)
    for module, name in others:
        visit(module, name)
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


def _module_source(template, extra, stem, plan, tree, generated, feeds, shapes, same_sizes,
                   imports, helpers, rt_names, var_keys, constants, seeds, export_id: str) -> str:
    """The exported module, from `template` (codegen_templates/numpy/export.py.j2 or
    cuda/export.py.j2, which takes the `extra` values too) around `generated`, the plan's
    code. Every value that comes from the graph reaches the text as a Python literal (repr
    of names already checked, numbers, tuples) or as the generated code itself."""
    generated = ("\n" + generated).replace("\ndef run(", "\ndef _compute(", 1).strip("\n")
    params = [a.arg for a in next(s for s in tree.body if isinstance(s, ast.FunctionDef)
                                  and s.name == "run").args.args]
    fetch_names = [f.name for f in plan.fetches]
    return render_template(
        template, **extra, device=template.startswith("cuda/"), stem=stem, params=params,
        feeds=[(p, t.name, t.dtype.name, str(TensorShape(s)), np_dtype(t.dtype)[len("np."):],
                repr(tuple(s)), repr(t.name)) for p, t, s in zip(params, feeds, shapes)],
        free=any(d is None for s in shapes for d in s),
        same_sizes=[(", ".join(f"{params[k]}.shape[{axis}]" for k, axis in group),
                     repr([(feeds[k].name, axis) for k, axis in group]),
                     " and ".join(f"{feeds[k].name} dimension {axis}" for k, axis in group))
                    for group in same_sizes],
        fetches=fetch_names,
        imports=sorted({"import os", "import types"} | set(imports) - {"import numpy as np"}
                       | ({"import threading"} if plan.locks else set())),
        data_file=repr(stem + ".npz"), export_id=repr(export_id), var_keys=repr(var_keys),
        seeds=repr(seeds), feed_names=repr([t.name for t in feeds]),
        fetch_names=repr(fetch_names), locks=repr(list(plan.locks)) if plan.locks else "",
        constants=[(name, repr("c_" + name)) for name in constants],
        generated=generated, helpers=_definitions(helpers),
        rt_names=", ".join(f"{n}={n}" for n in rt_names))
