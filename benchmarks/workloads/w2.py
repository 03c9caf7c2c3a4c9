"""W2: one SGD step of a 784-512-512-10 ReLU MLP, softmax cross-entropy, batch 256, float32.

The definitions (sizes, batch, learning rate, initial weights, the staticgrad graph and the
hand-written NumPy step) are `benchmarks/bench_mlp_step.py`'s, imported from it. Every way
starts from the same weights; before timing, one step of each must give hand NumPy's loss and
updated weights. Each way keeps its own weights, updated in place where the system allows it.
"""

from __future__ import annotations

import bench_mlp_step as mlp
import numpy as np

from . import common, peers

NAMES = ("W1", "b1", "W2", "b2", "W3", "b3")


def hand_numpy():
    xb, yb = mlp.batch()
    hand = mlp.HandNumPy(mlp.initial_weights())
    loss = hand.step(xb, yb)
    first = common.as_arrays([loss, *hand.p])
    return (lambda: hand.step(xb, yb)), first


def staticgrad_way(options, fast: bool):
    def setup():
        xb, yb = mlp.batch()
        g, x, y, params, loss, train, init = mlp.build_graph(mlp.initial_weights())
        sess = common.session(g, options)
        sess.run(init)
        if fast:
            fn = sess.make_callable([loss, train], [x, y])
            call = lambda: fn(xb, yb)
        else:
            feed = {x: xb, y: yb}
            call = lambda: sess.run([loss, train], feed)
        first = common.as_arrays([call()[0], *sess.run(params)])
        return call, first
    return setup


def tf1():
    tf = peers.load("tf1")
    xb, yb = mlp.batch()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, mlp.SIZES[0]], name="x")
        y = tf.placeholder(tf.float32, [None, mlp.SIZES[-1]], name="y")
        params = [tf.Variable(w, name=n) for w, n in zip(mlp.initial_weights(), NAMES)]
        W1, b1, W2, b2, W3, b3 = params
        h1 = tf.nn.relu(tf.matmul(x, W1) + b1)
        h2 = tf.nn.relu(tf.matmul(h1, W2) + b2)
        logits = tf.matmul(h2, W3) + b3
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y,
                                                                         logits=logits))
        train = tf.train.GradientDescentOptimizer(mlp.LR).minimize(loss)
        init = tf.global_variables_initializer()
    sess = peers.tf_session(tf, g)
    sess.run(init)
    feed = {x: xb, y: yb}
    call = lambda: sess.run([loss, train], feed)
    first = common.as_arrays([call()[0], *sess.run(params)])
    return call, first


def torch():
    torch = peers.load("torch")
    xb, yb = mlp.batch()
    params = [torch.tensor(w, requires_grad=True) for w in mlp.initial_weights()]
    W1, b1, W2, b2, W3, b3 = params
    F = torch.nn.functional

    def call():
        x, y = torch.from_numpy(xb), torch.from_numpy(yb)
        h1 = F.relu(x @ W1 + b1)
        h2 = F.relu(h1 @ W2 + b2)
        loss = F.cross_entropy(h2 @ W3 + b3, y)  # y: class probabilities (one-hot)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(g, alpha=mlp.LR)
        return loss
    loss = call()
    return call, common.as_arrays([loss, *params])


def jax():
    jax = peers.load("jax")
    jnp = jax.numpy
    xb, yb = mlp.batch()

    def loss_fn(params, x, y):
        W1, b1, W2, b2, W3, b3 = params
        h1 = jax.nn.relu(x @ W1 + b1)
        h2 = jax.nn.relu(h1 @ W2 + b2)
        logp = jax.nn.log_softmax(h2 @ W3 + b3)
        return -jnp.mean(jnp.sum(y * logp, axis=1))

    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return loss, tuple(p - mlp.LR * g for p, g in zip(params, grads))

    step = jax.jit(step, donate_argnums=0)  # the old weights' buffers take the new ones
    state = {"params": tuple(jax.device_put(w) for w in mlp.initial_weights())}

    def call():
        loss, state["params"] = step(state["params"], xb, yb)
        return jax.block_until_ready(loss)
    loss = call()
    return call, common.as_arrays([loss, *state["params"]])


def pytensor():
    pytensor = peers.load("pytensor")
    pt = pytensor.tensor
    xb, yb = mlp.batch()
    x = pt.matrix("x", dtype="float32")
    y = pt.matrix("y", dtype="float32")
    params = [pytensor.shared(w, name=n) for w, n in zip(mlp.initial_weights(), NAMES)]
    W1, b1, W2, b2, W3, b3 = params
    h1 = pt.maximum(x @ W1 + b1, 0)
    h2 = pt.maximum(h1 @ W2 + b2, 0)
    logp = pt.special.log_softmax(h2 @ W3 + b3, axis=1)
    loss = -(y * logp).sum(axis=1).mean()
    grads = pytensor.grad(loss, params)
    fn = pytensor.function([x, y], loss, updates=[(p, p - np.float32(mlp.LR) * g)
                                                   for p, g in zip(params, grads)])
    call = lambda: fn(xb, yb)
    loss = call()
    return call, common.as_arrays([loss, *(p.get_value() for p in params)])


WORKLOAD = common.Workload(
    key="W2", title="784-512-512-10 ReLU MLP SGD step, batch 256",
    unit="ms", scale=1e3, number=5, quick_number=1,
    hand=hand_numpy, staticgrad_way=staticgrad_way,
    peer_setups={"tf1": tf1, "torch": torch, "jax": jax, "pytensor": pytensor},
    rtol=1e-4, atol=1e-6)
