"""Graph inputs and state: placeholders, constants, variables, assignments, no-ops, random draws.

These ops are rendered with the session's state in scope: `V` maps variable names to their
current values and `R` maps random ops to their NumPy generators. A variable is read where
each consumer runs (`V['w']`), so a read ordered after an assignment sees the new value.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import dtypes as _dt
from ..errors import here
from ..graph import Tensor, _graph_element, get_default_graph
from ..shapes import TensorShape, as_shape
from .array_ops import _known, _shape_arg, shape_from_vector
from .attr_types import Array, Bool, DType, Int, Name, Number, Optional, Shape, Tuple
from .conversion import convert_to_tensor
from .creation import apply1
from .table import register

_SEED = Optional(Int(-(1 << 63), (1 << 64) - 1))


class Store(NamedTuple):
    """An emitter's result for ops that write session state: `target = out = value`."""

    target: str
    value: str
    reads_target: bool = False  # the value reads the old state (assign_add), not only writes
    in_place: str = ""  # the value computed into the target's own array, where the memory
    #                     plan allows it (backends/numpy/memory.py)


def _attr_infer(ctx):
    return [(ctx.attrs["shape"], ctx.attrs["dtype"])]


def _const_infer(ctx):
    value, dtype = ctx.attrs["value"], ctx.attrs["dtype"]
    if value.dtype != dtype.np:
        raise TypeError(f"the value has dtype {value.dtype}, the dtype attribute says "
                        f"{dtype.name}")
    shape = _CONST_SHAPES.get(value.shape)
    if shape is None:
        shape = _CONST_SHAPES[value.shape] = TensorShape(value.shape)
        if len(_CONST_SHAPES) > 1024:
            _CONST_SHAPES.clear()
    return [(shape, dtype)]


# dims -> one TensorShape for the constants of those dims (shapes are never changed once made)
_CONST_SHAPES: dict = {}

register("Placeholder", _attr_infer, None, differentiable=False, computes=False,
         attrs={"dtype": DType(), "shape": Shape()}, arity=0)
register("Const", _const_infer, None, differentiable=False, computes=False,
         attrs={"value": Array(), "dtype": DType()}, arity=0)


def _default_infer(ctx):
    shape = ctx.attrs["shape"]
    if not shape.is_compatible_with(ctx.in_shapes[0]):
        raise ValueError(f"default value of shape {ctx.in_shapes[0]} does not match the "
                         f"placeholder shape {shape}")
    return [(shape, ctx.in_dtypes[0])]


register("PlaceholderWithDefault", _default_infer, "{0}", lambda op, g: [g], saves=(), view=True,
         attrs={"shape": Shape()}, arity=1)


def placeholder(dtype, shape=None, name=None):
    """A graph input that must be fed at run time; `None` dims (or shape=None) are unknown.

    >>> x = placeholder(float32, [None, 3], name="x")  # doctest: +SKIP
    """
    attrs = {"dtype": _dt.as_dtype(dtype),
             "shape": as_shape(shape, what=f"placeholder {name!r}" if name else "placeholder")}
    return apply1("Placeholder", [], attrs, name=name or "Placeholder",
                  graph=get_default_graph())


def placeholder_with_default(input, shape, name=None):  # noqa: A002
    """A placeholder that takes the value of `input` when it is not fed."""
    t = convert_to_tensor(input)
    what = f"placeholder_with_default {name!r}" if name else "placeholder_with_default"
    return apply1("PlaceholderWithDefault", [t], {"shape": as_shape(shape, what=what)}, name=name)


# -- variables and assignment --------------------------------------------------------------------
register("VariableV2", _attr_infer, lambda a, ctx: f"V[{Name().literal(ctx.name)}]",
         differentiable=False, stateful=True, reads_state=True,
         attrs={"dtype": DType(), "shape": Shape()}, arity=0)


def _assign_infer(ctx):
    ref, value = ctx.in_shapes
    if ctx.in_dtypes[0] is not ctx.in_dtypes[1]:
        raise TypeError(f"cannot assign a {ctx.in_dtypes[1].name} value to a "
                        f"{ctx.in_dtypes[0].name} variable")
    if ctx.attrs["validate_shape"] and not ref.is_compatible_with(value):
        raise ValueError(f"cannot assign a value of shape {value} to variable "
                         f"{ctx.attrs['var']} of shape {ref}")
    return [(ref if ctx.attrs["validate_shape"] else value, ctx.in_dtypes[0])]


def _assign_numpy(kind):
    def emit(a, ctx):
        target = f"V[{ctx.lit('var')}]"
        if kind == "set":
            src = f"np.array({a[1]})" if ctx.may_share(1) else a[1]
            return Store(target, src)
        ufunc = "np.add" if kind == "add" else "np.subtract"
        return Store(target, f"{target} {'+' if kind == 'add' else '-'} {a[1]}",
                     reads_target=True, in_place=f"rt.update_in_place({ufunc}, {target}, {a[1]})")
    return emit


for _type, _kind in (("Assign", "set"), ("AssignAdd", "add"), ("AssignSub", "sub")):
    register(_type, _assign_infer, _assign_numpy(_kind), differentiable=False, stateful=True,
             shape_inputs=(0,), arity=2,
             # use_locking: the runs that perform it hold the variable's lock throughout
             attrs={"var": Name(), "validate_shape": Bool(),
                    "use_locking": Bool(default=False)})


def _scatter_infer(ctx):
    ref, indices, updates = ctx.in_shapes
    if not ctx.in_dtypes[1].is_integer:
        raise TypeError(f"indices must be integers, got {ctx.in_dtypes[1].name}")
    if ctx.in_dtypes[0] is not ctx.in_dtypes[2]:
        raise TypeError(f"cannot scatter {ctx.in_dtypes[2].name} updates into a "
                        f"{ctx.in_dtypes[0].name} variable")
    if ref.ndims == 0:
        raise ValueError(f"cannot scatter into variable {ctx.attrs['var']}: it is a scalar")
    if ref.dims is not None and indices.dims is not None:
        want = TensorShape([*indices.dims, *ref.dims[1:]])
        if not updates.is_compatible_with(want):
            raise ValueError(f"updates of shape {updates} for indices of shape {indices} into "
                             f"variable {ctx.attrs['var']} of shape {ref}: they need shape "
                             f"{want}")
    return [(ref, ctx.in_dtypes[0])]


def _scatter_numpy(kind):
    ufunc = {"add": "np.add", "sub": "np.subtract", "update": "None"}[kind]

    def emit(a, ctx):
        target = f"V[{ctx.lit('var')}]"
        return Store(target, f"rt.scatter({ufunc}, {target}, {a[1]}, {a[2]}, False)",
                     reads_target=True,
                     in_place=f"rt.scatter({ufunc}, {target}, {a[1]}, {a[2]}, True)")
    return emit


for _type, _kind in (("ScatterAdd", "add"), ("ScatterSub", "sub"), ("ScatterUpdate", "update")):
    register(_type, _scatter_infer, _scatter_numpy(_kind), differentiable=False,
             stateful=True, shape_inputs=(0,), arity=3,
             attrs={"var": Name(), "use_locking": Bool(default=False)})


def _scatter(op_type, ref, indices, updates, use_locking, name):
    t, var = _variable_ref(ref)
    indices = convert_to_tensor(indices, dtype_hint=_dt.int32)
    return apply1(op_type, [t, indices, _value_for(var, updates, t.dtype)],
                  {"var": var, "use_locking": bool(use_locking)}, name=name or op_type)


def scatter_add(ref, indices, updates, use_locking=False, name=None):
    """Add each row of `updates` to row `indices[i]` of variable `ref` (a repeated index adds
    each time); the op's output is the new value. Writes the rows in place, where no other
    value of the run holds the variable's array."""
    return _scatter("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref, indices, updates, use_locking=False, name=None):
    """Subtract each row of `updates` from row `indices[i]` of variable `ref` (see
    scatter_add): an optimizer's sparse step."""
    return _scatter("ScatterSub", ref, indices, updates, use_locking, name)


def scatter_update(ref, indices, updates, use_locking=False, name=None):
    """Set row `indices[i]` of variable `ref` to row i of `updates` (for a repeated index,
    one of its rows)."""
    return _scatter("ScatterUpdate", ref, indices, updates, use_locking, name)


def _variable_ref(ref):
    """(value tensor, variable name) of a Variable or of its value tensor."""
    t = convert_to_tensor(ref)  # (a Variable gives its tensor: _as_graph_element)
    if t.op.type != "VariableV2":
        raise TypeError(f"can only assign to a variable, not to {t.name} ({t.op.type})")
    return t, t.op.name


def _value_for(var: str, value, dtype):
    """`value` as a tensor of the variable's dtype; a TypeError names the variable."""
    try:
        return convert_to_tensor(value, dtype=dtype)
    except TypeError as e:
        raise TypeError(f"cannot assign to variable {var} ({dtype.name}) at {here()[3:]}: "
                        f"{e}") from None


def assign(ref, value, validate_shape=True, use_locking=None, name=None):
    """Set variable `ref` to `value` when run; the op's output is the new value. With
    `use_locking`, a run doing it holds the variable's lock from its start to its end, so
    concurrent read-modify-write steps (an optimizer's slot update) are serialized."""
    t, var = _variable_ref(ref)
    value = _value_for(var, value, t.dtype)
    return apply1("Assign", [t, value], {"var": var, "validate_shape": bool(validate_shape),
                                         "use_locking": bool(use_locking)}, name=name)


def assign_add(ref, value, use_locking=None, name=None):
    """Add `value` to variable `ref` when run; the op's output is the new value. With
    `use_locking`, concurrent runs doing it are serialized (no update is lost)."""
    t, var = _variable_ref(ref)
    return apply1("AssignAdd", [t, _value_for(var, value, t.dtype)],
                  {"var": var, "validate_shape": True, "use_locking": bool(use_locking)},
                  name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    """Subtract `value` from variable `ref` when run; the op's output is the new value. With
    `use_locking`, concurrent runs doing it are serialized (no update is lost)."""
    t, var = _variable_ref(ref)
    return apply1("AssignSub", [t, _value_for(var, value, t.dtype)],
                  {"var": var, "validate_shape": True, "use_locking": bool(use_locking)},
                  name=name)


# -- grouping ------------------------------------------------------------------------------------
register("NoOp", lambda ctx: [], None, differentiable=False, stateful=True, computes=False,
         arity=0)


def no_op(name=None):
    """An op that does nothing; useful as a target for control dependencies."""
    return get_default_graph().create_op("NoOp", [], {}, name=name)


def group(*inputs, name=None):
    """An op that runs all `inputs` (ops or tensors) and outputs nothing."""
    deps = []
    for item in inputs:
        for x in (item if isinstance(item, list | tuple) else [item]):
            x = _graph_element(x)  # a Variable: its tensor
            deps.append(x.op if isinstance(x, Tensor) else x)
    g = deps[0].graph if deps else get_default_graph()
    with g.control_dependencies(deps):
        return g.create_op("NoOp", [], {}, name=name or "group_deps")


def tuple_(tensors, name=None, control_inputs=None):
    """The tensors, each passed through an identity that waits for all of them (TF1 tf.tuple)."""
    from .math_ops import identity
    tensors = [convert_to_tensor(t) if t is not None else None for t in tensors]
    gate = group(*[t for t in tensors if t is not None], *(control_inputs or []))
    with gate.graph.control_dependencies([gate]):
        return [identity(t, name=name) if t is not None else None for t in tensors]


# -- random draws --------------------------------------------------------------------------------
def _random_infer(ctx):
    dtype = ctx.attrs["dtype"]
    if not dtype.is_floating and not (ctx.type == "RandomUniform" and dtype.is_integer):
        raise TypeError(f"{ctx.type} draws {'numbers' if ctx.type == 'RandomUniform' else 'floats'}"
                        f", not {dtype.name}")
    return [(shape_from_vector(ctx, 0), dtype)]


def _random_numpy(fn):
    def emit(a, ctx):
        if ctx.value(0) is None and a[0] != "None":  # a shape known when the run runs (of a
            shape = f"tuple({a[0]})"                   # feed whose size an export left free)
        else:
            shape = repr(tuple(_known(ctx, 0, "the shape of a random tensor")))
        dt = ctx.lit("dtype")
        gen = f"R[{Name().literal(ctx.name)}]"
        if fn == "uniform":
            lo, hi = ctx.lit("low"), ctx.lit("high")
            return f"rt.uniform({gen}, {shape}, {lo}, {hi}, {dt})"
        return f"rt.{fn}({gen}, {shape}, {dt})"
    return emit


_RANDOM_ATTRS = {"dtype": DType(), "seed": Tuple(_SEED, _SEED)}  # (graph seed, op seed)
register("RandomStandardNormal", _random_infer, _random_numpy("normal"), differentiable=False,
         stateful=True, draws_random=True, static_inputs=(0,), attrs=_RANDOM_ATTRS, arity=1)
register("TruncatedNormal", _random_infer, _random_numpy("truncated_normal"),
         differentiable=False, stateful=True, draws_random=True, static_inputs=(0,),
         attrs=_RANDOM_ATTRS, arity=1)
register("RandomUniform", _random_infer, _random_numpy("uniform"), differentiable=False,
         stateful=True, draws_random=True, static_inputs=(0,),
         attrs={**_RANDOM_ATTRS, "low": Number(), "high": Number()}, arity=1)


def _seeds(seed):
    g = get_default_graph()
    if seed is None and g.seed is not None:
        seed = next(g._op_seed_counter)
    return (g.seed, None if seed is None else int(seed))


def _draw(op_type, shape, dtype, seed, name, **attrs):
    dtype = _dt.as_dtype(dtype)
    return apply1(op_type, [_shape_arg(shape)], {"dtype": dtype, "seed": _seeds(seed), **attrs},
                  name=name, graph=get_default_graph())


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None, name=None):
    """Normal draws, fresh at every run (reproducible under `set_random_seed` or `seed`)."""
    from ..graph import name_scope
    with name_scope(name, "random_normal"):
        t = _draw("RandomStandardNormal", shape, dtype, seed, None)
        return _scale(t, mean, stddev)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None, name=None):
    """Normal draws re-drawn until within two standard deviations of the mean."""
    from ..graph import name_scope
    with name_scope(name, "truncated_normal"):
        t = _draw("TruncatedNormal", shape, dtype, seed, None)
        return _scale(t, mean, stddev)


def _scale(t, mean, stddev):
    from .conversion import is_tensor_like
    if is_tensor_like(stddev) or stddev != 1:
        t = t * stddev
    if is_tensor_like(mean) or mean != 0:
        t = t + mean
    return t


def random_uniform(shape, minval=0, maxval=None, dtype=_dt.float32, seed=None, name=None):
    """Uniform draws in [minval, maxval); integer dtypes need an explicit maxval."""
    dtype = _dt.as_dtype(dtype)
    if maxval is None:
        if dtype.is_integer:
            raise ValueError("random_uniform with an integer dtype needs maxval")
        maxval = 1.0
    cast = int if dtype.is_integer else float
    return _draw("RandomUniform", shape, dtype, seed, name or "random_uniform",
                 low=cast(minval), high=cast(maxval))


def set_random_seed(seed):
    """Set the graph-level seed: random ops created afterwards draw reproducible sequences."""
    g = get_default_graph()
    g.seed = None if seed is None else int(seed)
    import itertools
    g._op_seed_counter = itertools.count(1)
