"""Random well-typed staticgrad graphs for the differential fuzzing tests (test_fuzz.py).

`graph_specs()` is a hypothesis strategy of `GraphSpec`s: a list of placeholders and of nodes,
each node one line of Python that builds it with the public API (`sg.*`, `sg.nn.*`, indexing)
from earlier ones. The spec is valid by construction: the generator keeps its own model of
every value (concrete shape, dtype, an interval holding its values, whether it is *exact*), so
it only writes lines whose shapes and dtypes agree, and it never calls staticgrad to decide.
`repr(spec)` is the program itself, which is what hypothesis prints for a failing example.

Values stay in safe domains by construction, with guard nodes the generator inserts (they are
ordinary nodes, shared like any other): `log`, `sqrt`, `rsqrt`, `reciprocal`, a divisor and a
power's base get a positive input (`sg.square(x) + 0.5`...), `exp`, `expm1`, `tan` and a
power's exponent a bounded one (`sg.tanh(x)`), integer divisors `sg.abs(d) + 1`, gather and
class indices `sg.floormod(i, n)`; any value whose interval would leave [-LIMIT, LIMIT] is
squashed by a tanh first. No NaN or Inf can arise.

*Exact* values are those every backend computes bit for bit: leaves, integers and booleans,
and what exact-preserving ops (negation, abs, relu, max, +, -, *, floor, slicing, reshapes,
gathers, concatenation...) make of exact values. Discontinuous ops (floor, sign, comparisons,
argmax, float floormod, float->int casts) take exact inputs only, so a rounding difference
between backends (a fused sum, a transposed matmul) can never flip one of their results; the
continuous rest is compared with a tolerance.

The op kinds are listed in `FAMILIES`, simplest first (hypothesis shrinks towards the start);
they live in fuzz_ops_math.py and fuzz_ops_array.py, the model and its guards in fuzz_spec.py.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests.fuzz_ops_array import (
    broadcast_tile,
    concat,
    duplicate,
    expand_squeeze,
    gather,
    getitem,
    leaf_op,
    like,
    one_hot,
    pad,
    reshape,
    slice_,
    stack,
    transpose,
    unstack_split,
)
from tests.fuzz_ops_math import (
    COMPARISONS,
    REDUCTIONS,
    UNARY,
    add_n,
    binary,
    cast_op,
    clip,
    compare,
    conv_pool,
    cross_entropy,
    logical,
    matmul,
    reduce,
    select,
    softmax,
    unary,
)
from tests.fuzz_spec import FLOATS, GraphSpec, Pool, build, feed_values, program

__all__ = ["FAMILIES", "OP_TYPES", "GraphSpec", "build", "feed_values", "graph_specs", "program"]

FAMILIES = [unary, binary, reduce, matmul, reshape, transpose, getitem, compare, select, clip,
            add_n, expand_squeeze, broadcast_tile, pad, slice_, gather, one_hot, concat, stack,
            unstack_split, softmax, cross_entropy, cast_op, logical, like, duplicate, leaf_op,
            conv_pool]

# the registry types the families can make (the fuzzing test checks it reaches them)
OP_TYPES = sorted(set(UNARY) | {"Add", "Sub", "Mul", "Maximum", "Minimum", "RealDiv", "Pow",
                                "FloorMod", "FloorDiv", "Square"} | set(COMPARISONS) |
                  set(REDUCTIONS) | {
    "LogicalAnd", "LogicalOr", "LogicalNot", "Select", "ClipByValue", "AddN", "MatMul",
    "Reshape", "Transpose", "ExpandDims", "Squeeze", "BroadcastTo", "Tile", "Pad",
    "StridedSlice", "Slice", "GatherV2", "OneHot", "ConcatV2", "Pack", "Unpack", "Split",
    "Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits", "Cast", "ZerosLike", "OnesLike", "Fill", "Range",
    "Const", "Placeholder", "Conv2D", "MaxPool", "AvgPool", "Shape", "Size", "Rank", "Eye",
    "LinSpace", "PlaceholderWithDefault"})


@st.composite
def graph_specs(draw, max_steps: int = 14, fdtypes=FLOATS) -> GraphSpec:
    """A random well-typed graph: 1-3 placeholders (the first of the graph's float dtype),
    then up to `max_steps` op families applied to values drawn from everything made so far
    (so that one node often has several consumers), then the fetches: the last node and
    any others, repeats and placeholders included."""
    fdtype = draw(st.sampled_from(fdtypes))
    pool = Pool(draw, fdtype)
    pool.placeholder(pool.shape(max_rank=3, max_elements=24), fdtype)
    for _ in range(draw(st.integers(0, 2))):
        pool.placeholder(pool.shape(max_rank=3, max_elements=24),
                         draw(st.sampled_from([fdtype, fdtype, "int32", "int64", "bool"])))
    for _ in range(draw(st.integers(1, max_steps))):
        family = draw(st.sampled_from(FAMILIES))
        if not family(pool):  # nothing it can take: a unary op instead
            unary(pool)
    if not pool.nodes:
        unary(pool, "Tanh")
    values = pool.placeholders + pool.nodes
    last = pool.nodes[-1].name
    extra = draw(st.lists(st.sampled_from([v.name for v in values]), max_size=3))
    layouts = {p.name: draw(st.sampled_from(["C", "C", "F", "strided"]))
               for p in pool.placeholders}
    seed = draw(st.integers(0, 2**16))
    return GraphSpec(fdtype, pool.placeholders, pool.nodes, [last] + extra, seed, layouts)
