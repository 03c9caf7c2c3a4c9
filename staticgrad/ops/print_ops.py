"""Printing from inside the graph, as TF1 programs do:

    x = sg.Print(x, [x, sg.shape(x)], "x is: ")       # x itself, printed each time it is
                                                       # computed: x is: [1 2 3][3]
    show = sg.print("loss:", loss, "step:", step)      # an op: run it (or wait on it)
    with sg.control_dependencies([show]): ...

Both write to stderr (`sg.print` to stdout with output_stream=sys.stdout), each tensor as its
first `summarize` elements. They are stateful: a Print runs where its output is used, and
never twice for one computation; `first_n` stops it after that many prints (counted in
this process, by the op's name and a number of its own: TF1 counts in each session). In
the dynamic mode they print at once (first_n has nothing to count there). Their text
reaches the generated code only as string literals.
"""

from __future__ import annotations

import itertools
import sys

from ..graph import get_default_graph
from .attr_types import Choice, Int, Layout, Text
from .conversion import convert_to_tensor
from .creation import apply1
from .table import register

_COUNTERS = itertools.count(1)  # (each Print's own count of what it printed, for first_n)


def _print_infer(ctx):
    return [(ctx.in_shapes[0], ctx.in_dtypes[0])]


def _print_numpy(a, ctx) -> str:
    data = f"({', '.join(a[1:])},)" if len(a) > 1 else "()"
    key = Text().literal(ctx.name + "#" + str(ctx.attrs["counter"]))  # (its count's key)
    return (f"rt.print_tensors({a[0]}, {ctx.lit('message')}, {ctx.lit('first_n')}, "
            f"{ctx.lit('summarize')}, {key}, {data})")


register("Print", _print_infer, _print_numpy,
         lambda op, g: [g] + [None] * (len(op.inputs) - 1), saves=(), stateful=True, view=True,
         arity=(1, None), attrs={"message": Text(default=""), "first_n": Int(default=-1),
                                 "summarize": Int(lo=0, default=3),
                                 "counter": Int(lo=0, default=0)},
         doc="its input 0 itself, printing `message` and its other inputs (their first "
             "`summarize` elements) to stderr each time it is computed (the first `first_n` "
             "times; `counter` keeps its count apart from other Prints)")


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """`input_` itself, printing `message` then each of `data` when computed (TF1's
    tf.Print)."""
    x = convert_to_tensor(input_)
    tensors = [convert_to_tensor(d) for d in (data if isinstance(data, list | tuple)
                                               else [data])]
    attrs = {"message": "" if message is None else message,
             "first_n": -1 if first_n is None else first_n,
             "summarize": 3 if summarize is None else summarize, "counter": next(_COUNTERS)}
    if x.graph.eager:
        from ..runtime import print_tensors
        print_tensors(None, attrs["message"], -1, attrs["summarize"], 0,
                      tuple(t.detach().numpy() for t in tensors))
        return x
    return apply1("Print", [x, *tensors], attrs, name=name or "Print")


def _print_v2_numpy(a, ctx) -> str:
    return (f"rt.print_items({ctx.lit('layout')}, ({''.join(f'{x}, ' for x in a)}), "
            f"{ctx.lit('sep')}, {ctx.lit('end')}, {ctx.lit('output_stream')}, "
            f"{ctx.lit('summarize')})")


def _print_v2_infer(ctx):
    slots = sum(piece is None for piece in ctx.attrs["layout"])
    if slots != len(ctx.in_shapes):
        raise ValueError(f"its layout has {slots} places for inputs, but it has "
                         f"{len(ctx.in_shapes)}")
    return []


register("PrintV2", _print_v2_infer, _print_v2_numpy, None, differentiable=False,
         stateful=True, arity=(0, None),
         attrs={"layout": Layout(default=()), "sep": Text(default=" "),
                "end": Text(default="\n"), "output_stream": Choice("stderr", "stdout"),
                "summarize": Int(lo=0, default=3)},
         doc="prints its inputs among the strings of `layout` (None where an input goes), "
             "as Python's print does")


def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """An op printing `inputs` (tensors and strings, in order) when run, as Python's print
    (TF1's tf.print), to stderr (the default) or stdout (`output_stream=sys.stdout`)."""
    if output_stream is None or output_stream in (sys.stderr, sys.__stderr__, "stderr"):
        stream = "stderr"
    elif output_stream in (sys.stdout, sys.__stdout__, "stdout"):
        stream = "stdout"
    else:
        raise ValueError("sg.print: output_stream must be sys.stderr or sys.stdout")
    layout, tensors = [], []
    for item in inputs:
        if isinstance(item, str):
            layout.append(item)
        else:
            layout.append(None)
            tensors.append(convert_to_tensor(item))
    attrs = {"layout": tuple(layout), "sep": sep, "end": end, "output_stream": stream,
             "summarize": summarize}
    if tensors and tensors[0].graph.eager or get_default_graph().eager:
        from ..runtime import print_items
        print_items(attrs["layout"], tuple(t.detach().numpy() for t in tensors), sep, end,
                    stream, summarize)
        return None
    graph = tensors[0].graph if tensors else get_default_graph()
    return graph.create_op("PrintV2", tensors, attrs, name=name or "PrintV2")
