"""A layer's epilogue in one pass over memory: the bias add and ReLU after a convolution (or
any large [..., C] value), and their two gradients. A late pass of the NumPy backend, with
vector math on.

    BiasAdd = np.add(Conv2D, b, out=Conv2D)          Relu = rt.bias_relu(Conv2D, b,
    Relu = np.maximum(BiasAdd, 0, out=BiasAdd)   ->                      out=Conv2D)

    g = np.multiply(dy, np.greater(Relu, 0), out=dy)
    db = np.sum(g, axis=(0, 1, 2))               ->  g, db = rt.relu_grad_bias_sum(dy, Relu,
                                                                                   out=dy)

NumPy makes two passes over the activations for the first (the add slow besides, as NumPy
loops over the short last axis C once per row) and three for the second, with a mask array;
numba's loops in conv_fast make one each, where the `[fast]` extra is installed (elsewhere
the same NumPy steps as before run inside rt's functions). The results are the same: the
same additions, maxima and products, and the bias gradient's sum adds the rows in order, as
np.sum over the leading axes does.

Fused groups (passes/fuse.py) take neither: a group reads values of its own shape or single
numbers, and ends only in sums of everything, where these read a [C] vector and end in a
sum to [C].

What is replaced: a Relu whose input is an Add of a value x of at least FUSE.min_elements
float32 or float64 elements and a vector b of x's last size, read by that Relu alone, just
before it (a variable's read, b, is then read where it was); and a SumTo of a large ReluGrad's
result over every axis but the last (the first such sum, if several), computed where the
ReluGrad was. Nodes other nodes wait on stay as they are, and so do the nodes of a graph op
that made more than one node of the program (or of none). An error in the node names the
Relu (or the ReluGrad) and its user's line.
"""

from __future__ import annotations

from ...ir import Node, Program, Value, make_node
from ...ops.table import OpDef
from ...passes.rewrite import map_regions, rewrite, waited_on
from .policy import FUSE


def _bias_relu_infer(ctx):
    return [(ctx.in_shapes[0], ctx.in_dtypes[0])]


def _relu_grad_bias_sum_infer(ctx):
    shape = ctx.in_shapes[0]
    return [(shape, ctx.in_dtypes[0]), (shape[-1:], ctx.in_dtypes[0])]


BIAS_RELU = OpDef("BiasRelu", _bias_relu_infer, "rt.bias_relu({0}, {1})",
                  differentiable=False, new_array=True, arity=2,
                  doc="np.maximum(x + b, 0), b of x's last size, in one pass")
RELU_GRAD_BIAS_SUM = OpDef("ReluGradBiasSum", _relu_grad_bias_sum_infer,
                           "rt.relu_grad_bias_sum({0}, {1})", differentiable=False,
                           new_array=True, arity=2,
                           doc="ReluGrad(dy, f) and its sum over all axes but the last, in "
                               "one pass")


def fuse_epilogues(program: Program) -> Program:
    """The program with its bias-add-and-ReLU pairs and their gradients as one node each."""
    program = map_regions(program, fuse_epilogues)
    if not any(node.type in _EPILOGUE_ENDS for node in program.nodes):
        return program  # (most plans: no more than this one look at each node)
    adds, pairs = _fusible(program)
    if not adds and not pairs:
        return program
    dropped: dict[int, Node] = {}  # id(an Add's op) -> the Add as visited (its inputs now)
    fused_sums: dict[int, Value] = {}  # id(a fused SumTo's op) -> the value replacing it

    def visit(node):
        key = id(node.origin)
        if node.type == "Add" and key in adds:
            dropped[key] = node
            return []  # (read by the Relu after it alone, which reads its inputs instead)
        # (a dropped Add has one reader, the Relu just after it: this one)
        if node.type == "Relu" and node.inputs[0].producer is not None and \
                id(node.inputs[0].producer.origin) in dropped:
            add = dropped[id(node.inputs[0].producer.origin)]
            return _made(BIAS_RELU, _bias_add(add), node, node.outputs, (add, node))
        if node.type == "ReluGrad" and key in pairs:
            total = pairs[key]
            both = _made(RELU_GRAD_BIAS_SUM, node.inputs, node, node.outputs + total.outputs,
                         (node, total))
            fused_sums[id(total.origin)] = both.outputs[1]
            return ([both], [both.outputs[0]])
        if node.type == "SumTo" and key in fused_sums:
            return [fused_sums[key]]
        return node

    return rewrite(program, visit, region=lambda region: region)


def _fusible(program: Program) -> tuple[set[int], dict[int, Node]]:
    """(adds, pairs): the ids of the graph ops of the Adds to take into the Relu just after
    each, and for the ops of the ReluGrads to fuse, the SumTo of each (as it is here: a copy
    has its names and tensors).

    The nodes to fuse are known by their graph ops: a visit may be given a copy of one (its
    inputs replaced by what an earlier visit substituted), which in a program not owned (a
    region's) has values of its own, but the same op. An op that made more than one node
    here is left alone."""
    nodes = program.nodes
    made: dict[int, int] = {}  # id(op) -> how many nodes it made
    readers: dict[int, int] = {}  # id(Value) -> how many inputs of nodes read it
    sums: dict[int, Node] = {}    # id(a ReluGrad's result) -> the first SumTo to fuse with it
    for node in nodes:
        made[id(node.origin)] = made.get(id(node.origin), 0) + 1
        for v in node.runtime_inputs():
            readers[id(v)] = readers.get(id(v), 0) + 1
        if node.type == "SumTo" and id(node.inputs[0]) not in sums and _sums_rows(node):
            sums[id(node.inputs[0])] = node

    def known(node) -> bool:
        return node.origin is not None and made[id(node.origin)] == 1

    fetched = {id(f) for f in program.fetches if isinstance(f, Value)}
    waited = waited_on(program)
    adds = set()
    for before, node in zip(nodes, nodes[1:]):
        if node.type == "Relu" and node.inputs[0].producer is before and known(before) and \
                known(node) and _bias_add(before) is not None and \
                readers[id(before.outputs[0])] == 1 and id(before.outputs[0]) not in fetched \
                and id(before) not in waited:
            adds.add(id(before.origin))
    pairs = {}
    for node in nodes:
        if node.type == "ReluGrad" and known(node):
            total = sums.get(id(node.outputs[0]))
            if total is not None and known(total) and id(total) not in waited and \
                    not total.controls and _large_float(node.outputs[0]):
                pairs[id(node.origin)] = total
    return adds, pairs


def _made(opdef: OpDef, inputs, node: Node, replaced: tuple, absorbed: tuple) -> Node:
    """A node of `opdef` in `node`'s place (its op, its control inputs), whose values are
    named as `replaced`, the values they stand for, and stand for the same graph tensors.
    Its attr "ops" holds the graph ops of the nodes it absorbed, in order: its comment
    names each (render.py)."""
    made = make_node(opdef, {}, inputs, node.origin, node.controls,
                     names=[v.name for v in replaced])
    for new, old in zip(made.outputs, replaced):
        new.tensor = old.tensor
    made.attrs = {"ops": tuple(n.origin for n in absorbed if n.origin is not None)}
    return made


EPILOGUES = frozenset({BIAS_RELU.type, RELU_GRAD_BIAS_SUM.type})
_EPILOGUE_ENDS = frozenset({"Relu", "ReluGrad"})  # the op each fused pair is found from


def _bias_add(node: Node) -> tuple[Value, Value] | None:
    """(x, b) of an Add of a large float x of shape [..., C] and a vector b of shape [C]."""
    if node.type != "Add" or node.controls:
        return None
    for x, b in (node.inputs, node.inputs[::-1]):
        if _large_float(x) and b.dtype is x.dtype and b.shape.dims == x.shape.dims[-1:]:
            return x, b
    return None


def _sums_rows(node: Node) -> bool:
    """Is SumTo `node` a sum over every axis of its input but the last?"""
    x, out = node.inputs[0], node.outputs[0]
    return _large_float(x) and out.shape.dims == x.shape.dims[-1:]


def _large_float(v: Value) -> bool:
    return v.dtype.name in ("float32", "float64") and FUSE.large(v) and v.shape.ndims >= 2
