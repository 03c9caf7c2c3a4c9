"""Partition a plan across backends: a Transfer node on every edge between two of them.

A device backend (CUDA) runs most of a plan, and leaves to its host (the NumPy backend, in
this process) the ops it cannot run: host-only ops (strings, Print, py_func, files), ops
it has no lowering for. `place(node)` says which backend runs each node
(`Backend.place`); this pass makes every crossing explicit:

    x (fed, on the host) -> Transfer(numpy -> cuda) -> Tanh (cuda) -> Transfer(cuda -> numpy)
                                                                   -> Print (numpy)

- a value read on another backend than the one that made it goes through one Transfer per
  target backend, shared by all its readers there;
- feeds arrive on the host, and fetches are handed back on the host;
- constants move nowhere (each backend makes its own copy of a constant);
- an input read only for its static value or shape (`static_uses`) moves nowhere;
- a node's regions are partitioned alike, their feeds and results living where the node
  that holds them runs.

A plan all of whose nodes run on one backend, the host, comes back as it was.
`check(program, place, host)` is the invariant, which the verifier checks after every pass
of such a backend's pipeline (`verify(program, place=..., host=...)`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Node, Program, Value, make_node, walk
from ..ops.table import get_opdef
from .rewrite import rewrite

TRANSFER = get_opdef("Transfer")


def placement(node: Node, place: Callable[[Node], str]) -> str:
    """Where `node` runs: a fused group where its members do (they share one backend: a
    group only ever joins a node to the nodes it reads from directly)."""
    return place(node.members[0] if node.members else node)


def partition(program: Program, place: Callable[[Node], str], host: str,
              fetch_on: str | None = None) -> Program:
    """`program` with a Transfer on each edge between backends (see the module's docstring);
    `place(node)` names the backend that runs the node, `host` the one that feeds and
    fetches live on; `fetch_on`, if given, the one fetches are handed back on instead (a
    device's, for fetches kept in its memory; strings stay on the host)."""
    if all(placement(n, place) == host for n in walk(program)) and fetch_on in (None, host):
        return program
    return _partition(program, place, host, _region_homes(program, place), fetch_on)


def _region_homes(program: Program, place) -> dict[int, str]:
    """id(region) -> the backend its feeds and results live on (where its holder runs)."""
    return {id(r): placement(n, place) for n in walk(program) for r in n.regions}


def _partition(program: Program, place, edge: str, region_homes: dict,
               fetch_on: str | None = None) -> Program:
    """One program or region, whose feeds arrive on backend `edge` and whose fetches leave
    on `fetch_on` (by default `edge`)."""
    home: dict[int, str] = dict.fromkeys(map(id, program.feeds), edge)  # id(Value) -> backend
    moved: dict[tuple, Value] = {}  # (id(value), target) -> the value there

    def there(v: Value, target: str, made: list) -> Value:
        source = home.get(id(v))
        if source is None or source == target:  # a constant, or already there
            return v
        key = (id(v), target)
        if key not in moved:
            origin = v.producer.origin if v.producer is not None else \
                v.tensor.op if v.tensor is not None else None  # (a feed: its placeholder)
            node = make_node(TRANSFER, {"source": source, "target": target}, [v], origin,
                             names=[f"{v.name}_to_{target}"])
            node.outputs[0].tensor = v.tensor  # the same graph tensor, elsewhere (fetch names)
            made.append(node)
            moved[key] = node.outputs[0]
            home[id(moved[key])] = target
        return moved[key]

    def visit(node: Node):
        if node.type == "Transfer":  # (partitioned already)
            home[id(node.outputs[0])] = node.attrs["target"]
            return node
        where = placement(node, place)
        made: list[Node] = []
        inputs = tuple([v if i in node.static_uses else there(v, where, made)
                        for i, v in enumerate(node.inputs)])
        if any([a is not b for a, b in zip(inputs, node.inputs)]):
            node = node.with_inputs(inputs, node.controls, program.owned)
        home.update(dict.fromkeys(map(id, node.outputs), where))
        return made + [node] if made else node

    def region(r: Program) -> Program:
        return _partition(r, place, region_homes[id(r)], region_homes)

    new = rewrite(program, visit, region=region)
    made: list[Node] = []
    fetches = [there(f, _fetched_on(f, fetch_on, edge), made) if isinstance(f, Value) else f
               for f in new.fetches]
    if any([a is not b for a, b in zip(fetches, new.fetches)]):
        new = Program(new.nodes + made, new.feeds, fetches, owned=new.owned, nested=new.nested)
    return new


def _fetched_on(f: Value, fetch_on: str | None, edge: str) -> str:
    """Where fetch f is handed back: `fetch_on` if given, except a string value (objects,
    which only the host holds), else `edge`."""
    return fetch_on if fetch_on is not None and not f.dtype.is_string else edge


def check(program: Program, place, host: str, fetch_on: str | None = None) -> list[str]:
    """What breaks the partition's invariant in `program` (nothing: []): a value read on
    another backend than its own except through a Transfer between the two, a Transfer from
    where the value is not, a fetch not on the host (or on `fetch_on`)."""
    return _check(program, place, host, _region_homes(program, place), fetch_on)


def _check(program: Program, place, edge: str, region_homes: dict,
           fetch_on: str | None = None) -> list[str]:
    home = dict.fromkeys(map(id, program.feeds), edge)
    wrong = []
    for node in program.nodes:
        where = None if node.type == "Transfer" else placement(node, place)
        for r in node.regions:
            wrong += _check(r, place, region_homes[id(r)], region_homes)
        for i, v in enumerate(node.inputs):
            source = home.get(id(v))
            if source is None or i in node.static_uses:
                continue
            if node.type == "Transfer":
                if node.attrs["source"] != source:
                    wrong.append(f"{node!r} moves {v!r} from {node.attrs['source']}, but it "
                                 f"is on {source}")
            elif source != where:
                wrong.append(f"{node!r} runs on {where} and reads {v!r} from {source} "
                             "with no Transfer between them")
        target = node.attrs["target"] if node.type == "Transfer" else where
        home.update(dict.fromkeys(map(id, node.outputs), target))
    for f in program.fetches:
        if not isinstance(f, Value) or (f.const is not None and id(f) not in home):
            continue  # (a constant is made wherever it is fetched)
        found = home.get(id(f), edge)
        if found != _fetched_on(f, fetch_on, edge):
            wrong.append(f"{f!r} is fetched from {found}, not from "
                         f"{_fetched_on(f, fetch_on, edge)}")
    return wrong
