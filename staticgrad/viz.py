"""Pictures of graphs: DOT source, SVG and PNG through Graphviz.

Leaves (placeholders, variables, constants) are boxes coloured by kind, ops are ellipses,
gradient ops (under a `gradients` name scope) are filled apart from forward ones, edges carry
the tensor's shape and dtype, and each name scope is a cluster. The sub-graphs of control flow
(a cond's branches, a while_loop's condition and body, a scan's body) are clusters of their
own, joined to the op holding them by dotted edges. Given fetches instead of a graph, only
the ops they need are drawn.

    pip install 'staticgrad[viz]'       # the graphviz Python package
    apt-get install graphviz            # the `dot` program (brew/conda: graphviz), to render

>>> print(viz.to_dot(loss))                       # doctest: +SKIP
>>> viz.render(graph, "graph.svg")                # doctest: +SKIP

`to_dot` writes the DOT text itself, through one quoting function (`_quote`), instead of
building it with the graphviz package: the package passes a label like `<b>x</b>` through as
HTML and reads `a:b` in an edge as node `a`, port `b`, and names from a graph must never be
read as anything but text. The package is used to run `dot`.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable

from .graph import Graph, Operation, Tensor
from .train.atomic_files import atomic_write

__all__ = ["to_dot", "to_svg", "render"]

INSTALL_PACKAGE = ("drawing graphs needs the graphviz Python package: "
                   "pip install 'staticgrad[viz]' (or pip install graphviz)")
INSTALL_DOT = ("rendering needs the `dot` program from the system's graphviz package: "
               "apt-get install graphviz (Debian/Ubuntu), brew install graphviz (macOS), "
               "conda install graphviz, or see https://graphviz.org/download/")

# Colours shared with docs/make_figures.py.
LEAF_STYLES = {
    "Placeholder": {"fillcolor": "#9ecae1"},
    "VariableV2": {"fillcolor": "#a1d99b"},
    "Const": {"fillcolor": "#d9d9d9"},
}
FORWARD = {"fillcolor": "#fdd0a2"}
GRADIENT = {"fillcolor": "#fcbba1", "color": "#a50f15"}
CLUSTER_FORWARD = {"style": "rounded,filled", "fillcolor": "#f7f7f7", "color": "#bdbdbd"}
CLUSTER_GRADIENT = {"style": "rounded,filled", "fillcolor": "#fff5f0", "color": "#fb6a4a"}
_GRADIENT_SCOPE = re.compile(r"gradients(_\d+)?")  # used with fullmatch
_FORMATS = ("svg", "png")


def _quote(text) -> str:
    """`text` as a DOT double-quoted string, and never more than one string: backslashes and
    quotes escaped, line breaks as DOT's `\\n`, other control characters dropped."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return '"' + "".join(c for c in text if c >= " " or c == "\t") + '"'


def _attrs(attrs: dict) -> str:
    return "[" + ", ".join(f"{key}={_quote(value)}" for key, value in attrs.items()) + "]"


def _resolve(graph_or_fetches) -> tuple[Graph, list[Operation], set[Operation]]:
    """(the graph, the ops to draw in creation order, the fetched ops)."""
    if isinstance(graph_or_fetches, Graph):
        return graph_or_fetches, graph_or_fetches.get_operations(), set()
    items = graph_or_fetches
    if (isinstance(items, Tensor | Operation) or hasattr(items, "_tensor")
            or not isinstance(items, Iterable)):
        items = [items]
    fetched = []
    for item in items:
        item = getattr(item, "_tensor", item)  # a Variable draws as its VariableV2 op
        if isinstance(item, Tensor):
            item = item.op
        if not isinstance(item, Operation):
            raise TypeError(f"viz draws a Graph, or tensors, operations or variables, "
                            f"got {item!r} ({type(item).__name__})")
        fetched.append(item)
    if not fetched:
        raise ValueError("viz was given no fetches to draw")
    graph = fetched[0].graph
    if any(op.graph is not graph for op in fetched):
        raise ValueError("viz was given fetches from different graphs")
    needed, stack = set(), list(fetched)
    while stack:
        op = stack.pop()
        if op not in needed:
            needed.add(op)
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    return graph, sorted(needed, key=lambda op: op._id), set(fetched)


def _scope(op: Operation) -> tuple[str, ...]:
    return tuple(op.name.split("/")[:-1])


def _is_gradient(op: Operation) -> bool:
    return any(_GRADIENT_SCOPE.fullmatch(part) for part in _scope(op))


def _node_attrs(op: Operation, fetched: bool) -> dict:
    short = op.name.rsplit("/", 1)[-1]
    out = op.outputs[0] if op.outputs else None
    if op.type in LEAF_STYLES:
        attrs = {"shape": "box", "style": "rounded,filled", **LEAF_STYLES[op.type]}
        value = op.attrs.get("value") if op.type == "Const" else None
        if value is not None and getattr(value, "size", 99) <= 4:
            label = f"{short}\n{value.tolist()}"
        else:
            label = f"{short}\n{op.type} {out.shape}" if out is not None else short
    else:
        attrs = {"shape": "ellipse", "style": "filled",
                 **(GRADIENT if _is_gradient(op) else FORWARD)}
        label = op.type if short == op.type else f"{op.type}\n{short}"
    attrs["label"] = label
    # The file's base name only: a picture should not carry the path of the checkout it was
    # drawn in.
    filename, lineno = op.location if op.location else ("?", "?")
    attrs["tooltip"] = f'{op.type} op "{op.name}" created at {os.path.basename(filename)}:{lineno}'
    if fetched:
        attrs["penwidth"] = "2.5"
    return attrs


def _clusters(ops: list[Operation], fetched: set[Operation], clusters: bool) -> list[str]:
    """The node statements, each inside the nested clusters of its name scopes (with
    `clusters`). Built and written without recursion: a name may be thousands of scopes deep."""
    # A tree of name scopes, each node (its ops, {scope part: child node}), children in the
    # order they were first seen.
    root: tuple[list, dict] = ([], {})
    for op in ops:
        node = root
        for part in _scope(op) if clusters else ():
            node = node[1].setdefault(part, ([], {}))
        node[0].append(op)
    lines = []
    # Depth first: a stack of (node, its cluster's name, in a gradient scope, indent), and the
    # closing brace of each cluster, pushed before its contents.
    stack: list = [(root, "", False, "  ")]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            lines.append(item)
            continue
        (scope_ops, children), name, gradient, indent = item
        for op in scope_ops:
            lines.append(f"{indent}{_quote(op.name)} {_attrs(_node_attrs(op, op in fetched))};")
        for part, child in reversed(children.items()):
            child_name = f"{name}/{part}" if name else part
            child_gradient = gradient or _GRADIENT_SCOPE.fullmatch(part) is not None
            style = CLUSTER_GRADIENT if child_gradient else CLUSTER_FORWARD
            stack.append(f"{indent}}}")
            stack.append((child, child_name, child_gradient, indent + "  "))
            stack.append(f"{indent}  graph {_attrs({'label': part, **style})};")
            stack.append(f"{indent}subgraph {_quote('cluster_' + child_name)} {{")
    return lines


def to_dot(graph_or_fetches, *, rankdir: str = "TB", edge_labels: bool = True,
           dtypes: bool = True, clusters: bool = True, title: str | None = None) -> str:
    """DOT source for a graph, or for the ops that `graph_or_fetches` (a tensor, operation,
    variable or a list of them) need. Needs neither the graphviz package nor `dot`.

    Nodes are named by their op names (an SVG's `<title>`s), edges labelled with the tensor's
    shape (and dtype), name scopes drawn as clusters named `cluster_<scope>`.

    >>> source = viz.to_dot(loss)                 # doctest: +SKIP
    >>> 'cluster_gradients' in viz.to_dot(sg.gradients(loss, [w]))   # doctest: +SKIP
    True
    """
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"rankdir must be one of TB, LR, BT, RL, got {rankdir!r}")
    graph, ops, fetched = _resolve(graph_or_fetches)
    lines = ["digraph staticgrad {",
             f"  graph {_attrs({'rankdir': rankdir, 'fontname': 'Helvetica', 'fontsize': 11})};",
             f"  node {_attrs({'fontname': 'Helvetica', 'fontsize': 10})};",
             f"  edge {_attrs({'fontname': 'Helvetica', 'fontsize': 8, 'color': '#555555'})};"]
    if title:
        lines.append(f"  graph {_attrs({'label': title, 'labelloc': 't'})};")

    lines += _clusters(ops, fetched, clusters)
    drawn = set(ops)
    for op in ops:
        for t in op.inputs:
            if t.op not in drawn:
                continue
            attrs = {}
            if edge_labels:
                attrs["label"] = f"{t.shape} {t.dtype.name}" if dtypes else str(t.shape)
                if len(t.op.outputs) > 1:
                    attrs["label"] = f":{t.value_index} " + attrs["label"]
            if _is_gradient(op) and not _is_gradient(t.op):
                attrs["color"] = "#cb181d"  # where the backward pass reads forward values
            lines.append(f"  {_quote(t.op.name)} -> {_quote(op.name)} {_attrs(attrs)};")
        for c in op.control_inputs:
            if c in drawn:
                lines.append(f"  {_quote(c.name)} -> {_quote(op.name)} "
                             f"{_attrs({'style': 'dashed', 'arrowhead': 'odot'})};")
    for op in ops:
        if op.opdef.region_attrs:
            lines += _regions(op, op.name, "  ", 0)
    lines.append("}")
    return "\n".join(lines) + "\n"


MAX_DRAWN_DEPTH = 32  # regions drawn at most this deep (a graph file's limit too)


def _regions(holder: Operation, holder_id: str, indent: str, depth: int) -> list[str]:
    """Each region of `holder` (a cond's branches, a loop's condition and body) as a cluster
    of its own ops, labelled by the attribute holding it, with a dotted edge from the holder
    to the region's inputs. Node ids are prefixed by the holder's (names repeat across
    regions: each is a graph of its own)."""
    if depth >= MAX_DRAWN_DEPTH:
        return []
    lines = []
    for attr in holder.opdef.region_attrs:
        region = holder.attrs[attr]
        prefix = f"{holder_id}:{attr}"
        style = CLUSTER_GRADIENT if _is_gradient(holder) else CLUSTER_FORWARD
        lines.append(f"{indent}subgraph {_quote('cluster_' + prefix)} {{")
        lines.append(f"{indent}  graph {_attrs({'label': f'{attr} of {holder.name}', **style})};")
        inner_ops = region.graph.get_operations()
        inputs = set(region.inputs)
        outputs = set(region.outputs)
        for op in inner_ops:
            attrs = _node_attrs(op, any(t in outputs for t in op.outputs))
            lines.append(f"{indent}  {_quote(prefix + '/' + op.name)} {_attrs(attrs)};")
        for op in inner_ops:
            for t in op.inputs:
                lines.append(f"{indent}  {_quote(prefix + '/' + t.op.name)} -> "
                             f"{_quote(prefix + '/' + op.name)} "
                             f"{_attrs({'label': str(t.shape)})};")
            if op.opdef.region_attrs:
                lines += _regions(op, prefix + "/" + op.name, indent + "  ", depth + 1)
        lines.append(f"{indent}}}")
        for t in region.inputs:
            if t in inputs:
                lines.append(f"{indent}{_quote(holder_id)} -> {_quote(prefix + '/' + t.op.name)} "
                             f"{_attrs({'style': 'dotted', 'arrowhead': 'none'})};")
    return lines


def _graphviz():
    try:
        import graphviz
    except ImportError:
        raise ImportError(INSTALL_PACKAGE) from None
    return graphviz


def _pipe(source: str, format: str) -> bytes:
    if format not in _FORMATS:
        raise ValueError(f"format must be one of {', '.join(_FORMATS)}, got {format!r}")
    graphviz = _graphviz()
    try:
        return graphviz.Source(source).pipe(format=format)
    except graphviz.ExecutableNotFound:
        raise RuntimeError(INSTALL_DOT) from None


def to_svg(graph_or_fetches, **dot_options) -> str:
    """The picture as SVG text (needs the graphviz package and the `dot` program).

    >>> svg = viz.to_svg(loss, rankdir="LR")      # doctest: +SKIP
    """
    return _pipe(to_dot(graph_or_fetches, **dot_options), "svg").decode("utf-8")


def render(graph_or_fetches, path, format: str | None = None, **dot_options) -> str:
    """Write the picture to `path` as SVG or PNG (default: from the path's suffix, else SVG);
    returns the path. Needs the graphviz package and the `dot` program.

    >>> viz.render(sg.get_default_graph(), "graph.png")   # doctest: +SKIP
    'graph.png'
    """
    path = os.fspath(path)
    if format is None:
        suffix = os.path.splitext(path)[1].lower().lstrip(".")
        format = suffix if suffix in _FORMATS else "svg"
    data = _pipe(to_dot(graph_or_fetches, **dot_options), format)
    atomic_write(path, lambda f: f.write(data))  # a failed write leaves an older file as it was
    return path


_warned = False


def repr_svg(graph_or_fetches) -> str | None:
    """What Jupyter shows (`Graph._repr_svg_`): the SVG, or None (Jupyter then shows the
    text repr) with one warning saying what to install when graphviz or `dot` is missing."""
    global _warned
    try:
        return to_svg(graph_or_fetches)
    except (ImportError, RuntimeError) as e:
        if not _warned:
            _warned = True
            warnings.warn(str(e), stacklevel=2)
        return None


Graph._repr_svg_ = repr_svg  # Jupyter draws a graph (the graph layer is below this one)
