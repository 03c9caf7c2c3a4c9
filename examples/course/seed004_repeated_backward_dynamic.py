"""Seed 004 (深入理解autograd: Variable梯度探究), backward twice -- define-by-run.

    y = w * x,  z = sum(y),  with x = [1, 1, 1] and w random

The article's two experiments. With retain_graph=True the graph survives the first
backward() and the second adds into w.grad: 1, then 2. Without it the graph is gone after
backward(), so y and z must be built again from the leaves -- a new graph, whose backward
still adds into the same w.grad: 1, then 2. "A static graph stays in memory waiting for
feeds; a dynamic one is discarded after backward" (the article): see the static program of
this pair.

    python examples/course/seed004_repeated_backward_dynamic.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

x = dy.ones(3)
w = dy.rand(3, requires_grad=True)
y = w.mul(x)
z = y.sum()
z.backward(retain_graph=True)
print("retain_graph, first backward: w.grad =", w.grad)
z.backward()
print("retain_graph, second backward: w.grad =", w.grad)

w = dy.rand(3, requires_grad=True)
y = w.mul(x)
z = y.sum()
z.backward()
print("rebuilt graph, first backward: w.grad =", w.grad)
y = w.mul(x)  # <----- the graph was freed: build it again
z = y.sum()   # <-----
z.backward()
print("rebuilt graph, second backward: w.grad =", w.grad)
