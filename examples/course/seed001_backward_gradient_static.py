"""Seed 001 (the `gradient` argument of backward, Examples 1-4) -- define-then-run.

    y = 3a + 2b^2 + log(c)

One graph serves all four examples. backward(gradients) is grad_ys: sg.gradients(y, [a, b,
c], grad_ys=weights) is the vector-Jacobian product, with the weights a placeholder too, fed
at each run (1.0 for the scalar examples). What changes from the dynamic program:
3. a placeholder holds no memory to be uninitialized: running without feeding it is an
   error (so is reading a variable before its initializer ran). Fed b = c = 0, c's gradient
   is inf, as in the article.
4. gradients are computed, not accumulated: each run gives the same 3, 4, 1; to accumulate,
   add them up (or sg.assign_add them into a variable).

    python examples/course/seed001_backward_gradient_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)
import numpy as np

import staticgrad as sg

np.set_printoptions(precision=4)  # as PyTorch prints tensors
a = sg.placeholder(sg.float32, name="a")  # no shape given: any shape can be fed
b = sg.placeholder(sg.float32, name="b")
c = sg.placeholder(sg.float32, name="c")
weights = sg.placeholder(sg.float32, name="weights")
y = 3 * a + 2 * b * b + sg.log(c)
da, db, dc = sg.gradients(y, [a, b, c], grad_ys=weights)

with sg.Session() as sess:
    feed = {a: [1.0, 2.0, 3.0], b: [3.0, 4.0, 5.0], c: [6.0, 7.0, 8.0]}
    print("example 1: y =", sess.run(y, feed))
    grads = sess.run([da, db, dc], {**feed, weights: [0.1, 1.0, 0.0001]})
    for name, value in zip("abc", grads):
        print(f"example 1: {name}.grad =", value)

    grads = sess.run([da, db, dc], {a: 0.1, b: 1.0, c: 0.1, weights: 1.0})
    print("example 2: a.grad, b.grad, c.grad =", *grads)

    try:
        sess.run(da, {weights: 1.0})
    except sg.errors.InvalidArgumentError as error:
        print("example 3, a not fed:", str(error).split(", created")[0])
    with np.errstate(divide="ignore"):  # log(0) and 1/0
        grads = sess.run([da, db, dc], {a: [0.0], b: [0.0], c: [0.0], weights: [1.1001]})
    print("example 3: a.grad, b.grad, c.grad =", *grads)

    feed = {a: 1.0, b: 1.0, c: 1.0, weights: 1.0}
    first, second = sess.run([da, db, dc], feed), sess.run([da, db, dc], feed)
    print("example 4, each run: a.grad, b.grad, c.grad =", *first)
    print("example 4: a.grad, b.grad, c.grad =", *np.add(first, second))
