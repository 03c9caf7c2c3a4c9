"""`sg.metrics`: TF1's streaming metrics. Each returns (value, update_op): the update op adds
a batch to counts kept in local variables (LOCAL_VARIABLES and METRIC_VARIABLES
collections) and gives the metric over every batch so far; the value reads it without
counting. `sg.local_variables_initializer()` starts the counts afresh.

    acc, update = sg.metrics.accuracy(labels, tf.argmax(logits, 1))
    sess.run(sg.local_variables_initializer())
    for batch in batches:
        sess.run(update, feed(batch))
    print(sess.run(acc))

`weights` (broadcast against the values) weigh each element; a metric of nothing counted yet
is 0, as TF1's.
"""

from __future__ import annotations

from . import _namespace
from . import dtypes as _dt
from .errors import here
from .graph import GraphKeys, add_to_collections, name_scope
from .ops import math_ops as M
from .ops.array_ops import ones_like, reshape, squeeze, zeros
from .ops.conversion import convert_to_tensor
from .ops.reduction_ops import reduce_sum
from .ops.state_ops import assign_add
from .variables import Variable

__all__ = ["accuracy", "auc", "mean", "mean_absolute_error", "mean_squared_error",
           "root_mean_squared_error", "precision", "recall", "true_positives",
           "false_positives", "false_negatives", "true_negatives"]


def _local(name: str, dtype=_dt.float32, shape=()) -> Variable:
    """A count of a metric (a scalar, or `shape`), 0 at first: a local variable, not saved
    by a Saver."""
    return Variable(lambda: zeros(list(shape), dtype), trainable=False, name=name,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def _collect(value, update, metrics_collections, updates_collections):
    if metrics_collections:
        add_to_collections(metrics_collections, value)
    if updates_collections:
        add_to_collections(updates_collections, update)
    return value, update


def _matched(labels, predictions, dtype=None):
    """labels and predictions of one shape (a last dim of 1 on one side squeezed away, as
    TF1's metrics do), predictions cast to the labels' dtype (or both to `dtype`)."""
    labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is not None and pr is not None:
        if lr == pr + 1 and labels.shape.dims[-1] in (1, None):
            labels = squeeze(labels, [-1])
        elif pr == lr + 1 and predictions.shape.dims[-1] in (1, None):
            predictions = squeeze(predictions, [-1])
        if not labels.shape.is_compatible_with(predictions.shape):
            raise ValueError(f"labels of shape {labels.shape} and predictions of shape "
                             f"{predictions.shape} do not match ("
                             f"{here()})")
    if dtype is not None:
        return M.cast(labels, dtype), M.cast(predictions, dtype)
    return labels, M.cast(predictions, labels.dtype)


def _weighted(values, weights):
    """(sum of values * weights, sum of weights), the weights broadcast to the values."""
    values = M.cast(convert_to_tensor(values), _dt.float32)
    weights = ones_like(values) if weights is None else \
        M.cast(convert_to_tensor(weights), _dt.float32) * ones_like(values)
    return reduce_sum(values * weights), reduce_sum(weights)


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of every value seen: (mean, update_op)."""
    with name_scope(name, "mean"):
        total, count = _local("total"), _local("count")
        batch_total, batch_count = _weighted(values, weights)
        value = M.div_no_nan(total, count, name="value")
        update = M.div_no_nan(assign_add(total, batch_total), assign_add(count, batch_count),
                              name="update_op")
        return _collect(value, update, metrics_collections, updates_collections)


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The fraction of predictions equal to their labels: (accuracy, update_op)."""
    with name_scope(name, "accuracy"):
        labels, predictions = _matched(labels, predictions)
        return mean(M.equal(labels, predictions), weights, metrics_collections,
                    updates_collections, name="mean")


def _error(kind: str, fn):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with name_scope(name, kind):
            labels, predictions = _matched(labels, predictions, _dt.float32)
            return mean(fn(labels - predictions), weights, metrics_collections,
                        updates_collections, name="mean")
    metric.__name__ = metric.__qualname__ = kind
    return metric


mean_absolute_error = _error("mean_absolute_error", M.abs)
mean_absolute_error.__doc__ = "The mean of |labels - predictions|: (value, update_op)."
mean_squared_error = _error("mean_squared_error", M.square)
mean_squared_error.__doc__ = "The mean of (labels - predictions) ** 2: (value, update_op)."


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """The square root of mean_squared_error: (value, update_op)."""
    with name_scope(name, "root_mean_squared_error"):
        value, update = mean_squared_error(labels, predictions, weights, name="mse")
        return _collect(M.sqrt(value), M.sqrt(update), metrics_collections,
                        updates_collections)


def _counter(kind: str, label_true: bool, predicted_true: bool, doc: str):
    """A count of the (weighted) elements whose label and prediction are as given."""
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with name_scope(name, kind):
            labels, predictions = _matched(labels, predictions, _dt.bool_)
            hit = M.logical_and(labels if label_true else M.logical_not(labels),
                                predictions if predicted_true else M.logical_not(predictions))
            count = _local("count")
            batch, _ = _weighted(hit, weights)
            return _collect(count, assign_add(count, batch, name="update_op"),
                            metrics_collections, updates_collections)
    metric.__name__ = metric.__qualname__ = kind
    metric.__doc__ = f"The count of elements {doc}: (count, update_op)."
    return metric


true_positives = _counter("true_positives", True, True,
                          "true in both labels and predictions")
false_positives = _counter("false_positives", False, True,
                           "predicted true whose label is false")
false_negatives = _counter("false_negatives", True, False,
                           "predicted false whose label is true")
true_negatives = _counter("true_negatives", False, False,
                          "false in both labels and predictions")


def _ratio(kind: str, other, doc: str):
    """true positives / (true positives + `other`)."""
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with name_scope(name, kind):
            tp, tp_update = true_positives(labels, predictions, weights)
            more, more_update = other(labels, predictions, weights)
            value = M.div_no_nan(tp, tp + more, name="value")
            update = M.div_no_nan(tp_update, tp_update + more_update, name="update_op")
            return _collect(value, update, metrics_collections, updates_collections)
    metric.__name__ = metric.__qualname__ = kind
    metric.__doc__ = doc
    return metric


precision = _ratio("precision", false_positives,
                   "true positives / (true positives + false positives): (precision, "
                   "update_op).")
recall = _ratio("recall", false_negatives,
                "true positives / (true positives + false negatives): (recall, update_op).")


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """The area under the ROC (or, with curve="PR", the precision-recall) curve, from the
    true/false positive/negative counts of predictions in [0, 1] at `num_thresholds`
    thresholds, summed by trapezoids as TF1's: (auc, update_op)."""
    if curve not in ("ROC", "PR"):
        raise ValueError(f"auc {here()}: curve must be 'ROC' or 'PR', got {curve!r}")
    if summation_method != "trapezoidal":
        raise ValueError(f"auc {here()}: only summation_method='trapezoidal' is offered")
    if thresholds is None:
        if num_thresholds < 2:
            raise ValueError(f"auc {here()}: num_thresholds must be > 1")
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        thresholds = [0.0 - _EPSILON, *inner, 1.0 + _EPSILON]
    else:
        thresholds = [0.0 - _EPSILON, *thresholds, 1.0 + _EPSILON]
    with name_scope(name, "auc"):
        labels, predictions = _matched(labels, predictions, _dt.float32)
        cut = reshape(convert_to_tensor(thresholds, dtype=_dt.float32), [-1, 1])
        above = M.cast(M.greater(reshape(predictions, [1, -1]), cut), _dt.float32)
        positive = reshape(labels, [1, -1])
        w = reshape(ones_like(predictions) if weights is None else
                    M.cast(convert_to_tensor(weights), _dt.float32) * ones_like(predictions),
                    [1, -1])
        counts = {key: (_local(key, shape=[len(thresholds)]), reduce_sum(hit * w, axis=1))
                  for key, hit in (("true_positives", above * positive),
                                   ("false_negatives", (1.0 - above) * positive),
                                   ("true_negatives", (1.0 - above) * (1.0 - positive)),
                                   ("false_positives", above * (1.0 - positive)))}
        value = _area(*[var for var, _ in counts.values()], curve, name="value")
        updated = [assign_add(var, batch) for var, batch in counts.values()]
        update = _area(*updated, curve, name="update_op")
        return _collect(value, update, metrics_collections, updates_collections)


_EPSILON = 1e-7  # (TF1's: the end thresholds lie just outside [0, 1])


def _area(tp, fn, tn, fp, curve, name):
    """The trapezoids' area under the curve of the counts at the thresholds."""
    recall = M.divide(tp, tp + fn + _EPSILON)
    if curve == "ROC":
        x, y = M.divide(fp, fp + tn + _EPSILON), recall
    else:
        x, y = recall, M.divide(tp, tp + fp + _EPSILON)
    return reduce_sum((x[:-1] - x[1:]) * (y[:-1] + y[1:]) / 2.0, name=name)


__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.metrics", "tf.metrics", globals())
