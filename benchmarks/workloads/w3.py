"""W3: an elementwise function of a million float32 values and its gradient.

    y = sum(tanh(1.5x + 0.3) * sigmoid(x) + 0.5 exp(-x^2) + log1p(x^2)),   dy/dx

x holds 1,000,000 float32 values drawn from a standard normal (seed 0), fed on every call as a
NumPy array; every way returns y and dy/dx. Hand NumPy writes the derivative by hand, with
t = tanh(1.5x + 0.3), s = sigmoid(x), e = exp(-x^2):

    dy/dx = 1.5 (1 - t^2) s + t s (1 - s) - x e + 2x / (1 + x^2)
"""

from __future__ import annotations

import numpy as np

import staticgrad as sg

from . import common, peers

SIZE = 1_000_000
QUICK_SIZE = 100_000  # --quick: a smoke run


def data() -> np.ndarray:
    return np.random.default_rng(0).standard_normal(SIZE).astype(np.float32)


def by_hand(x):
    """W3's value and gradient as an expert writes them in NumPy, each value computed once."""
    x2 = x * x
    t = np.tanh(1.5 * x + 0.3)
    s = 1.0 / (1.0 + np.exp(-x))
    e = np.exp(-x2)
    y = np.sum(t * s + 0.5 * e + np.log1p(x2))
    dx = 1.5 * (1.0 - t * t) * s + t * s * (1.0 - s) - x * e + 2.0 * x / (1.0 + x2)
    return y, dx


def hand_numpy():
    x = data()

    def call():
        return by_hand(x)
    return call, common.as_arrays(call())


def graph():
    """(graph, x, [y, dy/dx]): W3 in staticgrad, x a float32 placeholder of any length."""
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [None], name="x")
        y = sg.reduce_sum(sg.tanh(1.5 * x + 0.3) * sg.sigmoid(x) + 0.5 * sg.exp(-x ** 2)
                          + sg.log1p(x ** 2))
        fetches = [y, *sg.gradients(y, [x])]
    return g, x, fetches


def staticgrad_way(options, fast: bool):
    def setup():
        xv = data()
        g, x, fetches = graph()
        sess = common.session(g, options)
        if fast:
            fn = sess.make_callable(fetches, [x])
            call = lambda: fn(xv)
        else:
            feed = {x: xv}
            call = lambda: sess.run(fetches, feed)
        return call, common.as_arrays(call())
    return setup


def tf1():
    tf = peers.load("tf1")
    xv = data()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        y = tf.reduce_sum(tf.tanh(1.5 * x + 0.3) * tf.sigmoid(x) + 0.5 * tf.exp(-x ** 2)
                          + tf.log1p(x ** 2))
        fetches = [y, *tf.gradients(y, [x])]
    sess = peers.tf_session(tf, g)
    feed = {x: xv}
    call = lambda: sess.run(fetches, feed)
    return call, common.as_arrays(call())


def torch():
    torch = peers.load("torch")
    xv = data()

    def call():
        x = torch.from_numpy(xv).requires_grad_()
        y = torch.sum(torch.tanh(1.5 * x + 0.3) * torch.sigmoid(x) + 0.5 * torch.exp(-x ** 2)
                      + torch.log1p(x ** 2))
        return (y, *torch.autograd.grad(y, [x]))
    return call, common.as_arrays(call())


def jax():
    jax = peers.load("jax")
    jnp = jax.numpy
    xv = data()

    def f(x):
        return jnp.sum(jnp.tanh(1.5 * x + 0.3) * jax.nn.sigmoid(x) + 0.5 * jnp.exp(-x ** 2)
                       + jnp.log1p(x ** 2))

    step = jax.jit(jax.value_and_grad(f))
    call = lambda: jax.block_until_ready(step(xv))
    return call, common.as_arrays(call())


def pytensor():
    pytensor = peers.load("pytensor")
    pt = pytensor.tensor
    xv = data()
    x = pt.vector("x", dtype="float32")
    y = pt.sum(pt.tanh(1.5 * x + 0.3) * pt.sigmoid(x) + 0.5 * pt.exp(-x ** 2)
               + pt.log1p(x ** 2))
    fn = pytensor.function([x], [y, pytensor.grad(y, x)])
    call = lambda: fn(xv)
    return call, common.as_arrays(call())


WORKLOAD = common.Workload(
    key="W3", title="y = sum(tanh(1.5x+0.3)*sigmoid(x) + 0.5*exp(-x^2) + log1p(x^2)) and dy/dx, "
                    "{size:,} float32",
    unit="ms", scale=1e3, number=5, quick_number=1,
    hand=hand_numpy, staticgrad_way=staticgrad_way,
    peer_setups={"tf1": tf1, "torch": torch, "jax": jax, "pytensor": pytensor},
    rtol=1e-4, atol=1e-5, fusion_matters=True)
