"""Seed 004 (深入理解autograd: 高阶导数), derivatives of derivatives -- define-by-run.

    y = x^4 at x = 3:  y = 81,  dy/dx = 4x^3 = 108,  d2y/dx2 = 12x^2 = 108,  d3y/dx3 = 24x = 72

autograd.grad(..., create_graph=True) records the backward pass on the tape as it runs it,
so the gradient it returns has a grad_fn and can be differentiated again. (The article's
text ends at its title; the example is ours.) In the static program of this pair a gradient
is always a graph, so sg.gradients of it needs no flag.

    python examples/course/seed004_higher_order_dynamic.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

x = dy.tensor(3.0, requires_grad=True)
y = x ** 4
d1, = dy.autograd.grad(y, x, create_graph=True)
print("dy/dx =", d1)
d2, = dy.autograd.grad(d1, x, create_graph=True)
d3, = dy.autograd.grad(d2, x)
print("y, dy/dx, d2y/dx2, d3y/dx3 =", y.item(), d1.item(), d2.item(), d3.item())
