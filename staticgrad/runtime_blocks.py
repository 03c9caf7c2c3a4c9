"""Block-by-block evaluation of fused elementwise groups, on a few threads.

A fused group is generated as a kernel `k(lo, hi, *arrays)` that computes elements lo:hi of
every array (flat, contiguous) and returns its part of a sum, if the group ends in one.
`run_blocks` splits 0:n into one contiguous share per thread and each share into blocks of
BLOCK elements, small enough that a block's temporaries stay in cache. NumPy's ufuncs
release the GIL, so the shares run in parallel.

A kernel may ask for scratch rows (`scratch=(rows, dtype)`): each thread keeps one buffer of
rows x BLOCK elements from call to call, and the kernel gets the rows for its block as its
last argument and computes into them with out=, so a block allocates nothing.

The number of threads is the machine's cores available to this process, capped by the
environment variable STATICGRAD_NUM_THREADS (or OMP_NUM_THREADS when that is not set).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

BLOCK = 1 << 15


def _threads() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for var in ("STATICGRAD_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var, "").isdigit() and int(os.environ[var]) > 0:
            return max(1, min(cores or 1, int(os.environ[var])))
    return max(1, cores or 1)


THREADS = _threads()
_pool = None
_kept = threading.local()  # each thread's scratch buffer


def _scratch(rows: int, dtype) -> np.ndarray:
    """This thread's scratch as rows x BLOCK elements of dtype (kept for the next call)."""
    nbytes = rows * BLOCK * np.dtype(dtype).itemsize
    buffer = getattr(_kept, "buffer", None)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = _kept.buffer = np.empty(nbytes, np.uint8)
    return buffer[:nbytes].view(dtype).reshape(rows, BLOCK)


def _share(kernel, lo, hi, args, scratch):
    if scratch is None:
        return [kernel(a, min(a + BLOCK, hi), *args) for a in range(lo, hi, BLOCK)]
    rows = _scratch(*scratch)
    return [kernel(a, min(a + BLOCK, hi), *args, rows[:, :min(BLOCK, hi - a)])
            for a in range(lo, hi, BLOCK)]


def run_blocks(kernel, n: int, *args, scratch=None) -> list:
    """kernel(lo, hi, *args[, rows]) over 0:n in blocks; the list of what each returned."""
    global _pool
    threads = min(THREADS, max(1, n // (4 * BLOCK)))
    if threads == 1:
        return _share(kernel, 0, n, args, scratch)
    if _pool is None:
        _pool = ThreadPoolExecutor(THREADS - 1, thread_name_prefix="staticgrad")
    step = -(-n // threads // BLOCK) * BLOCK  # whole blocks per share
    bounds = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    futures = [_pool.submit(_share, kernel, lo, hi, args, scratch) for lo, hi in bounds[1:]]
    parts = _share(kernel, *bounds[0], args, scratch)
    for f in futures:
        parts.extend(f.result())
    return parts
