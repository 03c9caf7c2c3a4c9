"""Seed 000 (理解PyTorch的自动微分机制), the gradient of intermediate nodes -- define-by-run.

    y = 2x,  z = mean(y),  with x = [1, 1, 1, 1]

backward() keeps the gradient of leaves only: y.grad and z.grad stay None (reading them
warns) unless y.retain_grad() and z.retain_grad() were called before backward(). In the
static program of this pair the gradient at y is one more tensor to ask sg.gradients for.

    python examples/course/seed000_retain_grad_dynamic.py
"""

import warnings

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

warnings.simplefilter("ignore", UserWarning)  # "the .grad of a non-leaf tensor is being read"

x = dy.tensor([1.0, 1, 1, 1], requires_grad=True)
y = 2 * x
z = y.mean()
z.backward()
print("x.grad, y.grad, z.grad without retain_grad:", x.grad, y.grad, z.grad)

x = dy.tensor([1.0, 1, 1, 1], requires_grad=True)
y = 2 * x
y.retain_grad()
z = y.mean()
z.retain_grad()
z.backward()
print("x.grad, y.grad, z.grad with retain_grad:", x.grad, y.grad, z.grad)
