"""The op vocabulary: which functions offer an op, where, and what they say in help().

An op registered with an `Api` is offered everywhere from that one entry:

    tanh = unary("Tanh", E("tanh(x0)"), grad, api=Api("tanh", "the hyperbolic tangent",
                                                          namespaces=("sg", "nn", "math")))
    maximum = binary("Maximum", E("maximum(x0, x1)"), grad,
                     api=Api("maximum", "the larger of x and y"))

- the graph builder, `tanh(x, name=None)` or `maximum(x, y, name=None)`, which the op file
  binds (and returns here); a two-input builder converts a Python value to the dtype of the
  tensor beside it (`maximum(x, 0)`);
- that builder in each namespace named: sg, sg.nn, sg.math, sg.debugging (`namespace(name)`);
- the dynamic mode's function of the same name (or `Api.dynamic`), and the method of that
  name of dynamic tensors (`dynamic_entries()`, read by staticgrad.dynamic.functions).

An op whose builder takes more than its inputs (`check_numerics(tensor, message)`) writes its
builder by hand and `offer`s it: the namespaces still come from its Api, and the dynamic mode
offers it only if the op file says how (`Api.dynamic=None` otherwise).

Each gets a docstring from `Api.doc`. The table is the registry itself: `entries()` walks
it in registration order.
"""

from __future__ import annotations

import dataclasses

from .conversion import convert_operands, convert_to_tensor
from .creation import apply1
from .table import REGISTRY


@dataclasses.dataclass(frozen=True)
class Api:
    """How an op is offered to users.

    name        the function's name ("tanh")
    doc         what it computes, one line ("the hyperbolic tangent")
    namespaces  where the graph builder is: "sg", "nn", "math", "debugging"
    aliases     more names for it there ("negative" has "neg"...)
    dynamic     its name in the dynamic mode (a function, and a method of dynamic tensors:
                x.tanh(), x.maximum(y)): `name` if "", not offered there if None
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


NAMESPACES = ("sg", "nn", "math", "debugging")


def sentence(doc: str) -> str:
    """An Api's doc as the start of a sentence: "the sine" -> "The sine"; math stays as it is
    ("x * x", "e ** x", "max(x, 0)": capitalized, they would read as other names)."""
    first = doc.split(" ", 1)[0]
    return doc[0].upper() + doc[1:] if len(first) > 1 and first.isalpha() else doc


def _named(fn, op_type: str, api: Api, module: str, call: str, how: str = "elementwise"):
    fn.__name__ = fn.__qualname__ = api.name
    fn.__module__ = module
    fn.__doc__ = f"{sentence(api.doc)}, {how} (op {op_type}).\n\n>>> {call}  # doctest: +SKIP"
    fn.op_type = op_type
    return fn


def unary_builder(op_type: str, api: Api, module: str):
    """The graph builder of a one-input op: `fn(x, name=None)`, a function of `module` (the
    op file that binds it by its name: pickle and help() find it there)."""
    def fn(x, name=None):
        return apply1(op_type, [convert_to_tensor(x)], name=name)
    return _named(fn, op_type, api, module, f"y = sg.{api.name}(x)")


def binary_builder(op_type: str, api: Api, module: str):
    """The graph builder of a two-input op that broadcasts: `fn(x, y, name=None)`, where a
    Python value takes the dtype of the tensor beside it (see `unary_builder`)."""
    def fn(x, y, name=None):
        return apply1(op_type, list(convert_operands(x, y)), name=name)
    return _named(fn, op_type, api, module, f"z = sg.{api.name}(x, y)",
                  "elementwise, with NumPy's broadcasting")


_BUILDERS: dict[str, object] = {}  # op type -> its graph builder


def offer(op_type: str, builder) -> None:
    """Record `builder` as the graph builder of `op_type` (which has an Api)."""
    if REGISTRY[op_type].api is None:
        raise ValueError(f"{op_type} has no Api: register it with one to offer a builder")
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
    """(op type, Api, name in the dynamic mode, number of inputs) of every op the dynamic
    mode offers."""
    return [(t, api, api.dynamic or api.name, REGISTRY[t].arity) for t, api, _ in entries()
            if api.dynamic is not None]
