"""Newton's method for a square root, with a stop the values decide -- define-then-run.

    x_{k+1} = (x_k + a / x_k) / 2, from x_0 = a, until |x_k^2 - a| < 1e-10 * a

The number of steps depends on `a`, which the graph does not know when it is built: the
loop is part of the graph (sg.while_loop), and each run takes as many steps as its `a`
needs. The gradient flows back through the steps the run took: d sqrt(a) / da = 1 / (2
sqrt(a)). The dynamic program of this pair runs Python's own while loop.

    python examples/course/newton_sqrt_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg

a = sg.placeholder(sg.float64, [], name="a")
steps, root = sg.while_loop(lambda k, x: sg.abs(x * x - a) >= 1e-10 * a,
                            lambda k, x: (k + 1, (x + a / x) / 2), (0, a), name="newton")
(slope,) = sg.gradients(root, [a])

with sg.Session() as sess:
    for value in (2.0, 10.0, 12345.0):
        k, r, d = sess.run([steps, root, slope], {a: value})
        print(f"a = {value:g}: {k} steps, sqrt = {r:.12f}, d sqrt / da = {d:.12f}")
    print()
    print(sess.source(root, {a: 2.0}))
