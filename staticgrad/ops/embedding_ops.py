"""TF1's `nn.embedding_lookup`, made of other ops.

    vectors = sg.nn.embedding_lookup(embeddings, word_ids)     # rows of a [vocab, dim] table

An embedding table may be one tensor or a list of shards (TF1's partitioned variables):
with `partition_strategy="mod"` row r is in shard r % n at position r // n; with "div" the
shards hold consecutive rows. The shards' row counts must be known when the graph is built.
The gradient of a lookup in one table is TF1's IndexedSlices (ops/indexed_slices.py): the
rows looked up, which the optimizers apply as a sparse update; a sharded table's is dense
(the shards are joined into one table first).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..errors import here
from ..graph import name_scope
from . import math_ops as M
from .conversion import convert_to_tensor
from .indexing_ops import gather
from .join_ops import concat
from .reduction_ops import reduce_sum


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """The rows of `params` (a table, or a list of its shards) at `ids` (any shape of ints):
    shape ids.shape + row shape. With `max_norm`, rows longer than it are scaled to it."""
    where = f"embedding_lookup {here()}"
    shards = list(params) if isinstance(params, list | tuple) else [params]
    if not shards:
        raise ValueError(f"{where}: params is an empty list")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"{where}: partition_strategy must be 'mod' or 'div', got "
                         f"{partition_strategy!r}")
    with name_scope(name, "embedding_lookup"):
        shards = [convert_to_tensor(p) for p in shards]
        ids = convert_to_tensor(ids, dtype_hint=_dt.int32)
        if not ids.dtype.is_integer:
            raise TypeError(f"{where}: ids must be integers, got {ids.dtype.name}")
        if len(shards) == 1:
            rows = gather(shards[0], ids)
        else:
            sizes = [s.shape.dims[0] if s.shape.dims else None for s in shards]
            if None in sizes:
                raise ValueError(f"{where}: the shards' row counts must be known, got "
                                 f"{[str(s.shape) for s in shards]}")
            table = concat(shards, 0)
            if partition_strategy == "mod":  # (row r of the whole is shard r % n, r // n)
                starts = np.cumsum([0, *sizes[:-1]])
                n = len(shards)
                order = np.array([starts[r % n] + r // n for r in range(sum(sizes))], np.int32)
                ids = gather(order, ids)
            rows = gather(table, ids)
        if max_norm is not None:
            rows = M.multiply(rows, M.minimum(1.0, max_norm / M.maximum(
                _norms(rows, ids.shape.ndims), 1e-30)))
        return rows


def _norms(rows, id_rank):
    """Each looked-up row's euclidean norm, its dims kept for broadcasting."""
    rank = rows.shape.ndims
    axes = list(range(id_rank, rank)) if rank is not None and id_rank is not None else -1
    return M.sqrt(reduce_sum(M.square(rows), axes, keepdims=True))
