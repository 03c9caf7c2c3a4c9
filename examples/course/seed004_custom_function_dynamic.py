"""Seed 004 (深入理解autograd: 函数扩展), a new function with its own backward -- define-by-run.

    MultiplyAdd(w, x, b) = w * x + b,  with x = 1, w = 0.25, b = 0.5

The article's MultiplyAdd: a Function subclass whose static forward computes the result and
saves what backward needs (ctx.save_for_backward), and whose static backward returns one
gradient per input: grad * x, grad * w, grad. backward() calls it while walking the tape,
with the gradient as a number. (The article's text ends at the class; the numbers are ours.)
In the static program of this pair the hand-written backward runs once, at graph building.

    python examples/course/seed004_custom_function_dynamic.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy


class MultiplyAdd(dy.autograd.Function):
    @staticmethod
    def forward(ctx, w, x, b):
        ctx.save_for_backward(w, x)
        return w * x + b

    @staticmethod
    def backward(ctx, grad_output):
        print("backward called with grad_output =", grad_output)
        w, x = ctx.saved_tensors
        return grad_output * x, grad_output * w, grad_output


x = dy.ones(1)
w = dy.tensor([0.25], requires_grad=True)
b = dy.tensor([0.5], requires_grad=True)
z = MultiplyAdd.apply(w, x, b)
print("z =", z)
z.backward()
print("x.grad, w.grad, b.grad:", x.grad, w.grad, b.grad)
