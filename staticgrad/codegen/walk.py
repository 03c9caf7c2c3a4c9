"""The renderer walk every backend shares: names, comments, constants and the line map.

A backend's renderer is a `Walk` with hooks. The walk visits a program's nodes in order and
keeps what every kind of generated code needs:

- names: `names.make(text)` turns any node name into a fresh identifier of the generated code
  (never a keyword, a builtin or one of the backend's `reserved` globals), so no name, from
  the user or from a graph file, can inject code;
- comments: `comment(op)` names the op and the line of the user's program that created it,
  in text that can neither end the comment nor forge another line;
- constants: `constant(v)` is the module global holding a constant value, `literal(c)` the
  literal of a number (the shared literal maker, ops.kernels.scalar_literal), made once per
  distinct number;
- the line map: `computed(op)` after the lines that compute an op records that the last line
  so far computes it, and `LineMap` answers "which op is line N" for error messages.

Its hooks, which a backend's renderer defines:

    group(node)     a fused group (node.members)
    node(node)      any other node that computes something
    regions(node)   a node holding regions (If, While...); by default an error naming it

The walk skips nodes that compute nothing (NoOp, a control dependency's join).
"""

from __future__ import annotations

import bisect
import functools
import keyword
import re
from array import array

import numpy as np

from ..errors import UnimplementedError
from ..graph import Operation
from ..ir import Node, Program, Value
from ..ops.kernels import scalar_literal

_NON_WORD = re.compile(r"\W", flags=re.ASCII)
_UNPRINTABLE = re.compile(r"[^A-Za-z0-9_.:/<>()?, *+=%-]")


class Names:
    """Identifiers for the generated code, each made once, none of them in `reserved`."""

    def __init__(self, reserved=()):
        self.used = set(reserved)
        self.made = []  # every name made, in order (backends/numpy/parts.py reads which are whose)

    def make(self, text: str) -> str:
        base = text.replace("/", "_")  # op names: letters, digits, _ . - / > (scope/Op_1)
        if not (base.isascii() and base.isidentifier()):
            base = _NON_WORD.sub("_", base)
        base = base.strip("_") or "t"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "t_" + base
        name, i = base, 1
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.used.add(name)
        self.made.append(name)
        return name


def printable(text) -> str:
    """Text safe inside a comment or docstring of generated code, whatever it came from."""
    return _UNPRINTABLE.sub("?", str(text))


@functools.lru_cache(maxsize=256)
def _short_file(filename: str) -> str:
    return printable(filename.rsplit("/", 1)[-1])


@functools.lru_cache(maxsize=1024)
def where(location: tuple) -> str:
    """'model.py:12' (the ops of one line share their location tuple: errors.user_location)."""
    filename, lineno = location
    return f"{_short_file(filename)}:{lineno}"


def comment(op: Operation, mark: str = "#") -> str:
    """`# Tanh 'layer/Tanh' at model.py:12` (`mark` starts a comment in the backend's language)."""
    # (a printable name has no quote or backslash: quoted as repr() would, without it)
    return f"{mark} {op.type} '{printable(op.name)}' at {where(op.location)}"


def node_comment(node: Node, mark: str = "#") -> str:
    """The comment of a node: its op's, and for a Transfer (which the partition pass makes,
    for the op whose value it moves) which way it moves that value:
    `# Transfer numpy -> cuda of Sin 'layer/Sin' at model.py:12`."""
    if node.type == "Transfer":  # (two backend names, checked as graph names are)
        source, target = printable(node.attrs["source"]), printable(node.attrs["target"])
        moved = node.inputs[0]
        what = comment(node.origin, "")[1:] if node.origin is not None else \
            f"'{printable(moved.name)}'"  # a region's feed: no op of the graph made it
        return f"{mark} Transfer {source} -> {target} of {what}"
    return comment(node.origin, mark)


class Walk:
    """One renderer's walk over a program (see the module's docstring).

    What it keeps, for the hooks to fill and read:
        expr        id(Value) -> how the generated code refers to it
        body        the lines of the program's main function, in order
        constants   global name -> array, the constants the generated module reads
        marks, made where each node's lines and each node's names begin (in `body`, in
                    `names.made`): the sections a long body can be cut into
    """

    reserved: frozenset = frozenset()
    backend: str = ""

    def __init__(self, program: Program):
        self.program = program
        self.names = Names(self.reserved)
        self.expr: dict[int, str] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.body: list[str] = []
        self.line_at, self.line_op = array("l"), []  # body lines (1-based) computing ops
        self.marks, self.made = array("l"), array("l")
        self._literals: dict[tuple, str | None] = {}

    # -- the walk ------------------------------------------------------------------------------
    def walk(self) -> None:
        """Visit every node in order; then one more section begins (the fetches' lines)."""
        body, marks, made, named = self.body, self.marks, self.made, self.names.made
        group, node_hook = self.group, self.node
        for node in self.program.nodes:
            marks.append(len(body))
            made.append(len(named))
            if node.regions:
                self.regions(node)
            elif node.members:
                group(node)
            elif node.opdef.computes:
                node_hook(node)
        marks.append(len(body))
        made.append(len(named))

    def group(self, node: Node) -> None:
        raise NotImplementedError

    def node(self, node: Node) -> None:
        raise NotImplementedError

    def regions(self, node: Node) -> None:
        op = node.origin
        raise UnimplementedError(None, op, f"{op.where() + ': ' if op else ''}the "
                                           f"{self.backend} backend cannot render a "
                                           f"{node.type} holding regions")

    # -- what the hooks share -----------------------------------------------------------------
    def computed(self, op: Operation) -> None:
        """The body's last line so far computes `op` (the line map's entry)."""
        self.line_at.append(len(self.body))
        self.line_op.append(op)

    def literal(self, c: np.ndarray) -> str | None:
        """scalar_literal of the 0-d array c, once per distinct number (a chain's thousands
        of `* 1.0001` are as many constants of one number)."""
        key = (c.dtype, c.tobytes())
        text = self._literals.get(key, self._literals)
        if text is self._literals:
            text = self._literals[key] = scalar_literal(c[()])
        return text

    def constant(self, v: Value) -> str:
        """The constant v as a module global named after it (made once: v's expr)."""
        name = self.names.make(v.name)
        self.constants[name] = np.asarray(v.const, dtype=v.dtype.np)
        self.expr[id(v)] = name
        return name


class LineMap:
    """{line number: op}, read-only, as two parallel sequences sorted by line (a dict of
    250,000 int keys took 20 MB for the 100,000-op chain); `get` by bisection."""

    def __init__(self, lines, ops: list):
        self.lines, self.ops = lines, ops

    def get(self, line: int, default=None):
        i = bisect.bisect_left(self.lines, line)
        return self.ops[i] if i < len(self.lines) and self.lines[i] == line else default

    def __getitem__(self, line: int):
        op = self.get(line, _MISSING)
        if op is _MISSING:
            raise KeyError(line)
        return op

    def __contains__(self, line) -> bool:
        return self.get(line, _MISSING) is not _MISSING

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self):
        return iter(self.lines)

    def items(self):
        return zip(self.lines, self.ops)


_MISSING = object()


class Lines:
    """Line numbers of texts found in `source`, searched in order from the last one found
    (one pass over the source, however many functions it has)."""

    def __init__(self, source: str):
        self.source, self.pos, self.line = source, 0, 1

    def find(self, text: str) -> int:
        """The line number of the line after the "\\n" that `text` starts with."""
        at = self.source.index(text, self.pos)
        self.line += self.source.count("\n", self.pos, at + 1)
        self.pos = at + 1
        return self.line
