"""Seed 002 (计算图与显存), the chain rule node by node -- define-by-run.

    a = X1*X2,  y1 = log(a),  y2 = sin(X2),  w = y1*y2,  z = w,  at X1 = 2, X2 = 3

The article's program: retain_grad() keeps the gradient at every intermediate node, so that
after z.backward() each can be printed as the chain rule computes it, from dz/dz = 1 back
to the inputs. float32 values are printed through Python floats, as .item() gives them. The
static program of this pair asks sg.gradients for the same seven gradients.

    python examples/course/seed002_chain_rule_dynamic.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

X1 = dy.tensor(2.0, requires_grad=True)
X2 = dy.tensor(3.0, requires_grad=True)
a = X1 * X2
y1 = dy.log(a)
y2 = dy.sin(X2)
w = y1 * y2
z = w
for node in (a, y1, y2, w, z):
    node.retain_grad()

print("Forward: z =", z.item())
z.backward()
print(f"dz/dz = 1 (输出对自己的梯度永远是1) -> {z.grad.item()}")
print(f"dz/dw = dz/dz * ∂z/∂w = 1 * 1 = {w.grad.item()}")
print(f"dz/dy1 = dz/dw * ∂w/∂y1 = {w.grad.item()} * y2 = {w.grad.item()} * {y2.item()} = "
      f"{y1.grad.item()}")
print(f"dz/dy2 = dz/dw * ∂w/∂y2 = {w.grad.item()} * y1 = {w.grad.item()} * {y1.item()} = "
      f"{y2.grad.item()}")
print(f"dz/da = dz/dy1 * ∂y1/∂a = {y1.grad.item()} * (1/a) = {y1.grad.item()} * "
      f"(1/{a.item()}) = {a.grad.item()}")
print(f"dz/dX1 = dz/da * ∂a/∂X1 = {a.grad.item()} * X2 = {a.grad.item()} * {X2.item()} = "
      f"{X1.grad.item()}")
print(f"dz/dX2 = dz/da * ∂a/∂X2 + dz/dy2 * ∂y2/∂X2\n"
      f" = {a.grad.item()} * X1 + {y2.grad.item()} * cos(X2)\n"
      f" = {a.grad.item()} * {X1.item()} + {y2.grad.item()} * {dy.cos(X2).item()}\n"
      f" = {X2.grad.item()}")
