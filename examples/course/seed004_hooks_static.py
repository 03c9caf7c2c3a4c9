"""Seed 004 (深入理解autograd: Variable梯度探究), the gradient at a non-leaf -- define-then-run.

    y = w * x,  z = sum(y),  with x = [1, 1, 1] and w random

Nothing is freed behind your back in a graph, so neither a hook nor retain_graph is needed:
the gradient at y is a tensor of the graph like dz/dw, sg.gradients(z, [y, w]) declares
both, and a run fetches whichever you want to see.

    python examples/course/seed004_hooks_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg

x = sg.ones([3])
w = sg.Variable(sg.random_uniform([3]), name="w")
y = w * x
z = sg.reduce_sum(y)
dz_dy, dz_dw = sg.gradients(z, [y, w])

with sg.Session() as sess:
    sess.run(w.initializer)
    print("the gradient at y:", sess.run(dz_dy))
    print("dz/dw:", sess.run(dz_dw))
