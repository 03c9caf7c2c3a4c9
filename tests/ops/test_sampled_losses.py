"""nce_loss, sampled_softmax_loss and the log-uniform candidate sampler
(ops/sampled_losses.py): the sampler checked by its distribution, the losses against their
formulas written by hand in NumPy, for given samples, and their gradients by finite
differences."""

import math

import numpy as np
import pytest

import staticgrad as sg
from tests.conftest import numeric_grad

RNG = np.random.default_rng(15)
V, D, B = 12, 3, 4
W, BIAS = RNG.normal(size=(V, D)), RNG.normal(size=V)
X = RNG.normal(size=(B, D))
LABELS = np.array([[1], [5], [5], [11]])
SAMPLED = np.array([0, 5, 7])
TRUE_COUNT, SAMPLED_COUNT = RNG.uniform(0.1, 0.9, (B, 1)), RNG.uniform(0.1, 0.9, 3)


def _logits(x, remove_hits):
    true = (x * W[LABELS[:, 0]]).sum(1, keepdims=True) + BIAS[LABELS] - np.log(TRUE_COUNT)
    sampled = x @ W[SAMPLED].T + BIAS[SAMPLED] - np.log(SAMPLED_COUNT)
    if remove_hits:
        sampled = np.where(LABELS == SAMPLED[None, :], np.finfo(np.float64).min, sampled)
    return np.concatenate([true, sampled], 1)


def _nce_by_hand(x):
    z = _logits(x, False)
    y = np.concatenate([np.ones((B, 1)), np.zeros((B, 3))], 1)
    return (np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))).sum(1)


def _softmax_by_hand(x):
    z = _logits(x, True)
    z = z - z.max(1, keepdims=True)
    return -(z[:, 0] - np.log(np.exp(z).sum(1)))


@pytest.mark.parametrize("loss, by_hand", [("nce_loss", _nce_by_hand),
                                           ("sampled_softmax_loss", _softmax_by_hand)])
def test_the_losses_against_their_formulas_for_given_samples(g, loss, by_hand):
    x = sg.placeholder(sg.float64, [B, D], name="x")
    values = (sg.constant(SAMPLED, dtype=sg.int64), sg.constant(TRUE_COUNT),
              sg.constant(SAMPLED_COUNT))
    out = getattr(sg.nn, loss)(sg.constant(W), sg.constant(BIAS), LABELS, x, 3, V,
                               sampled_values=values)
    (dx,) = sg.gradients(sg.reduce_sum(out), [x])
    got, grad = sg.Session().run([out, dx], {x: X})
    np.testing.assert_allclose(got, by_hand(X), rtol=1e-10)
    np.testing.assert_allclose(grad, numeric_grad(lambda v: by_hand(v).sum(), X), rtol=1e-6)


def test_the_sampler_draws_log_uniformly(g):
    sg.set_random_seed(3)
    drawn, _, expected = sg.nn.log_uniform_candidate_sampler([[0]], 1, 4000, False, 10)
    ids, counts = sg.Session().run([drawn, expected])
    p = np.array([math.log((k + 2) / (k + 1)) / math.log(11) for k in range(10)])
    freq = np.bincount(ids, minlength=10) / 4000
    assert np.abs(freq - p).max() < 0.03 and ids.dtype == np.int64
    np.testing.assert_allclose(counts, p[ids] * 4000, rtol=1e-6)


def test_unique_draws_are_distinct_and_their_counts_count_the_draws(g):
    drawn = sg.get_default_graph()
    sampled, true_count, sampled_count = sg.nn.log_uniform_candidate_sampler(
        [[2], [3]], 1, 8, True, 10)
    raw = [op for op in drawn.get_operations() if op.type == "LogUniformCandidates"][0]
    ids, tc, sc, both = sg.Session().run([sampled, true_count, sampled_count,
                                          raw.outputs[0]])
    tries = both[-1]
    assert len(set(ids.tolist())) == 8 and tries >= 8
    p = np.array([math.log((k + 2) / (k + 1)) / math.log(11) for k in range(10)])
    np.testing.assert_allclose(sc, -np.expm1(tries * np.log1p(-p[ids])), rtol=1e-5)
    np.testing.assert_allclose(tc[:, 0], -np.expm1(tries * np.log1p(-p[[2, 3]])), rtol=1e-5)
    with pytest.raises(ValueError, match=r"num_sampled \(11\) is more than range_max \(10\)"):
        sg.nn.log_uniform_candidate_sampler([[0]], 1, 11, True, 10)


def test_a_word2vec_step_trains(g):
    sg.set_random_seed(5)
    emb = sg.Variable(RNG.uniform(-1, 1, (V, D)), name="emb")
    w = sg.Variable(np.zeros((V, D)), name="nce_w")
    b = sg.Variable(np.zeros(V), name="nce_b")
    words = sg.placeholder(sg.int64, [None], name="words")
    context = sg.placeholder(sg.int64, [None, 1], name="context")
    loss = sg.reduce_mean(sg.nn.nce_loss(w, b, context, sg.nn.embedding_lookup(emb, words),
                                         4, V))
    train = sg.train.GradientDescentOptimizer(0.5).minimize(loss)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    feed = {words: np.arange(V), context: ((np.arange(V) + 1) % V)[:, None]}
    first = sess.run(loss, feed)
    for _ in range(60):
        sess.run(train, feed)
    assert sess.run(loss, feed) < 0.7 * first
