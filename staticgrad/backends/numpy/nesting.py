"""Nested expressions, for long programs: a value that one node reads, and that nothing else
needs, is written inside its reader's expression instead of on a line of its own.

    # Sin 'Sin_7' at model.py:8           # Sin 'Sin_7' at model.py:8
    Sin_7 = np.sin(Tanh_6)                # Mul 'Mul_7' at model.py:8
    # Mul 'Mul_7' at model.py:8     ->    # Add 'Add_7' at model.py:8
    Mul_7 = Sin_7 * 1.0001                # Tanh 'Tanh_7' at model.py:8
    # Add 'Add_7' at model.py:8           Tanh_7 = np.tanh((np.sin(Tanh_6) * 1.0001) + 0.01)
    Add_7 = Mul_7 + 0.01
    # Tanh 'Tanh_7' at model.py:8
    Tanh_7 = np.tanh(Add_7)

Each op keeps its comment, and the line map sends every op of a statement to that line: an
error raised there names the op whose text holds the columns Python's traceback gives
(codegen/walk.py's LineMap.innermost; on Python 3.10, which gives none, the statement's op).
CPython compiles one statement of four calls in well under the time of four statements (a
name stored and loaded for each value is most of a short statement's cost): the 100,000-op
chain of issue 21 compiles in about two thirds of the time. Programs of at most NEST_ABOVE
nodes (every graph a course or a test prints) keep one line per node, as DESIGN.md asks
"where possible".

A value is nested only where nothing can tell:
- its op is pure (not stateful, random, host only, a view, a check or a transfer), its code
  calls no runtime helper (where run-time checks raise, naming the op), its shapes are known
  in full, it reads no variable, and it is neither fetched nor planned into a buffer (`out=`);
- its reader's code is a format string (`np.tanh({0})`, `{0} * {1}`) that writes that input
  exactly once, as a call's argument (written as it is) or as an operand (in parentheses,
  unless it is a name or a call), read off the format string once.
A nested value waits, "pending", until its reader's line is written. A node in between that
is impure, or that frees (`del`) or writes into (`out=`) a value a pending expression reads,
first writes every pending value on a line of its own (`flush`), in the order they were
made, so that no read moves past a write. A value's own `del`s wait with it. A long run() is
never cut into parts (parts.py) while a value is pending, and values nest at most NEST_DEPTH
deep in one statement.
"""

from __future__ import annotations

import re

from ...ir import Node, Program, Value
from ...ops.table import get_opdef

NEST_ABOVE = 2000  # nodes of a program written one line each, whatever their values
NEST_DEPTH = 4     # values nested inside one another in one expression, at most

_TRANSFER = get_opdef("Transfer")
_MANY = object()  # read by more than one node, or fetched
_NAME = re.compile(r"[\w.]*\Z", flags=re.ASCII)


class Pending:
    """A value written inside its reader's expression, until that reader's line."""

    __slots__ = ("value", "text", "ops", "texts", "frees", "depth", "section")

    def __init__(self, value: Value, text: str, ops: list, texts: list, frees: list,
                 depth: int, section: int):
        self.value = value
        self.section = section  # the node (parts.py's section) that made it
        self.text = text      # its expression
        self.ops = ops        # the ops it computes (its own, and those nested in it)
        self.texts = texts    # the expression of each of them (for the line map: LineMap)
        self.frees = frees    # the values to `del` once it is computed
        self.depth = depth    # how deep values nest in it


class Nesting:
    """Which values of a program nest, and those pending now (see the module's docstring)."""

    def __init__(self, program: Program, write_into: dict, held, free_after: dict):
        reader: dict[int, object] = {}
        for node in program.nodes:
            for v in node.inputs if not node.static_uses else node.runtime_inputs():
                k = id(v)
                reader[k] = node if k not in reader else _MANY
        for f in program.fetches:
            if isinstance(f, Value):
                reader[id(f)] = _MANY
        self.reader, self.write_into, self.held = reader, write_into, held
        self.free_after = free_after  # id(Node) -> the values whose last use it is
        self.pending: dict[int, Pending] = {}  # id(Value) -> its pending expression
        self.reads: set[int] = set()  # id(Value) of what pending expressions read (or did)
        self.no_cut = bytearray(len(program.nodes) + 1)  # 1: no part may begin at node k
        self._pure: dict = {}   # id(OpDef) -> may its value nest (nests' first question)
        self._slots: dict = {}  # id(OpDef) -> how its format string writes each input

    def waits_across(self, node: Node, free_after: dict, write_into: dict) -> bool:
        """May the pending values be computed after `node` rather than before it? Not if
        it is impure, nor if it frees or writes into (`out=`) a value they read."""
        opdef = node.opdef
        if node.members or node.regions or opdef.stateful or opdef.draws_random \
                or opdef.host_only or opdef is _TRANSFER or id(node) in self.held:
            return False
        reads = self.reads
        if free_after:
            for v in free_after.get(id(node), ()):
                if id(v) in reads:
                    return False
        if write_into:
            into = write_into.get(id(node))
            if into is not None and id(into) in reads:
                return False
        return True

    def computed(self, p: Pending, section: int) -> None:
        """The pending `p` is written in a line of node `section`: no part begins after the
        node that made it up to that one, those that write no line (a NoOp) included."""
        no_cut = self.no_cut
        for k in range(p.section + 1, section + 1):
            no_cut[k] = 1

    def nest(self, node: Node, code, taken: list, section: int) -> str | None:
        """The text that `node`'s reader writes for its value (computed by `code`, holding
        the pending values `taken`), if that value nests: then it is pending. `section`:
        `node`'s index in the program."""
        opdef = node.opdef
        pure = self._pure.get(id(opdef))
        if pure is None:
            pure = self._pure[id(opdef)] = (
                not (opdef.stateful or opdef.draws_random or opdef.host_only or opdef.view
                     or opdef.reads_state or opdef is _TRANSFER)
                and opdef.checks_input is None)
        outputs = node.outputs
        if not pure or len(outputs) != 1 or node.members or node.regions or "rt." in code:
            return None
        v = outputs[0]
        reader = self.reader.get(id(v))
        if reader is None or reader is _MANY or id(reader) in self.held or reader.members:
            return None
        slots = self._slots.get(id(reader.opdef))
        if slots is None:
            slots = self._slots[id(reader.opdef)] = _format_slots(reader.opdef)
        i = reader.inputs.index(v)
        if i >= len(slots) or slots[i] is None or i in reader.static_uses:
            return None
        write_into = self.write_into
        if write_into and (id(node) in write_into or id(reader) in write_into):
            return None
        dims = v.shape.dims  # (shapes known in full: only the reader can fail at run time)
        if dims is None or None in dims:
            return None
        inputs = node.inputs
        for u in inputs:
            dims = u.shape.dims
            if dims is None or None in dims or (
                    u.producer is not None and u.producer.opdef.reads_state):
                return None
        depth = 1
        # (what dies at this node dies once its value is computed: after its reader's line)
        ops, texts, frees = [node.origin], [code], list(self.free_after.get(id(node), ()))
        for p in taken:
            depth = max(depth, p.depth + 1)
            ops += p.ops
            texts += p.texts
            frees += p.frees
        if depth > NEST_DEPTH:
            return None
        self.pending[id(v)] = Pending(v, code, ops, texts, frees, depth, section)
        reads = self.reads
        for u in inputs:
            reads.add(id(u))
        if slots[i] == "arg" and "," not in code:  # a call's argument or an index: as it is
            return code
        numpy = opdef.numpy
        atom = _call_form(numpy) if isinstance(numpy, str) else operand(code) is code
        return code if atom else f"({code})"


def _format_slots(opdef) -> tuple:
    """For each input of an op whose code is a format string, how it writes that input:
    "arg" (the argument of a call, or an index), "operand" (in an expression), or None
    (not exactly once, or not as a plain field: it cannot take a nested value). () for an
    op whose code is made by a function."""
    fmt = opdef.numpy
    if not isinstance(fmt, str):
        return ()
    slots = []
    for i in range(10):
        field = "{%d}" % i
        at = fmt.find(field)
        if at < 0:
            if f"{{{i}" in fmt:  # a field with an index or a format spec
                slots.append(None)
                continue
            break
        if fmt.find(field, at + 1) >= 0 or f"{{{i}" in fmt.replace(field, ""):
            slots.append(None)
            continue
        before, after = fmt[:at].rstrip()[-1:], fmt[at + len(field):].lstrip()[:1]
        slots.append("arg" if before and before in "([," and after and after in ")],"
                     else "operand")
    return tuple(slots)


_CALL_FORMS: dict[str, bool] = {}


def _call_form(fmt: str) -> bool:
    """Is every code the format string `fmt` makes a call (`np.sin({0})`)?"""
    form = _CALL_FORMS.get(fmt)
    if form is None:
        form = _CALL_FORMS[fmt] = operand(fmt) is fmt and not _NAME.match(fmt)
    return form


def operand(code: str) -> str:
    """`code` as an operand of another expression: itself where it is a name or a call
    (`np.sin(x)`), else in parentheses."""
    if _NAME.match(code):
        return code
    head = code.find("(")
    if head > 0 and code[-1] == ")" and _NAME.match(code, 0, head) and \
            "'" not in code and '"' not in code:
        depth = 0
        for i in range(head, len(code)):  # does the call's "(" close at the end?
            c = code[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return code if i == len(code) - 1 else f"({code})"
    return f"({code})"
