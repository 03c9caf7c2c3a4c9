"""Seed 004 (深入理解autograd: Variable梯度探究), the gradient at a non-leaf -- define-by-run.

    y = w * x,  z = sum(y),  with x = [1, 1, 1] and w random

backward() frees the gradients of intermediate nodes once it has used them. The article's
two ways to see dz/dy = [1, 1, 1] anyway: a hook registered on y, called with the gradient
as backward passes through (its handle removes it), and autograd.grad(z, y), which returns
the gradient instead of storing it. The static program of this pair just asks for it.

    python examples/course/seed004_hooks_dynamic.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

x = dy.ones(3)
w = dy.rand(3, requires_grad=True)
y = w.mul(x)
z = y.sum()


def variable_hook(grad):
    print("hook, the gradient at y:", grad)


hook_handle = y.register_hook(variable_hook)
z.backward(retain_graph=True)  # calls the hook; keeps the graph for autograd.grad below
hook_handle.remove()
print("w.grad:", w.grad)

print("autograd.grad(z, y):", dy.autograd.grad(z, y))
