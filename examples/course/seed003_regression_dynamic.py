"""Seed 003 (计算图与自动求导), the regression y = w x^2 + b by gradient descent -- define-by-run.

The article's experiment: 100 points x in [-1, 1], y = 3x^2 + 2 + 0.2 * uniform noise; a
model w x^2 + b, the summed squared error, 800 steps of plain gradient descent with learning
rate 0.001, written by hand: each step runs the forward pass (recording a new tape),
loss.backward(), and the update under no_grad(), then zeroes the gradients. It starts from
the article's w = 1.1046, b = 0 and ends on its w = 2.9668, b = 2.1138 (the noise is the
article's own draw of torch.rand, made with NumPy: see _course.torch_rand; its mean, about
0.1, goes into b). The static program of this pair builds the step once and runs it 800 times.

    python examples/course/seed003_regression_dynamic.py
"""

import _course

import staticgrad.dynamic as dy

x_data, y_data = _course.quadratic_data()
x, y = dy.tensor(x_data), dy.tensor(y_data)
w = dy.tensor([[_course.W0]], requires_grad=True)
b = dy.zeros(1, 1, dtype=dy.float, requires_grad=True)
print("initial w, b:", w, b)

lr = 0.001
for step in range(1, 801):
    y_pred = w * x.pow(2) + b
    loss = (y - y_pred) ** 2
    loss = loss.sum()
    loss.backward()
    with dy.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
    w.grad.zero_()
    b.grad.zero_()
    if step == 1 or step % 100 == 0:
        print(f"step {step:3d}: loss = {loss.item():.4f}")

print("fitted w, b:", w, b)
