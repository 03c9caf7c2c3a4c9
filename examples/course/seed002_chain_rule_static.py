"""Seed 002 (计算图与显存), the chain rule node by node -- define-then-run.

    a = X1*X2,  y1 = log(a),  y2 = sin(X2),  w = y1*y2,  z = w,  at X1 = 2, X2 = 3

The gradient at every node is one more tensor of the graph: sg.gradients(z, nodes) adds
them all (no retain_grad), one Session.run fetches values and gradients together, and the
chain rule prints as in the article (float32 values printed through Python floats).

    python examples/course/seed002_chain_rule_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg

X1 = sg.placeholder(sg.float32, [], name="X1")
X2 = sg.placeholder(sg.float32, [], name="X2")
a = X1 * X2
y1 = sg.log(a)
y2 = sg.sin(X2)
w = y1 * y2
z = sg.identity(w, name="z")
names = ["z", "w", "y1", "y2", "a", "X1", "X2"]
nodes = [z, w, y1, y2, a, X1, X2]
gradients = sg.gradients(z, nodes)
cos_X2 = sg.cos(X2)  # for the last line's printout

with sg.Session() as sess:
    values, grads, cos_X2 = sess.run([nodes, gradients, cos_X2], {X1: 2.0, X2: 3.0})
v, d = dict(zip(names, values)), dict(zip(names, grads))  # node values, gradients dz/d(node)

print(f"Forward: z = {v['z']}")
print(f"dz/dz = 1 (输出对自己的梯度永远是1) -> {d['z']}")
print(f"dz/dw = dz/dz * ∂z/∂w = 1 * 1 = {d['w']}")
print(f"dz/dy1 = dz/dw * ∂w/∂y1 = {d['w']} * y2 = {d['w']} * {v['y2']} = {d['y1']}")
print(f"dz/dy2 = dz/dw * ∂w/∂y2 = {d['w']} * y1 = {d['w']} * {v['y1']} = {d['y2']}")
print(f"dz/da = dz/dy1 * ∂y1/∂a = {d['y1']} * (1/a) = {d['y1']} * (1/{v['a']}) = {d['a']}")
print(f"dz/dX1 = dz/da * ∂a/∂X1 = {d['a']} * X2 = {d['a']} * {v['X2']} = {d['X1']}")
print(f"dz/dX2 = dz/da * ∂a/∂X2 + dz/dy2 * ∂y2/∂X2\n"
      f" = {d['a']} * X1 + {d['y2']} * cos(X2)\n"
      f" = {d['a']} * {v['X1']} + {d['y2']} * {cos_X2}\n"
      f" = {d['X2']}")
