"""The seed articles' worked gradient examples, define-then-run.

In PyTorch (the articles) gradients come from a tape recorded while the forward pass runs.
Here `sg.gradients` adds the backward computation to the graph *before* anything runs; the
gradients are ordinary tensors, fetched like any other.

Run: python examples/seed_gradients.py
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import staticgrad as sg  # noqa: E402


def weights_chain():
    """Seed 000: b = w1*a, c = w2*a, d = w3*b + w4*c, L = 10 - d."""
    print("== seed 000: the weights chain ==")
    g = sg.Graph()
    with g.as_default():
        a = sg.constant([4.0], name="a")
        weights = [sg.Variable([float(v)], name=f"w{i}") for i, v in enumerate((2, 5, 9, 7), 1)]
        w1, w2, w3, w4 = weights
        b = w1 * a
        c = w2 * a
        d = w3 * b + w4 * c
        L = 10 - d
        grads = sg.gradients(L, weights)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            for i, gw in enumerate(sess.run(grads), 1):
                print(f"Gradient of w{i} w.r.t to L: {gw[0]}")


def retain_grad():
    """Seed 000: gradients at intermediate nodes (PyTorch's retain_grad) are just more xs."""
    print("== seed 000: gradients of intermediate nodes ==")
    g = sg.Graph()
    with g.as_default():
        x = sg.constant([1.0, 1, 1, 1], name="x")
        y = 2 * x
        z = sg.reduce_mean(y)
        dx, dy, dz = sg.gradients(z, [x, y, z])
        with sg.Session() as sess:
            print("x.grad, y.grad, z.grad =", *sess.run([dx, dy, dz]))


def vector_jacobian():
    """Seed 001: y = 3a + 2b^2 + log(c), backward with a vector of weights (grad_ys)."""
    print("== seed 001: y.backward(gradients) is grad_ys ==")
    g = sg.Graph()
    with g.as_default():
        a = sg.constant([1.0, 2.0, 3.0], name="a")
        b = sg.constant([3.0, 4.0, 5.0], name="b")
        c = sg.constant([6.0, 7.0, 8.0], name="c")
        y = 3 * a + 2 * b * b + sg.log(c)
        weights = sg.constant([0.1, 1.0, 0.0001])
        ga, gb, gc = sg.gradients(y, [a, b, c], grad_ys=weights)
        scalars = [sg.constant(v) for v in (0.1, 1.0, 0.1)]
        y2 = 3 * scalars[0] + 2 * scalars[1] * scalars[1] + sg.log(scalars[2])
        g2 = sg.gradients(y2, scalars)
        with sg.Session() as sess:
            for name, value in zip("abc", sess.run([ga, gb, gc])):
                print(f"{name}.grad = {np.array2string(value, precision=4)}")
            print("scalar example: a.grad, b.grad, c.grad =", *sess.run(g2))


def chain_rule_step_by_step():
    """Seed 002: z = log(x1*x2) * sin(x2), the gradient at every node, printed as the chain
    rule."""
    print("== seed 002: the chain rule, node by node ==")
    g = sg.Graph()
    with g.as_default():
        X1 = sg.constant(2.0, name="X1")
        X2 = sg.constant(3.0, name="X2")
        a = X1 * X2
        y1 = sg.log(a)
        y2 = sg.sin(X2)
        w = y1 * y2
        z = sg.identity(w)
        nodes = [z, w, y1, y2, a, X1, X2]
        grads = sg.gradients(z, nodes)
        with sg.Session() as sess:
            v = dict(zip(["z", "w", "y1", "y2", "a", "X1", "X2"], sess.run(nodes)))
            d = dict(zip(["z", "w", "y1", "y2", "a", "X1", "X2"], sess.run(grads)))
            cos_x2 = sess.run(sg.cos(X2))
    print(f"Forward: z = {v['z']}")
    print(f"dz/dz = 1 -> {d['z']}")
    print(f"dz/dw = dz/dz * dz/dw = 1 * 1 = {d['w']}")
    print(f"dz/dy1 = dz/dw * y2 = {d['w']} * {v['y2']} = {d['y1']}")
    print(f"dz/dy2 = dz/dw * y1 = {d['w']} * {v['y1']} = {d['y2']}")
    print(f"dz/da = dz/dy1 * (1/a) = {d['y1']} * (1/{v['a']}) = {d['a']}")
    print(f"dz/dX1 = dz/da * X2 = {d['a']} * {v['X2']} = {d['X1']}")
    print(f"dz/dX2 = dz/da * X1 + dz/dy2 * cos(X2) = {d['a']} * {v['X1']} + {d['y2']} * "
          f"{cos_x2} = {d['X2']}")


def gradient_at_y():
    """Seed 004: z = sum(w * x); the gradient at y = w * x (what a hook would print)."""
    print("== seed 004: the gradient at an intermediate y ==")
    g = sg.Graph()
    with g.as_default():
        x = sg.ones([3], dtype=sg.float32)
        w = sg.Variable([0.3, 0.6, 0.9], name="w")
        y = w * x
        z = sg.reduce_sum(y)
        dy, dw = sg.gradients(z, [y, w])
        with sg.Session() as sess:
            sess.run(w.initializer)
            print("gradient at y:", sess.run(dy), " w.grad:", sess.run(dw))


@sg.custom_gradient
def multiply_add(w, x, b):
    """Seed 004's custom MultiplyAdd function: forward w*x + b with a hand-written backward."""
    def backward(grad_output):
        return [grad_output * x, grad_output * w, grad_output]
    return w * x + b, backward


def custom_function():
    print("== seed 004: a custom function (MultiplyAdd) ==")
    g = sg.Graph()
    with g.as_default():
        x = sg.ones([1])
        w = sg.Variable([0.25], name="w")
        b = sg.Variable([0.5], name="b")
        z = multiply_add(w, x, b)
        dw, db = sg.gradients(z, [w, b])
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            print("z =", sess.run(z), " w.grad =", sess.run(dw), " b.grad =", sess.run(db))


def higher_order():
    """Seed 004 (higher-order derivatives): d^3/dx^3 of x^4 at x = 3 is 24 * 3 = 72."""
    print("== seed 004: a third derivative ==")
    g = sg.Graph()
    with g.as_default():
        x = sg.constant(3.0, name="x")
        y = x ** 4
        d1 = sg.gradients(y, x)[0]
        d2 = sg.gradients(d1, x)[0]
        d3 = sg.gradients(d2, x)[0]
        with sg.Session() as sess:
            print("y, dy/dx, d2y/dx2, d3y/dx3 =", *sess.run([y, d1, d2, d3]))


if __name__ == "__main__":
    weights_chain()
    retain_grad()
    vector_jacobian()
    chain_rule_step_by_step()
    gradient_at_y()
    custom_function()
    higher_order()
