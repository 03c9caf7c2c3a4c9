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
from .graph import GraphKeys, add_to_collections, name_scope
from .ops import math_ops as M
from .ops.array_ops import ones_like, zeros
from .ops.conversion import convert_to_tensor
from .ops.reduction_ops import reduce_sum
from .ops.state_ops import assign_add
from .variables import Variable

__all__ = ["accuracy", "mean", "mean_absolute_error", "mean_squared_error",
           "root_mean_squared_error", "precision", "recall", "true_positives",
           "false_positives", "false_negatives", "true_negatives"]


def _local(name: str, dtype=_dt.float32) -> Variable:
    """A scalar count of a metric, 0 at first: a local variable, not saved by a Saver."""
    return Variable(lambda: zeros([], dtype), trainable=False, name=name,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def _collect(value, update, metrics_collections, updates_collections):
    if metrics_collections:
        add_to_collections(metrics_collections, value)
    if updates_collections:
        add_to_collections(updates_collections, update)
    return value, update


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
        predictions = convert_to_tensor(predictions)
        labels = M.cast(convert_to_tensor(labels), predictions.dtype)
        return mean(M.equal(labels, predictions), weights, metrics_collections,
                    updates_collections, name="mean")


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The mean of |labels - predictions|: (value, update_op)."""
    with name_scope(name, "mean_absolute_error"):
        return mean(M.abs(_difference(labels, predictions)), weights, metrics_collections,
                    updates_collections, name="mean")


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """The mean of (labels - predictions) ** 2: (value, update_op)."""
    with name_scope(name, "mean_squared_error"):
        return mean(M.square(_difference(labels, predictions)), weights, metrics_collections,
                    updates_collections, name="mean")


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """The square root of mean_squared_error: (value, update_op)."""
    with name_scope(name, "root_mean_squared_error"):
        value, update = mean_squared_error(labels, predictions, weights, name="mse")
        return _collect(M.sqrt(value), M.sqrt(update), metrics_collections,
                        updates_collections)


def _difference(labels, predictions):
    predictions = M.cast(convert_to_tensor(predictions), _dt.float32)
    return M.cast(convert_to_tensor(labels), _dt.float32) - predictions


def _count(condition, weights, name):
    """(count, update_op) of the (weighted) elements where `condition` holds."""
    with name_scope(name):
        count = _local("count")
        batch, _ = _weighted(condition, weights)
        return count, assign_add(count, batch, name="update_op")


def _booleans(labels, predictions):
    return (M.cast(convert_to_tensor(labels), _dt.bool_),
            M.cast(convert_to_tensor(predictions), _dt.bool_))


def true_positives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    """The count of elements true in both labels and predictions: (count, update_op)."""
    labels, predictions = _booleans(labels, predictions)
    return _collect(*_count(M.logical_and(labels, predictions), weights,
                            name or "true_positives"), metrics_collections, updates_collections)


def false_positives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    """The count of elements predicted true whose label is false: (count, update_op)."""
    labels, predictions = _booleans(labels, predictions)
    return _collect(*_count(M.logical_and(M.logical_not(labels), predictions), weights,
                            name or "false_positives"), metrics_collections, updates_collections)


def false_negatives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    """The count of elements predicted false whose label is true: (count, update_op)."""
    labels, predictions = _booleans(labels, predictions)
    return _collect(*_count(M.logical_and(labels, M.logical_not(predictions)), weights,
                            name or "false_negatives"), metrics_collections, updates_collections)


def true_negatives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    """The count of elements false in both labels and predictions: (count, update_op)."""
    labels, predictions = _booleans(labels, predictions)
    neither = M.logical_and(M.logical_not(labels), M.logical_not(predictions))
    return _collect(*_count(neither, weights, name or "true_negatives"), metrics_collections,
                    updates_collections)


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    """true positives / (true positives + false positives): (precision, update_op)."""
    with name_scope(name, "precision"):
        tp, tp_update = true_positives(labels, predictions, weights)
        fp, fp_update = false_positives(labels, predictions, weights)
        value = M.div_no_nan(tp, tp + fp, name="value")
        update = M.div_no_nan(tp_update, tp_update + fp_update, name="update_op")
        return _collect(value, update, metrics_collections, updates_collections)


def recall(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
    """true positives / (true positives + false negatives): (recall, update_op)."""
    with name_scope(name, "recall"):
        tp, tp_update = true_positives(labels, predictions, weights)
        fn, fn_update = false_negatives(labels, predictions, weights)
        value = M.div_no_nan(tp, tp + fn, name="value")
        update = M.div_no_nan(tp_update, tp_update + fn_update, name="update_op")
        return _collect(value, update, metrics_collections, updates_collections)


__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.metrics", "tf.metrics", globals())
