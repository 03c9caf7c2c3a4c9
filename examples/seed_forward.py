"""The forward passes of the seed articles, written define-then-run.

Each section first *declares* a graph (placeholders, variables, operations), then
runs it in a Session with a feed dict -- the TF1 way -- where the articles build
the same computation on the fly in PyTorch.

    python examples/seed_forward.py
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
import staticgrad as sg  # noqa: E402


def seed_000_weights_chain():
    """Seed 000: L = 10 - (w3*(w1*a) + w4*(w2*a)) with a = 4, w = 2, 5, 9, 7."""
    print("== seed 000: the weights chain ==")
    g = sg.Graph()
    with g.as_default():
        a = sg.placeholder(sg.float32, [1], name="a")
        w1, w2, w3, w4 = [sg.Variable([float(v)], name=f"w{i}")
                          for i, v in enumerate((2, 5, 9, 7), start=1)]
        b = w1 * a
        c = w2 * a
        d = w3 * b + w4 * c
        L = 10 - d
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            vals = sess.run({"b": b, "c": c, "d": d, "L": L}, {a: [4.0]})
    for name in ("b", "c", "d", "L"):
        print(f"{name} = {vals[name][0]:g}")
    print()


def seed_001_vector_function():
    """Seed 001: y = 3a + 2b^2 + log(c), elementwise on three-element vectors."""
    print("== seed 001: y = 3a + 2b^2 + log(c) ==")
    g = sg.Graph()
    with g.as_default():
        a = sg.placeholder(sg.float32, [3], name="a")
        b = sg.placeholder(sg.float32, [3], name="b")
        c = sg.placeholder(sg.float32, [3], name="c")
        y = 3 * a + 2 * b * b + sg.log(c)
        with sg.Session() as sess:
            out = sess.run(y, {a: [1.0, 2.0, 3.0], b: [3.0, 4.0, 5.0], c: [6.0, 7.0, 8.0]})
    print("y =", np.array2string(out, precision=6))
    print()


def seed_002_log_sin():
    """Seed 002: z = log(x1*x2) * sin(x2) at x1 = 2, x2 = 3, every node printed."""
    print("== seed 002: z = log(x1*x2) * sin(x2) ==")
    g = sg.Graph()
    with g.as_default():
        x1 = sg.placeholder(sg.float32, [], name="x1")
        x2 = sg.placeholder(sg.float32, [], name="x2")
        a = x1 * x2
        y1 = sg.log(a)
        y2 = sg.sin(x2)
        w = y1 * y2
        z = sg.identity(w, name="z")
        nodes = {"a": a, "y1": y1, "y2": y2, "w": w, "z": z}
        with sg.Session() as sess:
            vals = sess.run(nodes, {x1: 2.0, x2: 3.0})
    for name, v in vals.items():
        # float32 values printed as the article does (via float64, like tensor.item())
        print(f"{name:>2} = {float(v)!r}  ({np.asarray(v).dtype})")
    print(f"Forward: z = {float(vals['z'])!r}")
    print()


def seed_003_quadratic():
    """Seed 003: y = w * x^2 + b on x = linspace(-1, 1, 100), shape (100, 1)."""
    print("== seed 003: y = w * x^2 + b ==")
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [None, 1], name="x")
        w = sg.Variable([[3.0]], name="w")
        b = sg.Variable([[1.0]], name="b")
        y = w * sg.pow(x, 2) + b
        xs = np.linspace(-1, 1, 100, dtype=np.float32).reshape(100, 1)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            ys = sess.run(y, {x: xs})
    print(f"w = 3, b = 1, x: {xs.shape[0]} points in [-1, 1]")
    print("y.shape =", ys.shape)
    print(f"y[0] = {ys[0, 0]:.6f}  (x = -1)")
    print(f"y[49] = {ys[49, 0]:.6f}  (x = {xs[49, 0]:.6f})")
    print(f"y[99] = {ys[99, 0]:.6f}  (x = 1)")
    print(f"min y = {ys.min():.6f}, max y = {ys.max():.6f}")
    print()


if __name__ == "__main__":
    seed_000_weights_chain()
    seed_001_vector_function()
    seed_002_log_sin()
    seed_003_quadratic()
