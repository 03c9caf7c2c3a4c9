"""Seed 000 (理解PyTorch的自动微分机制), "Some Tricks of Trade": frozen weights and no_grad
-- define-by-run.

    L = 10 - (w1*a + w2*a),  with a = 4, w1 = 2 (trained) and w2 = 5 (frozen)

A tensor with requires_grad=False (a frozen layer) takes no part in the tape: w2*a records
nothing and w2.grad stays None. Under no_grad() (PyTorch 0.4's replacement for `volatile`)
nothing is recorded at all: inference builds no graph and keeps no buffers for a backward
that will never come. The static program of this pair gets the same by not asking.

    python examples/course/seed000_no_grad_dynamic.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

a = dy.tensor([4.0])
w1 = dy.tensor([2.0], requires_grad=True)  # trained
w2 = dy.tensor([5.0])                      # frozen: requires_grad=False

before = dy.tape_nodes_created()
L = 10 - (w1 * a + w2 * a)
print("L =", L)
print("tape nodes recorded:", dy.tape_nodes_created() - before,
      "(w1*a, the sum, the subtraction)")
L.backward()
print("w1.grad, w2.grad:", w1.grad, w2.grad)

with dy.no_grad():  # inference
    before = dy.tape_nodes_created()
    L = 10 - (w1 * a + w2 * a)
print("under no_grad: L =", L)
print("under no_grad: tape nodes recorded:", dy.tape_nodes_created() - before)
