"""TF1's `py_func` and `numpy_function`: a Python function of this process run as an op,
on the NumPy values of its inputs, when the graph runs.

    def clip_outliers(a):                        # NumPy in, NumPy out
        return np.clip(a, *np.percentile(a, [1, 99])).astype(np.float32)
    y = sg.py_func(clip_outliers, [x], sg.float32)

The function must give arrays of the dtypes `Tout` says (a list: one array each; one dtype:
one array); a Python number is taken at that dtype. Its outputs' shapes are unknown to the
graph. It has no gradient (as TF1's, unless one is registered with gradient_override_map),
and it is stateful: it runs each time a run needs it, never folded or merged.

The function lives in this process only: the generated code calls it by a number from a
table of the runtime (never by its name or source), a graph file cannot hold it, and an
exported module refuses it. In the dynamic mode it runs at once.
"""

from __future__ import annotations

import itertools

from .. import dtypes as _dt
from ..shapes import TensorShape
from .attr_types import Bool, DTypes, InProcess, Int
from .conversion import convert_to_tensor
from .creation import apply
from .table import register

_KEYS = itertools.count(1)


def _infer(ctx):
    return [(TensorShape(None), d) for d in ctx.attrs["Tout"]]


def _numpy(a, ctx) -> str:
    call = (f"rt.call_py_func({ctx.lit('key')}, {ctx.lit('Tout')}, "
            f"({''.join(f'{x}, ' for x in a)}))")
    return call + "[0]" if len(ctx.attrs["Tout"]) == 1 else call  # (one output: the array)


register("PyFunc", _infer, _numpy, None, differentiable=False, stateful=True,
         arity=(0, None), new_array=True,
         attrs={"func": InProcess("a Python function", callable, example=abs),
                "Tout": DTypes(), "key": Int(lo=0, default=0),
                "is_stateful": Bool(default=True)},
         doc="calls a Python function of this process (`func`, kept in the runtime's table "
             "under `key`) on its inputs' values; gives arrays of the dtypes `Tout`")


def calls_python(op) -> bool:
    """Does graph op `op` call a Python function of this process (a py_func)?"""
    return op.type == "PyFunc"


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TF1's names
    """`func(*values of inp)` run as an op (see the module's docstring): a list of tensors
    when `Tout` is a list, else one tensor."""
    if not callable(func):
        raise TypeError(f"py_func: func must be callable, got {func!r}")
    single = not isinstance(Tout, list | tuple)
    dtypes = [_dt.as_dtype(d) for d in ([Tout] if single else Tout)]
    tensors = [convert_to_tensor(x) for x in inp]
    if tensors and tensors[0].graph.eager:  # the dynamic mode: at once
        from ..runtime import call_py_func, register_py_func
        out = call_py_func(register_py_func(func), tuple(dtypes),
                           tuple(t.detach().numpy() for t in tensors))
        out = [convert_to_tensor(v) for v in out]
    else:
        key = next(_KEYS)
        from ..runtime import register_py_func
        register_py_func(func, key)
        out = apply("PyFunc", tensors, {"func": func, "Tout": tuple(dtypes), "key": key,
                                        "is_stateful": bool(stateful)},
                    name=name or "PyFunc")
    return out[0] if single else list(out)


def numpy_function(func, inp, Tout, name=None):  # noqa: N803
    """py_func under TF1's later name (stateful)."""
    return py_func(func, inp, Tout, True, name)
