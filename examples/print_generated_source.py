"""Print the NumPy code that staticgrad generates for a graph.

`sess.source(fetches, feed_dict)` returns the source that `sess.run` with the same
fetches and feed shapes executes: one line per node, shapes made concrete.

    python examples/print_generated_source.py
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
import staticgrad as sg  # noqa: E402

x = sg.placeholder(sg.float32, [None, 3], name="x")
W = sg.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="W")
b = sg.Variable(np.array([0.5, -0.5], np.float32), name="b")
y = sg.tanh(sg.matmul(x, W) + b, name="y")
loss = sg.reduce_mean(sg.square(y), name="loss")

feed = {x: np.ones((4, 3), np.float32)}
with sg.Session() as sess:
    sess.run(sg.global_variables_initializer())
    print("# generated for sess.run([y, loss], {x: <4x3 float32>})")
    print(sess.source([y, loss], feed))
    y_val, loss_val = sess.run([y, loss], feed)
    print("y =\n", y_val)
    print("loss =", loss_val)
