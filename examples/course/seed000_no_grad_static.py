"""Seed 000 (理解PyTorch的自动微分机制), "Some Tricks of Trade": frozen weights and no_grad
-- define-then-run.

    L = 10 - (w1*a + w2*a),  with a = 4, w1 = 2 (trained) and w2 = 5 (frozen)

A static graph records nothing while it runs, so there is nothing to switch off. A frozen
weight is a variable with trainable=False: optimizers, which differentiate with respect to
sg.trainable_variables(), leave it alone. Inference is a run that fetches L and not its
gradient: the compiler prunes the graph to what the fetches need, so the code it runs for
L alone holds no gradient at all.

    python examples/course/seed000_no_grad_static.py
"""

import _course  # noqa: F401  (puts the checkout on sys.path)

import staticgrad as sg

a = sg.placeholder(sg.float32, [1], name="a")
w1 = sg.Variable([2.0], name="w1")                   # trained
w2 = sg.Variable([5.0], name="w2", trainable=False)  # frozen

L = 10 - (w1 * a + w2 * a)
trainable = sg.trainable_variables()
gradients = sg.gradients(L, trainable)
print("trainable variables:", [v.name for v in trainable])

with sg.Session() as sess:
    sess.run(sg.global_variables_initializer())
    feed = {a: [4.0]}
    print("L =", sess.run(L, feed))
    print("dL/dw1:", *sess.run(gradients, feed))
    # what each run executes: one line of generated code per op (Session.source prints them)
    print("ops run for L and its gradient:", len(sess.plan([L, gradients], feed).line_ops))
    print("ops run for L alone (inference):", len(sess.plan(L, feed).line_ops))
