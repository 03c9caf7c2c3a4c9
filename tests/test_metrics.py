"""sg.metrics (staticgrad/metrics.py): streaming metrics over batches against NumPy counts
written by hand; local variables, not saved, restarted by local_variables_initializer."""

import numpy as np
import pytest

import staticgrad as sg

RNG = np.random.default_rng(4)
BATCHES = [(RNG.integers(0, 2, 6), RNG.integers(0, 2, 6), RNG.uniform(0, 2, 6))
           for _ in range(3)]


@pytest.fixture
def feeds(g):
    labels = sg.placeholder(sg.int64, [None], name="labels")
    predictions = sg.placeholder(sg.int64, [None], name="predictions")
    weights = sg.placeholder(sg.float32, [None], name="weights")
    return labels, predictions, weights


def _stream(value, update, feeds, weighted=False):
    """The update op's answer after each batch, then the value's."""
    sess = sg.Session()
    sess.run(sg.local_variables_initializer())
    labels, predictions, weights = feeds
    seen = [sess.run(update, {labels: lab, predictions: pred, weights: w})
            for lab, pred, w in BATCHES]
    return seen, sess.run(value), sess


def _cumulative(fn):
    """fn of the batches so far, after each batch."""
    return [fn(*(np.concatenate([b[k] for b in BATCHES[:i + 1]]) for k in range(3)))
            for i in range(len(BATCHES))]


CASES = [
    ("accuracy", lambda f: sg.metrics.accuracy(f[0], f[1]),
     lambda lab, pred, w: (lab == pred).mean()),
    ("accuracy weighted", lambda f: sg.metrics.accuracy(f[0], f[1], weights=f[2]),
     lambda lab, pred, w: ((lab == pred) * w).sum() / w.sum()),
    ("mean", lambda f: sg.metrics.mean(f[2]), lambda lab, pred, w: w.mean()),
    ("mean_squared_error", lambda f: sg.metrics.mean_squared_error(f[0], f[2]),
     lambda lab, pred, w: ((lab - w) ** 2).mean()),
    ("root_mean_squared_error", lambda f: sg.metrics.root_mean_squared_error(f[0], f[2]),
     lambda lab, pred, w: np.sqrt(((lab - w) ** 2).mean())),
    ("mean_absolute_error", lambda f: sg.metrics.mean_absolute_error(f[0], f[2]),
     lambda lab, pred, w: np.abs(lab - w).mean()),
    ("precision", lambda f: sg.metrics.precision(f[0], f[1]),
     lambda lab, pred, w: (lab & pred).sum() / pred.sum()),
    ("recall", lambda f: sg.metrics.recall(f[0], f[1], weights=f[2]),
     lambda lab, pred, w: ((lab & pred) * w).sum() / (lab * w).sum()),
    ("true_positives", lambda f: sg.metrics.true_positives(f[0], f[1]),
     lambda lab, pred, w: (lab & pred).sum()),
    ("false_negatives", lambda f: sg.metrics.false_negatives(f[0], f[1]),
     lambda lab, pred, w: (lab & (1 - pred)).sum()),
    ("true_negatives", lambda f: sg.metrics.true_negatives(f[0], f[1]),
     lambda lab, pred, w: ((1 - lab) & (1 - pred)).sum()),
    ("false_positives", lambda f: sg.metrics.false_positives(f[0], f[1]),
     lambda lab, pred, w: ((1 - lab) & pred).sum()),
]


@pytest.mark.parametrize("make, by_hand", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_metric_counts_every_batch_so_far(feeds, make, by_hand):
    value, update = make(feeds)
    seen, final, _ = _stream(value, update, feeds)
    want = _cumulative(by_hand)
    np.testing.assert_allclose(seen, want, rtol=1e-5)
    np.testing.assert_allclose(final, want[-1], rtol=1e-5)


def test_a_last_dim_of_one_is_squeezed_away_as_tf1_does(g):
    labels = sg.placeholder(sg.int64, [None, 1], name="labels")
    logits = sg.placeholder(sg.float32, [None, 3], name="logits")
    acc, update = sg.metrics.accuracy(labels, sg.argmax(logits, 1))
    mse, mse_update = sg.metrics.mean_squared_error(labels, sg.argmax(logits, 1))
    sess = sg.Session()
    sess.run(sg.local_variables_initializer())
    lab = np.array([[0], [2], [1], [2]])
    lg = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]]
    assert sess.run([update, mse_update], {labels: lab, logits: lg}) == [0.75, 0.25]
    with pytest.raises(ValueError, match=r"labels of shape \(3,\) and predictions of shape "
                                         r"\(4,\) do not match"):
        sg.metrics.accuracy(sg.constant([1, 2, 3]), sg.constant([1, 2, 3, 4]))


def test_counts_are_local_restart_and_are_not_saved(feeds, tmp_path):
    value, update = sg.metrics.accuracy(feeds[0], feeds[1],
                                        metrics_collections=["my_metrics"],
                                        updates_collections=[sg.GraphKeys.UPDATE_OPS])
    assert sg.get_collection("my_metrics") == [value]
    assert update in sg.get_collection(sg.GraphKeys.UPDATE_OPS)
    assert len(sg.local_variables()) == 2 and not sg.global_variables()
    _, _, sess = _stream(value, update, feeds)
    sess.run(sg.local_variables_initializer())
    assert sess.run(value) == 0.0  # (nothing counted: 0, as TF1's)
    w = sg.Variable(1.0, name="w")
    sess.run(w.initializer)
    saved = sg.train.Saver().save(sess, str(tmp_path / "model"))
    assert [name for name, _ in sg.train.list_variables(saved)] == ["w"]


def _auc_by_hand(labels, scores, weights, num_thresholds, curve):
    eps = 1e-7
    cuts = [0.0 - eps, *[(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)],
            1.0 + eps]
    tp, fn, tn, fp = (np.array([((scores > c) == s) @ ((labels == lv) * weights)
                                for c in cuts])
                      for s, lv in ((True, 1), (False, 1), (False, 0), (True, 0)))
    recall = tp / (tp + fn + eps)
    x, y = (fp / (fp + tn + eps), recall) if curve == "ROC" else (recall, tp / (tp + fp + eps))
    return float(((x[:-1] - x[1:]) * (y[:-1] + y[1:]) / 2).sum())


def _mann_whitney(labels, scores):
    """The exact area under the ROC curve: the chance a positive outscores a negative."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    return float(((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])).mean())


@pytest.mark.parametrize("curve", ["ROC", "PR"])
def test_auc_over_batches_against_its_formula_by_hand(g, curve):
    labels = sg.placeholder(sg.int64, [None], name="labels")
    scores = sg.placeholder(sg.float32, [None], name="scores")
    weights = sg.placeholder(sg.float32, [None], name="weights")
    value, update = sg.metrics.auc(labels, scores, weights, num_thresholds=50, curve=curve)
    sess = sg.Session()
    sess.run(sg.local_variables_initializer())
    rng = np.random.default_rng(6)
    seen = []
    for _ in range(3):
        lab = rng.integers(0, 2, 40)
        sc = np.clip(lab * 0.3 + rng.uniform(0, 0.7, 40), 0, 1).astype(np.float32)
        w = rng.uniform(0.5, 1.5, 40).astype(np.float32)
        seen.append((lab, sc, w))
        got = sess.run(update, {labels: lab, scores: sc, weights: w})
        every = [np.concatenate(k) for k in zip(*seen)]
        np.testing.assert_allclose(got, _auc_by_hand(*every, 50, curve), rtol=1e-5)
    np.testing.assert_allclose(sess.run(value), got, rtol=1e-6)


def test_auc_with_many_thresholds_nears_the_exact_area(g):
    rng = np.random.default_rng(7)
    lab = rng.integers(0, 2, 300)
    sc = np.clip(lab * 0.2 + rng.uniform(0, 0.8, 300), 0, 1)
    value, update = sg.metrics.auc(sg.constant(lab), sg.constant(sc), num_thresholds=2000)
    sess = sg.Session()
    sess.run(sg.local_variables_initializer())
    assert abs(sess.run(update) - _mann_whitney(lab, sc)) < 2e-3
    with pytest.raises(ValueError, match=r"curve must be 'ROC' or 'PR'"):
        sg.metrics.auc(sg.constant(lab), sg.constant(sc), curve="DET")
