"""Seed 004 (深入理解autograd: 函数扩展), a new function with its own backward -- define-then-run.

    MultiplyAdd(w, x, b) = w * x + b,  with x = 1, w = 0.25, b = 0.5

sg.custom_gradient is the graph's Function: the decorated function returns its result and a
backward that returns one gradient per input. That backward is called once, by sg.gradients,
while the gradient graph is being built: it receives a symbolic tensor, not a number, and
the nodes it returns become part of the graph that every later run executes. x, a constant,
gets a gradient node too, which no run of the fetches below needs (pruned at compile time).

    python examples/course/seed004_custom_function_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg


@sg.custom_gradient
def multiply_add(w, x, b):
    def backward(grad_output):
        print("backward called with grad_output =", grad_output)
        return grad_output * x, grad_output * w, grad_output
    return w * x + b, backward


x = sg.ones([1])
w = sg.Variable([0.25], name="w")
b = sg.Variable([0.5], name="b")
z = multiply_add(w, x, b)
dz_dw, dz_db = sg.gradients(z, [w, b])  # calls backward, once

with sg.Session() as sess:
    sess.run(sg.global_variables_initializer())
    print("z =", sess.run(z))
    print("dz/dw, dz/db:", *sess.run([dz_dw, dz_db]))
