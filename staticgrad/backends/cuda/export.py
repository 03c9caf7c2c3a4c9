"""What `sg.export(..., backend="cuda")` adds to an export (staticgrad/export.py): the plan's
module taken apart, and copies of the CUDA runtime's helpers that its code calls.

    out/step.py    the host module: needs NumPy and CuPy, imports no staticgrad
    out/step.cu    the plan's CUDA C (the text of CUDA_SOURCE), compiled at import
    out/step.npz   the variables' values and the constants, as for a NumPy export

The generated module (render.py) holds its kernels' source in a string, `CUDA_SOURCE`,
binds them (`fused_1 = crt.kernel(CUDA_SOURCE, "fused_1")`) and copies its device
constants (`X_gpu = crt.to_device(X)`) at load. `split_module` takes that text apart: the CUDA
source goes to the `.cu` file, the bindings to the end of the exported module (after its
constants are loaded), the functions stay as they are.

`crt` in the exported module is built from copies: `runtime_source` copies the functions of
runtime.py that the code calls (read from its file: importing it imports CuPy), and
`library_source` the methods of library.py's `_Library` it calls, in a class of the same
name over `cupy`. Where a method calls `staticgrad.runtime` (its error messages), the copy
calls the module's `rt.`, to which the export adds those helpers.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import os
import tokenize

from . import library

RUNTIME_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime.py")
# make_library's attributes that are not methods of _Library
LIBRARY_EXTRAS = {"xp": "cp", "AssertionFailed": "rt.AssertionFailed"}


@dataclasses.dataclass
class Split:
    """A generated CUDA host module taken apart."""

    cuda_source: str   # the value of CUDA_SOURCE
    functions: str     # the module's text with neither its docstring nor its load-time lines
    load: list[str]    # the kernels' bindings and device constants' copies, in order


def split_module(source: str, tree: ast.Module) -> Split:
    """`source` (a module render.py made; `tree` its syntax tree) taken apart: its functions
    and the statements run at load, the CUDA source apart. (cuda/module.py.j2 puts every
    statement that is not a function before the first function.)"""
    body = tree.body[1:]  # (after the docstring)
    first_def = next(i for i, stmt in enumerate(body) if isinstance(stmt, ast.FunctionDef))
    if not all(isinstance(stmt, ast.FunctionDef) for stmt in body[first_def:]):
        raise AssertionError("the generated CUDA module has statements between its functions")
    head = body[:first_def]
    if not head or not (isinstance(head[0], ast.Assign) and head[0].targets[0].id == "CUDA_SOURCE"):
        raise AssertionError("the generated CUDA module does not begin with CUDA_SOURCE")
    load = [ast.get_source_segment(source, stmt) for stmt in head[1:]]
    functions = "\n".join(source.splitlines()[body[first_def].lineno - 1:])
    return Split(head[0].value.value, functions.strip("\n"), load)


def crt_references(tree: ast.Module) -> list[str]:
    """The sorted names of crt.<name> in the generated code."""
    return sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                   and isinstance(n.value, ast.Name) and n.value.id == "crt"})


@dataclasses.dataclass
class Helpers:
    """The copied CUDA runtime: source to place in the module, and what it needs there."""

    imports: list[str]        # import lines (beside the module's own)
    functions: list[str]      # runtime.py's definitions and bindings, in its order
    library: str              # class _Library with the methods needed ("" if none)
    rt_names: list[str]       # staticgrad.runtime helpers the copies call, as rt.<name>
    library_globals: list[str]  # library.py's own globals the methods read (copy them too)
    bindings: str             # the crt namespace's keywords: "name=value, ..."


def crt_helpers(crt_names: list[str]) -> Helpers:
    """Copies of what the generated code calls as crt.<name> (ValueError for a name that the
    CUDA runtime has not got)."""
    runtime_defs = _file_top_level(RUNTIME_FILE)
    methods = {n for n in dir(library._Library) if not n.startswith("_")}
    from_runtime = [n for n in crt_names if n in runtime_defs and n not in methods]
    from_library = [n for n in crt_names if n in methods]
    unknown = sorted(set(crt_names) - set(from_runtime) - set(from_library) - set(LIBRARY_EXTRAS))
    if unknown:
        raise ValueError(f"cannot export: the generated code calls crt.{unknown[0]}, which the "
                         "CUDA runtime has not got")
    imports, functions = runtime_source(from_runtime, runtime_defs)
    text, rt_names, library_globals = library_source(from_library)
    if "AssertionFailed" in crt_names:
        rt_names = sorted({*rt_names, "AssertionFailed"})
    bindings = [f"{n}={n}" for n in from_runtime]
    bindings += [f"{n}=_library.{n}" for n in from_library]
    bindings += [f"{n}={LIBRARY_EXTRAS[n]}" for n in crt_names if n in LIBRARY_EXTRAS]
    return Helpers(imports, functions, text, rt_names, library_globals, ", ".join(bindings))


# -- runtime.py, read from its file ---------------------------------------------------------------
def _file_top_level(path: str) -> dict:
    """name -> (the top-level statement of the module at `path` binding it, its source)."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    found = {}
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
            names = [stmt.name]
        elif isinstance(stmt, ast.Assign):
            names = [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names = [stmt.target.id]
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            names = [(a.asname or a.name).split(".")[0] for a in stmt.names]
        else:
            continue
        for name in names:
            found[name] = (stmt, source)
    return found


def runtime_source(names: list[str], top_level: dict) -> tuple[list[str], list[str]]:
    """The import lines and the definitions (in the file's order) of `names` of runtime.py,
    with the module-level names they use."""
    imports, defs = [], {}

    def visit(name):
        entry = top_level.get(name)
        if entry is None:
            return  # a builtin, or a local name
        stmt, source = entry
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            if isinstance(stmt, ast.ImportFrom) and stmt.level:
                raise AssertionError(f"runtime.py's {name} is a staticgrad import; copy it "
                                     "where it is defined")
            line = ast.get_source_segment(source, stmt).split("#")[0].strip()
            if line not in imports:
                imports.append(line)
            return
        if stmt.lineno in defs:
            return
        defs[stmt.lineno] = ast.get_source_segment(source, stmt)
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id != name:
                visit(n.id)

    for name in names:
        visit(name)
    return imports, [defs[k] for k in sorted(defs)]


# -- library.py's methods, in a class over cupy ----------------------------------------------------
def library_source(names: list[str]) -> tuple[str, list[str], list[str]]:
    """class _Library with the methods `names` and those they call (`self.<name>`); the
    names of staticgrad.runtime they call (written rt.<name> in the copy), and the other
    globals of library.py they read."""
    source = inspect.getsource(library)
    tree = ast.parse(source)
    cls = next(s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == "_Library")
    methods = {name: s for s in cls.body for name in _binds(s)}
    wanted, stack = set(), ["__init__", *names] if names else []
    while stack:
        name = stack.pop()
        if name in wanted or name not in methods:
            continue
        wanted.add(name)
        stack += [n.attr for n in ast.walk(methods[name]) if isinstance(n, ast.Attribute)
                  and isinstance(n.value, ast.Name) and n.value.id == "self"]
    if not wanted:
        return "", [], []
    lines = source.splitlines()
    rt_names, used = set(), set()
    texts = []
    for stmt in cls.body:
        if not wanted & set(_binds(stmt)):
            continue
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        text = "\n".join(lines[first - 1:stmt.end_lineno])
        text, called = _runtime_to_rt(text)
        rt_names |= called
        used |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        texts.append(text)
    doc = ast.get_docstring(cls)
    head = f"class _Library:\n    \"\"\"{doc}\"\"\"\n"
    module_globals = set(_file_top_level(library.__file__)) - {"runtime", "_Library"}
    return head + "\n" + "\n\n".join(texts), sorted(rt_names), sorted(used & module_globals)


def _binds(stmt: ast.stmt) -> list[str]:
    """The names a statement of class _Library binds: a method's, or those of an assignment
    (`tensor_array_write_grad = staticmethod(runtime.tensor_array_write_grad)`)."""
    if isinstance(stmt, ast.FunctionDef):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    return []


def _runtime_to_rt(text: str) -> tuple[str, set[str]]:
    """`text` with `runtime.<name>` (staticgrad.runtime, as library.py imports it) written
    `rt.<name>`, and the names so called."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    edits, called = [], set()
    for before, token, after, attr in zip([None, *tokens], tokens, tokens[1:], tokens[2:]):
        if token.type == tokenize.NAME and token.string == "runtime" \
                and after.exact_type == tokenize.DOT \
                and (before is None or before.exact_type != tokenize.DOT):
            edits.append((token.start, token.end))
            called.add(attr.string)
    lines = text.splitlines(keepends=True)
    for (row, col), (_, end) in reversed(edits):
        lines[row - 1] = lines[row - 1][:col] + "rt" + lines[row - 1][end:]
    return "".join(lines), called
