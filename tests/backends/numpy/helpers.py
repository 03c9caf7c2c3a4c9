"""What the tests of the NumPy backend's one-pass kernels share: the W3 chain (the suite's
benchmark) as a graph, and a function run on several threads at once."""

from __future__ import annotations

import threading

import numpy as np

import staticgrad as sg


def w3(n: int, seed: int = 0):
    """(graph, x, [sum, its gradient], a float32 feed of n values) of the W3 chain,
    sum(tanh(1.5x+0.3)*sigmoid(x) + 0.5*exp(-x^2) + log1p(x^2)), x of any length."""
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [None], name="x")
        y = sg.reduce_sum(sg.tanh(1.5 * x + 0.3) * sg.sigmoid(x) + 0.5 * sg.exp(-x ** 2)
                          + sg.log1p(x ** 2))
        fetches = [y, *sg.gradients(y, [x])]
    xv = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    return g, x, fetches, xv


def on_threads(fn, n: int) -> None:
    """fn run on n threads at once, all joined."""
    threads = [threading.Thread(target=fn) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
