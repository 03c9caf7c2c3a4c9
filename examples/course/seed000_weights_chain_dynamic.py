"""Seed 000 (理解PyTorch的自动微分机制), the weights chain -- define-by-run.

    b = w1*a,  c = w2*a,  d = w3*b + w4*c,  L = 10 - d,  with a = 4 and w = 2, 5, 9, 7

Each line runs at once (L is -202 as soon as it is written) and records a node on a tape:
L.grad_fn and its next_functions are the graph, made on the fly. L.backward() walks the tape
from L to the weights, puts dL/dw into each w.grad, and frees the tape: a second backward()
fails. The static program of this pair declares the graph first, and the graph stays.

    python examples/course/seed000_weights_chain_dynamic.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad.dynamic as dy

a = dy.tensor([4.0])
weights = [dy.tensor([float(i)], requires_grad=True) for i in (2, 5, 9, 7)]
w1, w2, w3, w4 = weights

b = w1 * a
c = w2 * a
d = w3 * b + w4 * c
L = 10 - d
print("b =", b)
print("c =", c)
print("d =", d)
print("L =", L)


def show_tape(fn, depth=1):
    """The tape below fn, one node per line: grad_fn and, through next_functions, the nodes
    its gradient goes to. AccumulateGrad adds into a leaf's .grad; `a` needs none."""
    leaf = f"  (into the .grad of {fn.variable})" if fn.name() == "AccumulateGrad" else ""
    print("  " * depth + fn.name() + leaf)
    for next_fn, _ in fn.next_functions:
        if next_fn is not None:
            show_tape(next_fn, depth + 1)


print("the tape, from L.grad_fn:")
show_tape(L.grad_fn)

L.backward()
for index, weight in enumerate(weights, start=1):
    gradient, *_ = weight.grad.data
    print(f"Gradient of w{index} w.r.t to L: {gradient}")

try:
    L.backward()
except RuntimeError as error:
    print("a second L.backward():", str(error).split(" (")[0])
