"""Seed 004 (深入理解autograd: 高阶导数), derivatives of derivatives -- define-then-run.

    y = x^4 at x = 3:  y = 81,  dy/dx = 4x^3 = 108,  d2y/dx2 = 12x^2 = 108,  d3y/dx3 = 24x = 72

sg.gradients adds ordinary nodes to the graph, so its result can be differentiated like any
tensor: three calls give the third derivative, and one run computes all four values.

    python examples/course/seed004_higher_order_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg

x = sg.placeholder(sg.float32, [], name="x")
y = x ** 4
d1, = sg.gradients(y, x)
print("dy/dx =", d1)
d2, = sg.gradients(d1, x)
d3, = sg.gradients(d2, x)

with sg.Session() as sess:
    print("y, dy/dx, d2y/dx2, d3y/dx3 =", *sess.run([y, d1, d2, d3], {x: 3.0}))
