"""Seed 001 (the `gradient` argument of backward, Examples 1-4) -- define-by-run.

    y = 3a + 2b^2 + log(c)

1. a, b, c are vectors, so y is one too: y.backward(gradients) weights y's elements and
   gives the vector-Jacobian product, gradients * [3, 4b, 1/c], in a.grad, b.grad, c.grad.
2. With scalars, y.backward() needs no argument: 3, 4b, 1/c at a point.
3. torch.empty leaves whatever memory held: where that is b = c = 0, c.grad is 1/0 = inf.
4. .grad accumulates: two backward calls (the first with retain_graph=True) add up.
The static program of this pair runs all four on one graph, changing only the feeds.

    python examples/course/seed001_backward_gradient_dynamic.py
"""

import warnings

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

# Example 1
a = dy.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = dy.tensor([3.0, 4.0, 5.0], requires_grad=True)
c = dy.tensor([6.0, 7.0, 8.0], requires_grad=True)
y = 3 * a + 2 * b * b + dy.log(c)
print("example 1: y =", y)
gradients = dy.FloatTensor([0.1, 1.0, 0.0001])
y.backward(gradients, retain_graph=True)
print("example 1: a.grad =", a.grad)
print("example 1: b.grad =", b.grad)
print("example 1: c.grad =", c.grad)

# Example 2
a = dy.tensor(0.1, requires_grad=True)
b = dy.tensor(1.0, requires_grad=True)
c = dy.tensor(0.1, requires_grad=True)
y = 3 * a + 2 * b * b + dy.log(c)
y.backward()
print("example 2: a.grad, b.grad, c.grad =", a.grad, b.grad, c.grad)

# Example 3: the article's empty memory held b = c = 0; its a.grad, 3.3003, is 3 * 1.1001
a, b, c = (dy.empty(1, requires_grad=True) for _ in range(3))
with dy.no_grad():
    b.zero_(), c.zero_()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # log(0) and 1/0, as NumPy warns
    y = 3 * a + 2 * b * b + dy.log(c)
    y.backward(dy.FloatTensor([1.1001]))
print("example 3: a.grad, b.grad, c.grad =", a.grad, b.grad, c.grad)

# Example 4
a = dy.tensor(1.0, requires_grad=True)
b = dy.tensor(1.0, requires_grad=True)
c = dy.tensor(1.0, requires_grad=True)
y = 3 * a + 2 * b * b + dy.log(c)
y.backward(retain_graph=True)
y.backward()
print("example 4: a.grad, b.grad, c.grad =", a.grad, b.grad, c.grad)
