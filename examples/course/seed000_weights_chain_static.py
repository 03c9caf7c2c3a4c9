"""Seed 000 (理解PyTorch的自动微分机制), the weights chain -- define-then-run.

    b = w1*a,  c = w2*a,  d = w3*b + w4*c,  L = 10 - d,  with a = 4 and w = 2, 5, 9, 7

The lines below only declare: `a` is a placeholder, the weights are variables, L is a node of
a graph and holds no number. sg.gradients adds the backward pass to the same graph as more
nodes, before anything runs. A Session then compiles what each run needs and runs it with
a = 4 fed in. Unlike the dynamic program's tape, the graph stays: running the gradients again
is the normal case.

    python examples/course/seed000_weights_chain_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg

a = sg.placeholder(sg.float32, [1], name="a")
weights = [sg.Variable([float(i)], name=f"w{n}") for n, i in enumerate((2, 5, 9, 7), start=1)]
w1, w2, w3, w4 = weights

b = w1 * a
c = w2 * a
d = w3 * b + w4 * c
L = 10 - d
print("L, declared:", L)
graph = sg.get_default_graph()
forward_ops = len(graph.get_operations())
gradients = sg.gradients(L, weights)  # the backward pass: more nodes of the same graph
backward_ops = graph.get_operations()[forward_ops:]
print(f"the graph: {forward_ops} ops declared, then {len(backward_ops)} added by sg.gradients:",
      " ".join(op.type for op in backward_ops))

with sg.Session() as sess:
    sess.run(sg.global_variables_initializer())
    feed = {a: [4.0]}
    for name, value in zip("bcdL", sess.run([b, c, d, L], feed)):
        print(f"{name} =", value)
    for index, gradient in enumerate(sess.run(gradients, feed), start=1):
        print(f"Gradient of w{index} w.r.t to L: {gradient[0]}")
    print("the gradients, run again:", *sess.run(gradients, feed))
