"""An RNN over sequences of different lengths -- define-by-run.

    h_t = tanh([x_t, h_{t-1}] @ kernel + bias),  h_0 = 0,  for t < the sequence's length

Each sequence is run by Python's own loop for as many steps as it has; no padding or
masking is needed, and the tape records a different number of steps for each. The static
program of this pair holds the loop in the graph (sg.nn.dynamic_rnn with sequence_length)
and prints the same numbers.

    python examples/course/rnn_lengths_dynamic.py
"""

import _course
import numpy as np

import staticgrad.dynamic as dy

x_value, lengths_value, kernel_value, bias_value = _course.rnn_data()
kernel = dy.tensor(kernel_value, requires_grad=True)
bias = dy.tensor(bias_value, requires_grad=True)

lasts = []
for row, n in enumerate(lengths_value):
    h = dy.zeros(1, 3, dtype=dy.float64)
    for t in range(n):  # this sequence's own steps
        x_t = dy.tensor(x_value[row, t:t + 1])
        h = dy.tanh(dy.cat([x_t, h], dim=1) @ kernel + bias)
    lasts.append(h)
total = sum(h.sum() for h in lasts)
total.backward()
np.set_printoptions(precision=6, suppress=True)
for row, (n, h) in enumerate(zip(lengths_value, lasts)):
    print(f"sequence {row} ({n} steps): last state {h.detach().numpy()[0]}")
print("d sum(last states) / d kernel, first row:", kernel.grad.numpy()[0])
