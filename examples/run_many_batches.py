"""Build a graph once, run it many times: one compile per new feed signature.

A small MLP (4 -> 16 -> 3, softmax output) with weights from a fixed NumPy
RandomState. The placeholder x has shape [None, 4], so the batch size is free;
the Session specializes the generated code to each concrete batch size the first
time it sees it (the DEBUG log line "compiling ...") and reuses it afterwards.

    python examples/run_many_batches.py
"""

import logging
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
import staticgrad as sg  # noqa: E402

# Show the session's compile log on stdout, and count the compiles it reports.
logging.basicConfig(stream=sys.stdout, format="  [%(name)s] %(message)s")
session_log = logging.getLogger("staticgrad.session")
session_log.setLevel(logging.DEBUG)


class CompileCounter(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record):
        if record.getMessage().startswith("compiling"):
            self.count += 1


compiles = CompileCounter()
session_log.addHandler(compiles)

rs = np.random.RandomState(0)
x = sg.placeholder(sg.float32, [None, 4], name="x")
W1 = sg.Variable(rs.randn(4, 16).astype(np.float32) * 0.5, name="W1")
b1 = sg.Variable(np.zeros(16, np.float32), name="b1")
W2 = sg.Variable(rs.randn(16, 3).astype(np.float32) * 0.5, name="W2")
b2 = sg.Variable(np.zeros(3, np.float32), name="b2")
hidden = sg.nn.relu(sg.matmul(x, W1) + b1)
probs = sg.nn.softmax(sg.matmul(hidden, W2) + b2, name="probs")

data = np.random.RandomState(1)
with sg.Session() as sess:
    sess.run(sg.global_variables_initializer())
    for n in (1, 7, 32, 128, 7, 1, 128, 32):
        before = compiles.count
        out = sess.run(probs, {x: data.randn(n, 4).astype(np.float32)})
        status = "compiled" if compiles.count > before else "cache hit"
        print(f"batch {n:>3}: output shape {out.shape}, rows sum to "
              f"{out.sum(axis=1).mean():.4f}  ({status})")
    print(f"{compiles.count} compiles in all: one for the initializer, "
          "one per distinct batch size")
