"""The fuzzing generator's model of a graph (see fuzz_graphs.py for the whole generator).

`Val`: what the generator knows of each value it made (concrete shape, dtype, an interval
holding every element, whether every backend computes it bit for bit). `GraphSpec`: the
placeholders, the nodes (each one line of Python over earlier values), the fetches, and how
the feeds are drawn; its repr is that program. `build` makes a fresh graph from a spec,
`feed_values` its feeds. `Pool`: the values made so far while a spec is drawn, and the helpers
the op families share (picking a value, new leaves, shapes, and the guards that keep values
in their ops' domains).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import strategies as st

import staticgrad as sg
from staticgrad.ops.creation import apply1
from staticgrad.ops.indexing_ops import strided_slice_spec

LIMIT = 1e3          # every float value's interval stays inside [-LIMIT, LIMIT]
MAX_ELEMENTS = 64    # the most elements of any value
MAX_RANK = 4
FLOATS = ("float32", "float64")
INTS = ("int32", "int64")

# what a spec's lines may refer to besides earlier values
NAMESPACE = {"sg": sg, "np": np, "apply1": apply1, "strided_slice": strided_slice_spec}


@dataclasses.dataclass(frozen=True)
class Val:
    """One value of a spec: a placeholder (`expr` None) or a node."""

    name: str
    expr: str | None
    shape: tuple
    dtype: str
    lo: float            # every element lies in [lo, hi]
    hi: float
    exact: bool          # computed bit for bit alike by every backend
    static: bool         # staticgrad knows its whole shape when the graph is built
    op: str              # the op kind the line makes (a registry type, or a family name)
    dims: tuple = ()     # placeholders: the declared dims (None where unknown)
    fill: str = ""       # placeholders: how feed values are drawn

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def kind(self) -> str:
        if self.dtype in FLOATS:
            return "f"
        return "i" if self.dtype in INTS else "b"

    @property
    def bound(self) -> float:
        return max(abs(self.lo), abs(self.hi))


@dataclasses.dataclass
class GraphSpec:
    fdtype: str                      # the graph's float dtype
    placeholders: list[Val]
    nodes: list[Val]
    fetches: list[str]               # names of values to fetch (repeats allowed)
    seed: int                        # feed values come from np.random.default_rng(seed)
    layouts: dict                    # placeholder name -> "C", "F" or "strided"

    def __repr__(self) -> str:
        return program(self)

    def _repr_pretty_(self, printer, cycle) -> None:  # what hypothesis prints
        printer.text("\n" + program(self) + "\n")

    def values(self) -> dict[str, Val]:
        return {v.name: v for v in self.placeholders + self.nodes}


# -- the program text (the repro) ---------------------------------------------------------------
def program(spec: GraphSpec, feeds: dict | None = None) -> str:
    """The spec as a runnable program: imports, placeholders, one line per node, fetches."""
    lines = ["import numpy as np", "import staticgrad as sg"]
    if any("apply1(" in v.expr for v in spec.nodes):
        lines.append("from staticgrad.ops.creation import apply1")
    if any("strided_slice(" in v.expr for v in spec.nodes):
        lines.append("from staticgrad.ops.indexing_ops import strided_slice_spec as "
                     "strided_slice")
    lines.append("")
    for p in spec.placeholders:
        dims = list(p.dims) if p.dims != () else []
        lines.append(f"{p.name} = sg.placeholder(sg.{p.dtype}, {dims}, name={p.name!r})"
                     f"  # fed {p.shape} {p.fill}, layout {spec.layouts.get(p.name, 'C')}")
    for v in spec.nodes:
        lines.append(f"{v.name} = {v.expr}  # {v.op} {v.shape} {v.dtype}"
                     f"{' exact' if v.exact else ''}")
    lines.append(f"fetches = [{', '.join(spec.fetches)}]")
    feeds = feeds if feeds is not None else feed_values(spec)
    lines.append("feeds = {")
    for p in spec.placeholders:
        a = feeds[p.name]
        lines.append(f"    {p.name}: np.array({a.tolist()!r}, dtype=np.{a.dtype}),")
    lines.append("}  # seed %d" % spec.seed)
    return "\n".join(lines)


# -- building the graph and its feeds ------------------------------------------------------------
@dataclasses.dataclass
class Built:
    graph: sg.Graph
    tensors: dict          # name -> sg.Tensor
    placeholders: list     # sg.Tensor, in spec order
    fetches: list          # sg.Tensor, in spec order (repeats allowed)


def build(spec: GraphSpec) -> Built:
    """A fresh graph holding the spec's program (evaluated line by line)."""
    graph = sg.Graph()
    env = {}
    with graph.as_default():
        for p in spec.placeholders:
            env[p.name] = sg.placeholder(getattr(sg, p.dtype), list(p.dims), name=p.name)
        for v in spec.nodes:
            env[v.name] = eval(v.expr, NAMESPACE, env)  # noqa: S307 - text the generator wrote
    return Built(graph, env, [env[p.name] for p in spec.placeholders],
                 [env[n] for n in spec.fetches])


def feed_values(spec: GraphSpec) -> dict[str, np.ndarray]:
    """The feed of each placeholder, drawn from `spec.seed`: floats away from 0 (so that no
    kink of abs, relu, sign... sits at a leaf), small integers, booleans; laid out as the spec
    says (C order, Fortran order, or a strided view of a larger array)."""
    rng = np.random.default_rng(spec.seed)
    out = {}
    for p in spec.placeholders:
        if p.fill == "float":
            a = rng.uniform(0.25, 2.0, p.shape) * rng.choice([-1.0, 1.0], p.shape)
        elif p.fill == "pos":
            a = rng.uniform(0.5, 2.0, p.shape)
        elif p.fill == "int":
            a = rng.integers(-4, 5, p.shape)
        elif p.fill == "nonneg":
            a = rng.integers(0, 5, p.shape)
        else:
            a = rng.random(p.shape) < 0.5
        a = np.asarray(a, dtype=p.dtype)
        layout = spec.layouts.get(p.name, "C")
        if layout == "F" and a.ndim:  # (asfortranarray makes a 0-d array 1-d)
            a = np.asfortranarray(a)
        elif layout == "strided" and a.ndim:
            big = np.zeros(tuple(2 * d for d in a.shape), a.dtype)
            big[tuple(slice(None, None, 2) for _ in a.shape)] = a
            a = big[tuple(slice(None, None, 2) for _ in a.shape)]
        out[p.name] = a
    return out


# -- the generator's state -------------------------------------------------------------------------
def lit(x) -> str:
    """A Python literal for a scalar, parenthesized when negative."""
    text = repr(float(x)) if isinstance(x, float) else repr(int(x))
    return f"({text})" if text.startswith("-") else text


def broadcast_shape(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


class Pool:
    """The values made so far and the helpers the op families use to add more."""

    def __init__(self, draw, fdtype: str):
        self.draw = draw
        self.fdtype = fdtype
        self.placeholders: list[Val] = []
        self.nodes: list[Val] = []
        self.all: list[Val] = []

    # picking ------------------------------------------------------------------------------
    def pick(self, pred) -> Val | None:
        """A value satisfying `pred`, counted from the most recent (which shrinking prefers)."""
        cands = [v for v in self.all if pred(v)]
        if not cands:
            return None
        return cands[-1 - self.draw(st.integers(0, len(cands) - 1))]

    def choice(self, options):
        return self.draw(st.sampled_from(options))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    # adding -------------------------------------------------------------------------------
    def add(self, expr, shape, dtype, lo, hi, exact, inputs, op) -> Val:
        lo, hi = float(lo), float(hi)
        assert lo <= hi and math.prod(shape) <= MAX_ELEMENTS and len(shape) <= MAX_RANK, \
            (expr, shape, lo, hi)
        static = all(v.static for v in inputs)
        v = Val(f"n{len(self.nodes)}", expr, tuple(shape), dtype, lo, hi, exact, static, op)
        self.nodes.append(v)
        self.all.append(v)
        return v

    def placeholder(self, shape, dtype, fill=None) -> Val:
        if fill is None:
            fill = {"f": self.choice(["float", "float", "pos"]),
                    "i": self.choice(["int", "nonneg"]), "b": "bool"}[kind_of(dtype)]
        lo, hi = {"float": (-2.0, 2.0), "pos": (0.5, 2.0), "int": (-4, 4), "nonneg": (0, 4),
                  "bool": (0, 1)}[fill]
        dims = tuple(None if self.flag() else d for d in shape) if shape else ()
        v = Val(f"p{len(self.placeholders)}", None, tuple(shape), dtype, lo, hi, True,
                None not in dims, "Placeholder", dims, fill)
        self.placeholders.append(v)
        self.all.append(v)
        return v

    def constant(self, shape, dtype) -> Val:
        n = math.prod(shape)
        kind = kind_of(dtype)
        if kind == "f":
            a, b = self.choice([(-1.5, 2.0), (0.5, 1.75), (-2.0, -0.25), (0.3, -1.1)])
            body = f"np.linspace({a}, {b}, {n})"
            lo, hi = min(a, b), max(a, b)
        elif kind == "i":
            start = self.choice([0, -3, 1])
            body = f"np.arange({start}, {start + n})"
            lo, hi = start, start + n - 1
        else:
            body = f"np.arange({n}) % 3 == 1"
            lo, hi = 0, 1
        body = f"np.reshape({body}, {tuple(shape)!r})"
        return self.add(f"sg.constant({body}, dtype=sg.{dtype})", shape, dtype, lo, hi, True,
                        [], "Const")

    def leaf(self, shape, dtype) -> Val:
        """A new placeholder or constant of this shape and dtype."""
        if self.flag():
            return self.placeholder(shape, dtype)
        return self.constant(shape, dtype)

    # guards -------------------------------------------------------------------------------
    def squash(self, v: Val, bound: float = LIMIT) -> Val:
        """v itself if its values lie within +-bound, else a tanh of it (scaled to the bound
        when that is at least 1)."""
        if v.bound <= bound:
            return v
        if v.kind != "f":
            v = cast(self, v, self.fdtype)
        scale = min(bound, 2.0)
        if scale == 1.0:
            return self.add(f"sg.tanh({v.name})", v.shape, v.dtype, -1, 1, False, [v], "Tanh")
        t = self.add(f"sg.tanh({v.name})", v.shape, v.dtype, -1, 1, False, [v], "Tanh")
        return self.add(f"{t.name} * {lit(scale)}", v.shape, v.dtype, -scale, scale, False,
                        [t], "Mul")

    def positive(self, v: Val, upper: float = LIMIT, exact: bool = False) -> Val:
        """A value >= 0.25 made from v (v itself when it already is, and not above `upper`);
        `exact`: an exact one from an exact v (abs(v) + 0.5)."""
        if v.lo >= 0.25 and v.hi <= upper and (v.exact or not exact):
            return v
        if v.kind == "f":
            style = "abs" if exact else self.choice(["square", "softplus", "sigmoid", "exp",
                                                      "abs"])
            if style == "abs":
                s = self.squash(v, upper - 0.5) if not exact else v
                a = self.add(f"sg.abs({s.name})", s.shape, s.dtype, 0, s.bound, s.exact, [s],
                             "Abs")
                return self.add(f"{a.name} + 0.5", s.shape, s.dtype, 0.5, a.hi + 0.5,
                                a.exact, [a], "Add")
            if style == "square" or upper < 10:
                s = self.squash(v, min(30.0, math.sqrt(max(upper - 0.5, 0.25))))
                sq = self.add(f"sg.square({s.name})", s.shape, s.dtype, 0, s.bound ** 2,
                              s.exact, [s], "Square")
                return self.add(f"{sq.name} + 0.5", s.shape, s.dtype, 0.5, sq.hi + 0.5,
                                sq.exact, [sq], "Add")
            if style == "softplus":
                s = self.squash(v, 30.0)
                sp = self.add(f"sg.nn.softplus({s.name})", s.shape, s.dtype,
                              math.log1p(math.exp(s.lo)), math.log1p(math.exp(s.hi)), False,
                              [s], "Softplus")
                return self.add(f"{sp.name} + 0.25", s.shape, s.dtype, sp.lo + 0.25,
                                sp.hi + 0.25, False, [sp], "Add")
            if style == "sigmoid":
                sg_ = self.add(f"sg.sigmoid({v.name})", v.shape, v.dtype, 0, 1, False, [v],
                               "Sigmoid")
                return self.add(f"{sg_.name} + 0.25", v.shape, v.dtype, 0.25, 1.25, False,
                                [sg_], "Add")
            t = self.squash(v, 1.0)
            return self.add(f"sg.exp({t.name})", v.shape, v.dtype, math.exp(-1), math.exp(1),
                            False, [t], "Exp")
        # integers: abs(d) + 1 (exact)
        a = self.add(f"sg.abs({v.name})", v.shape, v.dtype, 0, v.bound, True, [v], "Abs")
        return self.add(f"{a.name} + 1", v.shape, v.dtype, 1, a.hi + 1, True, [a], "Add")

    def index_into(self, v: Val, n: int) -> Val:
        """Integer values in [0, n) made from the integer value v (a floormod, when needed)."""
        if v.lo >= 0 and v.hi < n:
            return v
        return self.add(f"sg.floormod({v.name}, {n})", v.shape, v.dtype, 0, n - 1, True, [v],
                        "FloorMod")

    def int_value(self, shape=None) -> Val:
        """An integer value (of `shape` if given): from the pool, else a new leaf."""
        v = self.pick(lambda u: u.kind == "i" and (shape is None or u.shape == tuple(shape)))
        if v is None:
            v = self.leaf(tuple(shape) if shape is not None else self.shape(1), "int32")
        return v

    # shapes -------------------------------------------------------------------------------
    def shape(self, min_rank=0, max_rank=3, max_elements=MAX_ELEMENTS) -> tuple:
        # rank 1 first (what shrinking goes to), then the others: most families need rank >= 1
        rank = self.draw(st.sampled_from([r for r in (1, 2, 0, 3) if min_rank <= r <= max_rank]))
        dims = []
        for _ in range(rank):
            room = max_elements // max(1, math.prod(dims))
            dims.append(self.draw(st.integers(1, max(1, min(4, room)))))
        return tuple(dims)

    def broadcastable_to(self, shape) -> tuple:
        """A shape that broadcasts with `shape` (a suffix with some dims set to 1, possibly
        with new leading dims), the result staying within the limits."""
        keep = self.draw(st.integers(0, len(shape)))
        tail = [d if self.flag() else 1 for d in shape[len(shape) - keep:]]
        out = tuple(tail)
        if keep == len(shape) and len(shape) < MAX_RANK and self.draw(st.integers(0, 3)) == 0:
            lead = self.draw(st.integers(1, 3))
            if lead * math.prod(broadcast_shape(shape, out)) <= MAX_ELEMENTS:
                out = (lead, *out)
        return out

    def partner(self, x: Val, dtype=None, pred=lambda v: True) -> Val:
        """A value broadcasting with x (same dtype): from the pool, x itself, or a new leaf."""
        dtype = dtype or x.dtype
        mode = self.choice(["pool", "self", "leaf"])
        if mode == "pool":
            v = self.pick(lambda u: u.dtype == dtype and pred(u) and fits(u.shape, x.shape))
            if v is not None:
                return v
        if mode == "self" and x.dtype == dtype and pred(x):
            return x
        return self.leaf(self.broadcastable_to(x.shape), dtype)


def kind_of(dtype) -> str:
    return "f" if dtype in FLOATS else ("i" if dtype in INTS else "b")


def fits(a, b) -> bool:
    out = broadcast_shape(a, b)
    return out is not None and math.prod(out) <= MAX_ELEMENTS and len(out) <= MAX_RANK


def monotone_range(fn, lo, hi, critical=()):
    """The range of fn over [lo, hi], for fn monotone between the `critical` points."""
    pts = [lo, hi] + [c for c in critical if lo < c < hi]
    ys = [fn(p) for p in pts]
    return min(ys), max(ys)


def axis_arg(pool, rank, allow_none=True):
    """An axis argument's text and the axes it names: None, one axis (maybe negative), or a
    list of axes."""
    style = pool.choice(["one", "none", "list"] if allow_none else ["one", "list"])
    if rank == 0 or style == "none":
        return "None", tuple(range(rank))
    if style == "one":
        a = pool.draw(st.integers(-rank, rank - 1))
        return str(a), (a % rank,)
    axes = sorted(set(pool.draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank))))
    text = [a - rank if pool.flag() else a for a in axes]
    return repr(text), tuple(axes)


def cast(pool, v: Val, dtype: str) -> Val:
    lo, hi = v.lo, v.hi
    if kind_of(dtype) == "i":
        lo, hi = math.trunc(lo), math.trunc(hi)
    return pool.add(f"sg.cast({v.name}, sg.{dtype})", v.shape, dtype, lo, hi, v.exact, [v],
                    "Cast")
