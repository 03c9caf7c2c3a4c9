"""Seed 003 (计算图、叶子节点与grad_fn), leaves, requires_grad and grad_fn -- define-by-run.

    y = w * x,  z = y + b,  with x = 2 and w, b random

The article's complete example. x, w, b are leaves (made by the user); y and z are not (made
by ops), and require grad because w and b do; their grad_fn is the tape node that made them.
After z.backward(), w.grad = x = 2 and b.grad = 1; x needs no gradient and gets none; y and z
keep none. The static program of this pair says the same with placeholders, variables and
the ops of a graph.

    python examples/course/seed003_leaves_dynamic.py
"""

import warnings

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

warnings.simplefilter("ignore", UserWarning)  # "the .grad of a non-leaf tensor is being read"

x = dy.Tensor([2])
w = dy.randn(1, requires_grad=True)
b = dy.randn(1, requires_grad=True)
y = dy.mul(w, x)
z = dy.add(y, b)

print("requires_grad of x, w, b:", x.requires_grad, w.requires_grad, b.requires_grad)
print("requires_grad of y, z:", y.requires_grad, z.requires_grad)
print("is_leaf of x, w, b, y, z:", x.is_leaf, w.is_leaf, b.is_leaf, y.is_leaf, z.is_leaf)
print("grad_fn of x, w, b:", x.grad_fn, w.grad_fn, b.grad_fn)
print("grad_fn of y, z:", y.grad_fn, z.grad_fn)

z.backward()
print("w.grad, b.grad, x.grad:", w.grad, b.grad, x.grad)
print("y.grad, z.grad:", y.grad, z.grad)
