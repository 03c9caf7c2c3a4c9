"""An elementwise node, or a fused group of them (passes/fuse.py), as one generated CUDA
kernel, and the host lines that launch it.

    // fused: 4 elementwise ops over 1000000 float32 elements
    extern "C" __global__ void __launch_bounds__(256) fused_1(
        const float* __restrict__ in0, float* __restrict__ out0, double* __restrict__ part0)
    {
        double acc0 = 0;
        for (long long i = ...; i < 1000000LL; i += ...) {  // a grid-stride loop
            const float x0 = in0[i];
            // Mul 'mul' at model.py:3
            const float v0 = (float)(1.5f * x0);
            ...
            out0[i] = v2;
            acc0 += v3;
        }
        acc0 = sg_block_sum(acc0);               // a group's sums: a part a block,
        if (threadIdx.x == 0) part0[blockIdx.x] = acc0;  // added up by fused_1_sums
    }

Each member is its op's expression (ops/expr.py) printed as C (codegen/c_expr.py), of its
inputs' C types, converted to its output's. An input of the group's shape is read at the
element's index; one that broadcasts to it at the index its own strides give (the shapes
are known, so the divisions are by constants); a one-element input once per thread; a
number as a C literal of its dtype (c_expr.c_literal). Only the group's outputs are written
to memory. A sum of a whole value (the only reduction a group holds) is added up per thread,
per block (warp shuffles), and then over the blocks by a second, one-block kernel: two
launches, the same order of additions on every run.
"""

from __future__ import annotations

import math

import numpy as np

from ...codegen.c_expr import C_TYPES, C, c_literal
from ...codegen.walk import comment
from ...ir import Node, Value

BLOCK = 256        # threads a block
MAX_GRID = 2048    # blocks at most: the grid-stride loop does the rest (and a sum's parts)
FINISH_BLOCK = 256   # threads of the kernel adding a sum's parts (at most MAX_GRID)

# the dtypes a kernel computes in (bool is C++'s one-byte bool, as NumPy's)
KERNEL_DTYPES = frozenset({"float32", "float64", "bool", "int32", "int64"})
# ops whose C expression gives NumPy's answer on integers too (C's `/` truncates, NumPy's
# true division makes floats; C's integer pow and shifts differ): the rest take floats only
INTEGER_OPS = frozenset({"Add", "Sub", "Mul", "Neg", "Abs", "Sign", "Square", "Maximum",
                         "Minimum", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
                         "GreaterEqual", "Select", "Identity", "StopGradient", "ClipByValue",
                         "LogicalAnd", "LogicalOr", "LogicalNot", "Relu"})


# signed overflow is undefined in C (a compiler folds `x + 1 > x` to true), where NumPy's
# integers wrap: these ops compute on the unsigned type of the width, which wraps, and the
# member's cast converts back (modulo 2**n, in C++20 and in g++'s and NVCC's C++17)
_UNSIGNED = {"int32": "unsigned int", "int64": "unsigned long long"}
_WRAPPING = {"Add": "{u}{{0}} + {u}{{1}}", "Sub": "{u}{{0}} - {u}{{1}}",
             "Mul": "{u}{{0}} * {u}{{1}}", "Neg": "{u}0 - {u}{{0}}",
             "Square": "{u}{{0}} * {u}{{0}}", "Abs": "{{0}} < 0 ? {u}0 - {u}{{0}} : {u}{{0}}"}


def _wrapping(op_type: str, dtype: str) -> str | None:
    """The C expression (of `{0}`, `{1}`) of an integer op that can overflow, else None."""
    if dtype not in _UNSIGNED or op_type not in _WRAPPING:
        return None
    return _WRAPPING[op_type].format(u=f"({_UNSIGNED[dtype]})")


def kernel_ok(node: Node) -> bool:
    """Can a generated kernel compute this node: an op with an expression, over values of
    the kernel dtypes (integers only for INTEGER_OPS)?"""
    if node.opdef.expr is None or len(node.outputs) != 1:
        return False
    for v in (*node.inputs, *node.outputs):
        if v.dtype.name not in KERNEL_DTYPES:
            return False
        if v.dtype.is_integer and node.type not in INTEGER_OPS:
            return False
    return node.outputs[0].shape.is_fully_defined()


def grid_for(n: int) -> int:
    return max(1, min(math.ceil(n / BLOCK), MAX_GRID))


def render_elementwise(node: Node, kname: str, ref, out_name, make_name):
    """(the kernels' C text, the host lines that allocate the outputs and launch them, the
    kernels' names) of a fused group `node` (node.members) or of one elementwise node.

    `ref(value)` is how the host code refers to a device array it passes in, `out_name(v)`
    the host name of an output, `make_name(text)` a fresh host name (for a sum's parts).
    """
    e = _elements(node, ref)
    members, domain, n, params, args, body = e.members, e.domain, e.n, e.params, e.args, e.body
    sums, outs = [], []
    wanted = {id(v) for v in node.outputs} if node.members else {id(node.outputs[0])}
    for m in members:
        (v,) = m.outputs
        if m.type == "Sum":
            body.append(f"acc{len(sums)} += (double){e.local[id(m.inputs[0])]};")
            sums.append((v, e.local[id(m.inputs[0])]))
        elif id(v) in wanted:
            params.append(f"{C_TYPES[v.dtype.name]}* __restrict__ out{len(outs)}")
            body.append(f"out{len(outs)}[i] = {e.local[id(v)]};")
            outs.append(v)

    host = []
    for v in outs:
        host.append(f"{out_name(v)} = cp.empty({tuple(v.shape.dims)!r}, "
                    f"dtype=cp.{v.dtype.name})")
        args.append(out_name(v))
    grid = grid_for(n)
    parts = []
    for k, (v, _) in enumerate(sums):
        parts.append(make_name(f"{out_name(v)}_parts"))
        params.append(f"double* __restrict__ part{k}")
        host.append(f"{parts[-1]} = cp.empty(({grid},), dtype=cp.float64)")
        args.append(parts[-1])
    kinds = sorted({v.dtype.name for v in outs} | {v.dtype.name for v, _ in sums})
    what = f"fused: {len(members)} elementwise ops" if node.members else node.type
    head = f"// {what} over {n} elements of {' and '.join(kinds)}"
    lines = [head, f"extern \"C\" __global__ void __launch_bounds__({BLOCK}) {kname}(",
             "    " + ",\n    ".join(params) + ")", "{"]
    lines += [f"    double acc{k} = 0;" for k in range(len(sums))]
    lines += ["    " + h for h in e.hoisted]
    lines.append(f"    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; "
                 f"i < {n}LL; i += (long long)gridDim.x * blockDim.x) {{")
    lines += ["        " + c for c in _coordinates(domain, e.coords)]
    lines += ["        " + line for line in e.loads + body]
    lines.append("    }")
    for k in range(len(sums)):
        lines.append(f"    acc{k} = sg_block_sum(acc{k});")
        lines.append(f"    if (threadIdx.x == 0) part{k}[blockIdx.x] = acc{k};")
    lines.append("}")
    if n:
        host.append(f"{kname}(({grid},), ({BLOCK},), ({', '.join(args)},))")
    if sums:
        finish = make_name(f"{kname}_sums")  # (a fresh name: a node may be called so)
        lines += _finish(finish, sums, grid)
        finals = []
        for v, _ in sums:
            host.append(f"{out_name(v)} = cp.empty((), dtype=cp.{v.dtype.name})")
            finals.append(out_name(v))
        if n:
            host.append(f"{finish}((1,), ({FINISH_BLOCK},), "
                        f"({', '.join(parts + finals)},))")
        else:  # nothing to add: each sum is 0
            host += [f"{f}.fill(0)" for f in finals]
        host.append(f"del {', '.join(parts)}")
    return "\n".join(lines), host, [kname, finish] if sums else [kname]


def _one_number(c) -> bool:
    """Is every element of the constant `c` one number, its first? A NaN throughout is one
    (a 0-d NaN, never equal to itself, would otherwise go to the kernel as a Python float: a
    float64 array read as float*)."""
    if not c.size:
        return False
    first = c.flat[0]
    if c.dtype.kind == "f" and first != first:
        return bool(np.isnan(c).all())
    return bool((c == first).all())


def element_function(node: Node, fname: str, ref):
    """(the C text of a __device__ function `fname(i, in0, in1...)` giving element i of the
    single output of `node`, an elementwise node or a fused group without sums; the host
    references of its array parameters; their C parameter types): what a reduction's kernel
    calls to read its input (reduce.py's `load`) where that input is never written out."""
    e = _elements(node, ref)
    (out,) = node.outputs
    ctype = C_TYPES[out.dtype.name]
    lines = [f"// {len(e.members)} elementwise ops computed where a reduction reads them",
             f"__device__ inline {ctype} {fname}(long long i" +
             "".join(f", {p}" for p in e.params) + ") {"]
    lines += ["    " + line for line in e.hoisted + _coordinates(e.domain, e.coords)
              + e.loads + e.body]
    lines += [f"    return {e.local[id(out)]};", "}"]
    return "\n".join(lines), e.args, [p.split(" __restrict__")[0] for p in e.params]


def render_update(node: Node, kname: str, ref, target: str, sign: str) -> tuple[str, str]:
    """(the C text of a kernel computing the single output of `node`, an elementwise node or
    a fused group without sums, and adding it to (`sign` "+") or taking it from ("-") the
    variable's array in place; the host expression launching it, whose value is that array)
    : an optimizer's update (AssignAdd, AssignSub) with the delta it applies, one pass over
    the variable, the delta never written to memory. `target` is the host code's reference
    to the variable's array (the update's own, V['w'])."""
    e = _elements(node, ref)
    (out,) = node.outputs
    ctype = C_TYPES[out.dtype.name]
    params = [f"{ctype}* __restrict__ var", *e.params]
    lines = [f"// {len(e.members)} elementwise ops over {e.n} elements of {out.dtype.name}, "
             f"applied to a variable in place",
             f"extern \"C\" __global__ void __launch_bounds__({BLOCK}) {kname}(",
             "    " + ",\n    ".join(params) + ")", "{"]
    lines += ["    " + h for h in e.hoisted]
    lines.append(f"    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; "
                 f"i < {e.n}LL; i += (long long)gridDim.x * blockDim.x) {{")
    lines += ["        " + c for c in _coordinates(e.domain, e.coords)]
    lines += ["        " + line for line in e.loads + e.body]
    lines.append(f"        var[i] = ({ctype})(var[i] {sign} {e.local[id(out)]});")
    lines += ["    }", "}"]
    launch = (f"crt.updated({kname}, ({grid_for(e.n)},), ({BLOCK},), "
              f"({', '.join([target, *e.args])},), {tuple(out.shape.dims)!r})")
    return "\n".join(lines), launch


class _Elements:
    """What a kernel of an elementwise node or group computes for element i: its array
    parameters (C) and arguments (host), the lines reading them (`hoisted` once a thread,
    `loads` an element, after the `coords` lines) and computing each member (`body`), and
    each value's C name (`local`)."""

    def __init__(self, node: Node):
        self.members = list(node.members) or [node]
        last = self.members[-1]
        self.domain = (last.inputs[0] if last.type == "Sum" else last.outputs[0]).shape.dims
        self.n = math.prod(self.domain)
        self.local: dict[int, str] = {}
        self.params, self.args, self.hoisted, self.loads, self.body = [], [], [], [], []
        self.coords: set[int] = set()


def _elements(node: Node, ref) -> _Elements:
    e = _Elements(node)
    scalars = node.attrs.get("scalars", {}) if node.members else {}
    inside = {id(v) for m in e.members for v in m.outputs}
    local = e.local

    def read_input(v: Value) -> None:
        if id(v) in local or id(v) in inside:
            return
        ctype = C_TYPES[v.dtype.name]
        if v.const is not None and _one_number(v.const):
            local[id(v)] = c_literal(v.const.flat[0], v.dtype.name)  # one number throughout
            return
        k = len(e.params)
        e.params.append(f"const {ctype}* __restrict__ in{k}")
        e.args.append(ref(v))
        name = local[id(v)] = f"x{k}"
        if v.shape.num_elements() == 1:
            e.hoisted.append(f"const {ctype} {name} = in{k}[0];")
        else:
            index = _index(v.shape.dims, e.domain, e.coords)
            e.loads.append(f"const {ctype} {name} = in{k}[{index}];")

    for m in e.members:
        for v in m.runtime_inputs():
            source = scalars.get(id(v))
            if source is not None:
                read_input(source)
                local[id(v)] = local[id(source)]
            else:
                read_input(v)
    for i, m in enumerate(e.members):
        if m.type == "Sum":
            continue
        (v,) = m.outputs
        ctype = C_TYPES[v.dtype.name]
        local[id(v)] = f"v{i}"
        expr = _wrapping(m.type, v.dtype.name) or C.format(m.opdef.expr)
        expr = expr.format(*[local[id(x)] for x in m.inputs])
        e.body.append(comment(m.origin, "//") if m.origin is not None else f"// {m.type}")
        e.body.append(f"const {ctype} v{i} = ({ctype})({expr});")
    return e


def _index(dims: tuple, domain: tuple, coords: set) -> str:
    """The C index into an input of shape `dims` (which broadcasts to `domain`) of the
    element `i` of the domain: `i` itself for the domain's shape, else the sum of the
    domain's coordinates that the input does not broadcast along, times its strides."""
    if tuple(dims) == tuple(domain):
        return "i"
    offset = len(domain) - len(dims)
    terms, stride = [], 1
    for axis in range(len(dims) - 1, -1, -1):
        if dims[axis] != 1:
            coords.add(axis + offset)
            terms.append(f"c{axis + offset}" + (f" * {stride}LL" if stride != 1 else ""))
        stride *= dims[axis]
    return " + ".join(reversed(terms)) or "0"


def _coordinates(domain: tuple, coords: set) -> list[str]:
    """C lines giving element i's coordinate along each axis in `coords`, from the last."""
    if not coords:
        return []
    lines = ["long long r = i;"]
    for axis in range(len(domain) - 1, min(coords) - 1, -1):
        if axis in coords:
            lines.append(f"const long long c{axis} = r" +
                         (f" % {domain[axis]}LL;" if axis > 0 else ";"))
        if axis > min(coords):
            lines.append(f"r /= {domain[axis]}LL;")
    return lines


def _finish(name: str, sums: list, grid: int) -> list[str]:
    """The one-block kernel adding up each sum's parts, in a fixed order."""
    params = [f"const double* __restrict__ part{k}" for k in range(len(sums))]
    params += [f"{C_TYPES[v.dtype.name]}* __restrict__ out{k}" for k, (v, _) in enumerate(sums)]
    lines = ["", f"extern \"C\" __global__ void __launch_bounds__({FINISH_BLOCK}) "
                 f"{name}(", "    " + ",\n    ".join(params) + ")", "{"]
    for k, (v, _) in enumerate(sums):
        lines += [f"    double acc{k} = 0;",
                  f"    for (int j = threadIdx.x; j < {grid}; j += blockDim.x) "
                  f"acc{k} += part{k}[j];",
                  f"    acc{k} = sg_block_sum(acc{k});",
                  f"    if (threadIdx.x == 0) out{k}[0] = ({C_TYPES[v.dtype.name]})acc{k};"]
    lines.append("}")
    return lines
