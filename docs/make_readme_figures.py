"""Draw the README's pictures with staticgrad.viz: the README's first example as a forward
graph, and the same graph after sg.gradients (gradient nodes apart from forward ones).

    python docs/make_readme_figures.py                  # writes docs/images/readme_*.svg
    python docs/make_readme_figures.py --out /tmp/figures

Needs the graphviz package (pip install 'staticgrad[viz]') and the `dot` program (the
system's graphviz package); says which is missing and exits 1 otherwise.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
import staticgrad as sg  # noqa: E402
from staticgrad import viz  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def readme_graph():
    """The README's first example: (loss, dw)."""
    graph = sg.Graph()
    with graph.as_default():
        x = sg.placeholder(sg.float32, [None, 3], name="x")
        w = sg.Variable([[1.0], [2.0], [3.0]], name="w")
        y = sg.nn.sigmoid(sg.matmul(x, w))
        loss = sg.reduce_mean(sg.square(y - 1.0))
        dw, = sg.gradients(loss, [w])
    return loss, dw


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "images"),
                        help="folder for the SVG files (default: docs/images)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    loss, dw = readme_graph()
    pictures = [("readme_forward.svg", loss, "loss = mean((sigmoid(x @ w) - 1)^2)"),
                ("readme_gradients.svg", dw, "dw, = sg.gradients(loss, [w])")]
    for filename, fetches, title in pictures:
        try:
            path = viz.render(fetches, os.path.join(args.out, filename), rankdir="LR",
                              title=title)
        except (ImportError, RuntimeError) as e:
            sys.exit(f"make_readme_figures: {e}")
        print("wrote", os.path.relpath(path))


if __name__ == "__main__":
    main()
