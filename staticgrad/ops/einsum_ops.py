"""TF1's `einsum`: sums of products named by subscripts, one op (Einsum) over NumPy's
einsum.

    sg.einsum("ij,jk->ik", a, b)            # matmul
    sg.einsum("bi,bi->b", x, y)             # a dot product per row
    sg.einsum("ij->j", x)                   # a sum over rows

The equation is letters, commas and one "->" (an implicit output, as NumPy's, when it has
none); each letter at most once in an operand (no diagonals) and no "...". The gradient for
each operand is another einsum, of the output's gradient with the other operands.
"""

from __future__ import annotations

from ..errors import here
from ..shapes import TensorShape
from .array_ops import broadcast_to, expand_dims, shape_of
from .attr_types import Equation
from .conversion import convert_to_tensor
from .creation import apply1
from .table import register


def _infer(ctx):
    terms, output = Equation.parse(ctx.attrs["equation"])
    if len(terms) != len(ctx.in_shapes):
        raise ValueError(f"the equation names {len(terms)} operands, it is given "
                         f"{len(ctx.in_shapes)}")
    if len({d.name for d in ctx.in_dtypes}) != 1:
        raise TypeError(f"the operands must have one dtype, got "
                        f"{[d.name for d in ctx.in_dtypes]}")
    sizes: dict = {}
    for term, shape in zip(terms, ctx.in_shapes):
        if shape.dims is None:
            continue
        if len(shape.dims) != len(term):
            raise ValueError(f"operand {term!r} has rank {len(term)}, its tensor has shape "
                             f"{shape}")
        for letter, d in zip(term, shape.dims):
            if d is not None and sizes.setdefault(letter, d) != d:
                raise ValueError(f"letter {letter!r} stands for sizes {sizes[letter]} and {d}")
    return [(TensorShape([sizes.get(c) for c in output]), ctx.in_dtypes[0])]


def _grad(op, g):
    terms, output = Equation.parse(op.attrs["equation"])
    grads = []
    for k, (term, x) in enumerate(zip(terms, op.inputs)):
        others = [(t, v) for j, (t, v) in enumerate(zip(terms, op.inputs)) if j != k]
        seen = set(output).union(*[set(t) for t, _ in others])
        kept = "".join(c for c in term if c in seen)  # (the letters summed only here: spread)
        subscripts = ",".join([output, *[t for t, _ in others]]) + "->" + kept
        d = einsum(subscripts, g, *[v for _, v in others])
        if kept != term:
            for axis, c in enumerate(term):
                if c not in seen:
                    d = expand_dims(d, axis)
            d = broadcast_to(d, shape_of(x))
        grads.append(d)
    return grads


register("Einsum", _infer, lambda a, ctx: f"np.einsum({ctx.lit('equation')}, {', '.join(a)})",
         _grad, saves=("x*",), attrs={"equation": Equation()}, arity=(1, None), new_array=True,
         doc="the sums of products its equation names (NumPy's einsum)")


def einsum(equation, *inputs, **kwargs):
    """Sums of products named by subscripts: einsum("ij,jk->ik", a, b) (see the module)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected arguments {sorted(kwargs)}")
    try:
        equation = Equation().check(equation)
    except ValueError as e:
        raise ValueError(f"einsum {here()}: {e}") from None
    tensors = [convert_to_tensor(x) for x in inputs]
    return apply1("Einsum", tensors, {"equation": equation}, name=name or "Einsum")
