"""Seed 000 (理解PyTorch的自动微分机制), the gradient of intermediate nodes -- define-then-run.

    y = 2x,  z = mean(y),  with x = [1, 1, 1, 1]

There is no .grad to keep or lose here: a gradient is a tensor of the graph, and
sg.gradients(z, [x, y, z]) asks for the gradient at an intermediate node y exactly as at the
input x. What the dynamic program needs retain_grad() for is one more entry in a list.

    python examples/course/seed000_retain_grad_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg

x = sg.placeholder(sg.float32, [4], name="x")
y = 2 * x
z = sg.reduce_mean(y)
dz_dx, dz_dy, dz_dz = sg.gradients(z, [x, y, z])

with sg.Session() as sess:
    print("dz/dx, dz/dy, dz/dz:", *sess.run([dz_dx, dz_dy, dz_dz], {x: [1.0, 1, 1, 1]}))
