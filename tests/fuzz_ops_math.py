"""The fuzzing generator's math op families: elementwise unary and binary ops, comparisons
and logic, select, clip, add_n, matmul, reductions, softmax and cross-entropy, casts.

Each family draws what it needs from the pool and adds one node (plus any guards), or returns
False when the pool has nothing it can take (the step then falls back to a unary op).
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from tests.fuzz_ops_array import reshape_to
from tests.fuzz_spec import (
    INTS,
    LIMIT,
    MAX_ELEMENTS,
    Pool,
    Val,
    axis_arg,
    broadcast_shape,
    cast,
    fits,
    lit,
    monotone_range,
)


def _elu(t):
    return t if t > 0 else math.expm1(t)


# name: (expr, kinds, needs, interval, exact-preserving)
#   needs: "" any, "exact" exact input, "pos" >= 0.25, "small" |x| <= 2, "unit" |x| <= 1
UNARY = {
    "Neg": ("-{x}", "fi", "", lambda lo, hi: (-hi, -lo), True),
    "Abs": ("sg.abs({x})", "fi", "", lambda lo, hi: monotone_range(abs, lo, hi, (0,)), True),
    "Square": ("sg.square({x})", "fi", "", lambda lo, hi: monotone_range(lambda t: t * t, lo, hi,
                                                                      (0,)), False),
    "Relu": ("sg.nn.relu({x})", "fi", "", lambda lo, hi: (max(lo, 0), max(hi, 0)), True),
    "Sin": ("sg.sin({x})", "f", "", lambda lo, hi: (-1, 1), False),
    "Cos": ("sg.cos({x})", "f", "", lambda lo, hi: (-1, 1), False),
    "Tanh": ("sg.tanh({x})", "f", "", lambda lo, hi: (math.tanh(lo), math.tanh(hi)), False),
    "Sigmoid": ("sg.sigmoid({x})", "f", "", lambda lo, hi: (0, 1), False),
    "Softplus": ("sg.nn.softplus({x})", "f", "",
                 lambda lo, hi: (0, max(hi, 0) + 0.7), False),
    "Erf": ("sg.erf({x})", "f", "", lambda lo, hi: (math.erf(lo), math.erf(hi)), False),
    "Relu6": ("sg.nn.relu6({x})", "fi", "", lambda lo, hi: (min(max(lo, 0), 6),
                                                          min(max(hi, 0), 6)), True),
    "Elu": ("sg.nn.elu({x})", "f", "", lambda lo, hi: (_elu(lo), _elu(hi)), False),
    "LeakyRelu": ("sg.nn.leaky_relu({x}, alpha=0.25)", "f", "",
                  lambda lo, hi: (min(lo, lo * 0.25), max(hi, hi * 0.25)), True),
    "Identity": ("sg.identity({x})", "fib", "", lambda lo, hi: (lo, hi), True),
    "StopGradient": ("sg.stop_gradient({x})", "fi", "", lambda lo, hi: (lo, hi), True),
    "Floor": ("sg.floor({x})", "f", "exact", lambda lo, hi: (math.floor(lo), math.floor(hi)),
              True),
    "Sign": ("sg.sign({x})", "fi", "exact", lambda lo, hi: (-1, 1), True),
    "Exp": ("sg.exp({x})", "f", "small", lambda lo, hi: (math.exp(lo), math.exp(hi)), False),
    "Expm1": ("sg.expm1({x})", "f", "small", lambda lo, hi: (math.expm1(lo), math.expm1(hi)),
              False),
    "Tan": ("sg.tan({x})", "f", "unit", lambda lo, hi: (math.tan(lo), math.tan(hi)), False),
    "Sqrt": ("sg.sqrt({x})", "f", "pos", lambda lo, hi: (math.sqrt(lo), math.sqrt(hi)), False),
    "Rsqrt": ("sg.rsqrt({x})", "f", "pos", lambda lo, hi: (hi ** -0.5, lo ** -0.5), False),
    "Reciprocal": ("sg.reciprocal({x})", "f", "pos", lambda lo, hi: (1 / hi, 1 / lo), False),
    "Log": ("sg.log({x})", "f", "pos", lambda lo, hi: (math.log(lo), math.log(hi)), False),
    "Log1p": ("sg.log1p({x})", "f", "pos", lambda lo, hi: (math.log1p(lo), math.log1p(hi)),
              False),
}


def unary(pool: Pool, op=None) -> bool:
    op = op or pool.choice(list(UNARY))
    expr, kinds, needs, interval, keeps_exact = UNARY[op]
    x = pool.pick(lambda v: v.kind in kinds and (needs != "exact" or v.exact))
    if x is None:
        return False
    if needs == "pos":
        x = pool.positive(x)
    elif needs == "small":
        x = pool.squash(x, 2.0)
    elif needs == "unit":
        x = pool.squash(x, 1.0)
    elif x.kind == "f" and op not in ("Neg", "Abs", "Relu", "Relu6", "Identity",
                                      "StopGradient", "Floor", "Sign", "LeakyRelu"):
        x = pool.squash(x, 30.0 if op != "Square" else math.sqrt(LIMIT))
    elif x.kind == "i" and op == "Square":
        x = pool.squash(x, 30.0)
    lo, hi = interval(x.lo, x.hi)
    pool.add(expr.format(x=x.name), x.shape, x.dtype, lo, hi, keeps_exact and x.exact, [x], op)
    return True


BINARY = ["Add", "Sub", "Mul", "Maximum", "Minimum", "RealDiv", "Pow", "FloorMod", "FloorDiv",
          "SquaredDifference"]


def _mul_interval(a, b):
    ps = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return min(ps), max(ps)


def binary(pool: Pool) -> bool:
    op = pool.choice(BINARY)
    if op in ("RealDiv", "Pow"):
        x = pool.pick(lambda v: v.kind == "f")
    elif op == "FloorMod":
        x = pool.pick(lambda v: v.kind == "i" or (v.kind == "f" and v.exact))
    elif op == "FloorDiv":
        x = pool.pick(lambda v: v.kind == "i")
    else:
        x = pool.pick(lambda v: v.kind in "fi")
    if x is None:
        return False
    if op == "Pow":
        x = pool.positive(x, upper=4.0)
    scalar = pool.draw(st.integers(0, 3)) == 0
    if scalar:
        if op == "RealDiv":
            c = pool.choice([0.75, 2.0, 3.0, -1.5])
        elif op in ("FloorDiv", "FloorMod"):
            c = pool.choice([2, 3] if x.kind == "i" else [0.75, 2.0, 3.0])
        elif op == "Pow":
            c = pool.choice([2.0, 0.5, -1.5, 3.0])
        else:
            c = pool.choice([1.5, -0.5, 2.0] if x.kind == "f" else [2, -1, 3])
        y = None
        ylo = yhi = c
    else:
        need_exact = op == "FloorMod" and x.kind == "f"
        y = pool.partner(x, pred=lambda u: u.exact or not need_exact)
        if op in ("RealDiv", "FloorDiv", "FloorMod"):
            y = pool.positive(y, exact=need_exact)
        elif op == "Pow":
            y = pool.squash(y, 2.0)
        ylo, yhi = y.lo, y.hi
        shape = broadcast_shape(x.shape, y.shape)
    # keep the result within the limits: squash the inputs first when needed
    if op in ("Mul", "SquaredDifference") and x.bound * max(abs(ylo), abs(yhi)) > LIMIT / 4:
        x = pool.squash(x, 8.0)
        if y is not None:
            y = pool.squash(y, 8.0)
            ylo, yhi = y.lo, y.hi
    yname = lit(ylo) if y is None else y.name
    shape = x.shape if y is None else broadcast_shape(x.shape, y.shape)
    xi, yi = (x.lo, x.hi), (ylo, yhi)
    exact = x.exact and (y is None or y.exact)
    if op == "Add":
        lo, hi, text = xi[0] + yi[0], xi[1] + yi[1], f"{x.name} + {yname}"
    elif op == "Sub":
        lo, hi, text = xi[0] - yi[1], xi[1] - yi[0], f"{x.name} - {yname}"
    elif op == "Mul":
        (lo, hi), text = _mul_interval(xi, yi), f"{x.name} * {yname}"
    elif op == "Maximum":
        lo, hi, text = max(xi[0], yi[0]), max(xi[1], yi[1]), f"sg.maximum({x.name}, {yname})"
    elif op == "Minimum":
        lo, hi, text = min(xi[0], yi[0]), min(xi[1], yi[1]), f"sg.minimum({x.name}, {yname})"
    elif op == "RealDiv":
        q = _mul_interval(xi, (1 / yi[1], 1 / yi[0]))
        (lo, hi), text, exact = q, f"{x.name} / {yname}", False
    elif op == "Pow":
        corners = [a ** b for a in xi for b in yi]
        lo, hi, text, exact = min(corners), max(corners), f"{x.name} ** {yname}", False
    elif op == "FloorMod":
        lo, hi, text = 0, yi[1], f"sg.floormod({x.name}, {yname})"
    elif op == "FloorDiv":
        b = x.bound
        lo, hi, text = -b, b, f"sg.floordiv({x.name}, {yname})"
    else:
        d = x.bound + max(abs(ylo), abs(yhi))
        lo, hi, text, exact = 0, d * d, f"sg.squared_difference({x.name}, {yname})", False
    if max(abs(lo), abs(hi)) > LIMIT:
        return False
    pool.add(text, shape, x.dtype, lo, hi, exact, [x] + ([y] if y is not None else []), op)
    return True


COMPARISONS = {"Equal": "sg.equal", "NotEqual": "sg.not_equal", "Less": "{x} < {y}",
               "LessEqual": "{x} <= {y}", "Greater": "{x} > {y}",
               "GreaterEqual": "sg.greater_equal"}


def compare(pool: Pool) -> bool:
    op = pool.choice(list(COMPARISONS))
    x = pool.pick(lambda v: v.exact and v.kind in "fi")
    if x is None:
        return False
    if pool.draw(st.integers(0, 2)) == 0:
        mid = (x.lo + x.hi) / 2
        y, yname = None, lit(round(mid) if x.kind == "i" else round(mid, 2) + 0.125)
        shape = x.shape
    else:
        y = pool.partner(x, pred=lambda u: u.exact)
        yname, shape = y.name, broadcast_shape(x.shape, y.shape)
    form = COMPARISONS[op]
    text = form.format(x=x.name, y=yname) if "{" in form else f"{form}({x.name}, {yname})"
    pool.add(text, shape, "bool", 0, 1, True, [x] + ([y] if y else []), op)
    return True


def _bool_value(pool: Pool, like: Val | None = None) -> Val:
    """A boolean value (broadcasting with `like`): from the pool, or a new comparison."""
    v = pool.pick(lambda u: u.kind == "b" and (like is None or fits(u.shape, like.shape)))
    if v is not None:
        return v
    before = len(pool.nodes)
    if not compare(pool) or (like is not None and not fits(pool.nodes[-1].shape, like.shape)):
        shape = like.shape if like is not None else pool.shape()
        return pool.leaf(shape, "bool")
    assert len(pool.nodes) > before
    return pool.nodes[-1]


def logical(pool: Pool) -> bool:
    op = pool.choice(["LogicalAnd", "LogicalOr", "LogicalNot"])
    x = _bool_value(pool)
    if op == "LogicalNot":
        pool.add(f"sg.logical_not({x.name})", x.shape, "bool", 0, 1, True, [x], op)
        return True
    y = _bool_value(pool, like=x)
    fn = "sg.logical_and" if op == "LogicalAnd" else "sg.logical_or"
    pool.add(f"{fn}({x.name}, {y.name})", broadcast_shape(x.shape, y.shape), "bool", 0, 1, True,
             [x, y], op)
    return True


def select(pool: Pool) -> bool:
    x = pool.pick(lambda v: v.kind in "fi")
    if x is None:
        return False
    y = pool.partner(x)
    xy = broadcast_shape(x.shape, y.shape)
    cond = _bool_value(pool, like=Val("", None, xy, "bool", 0, 1, True, True, ""))
    shape = broadcast_shape(cond.shape, xy)
    pool.add(f"sg.where({cond.name}, {x.name}, {y.name})", shape, x.dtype, min(x.lo, y.lo),
             max(x.hi, y.hi), x.exact and y.exact, [cond, x, y], "Select")
    return True


def clip(pool: Pool) -> bool:
    x = pool.pick(lambda v: v.kind in "fi")
    if x is None:
        return False
    if x.kind == "f":
        lo, hi = pool.choice([(-0.5, 0.5), (0.0, 1.25), (-1.75, -0.25)])
    else:
        lo, hi = pool.choice([(-1, 2), (0, 3)])
    if pool.flag():  # sg.clip_by_value: Maximum then Minimum
        text, op = f"sg.clip_by_value({x.name}, {lit(lo)}, {lit(hi)})", "clip_by_value"
    else:  # the ClipByValue op itself, with scalar tensor bounds
        text = (f"apply1('ClipByValue', [{x.name}, sg.constant({lo!r}, dtype=sg.{x.dtype}), "
                f"sg.constant({hi!r}, dtype=sg.{x.dtype})])")
        op = "ClipByValue"
    pool.add(text, x.shape, x.dtype, min(max(x.lo, lo), hi), max(min(x.hi, hi), lo), x.exact,
             [x], op)
    return True


def add_n(pool: Pool) -> bool:
    x = pool.pick(lambda v: v.kind in "fi")
    if x is None:
        return False
    x = pool.squash(x, LIMIT / 4)
    parts = [x]
    for _ in range(pool.draw(st.integers(1, 3))):
        y = pool.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape and
                      v.bound <= LIMIT / 4)
        parts.append(y if y is not None and pool.flag() else
                     pool.leaf(x.shape, x.dtype) if pool.flag() else x)
    lo, hi = sum(p.lo for p in parts), sum(p.hi for p in parts)
    pool.add(f"sg.add_n([{', '.join(p.name for p in parts)}])", x.shape, x.dtype, lo, hi,
             all(p.exact for p in parts), parts, "AddN")
    return True


def matmul(pool: Pool) -> bool:
    a = pool.pick(lambda v: v.kind == "f" and len(v.shape) >= 2)
    if a is None:
        a = pool.pick(lambda v: v.kind == "f" and len(v.shape) == 1)
        if a is None:
            return False
        a = reshape_to(pool, a, (a.shape[0], 1) if pool.flag() else (1, a.shape[0]))
    ta, tb = pool.flag(), pool.flag()
    m, k = (a.shape[-1], a.shape[-2]) if ta else (a.shape[-2], a.shape[-1])
    batch = a.shape[:-2]
    n = pool.draw(st.integers(1, 4))
    while n > 1 and math.prod((*batch, m, n)) > MAX_ELEMENTS:
        n -= 1
    bbatch = batch[len(batch) - pool.draw(st.integers(0, len(batch))):]
    bbatch = tuple(d if pool.flag() else 1 for d in bbatch)
    bshape = (*bbatch, n, k) if tb else (*bbatch, k, n)
    out = (*broadcast_shape(batch, bbatch), m, n)
    if math.prod(out) > MAX_ELEMENTS or math.prod(bshape) > MAX_ELEMENTS:
        return False
    b = pool.pick(lambda v: v.dtype == a.dtype and v.shape == bshape)
    if b is None or pool.draw(st.integers(0, 2)) == 0:
        b = pool.leaf(bshape, a.dtype)
    a, b = pool.squash(a, 20.0), pool.squash(b, 20.0)
    bound = k * a.bound * b.bound
    flags = "".join([", transpose_a=True" if ta else "", ", transpose_b=True" if tb else ""])
    pool.add(f"sg.matmul({a.name}, {b.name}{flags})", out, a.dtype, -bound, bound, False,
             [a, b], "MatMul")
    return True


REDUCTIONS = {"Sum": "reduce_sum", "Mean": "reduce_mean", "Max": "reduce_max",
              "Min": "reduce_min", "Prod": "reduce_prod", "All": "reduce_all",
              "Any": "reduce_any", "ArgMax": "argmax", "ArgMin": "argmin"}


def reduce(pool: Pool) -> bool:
    op = pool.choice(list(REDUCTIONS))
    if op in ("All", "Any"):
        x = _bool_value(pool)
    elif op in ("ArgMax", "ArgMin"):
        x = pool.pick(lambda v: v.exact and v.kind in "fi" and len(v.shape) >= 1)
    else:
        x = pool.pick(lambda v: v.kind in "fi")
    if x is None:
        return False
    rank = len(x.shape)
    fn = f"sg.{REDUCTIONS[op]}"
    if op in ("ArgMax", "ArgMin"):
        axis = pool.draw(st.integers(-rank, rank - 1))
        out_type = pool.choice(["int64", "int32"])
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis % rank)
        pool.add(f"{fn}({x.name}, axis={axis}, output_type=sg.{out_type})", shape, out_type, 0,
                 x.shape[axis] - 1, True, [x], op)
        return True
    text, axes = axis_arg(pool, rank)
    keep = pool.flag()
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keep else \
        tuple(d for i, d in enumerate(x.shape) if i not in axes)
    count = math.prod(x.shape[i] for i in axes)
    if op == "Prod":
        x = pool.squash(x, 2.0) if x.kind == "f" else x
        if x.bound ** count > LIMIT:
            return False
        b = x.bound ** count
        lo, hi = (-b, b) if x.lo < 0 else (x.lo ** count, x.hi ** count)
    elif op == "Sum":
        if count * x.bound > LIMIT:
            x = pool.squash(x, LIMIT / count)
        lo, hi = count * x.lo, count * x.hi
    else:
        lo, hi = x.lo, x.hi
    exact = x.exact and op in ("Max", "Min", "All", "Any")
    keep_text = ", keepdims=True" if keep else ""
    pool.add(f"{fn}({x.name}, axis={text}{keep_text})", shape,
             x.dtype if op != "Mean" or x.kind == "f" else x.dtype, lo, hi, exact, [x], op)
    return True



def softmax(pool: Pool) -> bool:
    x = pool.pick(lambda v: v.kind == "f" and len(v.shape) >= 1)
    if x is None:
        return False
    x = pool.squash(x, 30.0)
    rank = len(x.shape)
    axis = -1 if pool.flag() else pool.draw(st.integers(-rank, rank - 1))
    text = "" if axis == -1 else f", axis={axis}"
    if pool.flag():
        pool.add(f"sg.nn.softmax({x.name}{text})", x.shape, x.dtype, 0, 1, False, [x],
                 "Softmax")
    else:
        n = x.shape[axis]
        lo = -(x.hi - x.lo) - math.log(n) - 1e-9
        pool.add(f"sg.nn.log_softmax({x.name}{text})", x.shape, x.dtype, lo, 0, False, [x],
                 "LogSoftmax")
    return True


def cross_entropy(pool: Pool) -> bool:
    logits = pool.pick(lambda v: v.kind == "f" and len(v.shape) >= 1)
    if logits is None:
        return False
    logits = pool.squash(logits, 30.0)
    n = logits.shape[-1]
    shape = logits.shape[:-1]
    if pool.flag() and logits.static:  # (the number of classes must be known)
        idx = pool.index_into(pool.int_value(shape), n)
        pool.add(f"sg.nn.sparse_softmax_cross_entropy_with_logits(labels={idx.name}, "
                 f"logits={logits.name})", shape, logits.dtype, 0, 2 * logits.bound +
                 math.log(n) + 1, False, [idx, logits], "SparseSoftmaxCrossEntropyWithLogits")
        return True
    # labels: a distribution along the last axis, as TF1 requires (its gradient w.r.t. the
    # logits, softmax - labels, holds only where each row of labels sums to 1)
    src = pool.pick(lambda v: v.dtype == logits.dtype and v.shape == logits.shape)
    src = pool.squash(src, 30.0)
    labels = pool.add(f"sg.nn.softmax({src.name})", src.shape, src.dtype, 0, 1, False, [src],
                      "Softmax")
    hi = labels.hi * n * (2 * logits.bound + math.log(n) + 1)
    pool.add(f"sg.nn.softmax_cross_entropy_with_logits_v2(labels={labels.name}, "
             f"logits={logits.name})", shape, logits.dtype, 0, hi, False, [labels, logits],
             "SoftmaxCrossEntropyWithLogits")
    return True


def cast_op(pool: Pool) -> bool:
    style = pool.choice(["to_float", "to_int", "float_width"])
    if style == "to_float":
        x = pool.pick(lambda v: v.kind in "ib")
        if x is None:
            return False
        cast(pool, x, pool.fdtype)
    elif style == "to_int":
        x = pool.pick(lambda v: v.kind == "f" and v.exact)
        if x is None:
            return False
        cast(pool, x, pool.choice(INTS))
    else:
        # a float32 graph may compute a part in float64 (and back); a float64 graph never
        # rounds to float32, so that its gradients stay smooth at finite-difference steps
        if pool.fdtype != "float32":
            return False
        x = pool.pick(lambda v: v.kind == "f")
        cast(pool, x, "float64" if x.dtype == "float32" else "float32")
    return True


def conv_pool(pool: Pool) -> bool:
    """conv2d, max_pool or avg_pool on an NHWC value (a rank-4 one, or one reshaped to
    [1, h, w, c]), with 'SAME' or 'VALID' padding and strides 1 or 2."""
    x = pool.pick(lambda v: v.kind == "f" and len(v.shape) == 4)
    if x is None:
        x = pool.pick(lambda v: v.kind == "f")
        n = x.size
        h = pool.choice([d for d in range(1, n + 1) if n % d == 0])
        w = pool.choice([d for d in range(1, n // h + 1) if (n // h) % d == 0])
        x = reshape_to(pool, x, (1, h, w, n // (h * w)))
    batch, h, w, c = x.shape
    op = pool.choice(["Conv2D", "MaxPool", "AvgPool"])
    kh, kw = pool.draw(st.integers(1, 3)), pool.draw(st.integers(1, 3))
    sh, sw = pool.draw(st.integers(1, 2)), pool.draw(st.integers(1, 2))
    padding = pool.choice(["SAME", "VALID"])
    if padding == "VALID" and (kh > h or kw > w):
        padding = "SAME"
    if padding == "SAME":
        oh, ow = -(-h // sh), -(-w // sw)
    else:
        oh, ow = -(-(h - kh + 1) // sh), -(-(w - kw + 1) // sw)
    strides = f"[1, {sh}, {sw}, 1]"
    if op == "Conv2D":
        cout = pool.draw(st.integers(1, 3))
        if batch * oh * ow * cout > MAX_ELEMENTS or kh * kw * c * cout > MAX_ELEMENTS:
            return False
        x = pool.squash(x, 4.0)
        kernel = pool.pick(lambda v: v.dtype == x.dtype and v.shape == (kh, kw, c, cout))
        if kernel is None or pool.flag():
            kernel = pool.leaf((kh, kw, c, cout), x.dtype)
        kernel = pool.squash(kernel, 4.0)
        bound = kh * kw * c * x.bound * kernel.bound
        pool.add(f"sg.nn.conv2d({x.name}, {kernel.name}, {strides}, {padding!r})",
                 (batch, oh, ow, cout), x.dtype, -bound, bound, False, [x, kernel], op)
        return True
    if batch * oh * ow * c > MAX_ELEMENTS:
        return False
    fn = "sg.nn.max_pool" if op == "MaxPool" else "sg.nn.avg_pool"
    pool.add(f"{fn}({x.name}, [1, {kh}, {kw}, 1], {strides}, {padding!r})", (batch, oh, ow, c),
             x.dtype, x.lo, x.hi, x.exact and op == "MaxPool", [x], op)
    return True
