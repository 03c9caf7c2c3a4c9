"""The IR verifier: `verify(program)` checks a program's invariants and raises
VerificationError saying what is wrong and after which pass. The compiler runs it after
every pass with `CompileOptions(verify=True)`, as the whole test suite does.

- every input is defined before it is read, every control edge points back, every fetch
  is computed; in each region too, which sees only its own feeds (regions are closed);
- every node's outputs are what its op's shape rule makes of its inputs (arity, shapes,
  dtypes), and point back at the node;
- (for a backend with a host, once its partition pass ran) every value crossing between
  backends goes through a Transfer, and fetches are on the host;
- variable state is in order: each assignment and read follows its variable's last
  assignment, and a value read from a variable is used only while it is current.

    >>> verify(program, after="cse")  # doctest: +SKIP
"""

from __future__ import annotations

from .ir import Node, Program, Value, assigned_by, previous_write, variable_of, written_by
from .ops.table import NodeCtx
from .passes.partition import check as check_partition
from .passes.rewrite import stale_output_kinds


class VerificationError(AssertionError):
    pass


def verify(program: Program, after: str = "", place=None, host: str | None = None,
           fetch_on: str | None = None) -> None:
    """Check the IR's invariants: every input is defined before use, every node's outputs are
    what its op's shape rule says for its inputs (arity, shapes, dtypes), fetches exist;
    in each region too, which sees only its own feeds. Run after every pass in the tests.
    With `place` (a backend's, and its `host`): the plan is partitioned, a value crossing
    between backends only through a Transfer (passes/partition.py)."""
    where = f" after pass {after!r}" if after else ""
    _verify_body(program, where, None)
    if stale_output_kinds(program):
        raise VerificationError(f"the program's plan holds output kinds (passes/rewrite.py's "
                                f"output_kinds) of other nodes than its own{where}")
    if place is not None:
        wrong = check_partition(program, place, host, fetch_on)
        if wrong:
            raise VerificationError(f"the plan is not partitioned{where}: " + "; ".join(wrong))


def _verify_body(program: Program, where: str, holder: Node | None) -> None:
    """Check one program or region (`holder`: the node holding it, if a region)."""
    if holder is not None:  # a region: closed, its feeds made for it
        for v in program.feeds:
            if v.producer is not None or v.const is not None:
                raise VerificationError(f"{v!r}, a feed of a region{where}, is computed")
    if not program.nested and any([n.regions for n in program.nodes]):
        raise VerificationError(f"a node holds regions, but the program says none does "
                                f"(Program.nested){where}")
    defined = set(map(id, program.feeds))
    seen_nodes = set()
    for node in program.nodes:
        members = node.members or (node,)
        # a fused group reads a broadcast scalar as the scalar itself (passes/fuse.py)
        scalars = node.attrs["scalars"] if node.members else {}
        for m in members:
            for i, v in enumerate(m.inputs):
                v = scalars.get(id(v), v)
                if id(v) not in defined and v.const is None and i not in m.static_uses:
                    raise VerificationError(f"{m!r} reads {v!r} before it is defined{where}")
            for c in m.controls:
                if id(c) not in seen_nodes:
                    raise VerificationError(f"{m!r} waits on {c!r}, which does not run "
                                            f"before it{where}")
            _verify_outputs(m, where)
            for v in m.outputs:
                defined.add(id(v))
            seen_nodes.add(id(m))
        for k, region in enumerate(node.regions):
            _verify_body(region, f" in region {k} of {node!r}{where}", node)
        seen_nodes.add(id(node))
        for v in node.outputs:
            defined.add(id(v))
    _verify_state(program, where)
    for f in program.fetches:
        if holder is not None and not isinstance(f, Value):
            raise VerificationError(f"the region result {f!r} is no value{where}")
        if isinstance(f, Value) and id(f) not in defined and f.const is None:
            raise VerificationError(f"fetch {f!r} is never computed{where}")
        if isinstance(f, Node) and id(f) not in seen_nodes:
            raise VerificationError(f"fetched {f!r} is not in the program{where}")


def _verify_state(program: Program, where: str) -> None:
    """Each assignment waits on the one of its variable before it; each read of a variable
    waits on the assignment before it (none: the first), and its value is read (by a node,
    or a fetch) only while no later assignment has run."""
    current: dict[str, Node | None] = {}  # variable -> its last assignment so far
    version: dict[int, tuple] = {}        # id(a read's Value) -> (variable, the write before)
    for node in program.nodes:
        if version:
            scalars = node.attrs["scalars"] if node.members else {}
            for m in node.members or (node,):
                for i, v in enumerate(m.inputs):
                    seen = version.get(id(scalars.get(id(v), v)))
                    if seen is not None and i not in m.static_uses \
                            and current.get(seen[0]) is not seen[1]:
                        raise VerificationError(
                            f"{m!r} reads variable {seen[0]!r} as it was before "
                            f"{current[seen[0]]!r}, which runs before it{where}")
        var = variable_of(node)
        if var is None:
            continue
        if node.opdef.reads_state:
            after = written_by(node)
            if after is not current.get(var):
                raise VerificationError(f"{node!r} reads variable {var!r} after {after!r}, "
                                        f"but its last write before is "
                                        f"{current.get(var)!r}{where}")
            version[id(node.outputs[0])] = (var, after)
        else:
            if previous_write(node) is not current.get(var) or \
                    sum([assigned_by(c) == var for c in node.controls]) > 1:
                raise VerificationError(f"{node!r} assigns variable {var!r} after "
                                        f"{previous_write(node)!r}, but its last write before "
                                        f"is {current.get(var)!r}{where}")
            current[var] = node
    for f in program.fetches:
        seen = version.get(id(f)) if isinstance(f, Value) else None
        if seen is not None and current.get(seen[0]) is not seen[1]:
            raise VerificationError(f"the fetch {f!r} is variable {seen[0]!r} as it was "
                                    f"before {current[seen[0]]!r}{where}")


def _verify_outputs(m: Node, where: str) -> None:
    """m's outputs are what its op's shape rule makes of its inputs, and point back at m."""
    ctx = NodeCtx(m.type, m.attrs, [v.shape for v in m.inputs], [v.dtype for v in m.inputs],
                  [v.const for v in m.inputs], m.ctx.name)
    try:
        want = m.opdef.infer(ctx)
    except (ValueError, TypeError) as e:
        raise VerificationError(f"{m!r}: its op rejects its inputs{where}: {e}") from e
    if len(want) != len(m.outputs):
        raise VerificationError(f"{m!r} has {len(m.outputs)} outputs, its op makes "
                                f"{len(want)}{where}")
    for v, (shape, dtype) in zip(m.outputs, want):
        if v.dtype is not dtype or not v.shape.is_compatible_with(shape):
            raise VerificationError(
                f"{m!r} output {v.name} is {v.dtype.name}{v.shape}, its op makes "
                f"{dtype.name}{shape}{where}")
        if v.producer is not m:
            raise VerificationError(f"{v!r} does not point back at {m!r}{where}")
