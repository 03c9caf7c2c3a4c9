"""dy.optim (PyTorch's rules) against staticgrad.train (TF1's rules): the same float64 model
from the same start, trained by the graph side's optimizer of the same name, gives the same
numbers wherever the two published rules agree. Where they agree, and where not:

- SGD = GradientDescentOptimizer. PyTorch's weight_decay `wd` is TF1's descent on the loss
  plus `wd / 2 * |w|^2` (TF1's optimizers have no weight decay of their own).
- SGD(momentum, dampening=0) = MomentumOptimizer, Nesterov's too: TF1's accumulator starts at
  0, so its first value, `0 * momentum + g`, is PyTorch's first buffer `g`; TF1 multiplies the
  accumulator by lr where PyTorch multiplies the buffer, the same thing for a constant lr (a
  changing lr weighs past gradients differently). Dampening has no TF1 counterpart.
- Adam = AdamOptimizer only with epsilon = 0. TF1 divides by `sqrt(v) + eps` and puts the
  bias correction into the step size, PyTorch divides by `sqrt(v / (1 - beta2^t)) + eps`: TF1's
  eps is PyTorch's `eps / sqrt(1 - beta2^t)`, a different number at each step, so no eps
  makes them equal; they differ by about eps / sqrt(v_hat) relative (tiny for the default 1e-8
  unless gradients are tiny, large for eps ~ 1). amsgrad and AdamW have no TF1 counterpart.
- Adagrad(lr_decay=0, eps=0, initial_accumulator_value=a) = AdagradOptimizer(a). PyTorch's
  default accumulator is 0 (TF1 refuses a value that is not positive) and its eps is 1e-10.
- RMSprop(alpha=decay, eps=0) = RMSPropOptimizer(decay, epsilon=0) once PyTorch's
  square_avg starts at ones, as TF1's does (here through load_state_dict): PyTorch starts it
  at zeros and adds eps outside the square root, TF1 inside; with momentum, TF1's accumulator
  holds lr times PyTorch's buffer (the same for a constant lr). Centered too.
"""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy

from .quadratic import B0, W0, X, Y

STEPS = 6


def _graph_run(make_optimizer, weight_decay=0.0):
    """[w, b] after each step of the graph side's optimizer on the quadratic problem."""
    with sg.Graph().as_default():
        w = sg.Variable(W0, name="w")
        b = sg.Variable(B0, name="b")
        loss = sg.reduce_mean(sg.square(sg.matmul(sg.constant(X), w) + b - sg.constant(Y)))
        if weight_decay:
            loss += weight_decay / 2 * (sg.reduce_sum(sg.square(w)) + sg.reduce_sum(sg.square(b)))
        train = make_optimizer().minimize(loss)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            after = []
            for _ in range(STEPS):
                sess.run(train)
                after.append(sess.run([w, b]))
    return after


def _dynamic_run(make_optimizer, state=None):
    """[w, b] after each step of a dy.optim optimizer (one group), its state first replaced
    by `state(param)` for each param when given."""
    w, b = dy.tensor(W0, requires_grad=True), dy.tensor(B0, requires_grad=True)
    opt = make_optimizer([w, b])
    if state is not None:
        opt.load_state_dict({"state": {0: state(w), 1: state(b)},
                             "param_groups": opt.state_dict()["param_groups"]})
    after = []
    for _ in range(STEPS):
        opt.zero_grad()
        r = dy.tensor(X) @ w + b - dy.tensor(Y)
        (r * r).mean().backward()
        opt.step()
        after.append([w.detach().numpy().copy(), b.detach().numpy().copy()])
    return after


def _assert_agree(graph, dynamic, what, rtol=1e-10, atol=1e-12):
    for step, (g, d) in enumerate(zip(graph, dynamic), 1):
        for name, gv, dv in zip("wb", g, d):
            np.testing.assert_allclose(dv, gv, rtol=rtol, atol=atol,
                                       err_msg=f"{what}: {name} after step {step}")


def _rms_state(centered, momentum):
    def state(p):
        s = {"step": dy.tensor(0.0), "square_avg": dy.ones_like(p)}
        if momentum:
            s["momentum_buffer"] = dy.zeros_like(p)
        if centered:
            s["grad_avg"] = dy.zeros_like(p)
        return s
    return state


AGREE = {
    "SGD": (lambda: sg.train.GradientDescentOptimizer(0.1),
            lambda params: dy.optim.SGD(params, lr=0.1), None),
    "Momentum": (lambda: sg.train.MomentumOptimizer(0.1, 0.9),
                 lambda params: dy.optim.SGD(params, lr=0.1, momentum=0.9), None),
    "Nesterov": (lambda: sg.train.MomentumOptimizer(0.1, 0.8, use_nesterov=True),
                 lambda params: dy.optim.SGD(params, lr=0.1, momentum=0.8, nesterov=True),
                 None),
    "Adam, epsilon 0": (lambda: sg.train.AdamOptimizer(0.05, 0.8, 0.99, epsilon=0.0),
                        lambda params: dy.optim.Adam(params, lr=0.05, betas=(0.8, 0.99),
                                                     eps=0.0), None),
    "Adagrad, eps 0": (lambda: sg.train.AdagradOptimizer(0.2, initial_accumulator_value=0.3),
                       lambda params: dy.optim.Adagrad(params, lr=0.2, eps=0.0,
                                                       initial_accumulator_value=0.3), None),
    "RMSProp from ones, eps 0": (
        lambda: sg.train.RMSPropOptimizer(0.01, decay=0.9, epsilon=0.0),
        lambda params: dy.optim.RMSprop(params, lr=0.01, alpha=0.9, eps=0.0),
        _rms_state(False, 0.0)),
    "RMSProp centered, momentum": (
        lambda: sg.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, epsilon=0.0,
                                          centered=True),
        lambda params: dy.optim.RMSprop(params, lr=0.01, alpha=0.8, eps=0.0, momentum=0.5,
                                        centered=True),
        _rms_state(True, 0.5)),
}


@pytest.mark.parametrize("name", AGREE)
def test_where_the_rules_agree_the_numbers_agree(name):
    graph_optimizer, dynamic_optimizer, state = AGREE[name]
    _assert_agree(_graph_run(graph_optimizer), _dynamic_run(dynamic_optimizer, state), name)


def test_pytorchs_weight_decay_is_tf1s_l2_loss():
    _assert_agree(_graph_run(lambda: sg.train.MomentumOptimizer(0.1, 0.9), weight_decay=0.2),
                  _dynamic_run(lambda p: dy.optim.SGD(p, lr=0.1, momentum=0.9,
                                                      weight_decay=0.2)),
                  "SGD weight_decay")


def test_adams_epsilons_differ_by_the_bias_correction():
    """Close for eps 1e-8 (about eps / sqrt(v_hat) apart); far apart for eps 0.1."""
    for eps, close in ((1e-8, True), (0.1, False)):
        graph = _graph_run(lambda eps=eps: sg.train.AdamOptimizer(0.05, epsilon=eps))
        dynamic = _dynamic_run(lambda p, eps=eps: dy.optim.Adam(p, lr=0.05, eps=eps))
        gap = max(np.abs(g - d).max() for gs, ds in zip(graph, dynamic) for g, d in zip(gs, ds))
        assert (gap < 1e-6) == close, f"eps {eps}: the runs are {gap} apart"


def test_rmsprop_defaults_differ():
    """PyTorch's square_avg starts at 0 (the first steps are about lr / sqrt(1 - alpha)
    long), TF1's at 1 (about lr * |g| long)."""
    graph = _graph_run(lambda: sg.train.RMSPropOptimizer(0.01, decay=0.9, epsilon=1e-8))
    dynamic = _dynamic_run(lambda p: dy.optim.RMSprop(p, lr=0.01, alpha=0.9))
    first_graph, first_dynamic = (np.abs(run[0][0] - W0).max() for run in (graph, dynamic))
    assert first_dynamic == pytest.approx(0.01 / np.sqrt(0.1), rel=1e-3)
    assert first_graph < first_dynamic / 2
