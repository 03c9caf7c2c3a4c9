"""Newton's method for a square root, with a stop the values decide -- define-by-run.

    x_{k+1} = (x_k + a / x_k) / 2, from x_0 = a, until |x_k^2 - a| < 1e-10 * a

Python's own while loop runs as many steps as `a` needs, and the tape records each one;
backward() differentiates the steps this run took: d sqrt(a) / da = 1 / (2 sqrt(a)). The
static program of this pair holds the loop in the graph (sg.while_loop).

    python examples/course/newton_sqrt_dynamic.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

for value in (2.0, 10.0, 12345.0):
    a = dy.tensor(value, dtype=dy.float64, requires_grad=True)
    x, k = a, 0
    while abs(x * x - a) >= 1e-10 * a:
        x, k = (x + a / x) / 2, k + 1
    x.backward()
    print(f"a = {value:g}: {k} steps, sqrt = {x.item():.12f}, d sqrt / da = "
          f"{a.grad.item():.12f}")
