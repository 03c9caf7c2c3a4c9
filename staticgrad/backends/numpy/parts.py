"""A long run() split into part functions, each small enough to compile quickly on its own.

CPython compiles a function as one unit, and the cost grows faster than its length: the
run() of a 100,000-op chain and its gradients (250,000 statements) took 3-5 s and 650 MB of
memory to compile, against 1.7 s and a few MB for the same statements in functions of about
a thousand each, compiled one at a time (`codegen.pycompile.compile_module`). So a run() of
more than SPLIT_ABOVE lines becomes a few lines calling its parts in order:

    def run(x):
        (Tanh, Tanh_1, Tanh_2, ...
         Tanh_249) = _part_1(x)
        (Sum, gradients_Sin_167_grad_Mul, gradients_Tanh_166_grad_Sub) = _part_2(
            Tanh_249, Tanh_248, ...
            Tanh_166)
        del (Tanh_249, Tanh_248, ...
        ...
        return (Sum[()], gradients_Sin_grad_Mul)


    def _part_1(x):
        # Sin 'Sin' at model.py:8
        Sin = np.sin(x)
        ...
        return (Tanh, Tanh_1, Tanh_2, ...

Each part is a run of whole nodes (a node's comment and its lines stay together), about
PART_LINES lines long, and its lines are the ones run() would have had. A part takes the
values it reads that earlier lines made, and returns those that later lines read; run()
drops its reference to a value after the last part that reads it, so that a `del` of the
memory plan in that part still frees the array. Names made by the code generator never
begin with an underscore, so `_part_1` cannot clash with one.
"""

from __future__ import annotations

import dataclasses

from ...ir import Value

SPLIT_ABOVE = 4000  # lines of run() kept in one function (every graph of the test suite)
PART_LINES = 2000   # about this many lines a part: 1,000 nodes with their comments
WIDTH = 100         # columns of a wrapped list of names


@dataclasses.dataclass
class Part:
    name: str
    head: list[str]     # the def line(s), without indentation
    body: list[str]     # its lines, as run() would have had them (indented by the template)
    tail: list[str]     # the return line(s), indented
    first: int          # index in the unsplit body of its first line
    size: int = 0       # how many lines its body has
    text: str = ""      # its body's lines joined, for the template (see join)

    def __post_init__(self):
        self.size = len(self.body)

    def join(self) -> None:
        """Its lines as one text (indented for the template), the list of lines dropped."""
        self.text, self.body = "\n    ".join(self.body), []


def split_run(program, body: list[str], marks: list[int], made: list[str],
              made_marks: list[int], names: dict, scalars: dict, free_after: dict,
              constants, params: list[str]):
    """(run()'s new body, the parts) for a body longer than SPLIT_ABOVE lines, else None.

    The body's lines come in sections, one a node of `program`: section k is
    body[marks[k]:marks[k + 1]], and the local names it assigns are among
    made[made_marks[k]:made_marks[k + 1]] (the others: module constants, kernels' names). A
    last section runs to the end of the body and stays in run(): the lines made for the
    fetches. A node's section reads the names (`names`, `scalars`: id(Value) -> name) of its
    inputs and of the values it frees (`free_after`); a name in these that it does not read
    after all is harmless (passed to a part that does not use it).
    """
    if len(body) <= SPLIT_ABOVE:
        return None
    nodes = program.nodes
    sections = len(nodes)  # the fetches' section is number `sections`
    starts = [0]           # the first section of each part
    for k in range(1, sections):
        if marks[k] - marks[starts[-1]] >= PART_LINES and marks[k] < marks[sections]:
            starts.append(k)
    bounds = starts + [sections]
    fetch_part = len(starts)

    made_in = dict.fromkeys(params, -1)  # local name -> the part that assigns it (-1: run's)
    for p in range(fetch_part + 1):  # (names are made once each: no name is made twice)
        first = made_marks[bounds[p]]
        last = made_marks[bounds[p + 1]] if p < fetch_part else len(made)
        made_in.update(dict.fromkeys(made[first:last], p))
    for name in constants:  # module constants are no locals
        made_in.pop(name, None)
    takes = [{} for _ in starts]        # part -> {name it reads from before it}, in order
    gives = [set() for _ in starts]     # part -> the names it makes that later lines read
    last_part = {}                      # name -> the last part reading it (fetch_part: run's)
    get_name, get_scalar, get_part = names.get, scalars.get, made_in.get
    for p in range(fetch_part + 1):
        reads = takes[p] if p < fetch_part else {}
        if p < fetch_part:
            values = [v for node in nodes[bounds[p]:bounds[p + 1]] for v in node.inputs]
            if free_after:
                values += [v for node in nodes[bounds[p]:bounds[p + 1]]
                           for v in free_after.get(id(node), ())]
        else:
            values = [f for f in program.fetches if isinstance(f, Value)]
        for v in values:  # (once per input of every node: no tuple, no call)
            name = get_name(id(v))
            q = get_part(name) if name is not None else None
            if q is not None and q < p:  # made before this part: handed over
                if q >= 0:
                    gives[q].add(name)
                reads[name] = None
                last_part[name] = p
            if scalars:  # held as a scalar too (backends/numpy/scalars.py)
                name = get_scalar(id(v))
                q = get_part(name) if name is not None else None
                if q is not None and q < p:
                    if q >= 0:
                        gives[q].add(name)
                    reads[name] = None
                    last_part[name] = p

    run_body, parts = [], []
    width = WIDTH - 4  # run()'s lines are indented by the template
    for p, first in enumerate(starts):
        name = f"_part_{p + 1}"
        args = list(takes[p])
        results = [n for n in made[made_marks[first]:made_marks[bounds[p + 1]]]
                   if n in gives[p]]  # in the order made
        if not results:
            targets = [f"{name}("]
        elif len(results) == 1:
            targets = [f"{results[0]} = {name}("]
        else:
            targets = _listed("(", results, f") = {name}(", width)
        run_body += targets[:-1] + _listed(targets[-1], args, ")", width)
        done = [n for n in args if last_part[n] == p and made_in[n] >= 0]  # (not a feed)
        if done:
            short = "del " + ", ".join(done)
            run_body += [short] if len(short) <= width else _listed("del (", done, ")", width)
        head = _listed(f"def {name}(", args, "):", WIDTH)
        tail = [] if not results else [f"    return {results[0]}"] if len(results) == 1 \
            else _listed("    return (", results, ")", WIDTH)
        parts.append(Part(name, head, body[marks[first]:marks[bounds[p + 1]]], tail,
                          marks[first]))
    run_body += body[marks[sections]:]
    return run_body, parts


def _listed(first: str, names: list[str], end: str, width: int) -> list[str]:
    """`first`, the names separated by commas, then `end`, in lines of at most `width`
    columns where the names allow, each line after the first aligned under the first name."""
    indent = " " * len(first)
    lines, line, fresh = [], first, True
    if len(first) > width // 2 and len(first) + sum(len(n) + 2 for n in names) > width:
        # a long start: the names on lines of their own, indented one step more
        lines, line = [first], " " * (len(first) - len(first.lstrip()) + 4)
        indent = line
    for i, name in enumerate(names):
        piece = name + ("," if i + 1 < len(names) else end)
        if not fresh and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line, fresh = indent, True
        line += piece if fresh else " " + piece
        fresh = False
    if not names:
        line += end
    lines.append(line)
    return lines
