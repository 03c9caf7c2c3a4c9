"""Seed 004 (深入理解autograd: Variable梯度探究), backward twice -- define-then-run.

    y = w * x,  z = sum(y),  with x = [1, 1, 1] and w random

The graph, gradient included, is declared once and stays: running dz/dw twice needs no
retain_graph and no rebuilding, and gives [1, 1, 1] both times, because a run computes the
gradient, it does not add it to anything. To accumulate the way .grad does, say so in the
graph: a variable `accumulated` and an op that adds dz/dw into it; two runs of that op
give 1, then 2, as in the article.

    python examples/course/seed004_repeated_backward_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg

x = sg.ones([3])
w = sg.Variable(sg.random_uniform([3]), name="w")
y = w * x
z = sg.reduce_sum(y)
dz_dw, = sg.gradients(z, [w])
accumulated = sg.Variable(sg.zeros([3]), name="accumulated")
accumulate = sg.assign_add(accumulated, dz_dw)

with sg.Session() as sess:
    sess.run(sg.global_variables_initializer())
    print("first run: dz/dw =", sess.run(dz_dw))
    print("second run: dz/dw =", sess.run(dz_dw))
    print("accumulate, first run: accumulated =", sess.run(accumulate))
    print("accumulate, second run: accumulated =", sess.run(accumulate))
