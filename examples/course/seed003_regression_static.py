"""Seed 003 (计算图与自动求导), the regression y = w x^2 + b by gradient descent -- define-then-run.

The article's experiment (see the dynamic program of this pair), TF1-style: the model, the
loss, and one training step -- the gradients and the updates w -= lr * dw, b -= lr * db --
are declared once as one graph. GradientDescentOptimizer.minimize adds the gradient and
update nodes; there is nothing to zero, as gradients are computed afresh at each run, not
accumulated. Then 800 runs of the compiled step, from the article's w = 1.1046, b = 0, print
the dynamic program's numbers. examples/quadratic_regression.py is the longer version, with
a plot and a saved checkpoint.

    python examples/course/seed003_regression_static.py
"""

import _course
import numpy as np

import staticgrad as sg

np.set_printoptions(precision=4)  # as PyTorch prints tensors
x = sg.placeholder(sg.float32, [None, 1], name="x")
y = sg.placeholder(sg.float32, [None, 1], name="y")
w = sg.Variable([[_course.W0]], name="w")
b = sg.Variable(sg.zeros([1, 1]), name="b")
y_pred = w * sg.pow(x, 2) + b
loss = sg.reduce_sum((y - y_pred) ** 2)
train_step = sg.train.GradientDescentOptimizer(0.001).minimize(loss)

x_data, y_data = _course.quadratic_data()
with sg.Session() as sess:
    sess.run(sg.global_variables_initializer())
    print("initial w, b:", *sess.run([w, b]))
    for step in range(1, 801):
        _, loss_value = sess.run([train_step, loss], {x: x_data, y: y_data})
        if step == 1 or step % 100 == 0:
            print(f"step {step:3d}: loss = {loss_value:.4f}")
    print("fitted w, b:", *sess.run([w, b]))
