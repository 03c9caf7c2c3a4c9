"""W1: the weights chain of seed 000, forward and the four gradients, per call.

    b = w1*a, c = w2*a, d = w3*b + w4*c, L = 10 - d;  a = [4.], w = [2.], [5.], [9.], [7.]

float32 arrays of shape (1,), `a` fed on every call, the weights held by each system (variables,
shared variables, leaf tensors). One call computes L and dL/dw1..dL/dw4 = -36, -28, -8, -20.
The arrays are so small that a call is nearly all per-call overhead.
"""

from __future__ import annotations

import numpy as np

import staticgrad as sg

from . import common, peers

A = np.array([4.0], np.float32)
W = tuple(np.array([v], np.float32) for v in (2, 5, 9, 7))


def hand_numpy():
    w1, w2, w3, w4 = W
    ten = np.float32(10.0)

    def call():
        b = w1 * A
        c = w2 * A
        L = ten - (w3 * b + w4 * c)
        return L, -(w3 * A), -(w4 * A), -b, -c
    return call, common.as_arrays(call())


def staticgrad_graph():
    g = sg.Graph()
    with g.as_default():
        a = sg.placeholder(sg.float32, [1], name="a")
        ws = [sg.Variable(w, name=f"w{i}") for i, w in enumerate(W, 1)]
        w1, w2, w3, w4 = ws
        L = 10.0 - (w3 * (w1 * a) + w4 * (w2 * a))
        fetches = [L, *sg.gradients(L, ws)]
        init = sg.global_variables_initializer()
    return g, a, fetches, init


def staticgrad_way(options, fast: bool):
    def setup():
        g, a, fetches, init = staticgrad_graph()
        sess = common.session(g, options)
        sess.run(init)
        if fast:
            fn = sess.make_callable(fetches, [a])
            call = lambda: fn(A)
        else:
            feed = {a: A}
            call = lambda: sess.run(fetches, feed)
        return call, common.as_arrays(call())
    return setup


def tf1():
    tf = peers.load("tf1")
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [1], name="a")
        ws = [tf.Variable(w, name=f"w{i}") for i, w in enumerate(W, 1)]
        w1, w2, w3, w4 = ws
        L = 10.0 - (w3 * (w1 * a) + w4 * (w2 * a))
        fetches = [L, *tf.gradients(L, ws)]
        init = tf.global_variables_initializer()
    sess = peers.tf_session(tf, g)
    sess.run(init)
    feed = {a: A}
    call = lambda: sess.run(fetches, feed)
    return call, common.as_arrays(call())


def torch():
    torch = peers.load("torch")
    ws = [torch.tensor(w, requires_grad=True) for w in W]
    w1, w2, w3, w4 = ws

    def call():
        a = torch.from_numpy(A)
        L = 10.0 - (w3 * (w1 * a) + w4 * (w2 * a))
        return (L, *torch.autograd.grad(L, ws))
    return call, common.as_arrays(call())


def jax():
    jax = peers.load("jax")

    def loss(ws, a):
        w1, w2, w3, w4 = ws
        return (10.0 - (w3 * (w1 * a) + w4 * (w2 * a)))[0]

    step = jax.jit(jax.value_and_grad(loss))
    ws = tuple(jax.device_put(w) for w in W)
    call = lambda: jax.block_until_ready(step(ws, A))
    first = call()
    return call, common.as_arrays([first[0], *first[1]])


def pytensor():
    pytensor = peers.load("pytensor")
    pt = pytensor.tensor
    a = pt.vector("a", dtype="float32")
    ws = [pytensor.shared(w, name=f"w{i}") for i, w in enumerate(W, 1)]
    w1, w2, w3, w4 = ws
    L = 10.0 - (w3 * (w1 * a) + w4 * (w2 * a))
    fn = pytensor.function([a], [L, *pytensor.grad(L.sum(), ws)])
    call = lambda: fn(A)
    return call, common.as_arrays(call())


WORKLOAD = common.Workload(
    key="W1", title="weights chain of seed 000, forward + 4 gradients, per call",
    unit="us", scale=1e6, number=2000, quick_number=50,
    hand=hand_numpy, staticgrad_way=staticgrad_way,
    peer_setups={"tf1": tf1, "torch": torch, "jax": jax, "pytensor": pytensor})
