"""An RNN over sequences of different lengths -- define-then-run.

    h_t = tanh([x_t, h_{t-1}] @ kernel + bias),  h_0 = 0,  for t < the sequence's length

The graph holds the loop over time: sg.nn.dynamic_rnn runs TF1's BasicRNNCell over the
padded batch, and `sequence_length` stops each row at its own length (its state is then
kept, its outputs are zeros). The gradient of the sum of the last states flows back through
every row's own steps. The dynamic program of this pair loops over each sequence in Python,
and prints the same numbers.

    python examples/course/rnn_lengths_static.py
"""

import _course
import numpy as np

import staticgrad as sg

x_value, lengths_value, kernel_value, bias_value = _course.rnn_data()
x = sg.placeholder(sg.float64, [None, None, 2], name="x")
lengths = sg.placeholder(sg.int32, [None], name="lengths")
cell = sg.nn.rnn_cell.BasicRNNCell(3)
outputs, last = sg.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=sg.float64)
kernel, bias = cell.variables
print("variables:", ", ".join(f"{v.op.name} {v.shape}" for v in cell.variables))
(d_kernel,) = sg.gradients(sg.reduce_sum(last), [kernel])

with sg.Session() as sess:
    sess.run(sg.global_variables_initializer())
    kernel.load(kernel_value, sess)
    bias.load(bias_value, sess)
    got_last, got_d = sess.run([last, d_kernel], {x: x_value, lengths: lengths_value})
np.set_printoptions(precision=6, suppress=True)
for row, n in enumerate(lengths_value):
    print(f"sequence {row} ({n} steps): last state {got_last[row]}")
print("d sum(last states) / d kernel, first row:", got_d[0])
