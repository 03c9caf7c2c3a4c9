"""staticgrad in one screen: declare a graph, run it with feeds, read the generated code.

    staticgrad demo            # or: python -m staticgrad demo, python examples/demo.py
"""

from __future__ import annotations

import numpy as np

import staticgrad as sg

__all__ = ["main"]


def main() -> None:
    """Build two small graphs in a fresh `sg.Graph`, run them, and print the generated code.

    >>> from staticgrad.demo import main
    >>> main()                                  # doctest: +SKIP
    L = -202.0
    """
    with sg.Graph().as_default():
        # 1. The weights chain of "Understanding how automatic differentiation works":
        #    declared first (nothing is computed here) ...
        a = sg.placeholder(sg.float32, [1], name="a")
        w1, w2, w3, w4 = [sg.Variable([float(v)], name=f"w{i}")
                          for i, v in enumerate((2, 5, 9, 7), 1)]
        b = w1 * a
        c = w2 * a
        d = w3 * b + w4 * c
        L = sg.subtract(10.0, d, name="L")

        # 2. A tiny softmax classifier: 2 features -> 3 classes.
        x = sg.placeholder(sg.float32, [None, 2], name="x")
        W = sg.Variable([[1.0, -1.0, 0.5], [0.5, 1.0, -1.0]], name="W")
        bias = sg.Variable([0.0, 0.1, -0.1], name="bias")
        probs = sg.nn.softmax(sg.matmul(x, W) + bias, name="probs")
        label = sg.argmax(probs, axis=1, name="label")

        # ... then run, as often as needed, with different feeds.
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            print("L =", sess.run(L, {a: [4.0]})[0])                     # -202
            batch = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 2.0]], np.float32)
            p, k = sess.run([probs, label], {x: batch})
            print("probs =\n", np.round(p, 4))
            print("label =", k)
            print("\n# the NumPy code run for L:")
            print(sess.source(L, {a: [4.0]}))
            print("# the NumPy code run for [probs, label] on a batch of 3:")
            print(sess.source([probs, label], {x: batch}))


if __name__ == "__main__":
    main()
