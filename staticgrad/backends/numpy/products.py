"""Matrix products on staticgrad's threads, for the runs that hold the BLAS to one thread.

A plan with convolutions holds the BLAS to one thread for its whole run
(`rt.one_blas_thread()`, conv_blocked.py): OpenBLAS's own threads, once a product has woken
them, spin for about a tenth of a second and take the core a blocked convolution's second
half needs. In such a run a dense layer's product would take one core only, so the
renderer writes the large 2-D ones as `rt.matmul(a, b)`: the rows of the result split
between the caller's thread and conv_fast's pool, each part one product on one BLAS thread.

Each element of the result is the dot product of the same row and column as in one product
of the whole; it may differ from that one's in the last bits, where the BLAS computes a
part's edge rows with other kernels.
"""

from __future__ import annotations

import numpy as np

from . import conv_blocked
from .conv_fast import over_batch

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def worth_splitting(m, k, n) -> bool:
    """Is an [m, k] x [k, n] product (None: a size only a run knows) written as
    `rt.matmul`? Not when it is known to be smaller than MIN_SPLIT_MACS multiply-adds."""
    return None in (m, k, n) or m * k * n >= conv_blocked.MIN_SPLIT_MACS


def matmul(a, b):
    """a @ b for 2-D a and b: float32 or float64 products of MIN_SPLIT_MACS (conv_blocked's)
    multiply-adds or more in parts of the rows, one a thread (no more threads than the user
    left the BLAS), where the BLAS can be held to one thread; anything else as `a @ b`."""
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.dtype not in _DTYPES \
            or not a.size or not b.size or not conv_blocked.blocked():
        return a @ b  # (without the BLAS held, threads would each run it on every core)
    m, n = a.shape[0], b.shape[1]
    if a.shape[1] != b.shape[0]:
        return a @ b  # (NumPy's error)
    out = np.empty((m, n), a.dtype)

    def run(lo, hi):
        np.matmul(a[lo:hi], b, out=out[lo:hi])

    # no more threads than the user left the BLAS (OPENBLAS_NUM_THREADS=1, threadpool_limits
    # around sess.run): as many as `a @ b` would have run on
    over_batch(run, m, m * a.shape[1] * n, conv_blocked.MIN_SPLIT_MACS,
               conv_blocked.users_threads())
    return out
