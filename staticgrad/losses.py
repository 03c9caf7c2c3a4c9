"""`sg.losses`: loss functions that reduce to a scalar and register it (TF1's tf.losses).

Each loss computes per-element losses, multiplies them by `weights` (broadcast to the losses'
shape), reduces them by `reduction`, and adds the result to the `loss_collection` (LOSSES by
default) so that `get_total_loss()` can sum them. The default reduction,
SUM_BY_NONZERO_WEIGHTS, divides the weighted sum by the number of non-zero weights: with the
default `weights=1.0` it is the mean.

Departure from TF1: TF1 computes in float32 whatever the input; here a float64 loss stays
float64.
"""

from __future__ import annotations

from . import _namespace
from .graph import GraphKeys, get_default_graph, name_scope
from .ops import math_ops as M
from .ops import nn_ops as nn
from .ops.array_ops import ones_like, shape, size, squeeze
from .ops.conversion import convert_to_tensor
from .ops.nn_impl import squared_difference
from .ops.reduction_ops import reduce_sum

__all__ = [
    "Reduction", "absolute_difference", "add_loss", "compute_weighted_loss", "get_losses",
    "get_regularization_loss", "get_regularization_losses", "get_total_loss", "huber_loss",
    "log_loss", "mean_squared_error", "sigmoid_cross_entropy", "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.losses", "tf.losses", globals())


class Reduction:
    """How a loss reduces its weighted per-element losses (`reduction=`): NONE keeps them,
    SUM adds them, MEAN divides the sum by the sum of the weights, SUM_OVER_BATCH_SIZE by the
    number of elements, SUM_BY_NONZERO_WEIGHTS (the default) by the number of non-zero
    weights."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"invalid Reduction {key!r}; use one of {cls.all()}")


def _safe_div(num, den):
    """num / den, or 0 where den is 0 (no NaN from an all-zero weight batch)."""
    return M.where(M.equal(den, 0), M.zeros_like(num), num / M.where(M.equal(den, 0),
                                                                         ones_like(den), den))


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weight, reduce and register per-element `losses` (see the module docstring)."""
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss"):
        losses = convert_to_tensor(losses)
        weights = convert_to_tensor(weights, dtype_hint=losses.dtype)
        if weights.dtype is not losses.dtype:
            weights = M.cast(weights, losses.dtype)
        _check_broadcastable(weights, losses)
        weighted = losses * weights
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_div(loss, reduce_sum(ones_like(losses) * weights))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_div(loss, _num_present(losses, weights))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_div(loss, M.cast(size(losses), losses.dtype))
        if loss_collection:
            add_loss(loss, loss_collection)
        return loss


def _check_broadcastable(weights, losses):
    """TF1's rule: weights are a scalar, or have the losses' rank with each dim equal or 1
    (a [batch] weight against [batch, 1] losses would otherwise broadcast to [batch, batch])."""
    w, l_dims = weights.shape.dims, losses.shape.dims
    if w is None or l_dims is None or len(w) == 0:
        return
    if len(w) != len(l_dims) or any(a is not None and b is not None and a not in (1, b)
                                    for a, b in zip(w, l_dims)):
        raise ValueError(f"weights of shape {weights.shape} ({weights.op.where()}) cannot be "
                         f"broadcast to losses of shape {losses.shape}: they must be a scalar "
                         "or have the losses' rank with each dimension equal or 1")


def _num_present(losses, weights):
    """How many elements of `losses` have a non-zero weight."""
    if weights.shape.ndims == 0:
        n = M.cast(size(losses), losses.dtype)
        return n * M.cast(M.not_equal(weights, 0), losses.dtype)
    present = M.cast(M.not_equal(weights, 0), losses.dtype)
    return reduce_sum(present * ones_like(losses))


def _prepare(labels, predictions, what):
    if labels is None:
        raise ValueError(f"{what}: labels must not be None")
    if predictions is None:
        raise ValueError(f"{what}: predictions must not be None")
    predictions = convert_to_tensor(predictions)
    labels = convert_to_tensor(labels, dtype_hint=predictions.dtype)
    if labels.dtype is not predictions.dtype:
        labels = M.cast(labels, predictions.dtype)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(f"{what}: predictions of shape {predictions.shape} and labels of shape "
                         f"{labels.shape} are not compatible")
    return labels, predictions


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted mean of (predictions - labels) ** 2."""
    with name_scope(scope, "mean_squared_error"):
        labels, predictions = _prepare(labels, predictions, "mean_squared_error")
        return compute_weighted_loss(squared_difference(predictions, labels), weights, None,
                                     loss_collection, reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted mean of |predictions - labels|."""
    with name_scope(scope, "absolute_difference"):
        labels, predictions = _prepare(labels, predictions, "absolute_difference")
        return compute_weighted_loss(M.abs(predictions - labels), weights, None,
                                     loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Quadratic for errors up to `delta`, linear beyond."""
    with name_scope(scope, "huber_loss"):
        labels, predictions = _prepare(labels, predictions, "huber_loss")
        error = M.abs(predictions - labels)
        quadratic = M.minimum(error, delta)
        losses = 0.5 * M.square(quadratic) + delta * (error - quadratic)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Binary cross-entropy of probabilities: -y log(p + eps) - (1 - y) log(1 - p + eps)."""
    with name_scope(scope, "log_loss"):
        labels, predictions = _prepare(labels, predictions, "log_loss")
        losses = (-labels * M.log(predictions + epsilon)
                  - (1 - labels) * M.log(1 - predictions + epsilon))
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted mean over the batch of the softmax cross-entropy; the labels get no gradient.
    With label_smoothing s, labels become `onehot * (1 - s) + s / num_classes`."""
    with name_scope(scope, "softmax_cross_entropy_loss"):
        onehot_labels, logits = _prepare(onehot_labels, logits, "softmax_cross_entropy")
        if label_smoothing > 0:
            classes = M.cast(shape(onehot_labels)[-1], logits.dtype)
            onehot_labels = onehot_labels * (1 - label_smoothing) + label_smoothing / classes
        labels = M.stop_gradient(onehot_labels, name="labels_stop_gradient")
        losses = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                         name="xentropy")
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Like softmax_cross_entropy, with integer class labels."""
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy: labels and logits must not be None")
    with name_scope(scope, "sparse_softmax_cross_entropy_loss"):
        logits = convert_to_tensor(logits)
        labels = _squeeze_last(convert_to_tensor(labels), logits)
        weights = convert_to_tensor(weights, dtype_hint=logits.dtype)
        weights = _squeeze_last(weights, logits) if weights.shape.ndims else weights
        losses = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                             name="xentropy")
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def _squeeze_last(t, logits):
    """Labels (or weights) of shape [batch, 1] against logits [batch, classes]: drop the 1."""
    if (t.shape.ndims is not None and t.shape.ndims == logits.shape.ndims
            and t.shape.dims[-1] == 1):
        return squeeze(t, [-1])
    return t


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted mean of the elementwise sigmoid cross-entropy (labels get no gradient)."""
    with name_scope(scope, "sigmoid_cross_entropy_loss"):
        labels, logits = _prepare(multi_class_labels, logits, "sigmoid_cross_entropy")
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn.sigmoid_cross_entropy_with_logits(labels=M.stop_gradient(labels),
                                                      logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


# -- the loss collections --------------------------------------------------------------------
def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    """Add `loss` to `loss_collection` (LOSSES), which get_total_loss() sums."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    """The losses in `loss_collection` (of `scope`, if given)."""
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    """The REGULARIZATION_LOSSES collection (of `scope`, if given)."""
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses (0.0 if there are none)."""
    losses = get_regularization_losses(scope)
    return M.add_n(losses, name=name) if losses else convert_to_tensor(0.0, name=name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of the LOSSES collection (plus the regularization losses)."""
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("get_total_loss: no losses have been added to the graph")
    return M.add_n(losses, name=name)

