"""Draw the pictures of docs/static-vs-dynamic.md from the graphs themselves.

Seed 000's weights chain, L = 10 - (w3*(w1*a) + w4*(w2*a)), three ways:

  seed000_forward.png    the static graph of L (Graph.to_networkx), leaves apart from ops
  seed000_gradients.png  the same graph after sg.gradients(L, [w1..w4]): gradient nodes
                         apart from forward ones, and faded what a run of the four gradients
                         does not execute (the compiler's prune step, run on the graph: not
                         needed, or a value already known when the graph was built)
  seed000_tape.png       the dynamic mode's tape of the same computation: L.grad_fn and,
                         through next_functions, the nodes the gradient flows to

Layered left to right by topological generations (networkx + matplotlib; no graphviz), an
edge that skips columns bent through a point in each column it crosses, so that no edge
runs through a node it does not join (draw() checks this and raises if one would). Edges
point the way data flows in the graphs, and the way the gradient flows on the tape.

    python docs/make_figures.py                  # writes docs/images/*.png
    python docs/make_figures.py --out /tmp/figures
"""

import argparse
import os
import sys

import matplotlib
import networkx as nx
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
import staticgrad as sg  # noqa: E402
import staticgrad.dynamic as dy  # noqa: E402
from staticgrad.passes.prune import prune  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LEAF_TYPES = {"Placeholder": "#9ecae1", "VariableV2": "#a1d99b", "Const": "#d9d9d9"}
FORWARD, GRADIENT = "#fdd0a2", "#fcbba1"
STYLE_KEY = [("placeholder", LEAF_TYPES["Placeholder"]), ("variable", LEAF_TYPES["VariableV2"]),
             ("constant", LEAF_TYPES["Const"]), ("forward op", FORWARD),
             ("gradient op", GRADIENT)]


def seed000_graph():
    """The weights chain as a static graph: (graph, L, the four gradients, feed a)."""
    graph = sg.Graph()
    with graph.as_default():
        a = sg.placeholder(sg.float32, [1], name="a")
        weights = [sg.Variable([float(v)], name=f"w{i}") for i, v in enumerate((2, 5, 9, 7), 1)]
        w1, w2, w3, w4 = weights
        L = sg.subtract(10.0, w3 * (w1 * a) + w4 * (w2 * a), name="L")
        gradients = sg.gradients(L, weights)
    return graph, L, gradients, a


def static_picture(graph, fetches, fed=(), labels=None, fade=False, shown=None):
    """What the tensors `shown` (default: the fetches) depend on, as to_networkx gives it,
    with a drawing style per node: leaves by kind, ops forward or gradient; with `fade`,
    faded where the compiler's prune step for `fetches` drops them. `labels` names some
    nodes (op name -> text)."""
    full = nx.DiGraph(graph.to_networkx())
    ends = [t.op.name for t in (shown or fetches)]
    keep = set(ends).union(*(nx.ancestors(full, n) for n in ends))
    picture = full.subgraph(keep).copy()
    executed = {op.name for op in prune(fetches, set(fed))} | {t.op.name for t in fed} \
        if fade else set()
    for name, attrs in picture.nodes(data=True):
        kind = attrs["type"]
        attrs["color"] = LEAF_TYPES.get(kind) or (GRADIENT if name.startswith("gradients/")
                                                  else FORWARD)
        attrs["shape"] = "s" if kind in LEAF_TYPES else "o"
        attrs["faded"] = fade and name not in executed
        if kind == "Const":
            attrs["label"] = str(graph.get_operation_by_name(name).get_attr("value"))
        elif kind in LEAF_TYPES:
            attrs["label"] = name
        else:  # gradients/Mul_1_grad/Mul -> Mul_1_grad
            attrs["label"] = f"{kind}\n{name.removeprefix('gradients/').split('/')[0]}"
    for name, text in (labels or {}).items():
        picture.nodes[name]["label"] = text
    return picture


def tape_picture(root, leaf_names):
    """The tape below `root` (a grad_fn), walked through next_functions; `leaf_names` names
    the leaves (id of the tensor -> name)."""
    picture = nx.DiGraph()
    stack, seen = [root], set()
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        leaf = fn.name() == "AccumulateGrad"
        label = (f"Accumulate\nGrad\n{leaf_names[id(fn.variable)]}.grad" if leaf
                 else fn.name().replace("Backward", "\nBackward"))
        picture.add_node(id(fn), label=label, shape="s" if leaf else "o", faded=False,
                         color=LEAF_TYPES["VariableV2"] if leaf else GRADIENT)
        for next_fn, _ in fn.next_functions:
            if next_fn is not None:
                picture.add_edge(id(fn), id(next_fn))
                stack.append(next_fn)
    return picture


def layered_layout(picture, sinks_last=False):
    """Columns by topological generation, left to right (with `sinks_last`, the nodes that
    lead nowhere in the last column). An edge that skips columns is routed through a point
    in each column it crosses (a dummy node, as Sugiyama's method does), so that it bends
    around the nodes there instead of running through them. Within a column, nodes and
    dummies are sorted by the mean height of their neighbours in earlier (then later)
    columns, a few sweeps, to uncross edges.

    Returns (the position of each node, the route of each edge: its points from source to
    target, the number of columns, the height of the tallest column)."""
    columns = [list(nodes) for nodes in nx.topological_generations(picture)]
    if sinks_last:
        sinks = [n for column in columns[:-1] for n in column if picture.out_degree(n) == 0]
        columns = [[n for n in column if n not in sinks] for column in columns[:-1]] + \
            [columns[-1] + sinks]
    layer = {n: x for x, column in enumerate(columns) for n in column}
    for node in list(columns[0]):  # a leaf stands just before its first use, not in column 0
        if picture.out_degree(node):
            layer[node] = min(layer[m] for m in picture.successors(node)) - 1
    columns = [[] for _ in columns]
    for node in picture:
        columns[layer[node]].append(node)
    expanded = nx.DiGraph()
    expanded.add_nodes_from(picture)
    chains = {}
    for u, v in picture.edges:
        dummies = [("dummy", u, v, x) for x in range(layer[u] + 1, layer[v])]
        for x, dummy in zip(range(layer[u] + 1, layer[v]), dummies):
            columns[x].append(dummy)
        chains[u, v] = [u, *dummies, v]
        nx.add_path(expanded, chains[u, v])
    height = {}

    def place(column):
        for i, node in enumerate(column):
            height[node] = (len(column) - 1) / 2 - i

    for column in columns:
        place(column)
    for _ in range(4):
        for neighbours, order in ((expanded.predecessors, columns[1:]),
                                  (expanded.successors, columns[-2::-1])):
            for column in order:
                column.sort(key=lambda n: -sum(height[m] for m in neighbours(n))
                            / max(1, len(list(neighbours(n)))))
                place(column)
    for _ in range(8):  # then straighten: each node as near its neighbours' mean as order allows
        for column in columns:
            wanted = [_mean([height[m] for m in nx.all_neighbors(expanded, n)], height[n])
                      for n in column]
            for node, h in zip(column, _spaced(wanted)):
                height[node] = h
    position = {n: (x, height[n]) for x, column in enumerate(columns) for n in column}
    routes = {edge: [position[n] for n in chain] for edge, chain in chains.items()}
    node_position = {n: position[n] for n in picture}
    return node_position, routes, len(columns), max(height.values()) - min(height.values()) + 1


def _mean(values, default):
    return sum(values) / len(values) if values else default


def _spaced(wanted):
    """Heights as near `wanted` as can be (least squares) with each at least 1 below the one
    before: g = h + i must not increase, an isotonic regression (pool adjacent violators)."""
    blocks = []  # [mean of g over the block, its length]
    for i, h in enumerate(wanted):
        blocks.append([h + i, 1])
        while len(blocks) > 1 and blocks[-2][0] < blocks[-1][0]:
            (g1, n1), (g2, n2) = blocks.pop(-2), blocks.pop()
            blocks.append([(g1 * n1 + g2 * n2) / (n1 + n2), n1 + n2])
    g = [mean for mean, n in blocks for _ in range(n)]
    return [value - i for i, value in enumerate(g)]


NODE_SIZE = 1900  # points^2, as matplotlib's scatter takes it: about 44 points across


def crossings(position, routes, to_display, radius):
    """The (edge, node) pairs where a segment of the edge's route enters the box of a node
    that is not one of the edge's ends; positions are mapped by `to_display` (a function of
    an (n, 2) array), boxes are 2 * radius wide in display units."""
    found = []
    nodes = list(position)
    centres = to_display(np.array([position[n] for n in nodes], float))
    for (u, v), points in routes.items():
        path = to_display(np.array(points, float))
        for start, end in zip(path[:-1], path[1:]):
            for node, centre in zip(nodes, centres):
                if node not in (u, v) and _segment_meets_box(start, end, centre, radius):
                    found.append(((u, v), node))
    return found


def _segment_meets_box(start, end, centre, radius) -> bool:
    """Whether the segment start-end meets the square of half-side `radius` around `centre`
    (clipping the segment's parameter range to each axis' slab)."""
    low, high = 0.0, 1.0
    for axis in (0, 1):
        delta = end[axis] - start[axis]
        near, far = centre[axis] - radius - start[axis], centre[axis] + radius - start[axis]
        if abs(delta) < 1e-12:
            if near > 0 or far < 0:
                return False
            continue
        t0, t1 = sorted((near / delta, far / delta))
        low, high = max(low, t0), min(high, t1)
        if low > high:
            return False
    return True


def draw(picture, path, title, key, sinks_last=False):
    """One PNG of `picture`, laid out by layered_layout; an edge that skips columns bends
    through its route's points. Raises if an edge would cross a node it does not join."""
    position, routes, layers, tallest = layered_layout(picture, sinks_last)
    fig, ax = plt.subplots(figsize=(1.5 + 1.45 * layers, 1.2 + 0.75 * tallest))
    radius = NODE_SIZE**0.5 / 2  # in points
    for points in routes.values():
        for i, (start, end) in enumerate(zip(points[:-1], points[1:])):
            last = i == len(points) - 2
            ax.add_patch(FancyArrowPatch(
                start, end, arrowstyle="-|>" if last else "-", mutation_scale=12,
                shrinkA=radius if i == 0 else 0, shrinkB=radius if last else 0,
                color="#555555", linewidth=1.0, zorder=1))
    for shape in ("o", "s"):
        for faded in (False, True):
            nodes = [n for n, a in picture.nodes(data=True)
                     if a["shape"] == shape and a["faded"] == faded]
            if not nodes:
                continue
            nx.draw_networkx_nodes(picture, position, nodelist=nodes, node_shape=shape, ax=ax,
                                   node_size=NODE_SIZE, alpha=0.35 if faded else 1.0,
                                   linewidths=1.0, edgecolors="#999999" if faded else "#333333",
                                   node_color=[picture.nodes[n]["color"] for n in nodes])
    labels = {n: a["label"] for n, a in picture.nodes(data=True)}
    nx.draw_networkx_labels(picture, position, labels, ax=ax, font_size=6.5)
    handles = [plt.Line2D([], [], marker="o", linestyle="", markersize=9, color=color,
                          label=name, markeredgecolor="#333333") for name, color in key]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(key),
              fontsize=7, frameon=False)
    ax.set_title(title, fontsize=9)
    ax.axis("off")
    heights = [h for points in routes.values() for _, h in points] + \
        [h for _, h in position.values()]
    ax.set_xlim(-0.45, layers - 0.55)  # room for the nodes' boxes around their centres
    ax.set_ylim(min(heights) - 0.55, max(heights) + 0.55)
    fig.tight_layout()
    fig.canvas.draw()
    bad = crossings(position, routes, ax.transData.transform, radius * fig.dpi / 72)
    if bad:
        raise AssertionError(f"{path}: edges cross nodes they do not join: " + "; ".join(
            f"{_label(picture, u)} -> {_label(picture, v)} crosses {_label(picture, n)}"
            for (u, v), n in bad))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    print(f"wrote {path} ({os.path.getsize(path) // 1024} KB)")


def _label(picture, node) -> str:
    return picture.nodes[node]["label"].replace("\n", " ")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(HERE, "images"), help="folder for PNGs")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    graph, L, gradients, a = seed000_graph()
    draw(static_picture(graph, [L], [a]), os.path.join(args.out, "seed000_forward.png"),
         "define-then-run: the graph of L = 10 - (w3*(w1*a) + w4*(w2*a)), declared; "
         "nothing computed yet", STYLE_KEY[:4])
    names = {g.op.name: f"{g.op.type}\ndL/dw{i}" for i, g in enumerate(gradients, 1)}
    every_gradient = [op.outputs[0] for op in graph.get_operations()
                      if op.name.startswith("gradients/")]
    draw(static_picture(graph, gradients, [a], names, fade=True, shown=every_gradient),
         os.path.join(args.out, "seed000_gradients.png"),
         "after sg.gradients(L, [w1, w2, w3, w4]): gradient nodes in the same graph; faded, "
         "what a run of the four gradients does not execute", STYLE_KEY)

    a = dy.tensor([4.0])
    weights = [dy.tensor([v], requires_grad=True) for v in (2.0, 5.0, 9.0, 7.0)]
    w1, w2, w3, w4 = weights
    L = 10 - (w3 * (w1 * a) + w4 * (w2 * a))
    leaf_names = {id(w): f"w{i}" for i, w in enumerate(weights, 1)}
    draw(tape_picture(L.grad_fn, leaf_names), os.path.join(args.out, "seed000_tape.png"),
         "define-by-run: the tape of the same L, from L.grad_fn through next_functions "
         "(a needs no gradient: no node)",
         [("AccumulateGrad (into a leaf's .grad)", LEAF_TYPES["VariableV2"]),
          ("tape node (grad_fn)", GRADIENT)], sinks_last=True)


if __name__ == "__main__":
    main()
