"""Export the forward graph of some fetches to an ONNX model (optional extra `[onnx]`).

    import staticgrad.onnx
    staticgrad.onnx.export_onnx([probs], [x], "mlp.onnx", session=sess)

The model opens in Netron and runs in ONNX Runtime with the results `Session.run` gives:

- the fed tensors (placeholders, usually) become the graph's inputs, with their static shapes
  (or `feed_shapes`); an unknown dimension becomes a symbolic one named `<input>_d<axis>`;
- variables become initializers holding the session's current values; constants and other
  values known when the graph was built become initializers too;
- each op becomes one ONNX node named after it (a few ops take helper nodes named
  `<op name>/<what>`, e.g. the NHWC <-> NCHW transposes around a convolution); values are
  named after the graph's tensors (`dense/MatMul:0`).

Every op type has a rule in `RULES` or, in `NO_ONNX`, the reason it has no ONNX form (random
draws, assignments, gradient-only kernels...); exporting such an op raises `OnnxExportError`
naming the op, its type, where it was created, and that reason.
"""

from __future__ import annotations

import os

import numpy as np

from . import _namespace
from . import dtypes as _dt
from .export import _check_feed_shape, _given_feed_shapes
from .graph import Operation, Tensor, get_default_session
from .ops.attr_types import check_attrs
from .passes.prune import prune
from .runtime_conv import output_size, resolve_pads
from .session import Session
from .train.atomic_files import atomic_write

__all__ = ["export_onnx", "OnnxExportError"]
__dir__ = _namespace.public_dir(globals())


class OnnxExportError(ValueError):
    """A graph that cannot be written as ONNX (an op with no ONNX form, a missing value...)."""


def _require_onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError("ONNX export needs the onnx package: "
                          "pip install 'staticgrad[onnx]'") from e
    return onnx


def export_onnx(fetches, feed_list, path, session: Session | None = None, feed_shapes=None,
                opset: int = 17) -> str:
    """Write the forward graph computing `fetches` from `feed_list` as an ONNX model; return
    the path written.

    `fetches`: a tensor or name, or a list of them (the model's outputs, in order).
    `feed_list`: the tensors (or names) fed, in the order of the model's inputs.
    `feed_shapes`: a shape per feed (a list aligned with `feed_list`, or a dict keyed by
    tensor or name) to use instead of its static shape; None dimensions stay symbolic.
    `session`: whose variable values to store (the default session if None). `opset`: the
    ONNX opset (13 or later). The file is written atomically and checked with
    `onnx.checker.check_model`.

    >>> staticgrad.onnx.export_onnx(y, [x], "model.onnx", session=sess)  # doctest: +SKIP
    >>> onnxruntime.InferenceSession("model.onnx").run(None, {"x": x_value})  # doctest: +SKIP
    """
    onnx = _require_onnx()
    if opset < 13:
        raise ValueError(f"opset {opset} is not supported; use 13 or later")
    session = session or get_default_session() or Session()
    graph = session.graph
    single = not isinstance(fetches, list | tuple)
    fetch_list = [fetches] if single else list(fetches)
    outputs = []
    for f in fetch_list:
        t = f if isinstance(f, Tensor) else graph.as_graph_element(f, allow_operation=False)
        if not isinstance(t, Tensor):
            raise TypeError(f"ONNX fetches must be tensors, got {f!r}")
        outputs.append(t)
    feeds = [session._feed_tensor(k) for k in (feed_list or ())]
    shapes = _feed_shapes(graph, feeds, feed_shapes)

    session._check_open("export_onnx")
    b = _Builder(onnx, session, opset)
    for t, shape in zip(feeds, shapes):
        b.add_input(t, shape)
    # an op with no rule whose values were all known when the graph was built (a linspace of
    # constants) needs no node: b.x stores its values as initializers where they are read
    ops = [op for op in prune(outputs, set(feeds))
           if op.type in RULES or not _known_when_built(op)]
    missing = [op for op in ops if op.type not in RULES]
    if missing:
        raise OnnxExportError("cannot export to ONNX: these ops have no ONNX form: "
                              + "; ".join(f"{op.where()} ({_why_not(op.type)})"
                                          for op in missing))
    for op in ops:
        try:  # attrs changed since the op was made are refused as at creation
            check_attrs(op.type, op.opdef.attrs, op.attrs)
        except (TypeError, ValueError) as e:
            raise OnnxExportError(f"cannot export {op.where()} to ONNX: {e}") from None
        RULES[op.type](b, op)
    for t in outputs:
        b.add_output(t)

    helper = onnx.helper
    model = helper.make_model(
        helper.make_graph(b.nodes, "staticgrad", b.inputs, b.outputs, b.initializers),
        opset_imports=[helper.make_opsetid("", opset)], producer_name="staticgrad")
    onnx.checker.check_model(model)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot export to {path!r}: folder {folder!r} does not exist")
    data = model.SerializeToString()
    atomic_write(os.path.abspath(path), lambda f: f.write(data))
    return os.path.abspath(path)


def _known_when_built(op: Operation) -> bool:
    return not op.opdef.stateful and all(t._static is not None for t in op.outputs)


def _why_not(op_type: str) -> str:
    """Why ops of `op_type` have no ONNX form, as an export error says it."""
    return NO_ONNX.get(op_type, "no ONNX rule has been written for this op type yet")


def _feed_shapes(graph, feeds, feed_shapes) -> list[list]:
    """Each feed's shape (None for an unknown dimension): given, or its static one."""
    shapes = []
    for t, shape in zip(feeds, _given_feed_shapes(graph, feeds, feed_shapes)):
        if shape is None:
            if t.shape.ndims is None:
                raise ValueError(f"cannot export feed {t.name} of unknown rank; pass "
                                 f"feed_shapes ({t.op.where()})")
            shape = t.shape.as_list()
        shape = [None if d is None else int(d) for d in shape]
        _check_feed_shape(t, shape)
        shapes.append(shape)
    return shapes


class _Builder:
    """The ONNX graph being built: nodes, inputs, outputs, initializers, and the ONNX name of
    each graph tensor."""

    def __init__(self, onnx, session, opset):
        self.onnx, self.session, self.opset = onnx, session, opset
        self.nodes, self.inputs, self.outputs, self.initializers = [], [], [], []
        self.names: dict[Tensor, str] = {}
        self.taken: set[str] = set()

    def elem_type(self, dtype) -> int:
        return self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype.np))

    def unique(self, name: str) -> str:
        out, i = name, 1
        while out in self.taken:
            out, i = f"{name}_{i}", i + 1
        self.taken.add(out)
        return out

    def add_input(self, t: Tensor, shape) -> None:
        name = self.unique(t.op.name if t.value_index == 0 else t.name)
        dims = [f"{name}_d{i}" if d is None else d for i, d in enumerate(shape)]
        self.inputs.append(self.onnx.helper.make_tensor_value_info(
            name, self.elem_type(t.dtype), dims))
        self.names[t] = name

    def add_output(self, t: Tensor) -> None:
        name = self.x(t)
        if name in {i.name for i in self.inputs} | {i.name for i in self.initializers} \
                or name in {o.name for o in self.outputs}:
            out = self.unique(f"{t.op.name}/output")
            self.node("Identity", [name], [out], out)
            name = out
        dims = None if t.shape.ndims is None else t.shape.as_list()
        self.outputs.append(self.onnx.helper.make_tensor_value_info(
            name, self.elem_type(t.dtype), dims))

    def const(self, name: str, value) -> str:
        """An initializer holding `value`; returns its name."""
        name = self.unique(name)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(value), name))
        return name

    def ints(self, name: str, values) -> str:
        """An int64 vector initializer (axes, shapes: what ONNX wants as int64 inputs)."""
        return self.const(name, np.asarray(values, dtype=np.int64).reshape(-1))

    def x(self, t: Tensor) -> str:
        """The ONNX name of graph tensor `t`; a value known when built becomes an initializer."""
        name = self.names.get(t)
        if name is None:
            value = t._static
            if value is None or t.op.opdef.stateful:
                raise OnnxExportError(f"cannot export to ONNX: no value for {t.name} "
                                      f"({t.op.where()})")
            name = self.names[t] = self.const(t.name, value)
        return name

    def y(self, op: Operation, i: int = 0) -> str:
        """The ONNX name of output i of `op` (the graph tensor's name)."""
        name = self.names[op.outputs[i]] = self.unique(op.outputs[i].name)
        return name

    def node(self, op_type: str, inputs, outputs, name: str, **attrs) -> None:
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), list(outputs),
                                                     name=name, **attrs))

    def tmp(self, op: Operation, what: str) -> str:
        """A helper value belonging to `op`, named `<op name>/<what>`."""
        return self.unique(f"{op.name}/{what}")

    def step(self, op: Operation, what: str, onnx_type: str, inputs, **attrs) -> str:
        """A helper node of `op` named `<op name>/<what>`; returns the name of its output."""
        out = self.tmp(op, what)
        self.node(onnx_type, inputs, [out], out, **attrs)
        return out

    def number(self, op: Operation, what: str, value, dtype=None) -> str:
        """A scalar initializer `<op name>/<what>` of NumPy `dtype` (op's output dtype if None)."""
        dtype = op.outputs[0].dtype.np if dtype is None else dtype
        return self.const(f"{op.name}/{what}", np.asarray(value, dtype))

    def shape_of(self, op: Operation, i: int) -> str:
        """The shape of input i of `op` as an int64 vector: a constant where it is fully known
        (then whatever computes the input may not be exported: the shape is all that is
        read), else a Shape node."""
        t = op.inputs[i]
        if t.shape.is_fully_defined():
            return self.ints(f"{op.name}/shape_{i}", t.shape.as_list())
        return self.step(op, f"shape_{i}", "Shape", [self.x(t)])

    def static(self, op: Operation, i: int, what: str):
        """Input i of `op`, which ONNX needs as a value known when exporting."""
        value = op.inputs[i]._static
        if value is None:
            raise OnnxExportError(f"cannot export to ONNX: {op.where()} needs {what} known when "
                                  "the graph is built")
        return np.asarray(value)


# -- the rules: one per op type, each adding the nodes that compute the op ------------------------
RULES: dict = {}


def _simple(onnx_type: str, **attrs):
    """An op that is one ONNX node with the same inputs."""
    def rule(b, op):
        b.node(onnx_type, [b.x(t) for t in op.inputs], [b.y(op)], op.name, **attrs)
    return rule


for _ours, _theirs in {
        "Add": "Add", "AddN": "Sum", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div",
        "Neg": "Neg", "Abs": "Abs", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Pow": "Pow",
        "Tanh": "Tanh", "Sigmoid": "Sigmoid", "Relu": "Relu", "Sign": "Sign", "Floor": "Floor",
        "Ceil": "Ceil", "Round": "Round", "Rint": "Round", "IsNan": "IsNaN", "IsInf": "IsInf",
        "Selu": "Selu", "Softsign": "Softsign",
        "Sin": "Sin", "Cos": "Cos", "Tan": "Tan", "Erf": "Erf", "Reciprocal": "Reciprocal",
        "Softplus": "Softplus", "Elu": "Elu", "Maximum": "Max", "Minimum": "Min", "Select": "Where",
        "Identity": "Identity", "StopGradient": "Identity", "PlaceholderWithDefault": "Identity",
        "Equal": "Equal", "Greater": "Greater", "GreaterEqual": "GreaterOrEqual",
        "Less": "Less", "LessEqual": "LessOrEqual", "LogicalAnd": "And", "LogicalOr": "Or",
        "LogicalNot": "Not"}.items():
    RULES[_ours] = _simple(_theirs)


def _clip(b, op):
    """ClipByValue as np.clip computes it, min(max(t, lo), hi): bounds may be tensors of t's
    shape, where ONNX's Clip takes only scalars."""
    t, lo, hi = (b.x(v) for v in op.inputs)
    low = b.tmp(op, "max")
    b.node("Max", [t, lo], [low], low)
    b.node("Min", [low, hi], [b.y(op)], op.name)


def _square(b, op):
    x = b.x(op.inputs[0])
    b.node("Mul", [x, x], [b.y(op)], op.name)


def _activation_grad(b, op):
    """ReluGrad(dy, y) = dy * (y > 0); TanhGrad(y, dy) = dy * (1 - y*y);
    SigmoidGrad(y, dy) = dy * (y * (1 - y)): in the order the generated code computes them."""
    dtype = op.outputs[0].dtype.np
    if op.type == "ReluGrad":
        dy, y = (b.x(v) for v in op.inputs)
        positive, mask = b.tmp(op, "positive"), b.tmp(op, "mask")
        b.node("Greater", [y, b.const(f"{op.name}/zero", np.zeros((), dtype))], [positive],
               positive)
        b.node("Cast", [positive], [mask], mask, to=b.elem_type(op.outputs[0].dtype))
        b.node("Mul", [dy, mask], [b.y(op)], op.name)
        return
    y, dy = (b.x(v) for v in op.inputs)
    one = b.const(f"{op.name}/one", np.ones((), dtype))
    factor = b.tmp(op, "factor")
    if op.type == "TanhGrad":
        square = b.tmp(op, "square")
        b.node("Mul", [y, y], [square], square)
        b.node("Sub", [one, square], [factor], factor)
    else:
        rest = b.tmp(op, "one_minus")
        b.node("Sub", [one, y], [rest], rest)
        b.node("Mul", [y, rest], [factor], factor)
    b.node("Mul", [dy, factor], [b.y(op)], op.name)


def _is_finite(b, op):
    """not (isnan(x) or isinf(x)): ONNX has no IsFinite."""
    x = b.x(op.inputs[0])
    nan, inf, either = b.tmp(op, "nan"), b.tmp(op, "inf"), b.tmp(op, "nan_or_inf")
    b.node("IsNaN", [x], [nan], nan)
    b.node("IsInf", [x], [inf], inf)
    b.node("Or", [nan, inf], [either], either)
    b.node("Not", [either], [b.y(op)], op.name)


def _erfc(b, op):
    """1 - Erf(x): ONNX has no Erfc (the tail, where erfc is tiny, keeps only absolute
    accuracy)."""
    erf = b.tmp(op, "erf")
    b.node("Erf", [b.x(op.inputs[0])], [erf], erf)
    one = b.const(f"{op.name}/one", np.ones((), op.outputs[0].dtype.np))
    b.node("Sub", [one, erf], [b.y(op)], op.name)


def _const(b, op):
    b.names[op.outputs[0]] = b.const(op.outputs[0].name, op.attrs["value"])


def _variable(b, op):
    if op.name not in b.session.variable_names():
        raise OnnxExportError(f"cannot export to ONNX: variable {op.name!r} has no value in the "
                              f"session; run its initializer first ({op.where()})")
    b.names[op.outputs[0]] = b.const(op.outputs[0].name, b.session.read_variable(op.name))


def _cast(b, op):
    b.node("Cast", [b.x(op.inputs[0])], [b.y(op)], op.name, to=b.elem_type(op.attrs["dtype"]))


def _swap_last(b, op, i):
    """Input i of a MatMul, transposed in its last two axes (a helper Transpose node)."""
    rank = op.inputs[i].shape.ndims
    if rank is None:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} transposes an input of "
                              "unknown rank")
    out = b.tmp(op, f"transpose_{'ab'[i]}")
    b.node("Transpose", [b.x(op.inputs[i])], [out], out,
           perm=[*range(rank - 2), rank - 1, rank - 2])
    return out


def _matmul(b, op):
    a = _swap_last(b, op, 0) if op.attrs["transpose_a"] else b.x(op.inputs[0])
    c = _swap_last(b, op, 1) if op.attrs["transpose_b"] else b.x(op.inputs[1])
    b.node("MatMul", [a, c], [b.y(op)], op.name)


def _reduce_node(b, op, onnx_type: str, x: str, out: str, name: str, axis, keepdims) -> None:
    """One ONNX reduction of x over `axis` (None: every axis; []: none, as in TF)."""
    axes = None if axis is None else [int(a) for a in np.reshape(axis, -1)]
    if axes == []:  # ONNX reads no axes as all of them
        b.node("Identity", [x], [out], name)
        return
    inputs, attrs = [x], {"keepdims": int(bool(keepdims))}
    if axes is not None:
        # ReduceSum takes its axes as an input from opset 13, the others from opset 18
        if b.opset >= (13 if onnx_type == "ReduceSum" else 18):
            inputs.append(b.ints(f"{op.name}/axes", axes))
        else:
            attrs["axes"] = axes
    b.node(onnx_type, inputs, [out], name, **attrs)


def _reduce(onnx_type: str):
    def rule(b, op):
        _reduce_node(b, op, onnx_type, b.x(op.inputs[0]), b.y(op), op.name, op.attrs["axis"],
                     op.attrs["keepdims"])
    return rule


def _any_all(b, op):
    """Any: a count of true elements above 0; All: a count of false ones equal to 0 (ONNX's
    ReduceMax and ReduceMin take booleans only from opset 20; a count is 0 where the axes are
    empty, as reduce_any's False and reduce_all's True want)."""
    x = b.x(op.inputs[0])
    if op.type == "All":
        x = b.step(op, "not", "Not", [x])
    ones = b.step(op, "ones", "Cast", [x], to=b.onnx.TensorProto.INT64)
    count = b.tmp(op, "count")
    _reduce_node(b, op, "ReduceSum", ones, count, count, op.attrs["axis"], op.attrs["keepdims"])
    b.node("Greater" if op.type == "Any" else "Equal",
           [count, b.number(op, "zero", 0, np.int64)], [b.y(op)], op.name)


def _arg(onnx_type: str):
    """ArgMax/ArgMin: ONNX's gives int64, the first index of a tie, as NumPy's does."""
    def rule(b, op):
        attrs = {"axis": int(op.attrs["axis"]), "keepdims": 0}
        if op.attrs["output_type"] is _dt.int64:
            b.node(onnx_type, [b.x(op.inputs[0])], [b.y(op)], op.name, **attrs)
            return
        index = b.step(op, "int64", onnx_type, [b.x(op.inputs[0])], **attrs)
        b.node("Cast", [index], [b.y(op)], op.name, to=b.elem_type(op.attrs["output_type"]))
    return rule


def _reshape(b, op):
    shape = b.static(op, 1, "the target shape").astype(np.int64).reshape(-1)
    attrs = {"allowzero": 1} if 0 in shape else {}
    b.node("Reshape", [b.x(op.inputs[0]), b.ints(f"{op.name}/shape", shape)], [b.y(op)],
           op.name, **attrs)


def _transpose(b, op):
    perm = op.attrs["perm"]
    attrs = {} if perm is None else {"perm": [int(p) for p in perm]}
    b.node("Transpose", [b.x(op.inputs[0])], [b.y(op)], op.name, **attrs)


def _softmax(onnx_type: str):
    def rule(b, op):
        b.node(onnx_type, [b.x(op.inputs[0])], [b.y(op)], op.name, axis=int(op.attrs["axis"]))
    return rule


def _broadcast_to(b, op):
    shape = b.static(op, 1, "the target shape")
    b.node("Expand", [b.x(op.inputs[0]), b.ints(f"{op.name}/shape", shape)], [b.y(op)], op.name)


def _concat(b, op):
    b.node("Concat", [b.x(t) for t in op.inputs], [b.y(op)], op.name,
           axis=int(op.attrs["axis"]))


def _expand_dims(b, op):
    axes = b.ints(f"{op.name}/axes", op.attrs["axis"])
    b.node("Unsqueeze", [b.x(op.inputs[0]), axes], [b.y(op)], op.name)


def _squeeze(b, op):
    inputs = [b.x(op.inputs[0])]
    if op.attrs["axis"] is not None:
        inputs.append(b.ints(f"{op.name}/axes", op.attrs["axis"]))
    b.node("Squeeze", inputs, [b.y(op)], op.name)


def _shape(b, op):
    b.node("Cast", [b.shape_of(op, 0)], [b.y(op)], op.name, to=b.elem_type(op.attrs["out_type"]))


def _like(fill: float):
    def rule(b, op):
        value = np.array([fill], dtype=op.outputs[0].dtype.np)
        b.node("ConstantOfShape", [b.shape_of(op, 0)], [b.y(op)], op.name,
               value=b.onnx.numpy_helper.from_array(value, "value"))
    return rule


# -- elementwise ops that take a few ONNX nodes ---------------------------------------------------
def _not_equal(b, op):
    equal = b.step(op, "equal", "Equal", [b.x(t) for t in op.inputs])
    b.node("Not", [equal], [b.y(op)], op.name)


def _rsqrt(b, op):
    root = b.step(op, "sqrt", "Sqrt", [b.x(op.inputs[0])])
    b.node("Reciprocal", [root], [b.y(op)], op.name)


def _relu6(b, op):
    b.node("Clip", [b.x(op.inputs[0]), b.number(op, "zero", 0), b.number(op, "six", 6)],
           [b.y(op)], op.name)


def _leaky_relu(b, op):
    b.node("LeakyRelu", [b.x(op.inputs[0])], [b.y(op)], op.name, alpha=float(op.attrs["alpha"]))


def _expm1(b, op):
    """Kahan's expm1 from exp and log (ONNX has no expm1, and exp(x) - 1 loses the digits of
    a small x): (u - 1) * x / log(u) with u = exp(x); x itself where u rounds to 1; u - 1
    where that is exact, at -1 (x very negative) or infinite."""
    x = b.x(op.inputs[0])
    one = b.number(op, "one", 1)
    u = b.step(op, "exp", "Exp", [x])
    u1 = b.step(op, "exp_minus_one", "Sub", [u, one])
    ratio = b.step(op, "ratio", "Div", [b.step(op, "mul", "Mul", [u1, x]),
                                         b.step(op, "log", "Log", [u])])
    exact = b.step(op, "exact", "Or", [b.step(op, "at_minus_one", "Equal",
                                              [u1, b.number(op, "minus_one", -1)]),
                                       b.step(op, "infinite", "IsInf", [u])])
    far = b.step(op, "far", "Where", [exact, u1, ratio])
    b.node("Where", [b.step(op, "at_one", "Equal", [u, one]), x, far], [b.y(op)], op.name)


def _log1p(b, op):
    """rt.log1p's steps (passes/expand.py writes the same ones): log(u) + (x - (w - 1)) / w
    with u = 1 + x and w = u clipped to [tiny, max]; the correction restores what rounding
    1 + x lost, so a small x is not lost (ONNX has no log1p)."""
    x = b.x(op.inputs[0])
    info = np.finfo(op.outputs[0].dtype.np)
    one = b.number(op, "one", 1)
    u = b.step(op, "u", "Add", [one, x])
    w = b.step(op, "w", "Clip", [u, b.number(op, "tiny", info.tiny), b.number(op, "max", info.max)])
    lost = b.step(op, "lost", "Sub", [x, b.step(op, "w1", "Sub", [w, one])])
    correction = b.step(op, "correction", "Div", [lost, w])
    b.node("Add", [b.step(op, "log", "Log", [u]), correction], [b.y(op)], op.name)


def _floor_div(b, op):
    """Floats: floor(x / y). Integers: (x - x mod y) / y, exact (ONNX's Div of integers rounds
    toward zero, floor division down). An integer division by zero, an error here, is not
    defined in ONNX."""
    x, y = (b.x(t) for t in op.inputs)
    if op.inputs[0].dtype.is_integer:
        multiple = b.step(op, "multiple", "Sub", [x, b.step(op, "mod", "Mod", [x, y], fmod=0)])
        b.node("Div", [multiple, y], [b.y(op)], op.name)
    else:
        b.node("Floor", [b.step(op, "quotient", "Div", [x, y])], [b.y(op)], op.name)


def _floor_mod(b, op):
    """x mod y with the sign of y, as NumPy's remainder. Integers: ONNX's Mod. Floats: ONNX's
    Mod is C's fmod (the sign of x); as NumPy does, y is added to a nonzero remainder whose
    sign is not y's."""
    x, y = (b.x(t) for t in op.inputs)
    if op.inputs[0].dtype.is_integer:
        b.node("Mod", [x, y], [b.y(op)], op.name, fmod=0)
        return
    zero = b.number(op, "zero", 0)
    r = b.step(op, "fmod", "Mod", [x, y], fmod=1)
    nonzero = b.step(op, "nonzero", "Not", [b.step(op, "is_zero", "Equal", [r, zero])])
    signs_differ = b.step(op, "signs_differ", "Xor", [b.step(op, "r_negative", "Less", [r, zero]),
                                                      b.step(op, "y_negative", "Less", [y, zero])])
    shift = b.step(op, "shift", "And", [nonzero, signs_differ])
    b.node("Where", [shift, b.step(op, "shifted", "Add", [r, y]), r], [b.y(op)], op.name)


# -- shapes, sequences, indexing, joining ---------------------------------------------------------
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


def _size(b, op):
    """The element count: a constant where the shape is known, else ONNX's Size."""
    t = op.inputs[0]
    if t.shape.is_fully_defined():
        count = b.number(op, "count", t.shape.num_elements(), np.int64)
    else:
        count = b.step(op, "count", "Size", [b.x(t)])
    b.node("Cast", [count], [b.y(op)], op.name, to=b.elem_type(op.attrs["out_type"]))


def _rank(b, op):
    rank = b.step(op, "rank", "Size", [b.shape_of(op, 0)])
    b.node("Cast", [rank], [b.y(op)], op.name, to=b.elem_type(_dt.int32))


def _fill(b, op):
    shape = b.static(op, 0, "the shape to fill")
    b.node("Expand", [b.x(op.inputs[1]), b.ints(f"{op.name}/shape", shape)], [b.y(op)], op.name)


def _eye(b, op):
    """The matrix itself, as an initializer."""
    value = np.eye(op.attrs["n"], op.attrs["m"], dtype=op.attrs["dtype"].np)
    b.names[op.outputs[0]] = b.const(op.outputs[0].name, value)


_RANGE_DTYPES = (_dt.float32, _dt.float64, _dt.int16, _dt.int32, _dt.int64)


def _range(b, op):
    """ONNX's Range, with start, limit and delta cast to the op's dtype as np.arange does."""
    dtype = op.attrs["dtype"]
    if dtype not in _RANGE_DTYPES:
        raise OnnxExportError(f"cannot export {op.where()} to ONNX: ONNX's Range takes no "
                              f"{dtype.name}")
    inputs = [b.x(t) if t.dtype is dtype else b.step(op, what, "Cast", [b.x(t)],
                                                     to=b.elem_type(dtype))
              for t, what in zip(op.inputs, ("start", "limit", "delta"))]
    b.node("Range", inputs, [b.y(op)], op.name)


def _sum_to(b, op):
    """A sum over the leading axes and those that are 1 in the target (summing an axis that
    is already 1 changes nothing), reshaped to the target: the adjoint of a broadcast."""
    target = [int(d) for d in b.static(op, 1, "the target shape").reshape(-1)]
    rank = op.inputs[0].shape.ndims
    if rank is None:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} sums a gradient of unknown "
                              "rank")
    lead = rank - len(target)
    axes = [*range(lead), *(lead + i for i, d in enumerate(target) if d == 1)]
    x = b.x(op.inputs[0])
    if axes:
        total = b.tmp(op, "sum")
        _reduce_node(b, op, "ReduceSum", x, total, total, axes, keepdims=True)
        x = total
    attrs = {"allowzero": 1} if 0 in target else {}
    b.node("Reshape", [x, b.ints(f"{op.name}/shape", target)], [b.y(op)], op.name, **attrs)


def _gather(b, op):
    b.node("Gather", [b.x(t) for t in op.inputs], [b.y(op)], op.name,
           axis=int(op.attrs["axis"]))


def _one_hot(b, op):
    """As rt.one_hot computes it: the indices (as int64) compared with 0..depth-1 along the new
    axis, then on_value or off_value. An index outside [0, depth) gives a row of off_value
    (ONNX's OneHot would count a negative index from the end)."""
    depth, axis = op.attrs["depth"], op.attrs["axis"]
    rank = op.inputs[0].shape.ndims
    if axis != -1 and rank is None:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} has indices of unknown rank")
    classes = np.arange(depth, dtype=np.int64).reshape((depth,) + (1,) * (
        0 if axis == -1 else rank - axis))
    indices = b.step(op, "int64", "Cast", [b.x(op.inputs[0])], to=b.onnx.TensorProto.INT64)
    indices = b.step(op, "expanded", "Unsqueeze", [indices, b.ints(f"{op.name}/axis", [axis])])
    hot = b.step(op, "hot", "Equal", [indices, b.const(f"{op.name}/classes", classes)])
    dtype = op.attrs["dtype"]
    # (ONNX Runtime's Where takes no booleans: it chooses uint8s, then cast)
    values = [b.number(op, what, op.attrs[f"{what}_value"], np.uint8 if dtype.is_bool else None)
              for what in ("on", "off")]
    if dtype.is_bool:
        chosen = b.step(op, "uint8", "Where", [hot, *values])
        b.node("Cast", [chosen], [b.y(op)], op.name, to=b.elem_type(dtype))
    else:
        b.node("Where", [hot, *values], [b.y(op)], op.name)


def _where(b, op):
    """np.argwhere: ONNX's NonZero gives the coordinates as [rank, n]; transposed."""
    coords = b.step(op, "nonzero", "NonZero", [b.x(op.inputs[0])])
    b.node("Transpose", [coords], [b.y(op)], op.name, perm=[1, 0])


def _slice(b, op):
    begin = b.static(op, 1, "begin").astype(np.int64).reshape(-1)
    size = b.static(op, 2, "size").astype(np.int64).reshape(-1)
    end = np.where(size == -1, _INT64_MAX, begin + size)
    b.node("Slice", [b.x(op.inputs[0]), b.ints(f"{op.name}/begin", begin),
                     b.ints(f"{op.name}/end", end), b.ints(f"{op.name}/axes", range(len(begin)))],
           [b.y(op)], op.name)


def _strided_slice(b, op):
    """`x[index]`: one Slice for the slices and integer indices, a Squeeze of the axes an
    integer removes, an Unsqueeze for each None (np.newaxis)."""
    spec = op.attrs["index"]
    consumed = sum(1 for s in spec if s is not None and s is not Ellipsis)
    rank = op.inputs[0].shape.ndims
    if Ellipsis in spec and rank is None:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} has '...' in its index and "
                              "an input of unknown rank")
    starts, ends, axes, steps_, removed, added = [], [], [], [], [], []
    axis = out = 0  # the input axis the next index reads, the output axis it makes
    for s in spec:
        if s is None:
            added.append(out)
            out += 1
        elif s is Ellipsis:
            axis += rank - consumed
            out += rank - consumed
        elif isinstance(s, int):
            starts.append(s)
            ends.append(_INT64_MAX if s == -1 else s + 1)
            axes.append(axis)
            steps_.append(1)
            removed.append(axis)
            axis += 1
        else:
            _, start, stop, step = s
            step = 1 if step is None else step
            if start is None:
                start = 0 if step > 0 else _INT64_MAX
            if stop is None:
                stop = _INT64_MAX if step > 0 else _INT64_MIN  # (ONNX clamps these)
            if (start, stop, step) != (0, _INT64_MAX, 1):
                starts.append(start)
                ends.append(stop)
                axes.append(axis)
                steps_.append(step)
            axis += 1
            out += 1
    steps = []
    if axes:
        steps.append(("slice", "Slice", [b.ints(f"{op.name}/{what}", values) for what, values in
                                         (("starts", starts), ("ends", ends), ("axes", axes),
                                          ("steps", steps_))]))
    if removed:
        steps.append(("squeeze", "Squeeze", [b.ints(f"{op.name}/removed", removed)]))
    if added:
        steps.append(("unsqueeze", "Unsqueeze", [b.ints(f"{op.name}/added", added)]))
    _chain(b, op, b.x(op.inputs[0]), steps)


def _chain(b, op, x: str, steps) -> None:
    """Nodes one after another from x, each step (what, ONNX type, more inputs) reading the
    previous one's output; the last writes op's output (an Identity if there are no steps)."""
    steps = steps or [("identity", "Identity", [])]
    for what, onnx_type, more in steps[:-1]:
        x = b.step(op, what, onnx_type, [x, *more])
    _, onnx_type, more = steps[-1]
    b.node(onnx_type, [x, *more], [b.y(op)], op.name)


def _pack(b, op):
    axis = int(op.attrs["axis"])
    new_axis = b.ints(f"{op.name}/axis", [axis])
    parts = [b.step(op, f"expanded_{i}", "Unsqueeze", [b.x(t), new_axis])
             for i, t in enumerate(op.inputs)]
    b.node("Concat", parts, [b.y(op)], op.name, axis=axis)


def _unpack(b, op):
    axis, num = int(op.attrs["axis"]), op.attrs["num"]
    squeezed = b.ints(f"{op.name}/axis", [axis])
    if num == 1:
        b.node("Squeeze", [b.x(op.inputs[0]), squeezed], [b.y(op)], op.name)
        return
    parts = [b.tmp(op, f"part_{i}") for i in range(num)]
    b.node("Split", [b.x(op.inputs[0]), b.ints(f"{op.name}/sizes", [1] * num)], parts, op.name,
           axis=axis)
    for i, part in enumerate(parts):
        b.node("Squeeze", [part, squeezed], [b.y(op, i)], f"{op.name}/squeeze_{i}")


def _split(b, op):
    axis = int(op.attrs["axis"])
    sizes = [None if t.shape.dims is None else t.shape.dims[axis] for t in op.outputs]
    if None in sizes:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} needs its sizes known when "
                              "the graph is built")
    x = b.x(op.inputs[0])
    if len(sizes) == 1:
        b.node("Identity", [x], [b.y(op)], op.name)
        return
    b.node("Split", [x, b.ints(f"{op.name}/sizes", sizes)],
           [b.y(op, i) for i in range(len(sizes))], op.name, axis=axis)


def _tile(b, op):
    b.node("Tile", [b.x(op.inputs[0]), b.ints(f"{op.name}/multiples", op.attrs["multiples"])],
           [b.y(op)], op.name)


_PAD_MODES = {"CONSTANT": "constant", "REFLECT": "reflect"}  # ONNX has no SYMMETRIC


def _pad(b, op):
    mode = op.attrs["mode"]
    if mode not in _PAD_MODES:
        raise OnnxExportError(f"cannot export {op.where()} to ONNX: ONNX's Pad has no {mode} "
                              "mode (it has CONSTANT and REFLECT)")
    pads = b.static(op, 1, "the paddings").astype(np.int64).reshape(-1, 2)
    inputs = [b.x(op.inputs[0]), b.ints(f"{op.name}/pads", [*pads[:, 0], *pads[:, 1]])]
    if mode == "CONSTANT":
        inputs.append(b.number(op, "value", op.attrs["constant_values"]))
    b.node("Pad", inputs, [b.y(op)], op.name, mode=_PAD_MODES[mode])


def _custom_gradient(b, op):
    """The identity on the function's outputs (its last n_out inputs): the custom gradient
    rule is no part of a forward model."""
    n = op.attrs["n_out"]
    for i, t in enumerate(op.inputs[-n:]):
        b.node("Identity", [b.x(t)], [b.y(op, i)], op.name if i == 0 else f"{op.name}/{i}")


# -- losses ---------------------------------------------------------------------------------------
def _softmax_xent(b, op):
    """-sum(labels * log_softmax(logits)) along the axis, as rt.softmax_xent."""
    labels, logits = (b.x(t) for t in op.inputs)
    axis = int(op.attrs["axis"])
    log_p = b.step(op, "log_softmax", "LogSoftmax", [logits], axis=axis)
    product = b.step(op, "mul", "Mul", [labels, log_p])
    total = b.tmp(op, "sum")
    _reduce_node(b, op, "ReduceSum", product, total, total, [axis], keepdims=False)
    b.node("Neg", [total], [b.y(op)], op.name)


def _sparse_softmax_xent(b, op):
    """-log_softmax(logits) at each label, as rt.sparse_softmax_xent."""
    labels, logits = (b.x(t) for t in op.inputs)
    log_p = b.step(op, "log_softmax", "LogSoftmax", [logits], axis=-1)
    last = b.ints(f"{op.name}/last_axis", [-1])
    index = b.step(op, "index", "Unsqueeze", [
        b.step(op, "int64", "Cast", [labels], to=b.onnx.TensorProto.INT64), last])
    picked = b.step(op, "picked", "GatherElements", [log_p, index], axis=-1)
    b.node("Neg", [b.step(op, "squeezed", "Squeeze", [picked, last])], [b.y(op)], op.name)


# -- convolution and pooling: NHWC here, NCHW in ONNX -------------------------------------------
def _window_attrs(op, k_hw, dilations=(1, 1)):
    """strides, dilations and pads (or auto_pad where the spatial sizes are unknown)."""
    in_hw = op.inputs[0].shape.as_list()[1:3] if op.inputs[0].shape.ndims == 4 else [None] * 2
    attrs = {"strides": list(op.attrs["strides"])}
    padding = op.attrs["padding"]
    if None in in_hw or None in k_hw:
        if not isinstance(padding, str):
            raise OnnxExportError(f"cannot export to ONNX: {op.where()} has explicit padding "
                                  "and unknown spatial sizes")
        # TF's SAME puts the odd pixel at the end, as ONNX's SAME_UPPER does
        attrs["auto_pad"] = "SAME_UPPER" if padding == "SAME" else "VALID"
    else:
        (top, bottom), (left, right) = resolve_pads(padding, in_hw, k_hw, op.attrs["strides"],
                                                    dilations)
        attrs["pads"] = [int(top), int(left), int(bottom), int(right)]
    return attrs


def _nchw(b, op, onnx_type, inputs, data=0, **attrs):
    """`onnx_type` on input `data` transposed to NCHW, its result transposed back to NHWC."""
    x = b.tmp(op, "nchw")
    b.node("Transpose", [b.x(op.inputs[data])], [x], x, perm=[0, 3, 1, 2])
    y = b.tmp(op, "nchw_out")
    b.node(onnx_type, [x, *inputs], [y], op.name, **attrs)
    b.node("Transpose", [y], [b.y(op)], f"{op.name}/nhwc", perm=[0, 2, 3, 1])


def _conv2d(b, op):
    w_hwio = op.inputs[1]
    w = b.tmp(op, "filter_oihw")
    b.node("Transpose", [b.x(w_hwio)], [w], w, perm=[3, 2, 0, 1])
    k_hw = w_hwio.shape.as_list()[0:2] if w_hwio.shape.ndims == 4 else [None] * 2
    dilations = op.attrs["dilations"]
    attrs = _window_attrs(op, k_hw, dilations)
    if None not in k_hw:
        attrs["kernel_shape"] = [int(k) for k in k_hw]
    _nchw(b, op, "Conv", [w], dilations=list(dilations), **attrs)


def _conv2d_backprop_input(b, op):
    """conv2d_transpose: ONNX's ConvTranspose, with the pads of the forward convolution from an
    input of the output's size, and the output_padding that gives back the rows and columns
    its stride skipped."""
    w_hwio = op.inputs[1]
    out_hw = op.outputs[0].shape.as_list()[1:3] if op.outputs[0].shape.ndims == 4 else [None] * 2
    k_hw = w_hwio.shape.as_list()[0:2] if w_hwio.shape.ndims == 4 else [None] * 2
    if None in out_hw or None in k_hw:
        raise OnnxExportError(f"cannot export to ONNX: {op.where()} needs its output's height "
                              "and width and its filter's size known when the graph is built")
    strides, dilations = op.attrs["strides"], op.attrs["dilations"]
    pads = resolve_pads(op.attrs["padding"], out_hw, k_hw, strides, dilations)
    extra = []
    for size, k, stride, dilation, (before, after) in zip(out_hw, k_hw, strides, dilations,
                                                          pads):
        n = output_size(size, k, stride, dilation, (before, after))  # out_backprop's size
        extra.append(size - (stride * (n - 1) + (k - 1) * dilation + 1 - before - after))
    w = b.step(op, "filter_oihw", "Transpose", [b.x(w_hwio)], perm=[3, 2, 0, 1])
    (top, bottom), (left, right) = pads
    _nchw(b, op, "ConvTranspose", [w], data=2, kernel_shape=[int(k) for k in k_hw],
          strides=list(strides), dilations=list(dilations),
          pads=[int(top), int(left), int(bottom), int(right)], output_padding=extra)


def _pool(onnx_type: str, **extra):
    def rule(b, op):
        k_hw = list(op.attrs["ksize"])
        _nchw(b, op, onnx_type, [], kernel_shape=k_hw, **_window_attrs(op, k_hw), **extra)
    return rule


RULES.update({
    "IsFinite": _is_finite, "Erfc": _erfc,
    "Square": _square, "ClipByValue": _clip, "Const": _const, "VariableV2": _variable,
    "Cast": _cast, "ReluGrad": _activation_grad, "TanhGrad": _activation_grad,
    "SigmoidGrad": _activation_grad,
    "MatMul": _matmul, "Sum": _reduce("ReduceSum"), "Mean": _reduce("ReduceMean"),
    "Max": _reduce("ReduceMax"), "Min": _reduce("ReduceMin"), "Prod": _reduce("ReduceProd"),
    "Reshape": _reshape, "Transpose": _transpose, "Softmax": _softmax("Softmax"),
    "LogSoftmax": _softmax("LogSoftmax"), "BroadcastTo": _broadcast_to, "ConcatV2": _concat,
    "ExpandDims": _expand_dims, "Squeeze": _squeeze, "Shape": _shape,
    "ZerosLike": _like(0), "OnesLike": _like(1),
    "Any": _any_all, "All": _any_all, "ArgMax": _arg("ArgMax"), "ArgMin": _arg("ArgMin"),
    "NotEqual": _not_equal, "Rsqrt": _rsqrt, "Relu6": _relu6, "LeakyRelu": _leaky_relu,
    "Expm1": _expm1, "Log1p": _log1p, "FloorDiv": _floor_div, "FloorMod": _floor_mod,
    "Size": _size, "Rank": _rank, "Fill": _fill, "Eye": _eye, "Range": _range,
    "SumTo": _sum_to, "GatherV2": _gather, "OneHot": _one_hot, "Where": _where,
    "Slice": _slice, "StridedSlice": _strided_slice, "Pack": _pack, "Unpack": _unpack,
    "Split": _split, "Tile": _tile, "Pad": _pad, "CustomGradient": _custom_gradient,
    "SoftmaxCrossEntropyWithLogits": _softmax_xent,
    "SparseSoftmaxCrossEntropyWithLogits": _sparse_softmax_xent,
    "Conv2D": _conv2d, "Conv2DBackpropInput": _conv2d_backprop_input, "MaxPool": _pool("MaxPool"),
    # TF's average leaves the padding out of the count
    "AvgPool": _pool("AveragePool", count_include_pad=0),
})


# -- op types with no ONNX form, each with the reason an export error gives -----------------------
# Every op type of the registry is in RULES or here (tests/test_onnx.py checks it), so an op added
# to the registry needs a decision: a rule, or a reason.
_GRADIENT_KERNEL = ("a gradient kernel with no ONNX operator; ONNX models are inference graphs: "
                    "export the forward graph")
_ASSIGNMENT = ("assigns a variable, and ONNX models are stateless inference graphs (a control "
               "dependency on an assignment also brings it in)")
_RANDOM = ("draws from the session's random generator, whose values ONNX Runtime's "
           "RandomNormal/RandomUniform cannot reproduce; feed the draws as an input instead")
NO_ONNX: dict[str, str] = {
    "Placeholder": "a placeholder is a model input only when it is in feed_list",
    "NoOp": ("computes nothing: groups and control dependencies have no ONNX form; fetch "
             "tensors, not operations"),
    "Transfer": ("moves a value between a plan's backends (passes/partition.py); only the "
                 "compiler makes one, no graph holds one"),
    "CheckNumerics": ("a run-time check that raises on NaN or Inf, and an ONNX graph cannot "
                      "raise; export the checked tensor itself"),
    "LinSpace": ("ONNX has no linspace; a linspace of values known when the graph is built "
                 "(at most 1024 of them) is stored as a constant"),
    "Assign": _ASSIGNMENT, "AssignAdd": _ASSIGNMENT, "AssignSub": _ASSIGNMENT,
    "RandomStandardNormal": _RANDOM, "RandomUniform": _RANDOM,
    "TruncatedNormal": _RANDOM + " (and ONNX has no truncated normal)",
    "Conv2DBackpropFilter": _GRADIENT_KERNEL, "MaxPoolGrad": _GRADIENT_KERNEL,
    "MaxPoolGradGrad": _GRADIENT_KERNEL, "AvgPoolGrad": _GRADIENT_KERNEL,
    "GatherGrad": _GRADIENT_KERNEL, "StridedSliceGrad": _GRADIENT_KERNEL,
}
