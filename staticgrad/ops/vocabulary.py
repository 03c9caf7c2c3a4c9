"""The op vocabulary: which functions offer an op, where, and what they say in help().

An op registered with an `Api` is offered everywhere from that one entry:

    tanh = unary("Tanh", E("tanh(x0)"), grad, api=Api("tanh", "the hyperbolic tangent",
                                                          namespaces=("sg", "nn", "math")))

- the graph builder `tanh(x, name=None)`, which the op file binds (and returns here);
- that builder in each namespace named: sg, sg.nn, sg.math (`namespace(name)`);
- the dynamic mode's function of the same name (or `Api.dynamic`), and the method of that
  name of dynamic tensors (`dynamic_entries()`, read by staticgrad.dynamic.functions).

Each gets a docstring from `Api.doc`. The table is the registry itself: `entries()` walks
it in registration order.
"""

from __future__ import annotations

import dataclasses

from .conversion import convert_to_tensor
from .creation import apply1
from .table import REGISTRY


@dataclasses.dataclass(frozen=True)
class Api:
    """How an op is offered to users.

    name        the function's name ("tanh")
    doc         what it computes, one line ("the hyperbolic tangent")
    namespaces  where the graph builder is: "sg", "nn", "math"
    aliases     more names for it there ("negative" has "neg"...)
    dynamic     its name in the dynamic mode (a function, and a method of dynamic tensors:
                x.tanh()): `name` if "", not offered there if None
    dynamic_aliases   more names for the dynamic function (not methods)
    """

    name: str
    doc: str
    namespaces: tuple = ("sg", "math")
    aliases: tuple = ()
    dynamic: str | None = ""
    dynamic_aliases: tuple = ()

    def __post_init__(self):
        unknown = set(self.namespaces) - set(NAMESPACES)
        if unknown:
            raise ValueError(f"unknown namespaces {sorted(unknown)}; they are {NAMESPACES}")


NAMESPACES = ("sg", "nn", "math")


def unary_builder(op_type: str, api: Api, module: str):
    """The graph builder of a one-input op: `fn(x, name=None)`, a function of `module` (the
    op file that binds it by its name: pickle and help() find it there)."""
    def fn(x, name=None):
        return apply1(op_type, [convert_to_tensor(x)], name=name)
    fn.__name__ = fn.__qualname__ = api.name
    fn.__module__ = module
    fn.__doc__ = (f"{api.doc[0].upper()}{api.doc[1:]}, elementwise (op {op_type}).\n\n"
                  f">>> y = sg.{api.name}(x)  # doctest: +SKIP")
    fn.op_type = op_type
    return fn


_BUILDERS: dict[str, object] = {}  # op type -> its graph builder


def offer(op_type: str, builder) -> None:
    """Record `builder` as the graph builder of `op_type` (which has an Api)."""
    _BUILDERS[op_type] = builder


def entries():
    """(op type, its Api, its graph builder) for every op offered, in registration order."""
    return [(t, d.api, _BUILDERS[t]) for t, d in REGISTRY.items()
            if d.api is not None and t in _BUILDERS]


def namespace(name: str) -> dict:
    """{function name: graph builder} of the ops offered in namespace `name`."""
    out = {}
    for _, api, builder in entries():
        if name in api.namespaces:
            for n in (api.name, *api.aliases):
                out[n] = builder
    return out


def dynamic_entries():
    """(op type, Api, name in the dynamic mode) of every op the dynamic mode offers."""
    return [(t, api, api.dynamic or api.name) for t, api, _ in entries()
            if api.dynamic is not None]
