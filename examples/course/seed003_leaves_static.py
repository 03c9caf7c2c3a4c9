"""Seed 003 (计算图、叶子节点与grad_fn), leaves, requires_grad and grad_fn -- define-then-run.

    y = w * x,  z = y + b,  with x = 2 and w, b random

In a graph every node is an op: the leaves are ops without inputs -- a placeholder x for
data, fed at each run, and variables w and b for what training changes (the article's
requires_grad=True; they land in sg.trainable_variables()). What grad_fn is to y and z,
`.op` is here: the Mul and Add nodes that compute them. Gradients are asked for, not kept:
sg.gradients(z, [w, b]) gives dz/dw = x = 2 and dz/db = 1; nothing is computed for x.

    python examples/course/seed003_leaves_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg

x = sg.placeholder(sg.float32, [1], name="x")
w = sg.Variable(sg.random_normal([1]), name="w")
b = sg.Variable(sg.random_normal([1]), name="b")
y = sg.multiply(w, x)
z = sg.add(y, b)

print("trainable variables:", [v.name for v in sg.trainable_variables()])
for name, tensor in zip("xwbyz", (x, w, b, y, z)):
    inputs = [t.name for t in tensor.op.inputs]
    print(f"{name} = {tensor.name}: op type {tensor.op.type}, inputs {inputs}")

dz_dw, dz_db = sg.gradients(z, [w, b])
with sg.Session() as sess:
    sess.run(sg.global_variables_initializer())
    print("dz/dw, dz/db:", *sess.run([dz_dw, dz_db], {x: [2.0]}))
