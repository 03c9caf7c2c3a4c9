"""W4: build + differentiate + compile + first run of an N-op elementwise chain.

    y_0 = x;  y_{i+1} = y_i * 1.0001 (i even) or sin(y_i) (i odd);  L = sum(y_N);  dL/dx

x is 16 float32 values (the chain of `bench_gradient_scaling.py`, summed to a scalar so that
every system differentiates the same L). The clock runs from the first op built to the value
and gradient in hand: graph building, symbolic differentiation, compilation and the first run
for the graph systems; tracing, differentiation, XLA compilation and the first run for JAX;
one forward and one backward pass for PyTorch eager, which has nothing to compile. Hand NumPy
is the floor: the chain and its derivative computed directly, once, in a Python loop.

Each (way, N) runs in a fresh child process (`python benchmarks/suite.py --child w4 WAY N`):
nothing is cached from an earlier N, and a way that takes too long is stopped. Before the
clock starts the child runs a 10-op chain once, so that one-time start-up (TF's session and
kernel registry, XLA's client, PyTensor's compiled base modules) is not counted. PyTensor's
compile cache lies in a directory new to each suite run, so nothing comes from an earlier run.
The result of every way is checked against hand NumPy's (float32 sin differs slightly across
libraries, so the check is loose: rtol 1e-3). Peers' children run with Python's recursion
limit raised to 200,000 (PyTensor recurses over the graph's depth and stops with a
RecursionError from N = 1,000 on otherwise); staticgrad's run under the default limit.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import staticgrad as sg

from . import common, peers

SIZES = (100, 1000, 5000, 20000)
QUICK_SIZES = (100, 300)
HEADLINE_N = 5000
FACTOR = 1.0001
X = np.linspace(0.1, 1.6, 16, dtype=np.float32)
PEER_RECURSION_LIMIT = 200_000  # staticgrad runs under Python's default limit


class Clock:
    """Seconds of each phase, in order."""

    def __init__(self):
        self.phases, self.start = {}, time.perf_counter()
        self.last = self.start

    def lap(self, name):
        now = time.perf_counter()
        self.phases[name] = now - self.last
        self.last = now

    def total(self):
        return self.last - self.start


def hand_numpy(n, clock):
    c = np.float32(FACTOR)
    y, sin_inputs = X, []
    for i in range(n):
        if i % 2:
            sin_inputs.append(y)
            y = np.sin(y)
        else:
            y = y * c
    L = np.sum(y)
    grad = np.ones_like(X)
    for i in reversed(range(n)):
        grad = grad * (np.cos(sin_inputs.pop()) if i % 2 else c)
    clock.lap("run")
    return L, grad


def staticgrad_way(options):
    def way(n, clock):
        g = sg.Graph()
        with g.as_default():
            x = sg.placeholder(sg.float32, [16], name="x")
            y = x
            for i in range(n):
                y = sg.sin(y) if i % 2 else y * FACTOR
            L = sg.reduce_sum(y)
            clock.lap("build")
            dx, = sg.gradients(L, [x])
            clock.lap("gradients")
            sess = common.session(g, options)
            out = sess.run([L, dx], {x: X})
            clock.lap("compile_and_run")
        return out
    return way


def tf1(n, clock):
    tf = peers.load("tf1")
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [16], name="x")
        y = x
        for i in range(n):
            y = tf.sin(y) if i % 2 else y * FACTOR
        L = tf.reduce_sum(y)
        clock.lap("build")
        dx, = tf.gradients(L, [x])
        clock.lap("gradients")
        with peers.tf_session(tf, g) as sess:
            out = sess.run([L, dx], {x: X})
        clock.lap("compile_and_run")
    return out


def torch(n, clock):
    torch = peers.load("torch")
    x = torch.from_numpy(X).requires_grad_()
    y = x
    for i in range(n):
        y = torch.sin(y) if i % 2 else y * FACTOR
    L = torch.sum(y)
    clock.lap("forward")
    dx, = torch.autograd.grad(L, [x])
    clock.lap("backward")
    return L, dx


def jax(n, clock):
    jax = peers.load("jax")
    jnp = jax.numpy

    def f(x):
        y = x
        for i in range(n):
            y = jnp.sin(y) if i % 2 else y * FACTOR
        return jnp.sum(y)

    out = jax.block_until_ready(jax.jit(jax.value_and_grad(f))(X))
    clock.lap("trace_compile_and_run")
    return out


def pytensor(n, clock):
    pytensor = peers.load("pytensor")
    pt = pytensor.tensor
    x = pt.vector("x", dtype="float32")
    y = x
    for i in range(n):
        y = pt.sin(y) if i % 2 else y * FACTOR
    L = pt.sum(y)
    clock.lap("build")
    dx = pytensor.grad(L, x)
    clock.lap("gradients")
    fn = pytensor.function([x], [L, dx])
    clock.lap("compile")
    out = fn(X)
    clock.lap("run")
    return out


PEERS = {"tf1": tf1, "torch": torch, "jax": jax, "pytensor": pytensor}


def way_names(available) -> dict:
    """{way name: label} in the order they run."""
    names = {"hand_numpy": "hand NumPy (one direct evaluation)"}
    for name, (suffix, _) in common.staticgrad_variants().items():
        names[name] = f"staticgrad{suffix}"
    names.update({p: peers.LABELS[p] for p in available})
    return names


def way_function(name):
    if name == "hand_numpy":
        return hand_numpy
    variants = common.staticgrad_variants()
    if name in variants:
        return staticgrad_way(variants[name][1])
    return PEERS[name]


def child(name: str, n: int, ready) -> dict:
    """Run in the child process: warm up on 10 ops, call `ready()`, then time N ops once."""
    if name in peers.PEER_NAMES:  # deep graphs make some peers recurse deeply (PyTensor)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), PEER_RECURSION_LIMIT))
    fn = way_function(name)
    fn(10, Clock())
    ready()
    clock = Clock()
    got = common.as_arrays(fn(n, clock))
    want = common.as_arrays(hand_numpy(n, Clock()))
    return {"seconds": clock.total(), "phases": clock.phases,
            "check": common.mismatch(got, want, rtol=1e-3, atol=1e-6)}
