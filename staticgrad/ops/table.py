"""The op table: each op type is defined once, all its rules side by side.

An `OpDef` holds
- `infer(ctx)`: the shape/dtype rule, run when the op is created (and again, with concrete
  shapes, when a session specializes a graph to its feeds);
- `numpy`: its reference kernel, the NumPy expression that computes it (a format string, or a
  function of the inputs' texts and the node); printed from the shared notation for
  elementwise ops (`E("x0 * x1")`, ops/expr.py). Compiled once per distinct text, it is the
  op's kernel for constant folding and the dynamic mode (ops/kernels.py), and the NumPy
  backend prints it;
- `grad(op, *output_grads)`: the gradient rule, written with the graph API, or `None` with
  `differentiable=False` for ops that have no gradient (comparisons, argmax...);
- `saves`: which of the op's values that rule reads (`("x1", "y0")`: input 1 and output 0;
  `"x*"`, `"y*"`: all of them); of the others it reads at most the shape and dtype. The
  dynamic mode's tape keeps only these (staticgrad/dynamic/tape.py), as PyTorch's nodes keep
  only what their backward formula reads; tests/dynamic/test_saved.py checks every rule.

`ctx` (a `NodeCtx`) gives a rule the input shapes, dtypes, static values and attrs.

Every attribute has a declared type (`attrs={"axis": Int()}`, see `attr_types`): values are
checked against it when an op is created, and an emitter writes one into source only as
`ctx.lit(name)`, the literal of its type; a format string's `{axis}` gets that literal too.

Making operations is ops/creation.py's, turning Python values into tensors ops/conversion.py's.
"""

from __future__ import annotations

import dataclasses
import re
import string
from collections.abc import Callable

from .attr_types import AttrType
from .expr import NUMPY, Expr

REGISTRY: dict[str, OpDef] = {}
_SAVED_NAME = re.compile(r"[xy](\d+|\*)")


@dataclasses.dataclass
class OpDef:
    type: str
    infer: Callable
    numpy: str | Callable | None  # the reference kernel, as NumPy: a format string of its
    #                               inputs ("np.tanh({0})") and attrs, or f(args, ctx) -> text
    grad: Callable | None = None
    differentiable: bool = True
    saves: tuple | None = None   # the values its rule reads: "x0".. inputs, "y0".. outputs,
    #                              "x*"/"y*" all; None: not declared (the tape keeps all)
    grad_takes_none: bool = False  # its rule gets None for an output nobody reads (else zeros:
    #                               control flow's rules leave such outputs out of their loops)
    computes: bool = True        # False: a feed or a constant (a value, not a node), or NoOp
    stateful: bool = False       # random draws, variables, assignments: never folded or merged
    elementwise: bool = False    # output[i] depends only on inputs[i] (after broadcasting)
    broadcasts: bool = False     # inputs broadcast: the reverse pass sums gradients back
    core_dims: int = 0           # trailing dims that never broadcast (2 for matmul)
    draws_random: bool = False   # needs a random generator (R[name]) from the session
    reads_state: bool = False    # reads session state V[name]: inlined where used, not bound
    view: bool = False           # output may share memory with input 0 (reshape, transpose...)
    static_inputs: tuple = ()    # inputs read only for their (static) value, e.g. shape tensors
    shape_inputs: tuple = ()     # inputs read only for their shape, e.g. zeros_like's argument
    new_array: bool = False      # the result is always a new array: never an input or a view
    internal: bool = False       # made only by compiler passes (Transfer): no builder, and no
    #                              graph, user's or file's, may hold one
    host_only: bool = False      # runs only in the Python process (strings, Print, py_func,
    #                              files): a device backend's plan leaves it to its host
    doc: str = ""
    expr: Expr | None = None     # an elementwise op's math in the shared notation (ops/expr.py),
    #                              of which `numpy` is the NumPy printing
    api: object = None           # how it is offered to users (ops/vocabulary.py's Api), if so
    attrs: dict[str, AttrType] = dataclasses.field(default_factory=dict)  # declared types
    arity: int | tuple = 1       # how many inputs: n, or (at least, at most or None)
    checks_input: int | None = None  # its run-time error is about input i's values (a check):
    #                              the session names the op that made them, not this one
    format_attrs: tuple = ()     # the attrs a format-string `numpy` names ("{axis}")
    region_attrs: tuple = ()     # attrs holding sub-graphs (If's branches): the compiler
    #                              lowers each into a region of the op's node (ir.py)
    static_check: Callable | None = None  # (ctx) -> None, or runtime.AssertionFailed when
    #                              what it checks is known to fail once the feeds are known
    region_feeds: Callable | None = None  # (attrs, in_shapes, in_values) -> for each region,
    #                              the (shape, static value or None) of each of its inputs
    region_results: Callable | None = None  # (attrs, in_shapes, each region's result shapes)
    #                              -> the op's output shapes; ValueError where they disagree
    region_values: Callable | None = None  # (attrs, out_shapes, each region's result static
    #                              values or None) -> the op's static output values, or None


def register(op_type: str, infer, numpy, grad=None, attrs=None, **kw) -> OpDef:
    """Define op `op_type`; `attrs` maps each attribute it takes to its declared type,
    `arity` says how many inputs it takes."""
    if op_type in REGISTRY:
        raise ValueError(f"op type {op_type!r} is already registered")
    kw.setdefault("broadcasts", kw.get("elementwise", False))
    if isinstance(numpy, Expr):  # the shared notation: its NumPy printing is the kernel
        if not kw.get("elementwise") or numpy.arity != kw.get("arity", 1):
            raise ValueError(f"{op_type}: an expression is for an elementwise op of as many "
                             f"inputs ({numpy.arity}) as its arity")
        kw["expr"], numpy = numpy, NUMPY.format(numpy)
    opdef = OpDef(op_type, infer, numpy, grad, attrs=dict(attrs or {}), **kw)
    bad = [name for name in opdef.saves or () if not _SAVED_NAME.fullmatch(name)]
    if bad or isinstance(opdef.saves, str):
        raise ValueError(f"{op_type}: saves names inputs x0, x1... and outputs y0...; "
                         f"got {opdef.saves!r}")
    if isinstance(numpy, str):
        fields = {f for _, f, _, _ in string.Formatter().parse(numpy) if f}
        named = tuple(sorted(f for f in fields if not f.isdigit()))
        undeclared = [f for f in named if f not in opdef.attrs]
        if undeclared:
            raise ValueError(f"{op_type}'s expression names undeclared attrs {undeclared}")
        opdef.format_attrs = named
    REGISTRY[op_type] = opdef
    return opdef


def check_arity(opdef: OpDef, n: int) -> None:
    """ValueError unless `n` inputs fit the op."""
    if n == opdef.arity:  # (the common case, asked at every op created)
        return
    lo, hi = (opdef.arity, opdef.arity) if isinstance(opdef.arity, int) else opdef.arity
    if n < lo or (hi is not None and n > hi):
        want = str(lo) if lo == hi else f"at least {lo}" if hi is None else f"{lo} to {hi}"
        raise ValueError(f"{opdef.type} takes {want} input{'s' * (want != '1')}, got {n}")


def get_opdef(op_type: str) -> OpDef:
    try:
        return REGISTRY[op_type]
    except KeyError:
        raise KeyError(f"no op type {op_type!r} is registered") from None


class NodeCtx:
    """What a shape rule or emitter may know about one node: inputs, attrs, and outputs."""

    __slots__ = ("type", "attrs", "in_shapes", "in_dtypes", "in_values", "out_shapes",
                 "out_dtypes", "name", "_shares")

    def __init__(self, op_type, attrs, in_shapes, in_dtypes, in_values, name=""):
        self.type = op_type
        self.attrs = attrs
        self.in_shapes = in_shapes
        self.in_dtypes = in_dtypes
        self.in_values = in_values
        self.out_shapes = None
        self.out_dtypes = None
        self.name = name
        self._shares = None  # the code generator's answer to may_share(i), if it gave one

    def may_share(self, i) -> bool:
        """May input i share memory with anything else the run keeps (a feed, a variable, a
        constant, a value also read elsewhere, viewed or fetched)? An op that stores it as
        session state (Assign) then stores a copy. False for a kernel run on its own."""
        return self._shares is not None and self._shares(i)

    def dims(self, i):
        """Input i's dims tuple (None when the rank is unknown)."""
        return self.in_shapes[i].dims

    def value(self, i):
        """Input i's value if it is known before running, else None."""
        return self.in_values[i]

    def out_dims(self, i=0):
        return self.out_shapes[i].dims

    def lit(self, name: str) -> str:
        """Attribute `name` as Python source, made by its declared type (the only way an
        emitter may write an attribute into code)."""
        return REGISTRY[self.type].attrs[name].literal(self.attrs[name])
