"""Losses over a sample of the classes, for vocabularies too large for a full softmax (TF1's
`nn.nce_loss` and `nn.sampled_softmax_loss`, word2vec's), with the log-uniform (Zipf)
candidate sampler they draw from by default.

    loss = sg.reduce_mean(sg.nn.nce_loss(weights=nce_w, biases=nce_b, labels=labels,
                                         inputs=embedded, num_sampled=64,
                                         num_classes=vocabulary_size))

The sampler (op LogUniformCandidates) draws class ids k with probability
log((k + 2) / (k + 1)) / log(range_max + 1), as TF1's; with `unique`, it draws until it has
num_sampled distinct ids, and the expected counts account for the draws it took. It gives
the ids and that number of draws in one float64 vector; the functions here split them.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dt
from ..errors import here
from ..graph import name_scope
from ..shapes import TensorShape
from . import math_ops as M
from .array_ops import expand_dims, reshape
from .attr_types import Bool, Int, Name, Tuple
from .conversion import convert_to_tensor
from .creation import apply1
from .embedding_ops import embedding_lookup
from .join_ops import concat
from .nn_ops import sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2
from .reduction_ops import reduce_any, reduce_sum
from .state_ops import _SEED, _seeds
from .table import register


def _candidates_infer(ctx):
    n, top = ctx.attrs["num_sampled"], ctx.attrs["range_max"]
    if ctx.attrs["unique"] and n > top:
        raise ValueError(f"num_sampled ({n}) is more than range_max ({top}): there are not "
                         "that many distinct classes")
    return [(TensorShape([n + 1]), _dt.float64)]


def _candidates_numpy(a, ctx) -> str:
    return (f"rt.log_uniform_candidates(R[{Name().literal(ctx.name)}], {ctx.lit('range_max')}, "
            f"{ctx.lit('num_sampled')}, {ctx.lit('unique')})")


register("LogUniformCandidates", _candidates_infer, _candidates_numpy, differentiable=False,
         stateful=True, draws_random=True, arity=0,
         attrs={"range_max": Int(lo=1), "num_sampled": Int(lo=1), "unique": Bool(),
                "seed": Tuple(_SEED, _SEED)},
         doc="num_sampled class ids in [0, range_max) drawn log-uniformly (distinct ones "
             "with `unique`), then the number of draws it took, as float64")


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """(sampled ids int64 [num_sampled], the expected counts of the true classes [batch,
    num_true] and of the sampled ones [num_sampled], float32), as TF1's sampler."""
    with name_scope(name, "LogUniformCandidateSampler"):
        true_classes = convert_to_tensor(true_classes, dtype_hint=_dt.int64)
        drawn = apply1("LogUniformCandidates", [],
                       {"range_max": int(range_max), "num_sampled": int(num_sampled),
                        "unique": bool(unique), "seed": _seeds(seed)})
        sampled = M.cast(drawn[:num_sampled], _dt.int64)
        tries = drawn[num_sampled]

        def expected(ids):
            ids = M.cast(ids, _dt.float64)
            p = M.log((ids + 2.0) / (ids + 1.0)) / math.log(range_max + 1)
            count = -M.expm1(tries * M.log1p(-p)) if unique else p * float(num_sampled)
            return M.cast(count, _dt.float32)

        return sampled, expected(true_classes), expected(sampled)


def _sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                    sampled_values, subtract_log_q, remove_accidental_hits,
                    partition_strategy, where):
    """(logits [batch, num_true + num_sampled], their labels): the true classes' logits,
    then the sampled ones', as TF1's _compute_sampled_logits."""
    inputs = convert_to_tensor(inputs)
    labels = M.cast(reshape(convert_to_tensor(labels), [-1, num_true]), _dt.int64)
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True,
                                                       num_classes)
    sampled, true_expected, sampled_expected = sampled_values
    sampled = M.cast(sampled, _dt.int64)
    flat = reshape(labels, [-1])

    def lookup(table, ids):
        return embedding_lookup(table, ids, partition_strategy=partition_strategy)

    dim = inputs.shape.dims[-1] if inputs.shape.dims else None
    if dim is None:
        raise ValueError(f"{where}: the inputs' last dimension must be known")
    true_w = reshape(lookup(weights, flat), [-1, num_true, dim])
    true_b = reshape(lookup(biases, flat), [-1, num_true])
    true_logits = reduce_sum(expand_dims(inputs, 1) * true_w, axis=2) + true_b
    sampled_logits = M.matmul(inputs, lookup(weights, sampled), transpose_b=True) + \
        lookup(biases, sampled)
    if remove_accidental_hits:  # a sampled id that is a row's true class: out of the race
        hits = reduce_any(M.equal(expand_dims(labels, 2), reshape(sampled, [1, 1, -1])),
                            axis=1)
        lowest = float(np.finfo(sampled_logits.dtype.np).min)
        sampled_logits = M.where(hits, M.zeros_like(sampled_logits) + lowest, sampled_logits)
    if subtract_log_q:
        true_logits -= M.log(M.cast(true_expected, true_logits.dtype))
        sampled_logits -= M.log(M.cast(sampled_expected, sampled_logits.dtype))
    logits = concat([true_logits, sampled_logits], 1)
    targets = concat([M.ones_like(true_logits) / float(num_true),
                      M.zeros_like(sampled_logits)], 1)
    return logits, targets


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """Noise-contrastive estimation: for each row of `inputs`, logistic losses telling its
    true classes from `num_sampled` sampled ones ([batch])."""
    where = f"nce_loss {here()}"
    with name_scope(name):
        logits, targets = _sampled_logits(weights, biases, labels, inputs, num_sampled,
                                          num_classes, num_true, sampled_values, True,
                                          remove_accidental_hits, partition_strategy, where)
        return reduce_sum(sigmoid_cross_entropy_with_logits(labels=targets, logits=logits), 1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                         num_true=1, sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """A softmax cross-entropy over each row's true classes and `num_sampled` sampled ones
    ([batch]), the sampled ones corrected by their expected counts."""
    where = f"sampled_softmax_loss {here()}"
    with name_scope(name):
        if sampled_values is None:
            flat = M.cast(reshape(convert_to_tensor(labels), [-1, num_true]), _dt.int64)
            sampled_values = log_uniform_candidate_sampler(flat, num_true, num_sampled, True,
                                                           num_classes, seed=seed)
        logits, targets = _sampled_logits(weights, biases, labels, inputs, num_sampled,
                                          num_classes, num_true, sampled_values, True,
                                          remove_accidental_hits, partition_strategy, where)
        return softmax_cross_entropy_with_logits_v2(labels=M.stop_gradient(targets),
                                                    logits=logits)
