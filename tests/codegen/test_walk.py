"""The renderer walk every backend shares (`codegen/walk.py`): a renderer that is nothing
but a Walk with its two hooks gets names, comments, constants and a line map; comments and
names stay one line and one identifier whatever text they come from."""

from __future__ import annotations

import types

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import compiler
from staticgrad.codegen.walk import Lines, Names, Walk, comment, printable
from staticgrad.errors import UnimplementedError
from tests.passes.helpers import Body, program_for, vector

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


class Listing(Walk):
    """A backend's renderer in miniature: `name = Type(inputs)` a node, after its comment."""

    backend = "listing"
    reserved = frozenset({"run"})

    def ref(self, v):
        if id(v) in self.expr:
            return self.expr[id(v)]
        lit = self.literal(v.const) if v.const.ndim == 0 else None
        return lit if lit is not None else self.constant(v)

    def node(self, node):
        args = ", ".join(self.ref(v) for v in node.inputs)
        outs = [self.names.make(v.name) for v in node.outputs]
        self.body.append(comment(node.origin))
        self.body.append(f"{', '.join(outs)} = {node.type}({args})")
        self.computed(node.origin)
        self.expr.update((id(v), n) for v, n in zip(node.outputs, outs))

    def group(self, node):
        raise AssertionError("no pass ran: no fused group")

    def render(self):
        for v in self.program.feeds:
            self.expr[id(v)] = self.names.make(v.name)
        self.walk()
        return self.body


def test_a_backend_renderer_is_a_walk_with_hooks():
    x = sg.placeholder(sg.float32, [3], name="run")  # a reserved name: renamed
    big = sg.constant(np.arange(3, dtype=np.float32), name="table")
    y = sg.tanh(x * 2.5 + big, name="out")
    with sg.control_dependencies([y]):
        done = sg.no_op(name="done")
    program = program_for([y, done], {x: np.zeros(3, np.float32)})
    walk = Listing(program)
    body = walk.render()
    assert body[1::2] == ["Mul = Mul(run_1, 2.5)", "Add = Add(Mul, table)",
                          "out = Tanh(Add)"]
    assert all(line.startswith("# ") and "test_walk.py:" in line for line in body[::2])
    assert list(walk.constants) == ["table"]  # the array a global; 2.5 a literal
    np.testing.assert_array_equal(walk.constants["table"], [0, 1, 2])
    # the line map: the lines computing each op, and nothing for the NoOp (no line)
    assert list(walk.line_at) == [2, 4, 6]
    assert [op.name for op in walk.line_op] == ["Mul", "Add", "out"]
    # a section a node, then the fetches' (what parts.py cuts a long body by)
    assert len(walk.marks) == len(program.nodes) + 1 == len(walk.made)


def test_the_walk_visits_the_nodes_of_the_compiled_program_in_order():
    x = sg.placeholder(sg.float32, [2], name="x")
    y = sg.exp(sg.sin(x)) * 3.0
    program = compiler.run_passes(program_for([y], {x: np.zeros(2, np.float32)}))
    lines = Listing(program).render()[1::2]
    assert [line.split(" = ")[1].split("(")[0] for line in lines] == \
        [n.type for n in program.nodes if n.opdef.computes]


def test_a_node_holding_regions_is_refused_naming_the_backend():
    x = vector()
    body = Body(x)
    body.call(Body(x).program(Body(x).feeds[0]), body.feeds[0])
    with pytest.raises(UnimplementedError, match="the listing backend cannot render a Call"):
        Listing(body.program()).render()


def test_comments_stay_one_line_whatever_the_name_and_file():
    op = types.SimpleNamespace(type="Add", name="a'\n# injected\x1b[2J\\",
                               location=("/home/u/evil\nimport os.py", 7))
    text = comment(op)
    assert "\n" not in text
    assert text == "# Add 'a??? injected??2J?' at evil?import os.py:7"
    assert comment(op, mark="//").startswith("// Add ")
    assert printable("ok_name/x:0") == "ok_name/x:0"


def test_names_are_fresh_identifiers_outside_the_reserved():
    names = Names({"np", "run"})
    made = [names.make(t) for t in ("np", "run", "a/b", "a_b", "1x", "class", "", "é")]
    assert made == ["np_1", "run_1", "a_b", "a_b_1", "t_1x", "t_class", "t", "t_1"]
    assert names.made == made


def test_lines_finds_texts_in_order():
    lines = Lines("a\ndef f():\n    x\n\ndef g():\n")
    assert lines.find("\ndef f(") == 2
    assert lines.find("\ndef g(") == 5
