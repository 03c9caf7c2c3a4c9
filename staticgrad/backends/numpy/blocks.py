"""Block-by-block evaluation of fused elementwise groups, on a few threads.

A fused group is generated as a kernel `k(lo, hi, *arrays)` that computes elements lo:hi of
every array (flat, contiguous) and returns its part of a sum, if the group ends in one.
`run_blocks` splits 0:n into equal blocks of at most BLOCK elements, and the threads take
blocks one at a time until none is left. NumPy's ufuncs release the GIL, so the blocks run in
parallel. The parts come back in block order, whichever thread computed them, so the sums
made of them are the same from run to run.

Why blocks are taken, not dealt out in equal shares: a thread that starts late (waking a
helper thread takes tens of microseconds) or whose core the VM takes away for a while then
computes fewer blocks, and the call ends when the last block does, not when the slower
thread's half does. A helper that has not started when no block is left is not waited for.

Why blocks of up to 128K elements (512 KB of float32), larger than a core's L2 cache: every
ufunc call of a block is Python holding the GIL (about 0.5 us; W3's block, 22 us in all), and
each time a thread's ufunc ends it must win the GIL back from the other threads. With W3 (30
fused ops on a million float32 values, benchmarks/bench_fused_backends.py) on 2 threads,
blocks of 32K elements ran at 10-12 ms a call, 64K at 8.5 and 128K at 7.6 ms; on one thread,
15.3 against 13.7 ms. A block's rows still fit in L3, and at these sizes the cheap ops (0.12 ns
an element) are not what limits the group; the transcendental ones are.

A kernel may ask for scratch rows (`scratch=(rows, dtype)`): each thread keeps one buffer of
rows x block elements from call to call, and the kernel gets the rows for its block as its
last argument and computes into them with out=, so a block allocates nothing.

Every thread computes under the caller's `np.errstate`, so that `np.errstate(all="raise")`
raises wherever the bad value is, whichever thread takes its block.

The number of threads is the machine's cores available to this process, capped by the
environment variable STATICGRAD_NUM_THREADS (or OMP_NUM_THREADS when that is not set); a
thread takes part only when there is at least one whole block (BLOCK elements) for each.
"""

from __future__ import annotations

import os
import queue
import threading

import numpy as np

BLOCK = 1 << 17  # the most elements in one block


def _threads() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for var in ("STATICGRAD_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var, "").isdigit() and int(os.environ[var]) > 0:
            return max(1, min(cores or 1, int(os.environ[var])))
    return max(1, cores or 1)


THREADS = _threads()
_kept = threading.local()  # each thread's scratch buffer


def _scratch(rows: int, dtype, block: int) -> np.ndarray:
    """This thread's scratch as rows x block elements of dtype (kept for the next call)."""
    nbytes = rows * block * np.dtype(dtype).itemsize
    buffer = getattr(_kept, "buffer", None)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = _kept.buffer = np.empty(nbytes, np.uint8)
    return buffer[:nbytes].view(dtype).reshape(rows, block)


def _take_blocks(kernel, starts, parts, n, block, args, scratch):
    """Compute blocks, taking the next one left in `starts` until none is (list.pop is atomic,
    with or without the GIL), each part into its place in `parts`."""
    rows = _scratch(*scratch, block) if scratch is not None else None
    try:
        while True:
            try:
                i, lo = starts.pop()
            except IndexError:  # none left (another thread may have taken the last one)
                return
            hi = min(lo + block, n)
            parts[i] = kernel(lo, hi, *args) if rows is None else \
                kernel(lo, hi, *args, rows[:, :hi - lo])
    except BaseException:
        starts.clear()  # the others stop after their current block
        raise


# -- the helper threads -----------------------------------------------------------------------
# A few daemon threads wait on one queue for shares of run_blocks calls. They are started on
# the first call that needs them, and again in a child process after os.fork (which copies
# only the forking thread: a share queued for a helper of the parent would wait forever).
# A share's end is signalled by releasing a lock. (W3 runs as fast as it did on a
# concurrent.futures pool: within 1.5% either way, depending on which runs first.)
_shares: queue.SimpleQueue | None = None
_helpers = 0
_starting = threading.Lock()  # over _shares and _helpers, for callers on several threads


def _helper(shares):
    while True:
        shares.get().run()


def _forget_helpers():
    global _shares, _helpers, _starting
    _shares, _helpers, _starting = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


class _Share:
    """A helper's part of a run_blocks call: taking blocks, under the caller's np.errstate (the
    modes and the handler are not inherited by threads). If every block is taken before a
    helper gets to it, the caller drops it (and its arrays) and does not wait."""

    __slots__ = ("work", "state", "lock", "done", "error")

    def __init__(self, work):
        self.work = work
        self.state = "queued"  # then "running" and "finished" (the helper's), or "dropped"
        self.lock = threading.Lock()  # over `state`
        self.done = threading.Lock()
        self.done.acquire()  # released when the helper has finished
        self.error = None

    def run(self):  # in a helper thread
        with self.lock:
            if self.state == "dropped":
                return
            self.state = "running"
        errors, *work = self.work
        try:
            with np.errstate(**errors):
                _take_blocks(*work)
        except BaseException as e:  # raised in the caller
            self.error = e
        finally:
            with self.lock:
                self.state = "finished"
            self.done.release()

    def wait(self):  # in the caller, when no block is left; again after an interrupt
        with self.lock:
            if self.state == "queued":
                self.state, self.work = "dropped", None
            if self.state != "running":
                return
        self.done.acquire()


def _hand_out(count: int, work, shares: list) -> None:
    """`count` shares of `work`, queued for the helper threads (started if need be), each
    added to `shares` before it is queued."""
    global _shares, _helpers
    with _starting:
        if _shares is None:
            _shares = queue.SimpleQueue()
        while _helpers < count:
            threading.Thread(target=_helper, args=(_shares,), daemon=True,
                             name=f"staticgrad-{_helpers}").start()
            _helpers += 1
        for _ in range(count):
            shares.append(_Share(work))
            _shares.put(shares[-1])


def _wait_for(shares: list) -> None:
    """Wait for every helper still inside a block, even through KeyboardInterrupt (raised
    after): it writes into arrays that are the caller's again once run_blocks ends."""
    interrupt = None
    for share in shares:
        while True:
            try:
                share.wait()
                break
            except BaseException as e:
                interrupt = interrupt or e
    if interrupt is not None:
        raise interrupt


def _split(n: int, parts: int, most: int) -> int:
    """The size of each of `parts` equal pieces of n, each made of equal blocks of at most
    `most` elements: the block size (a multiple of 16 elements where `most` allows)."""
    share = max(1, -(-n // parts))
    block = -(-share // -(-share // most))
    return min(most, -(-block // 16) * 16) if most >= 16 else block


def run_blocks(kernel, n: int, *args, scratch=None) -> list:
    """kernel(lo, hi, *args[, rows]) over 0:n in blocks; what each returned, in block order."""
    threads = min(THREADS, max(1, n // BLOCK))
    block = _split(n, threads, BLOCK)
    starts = list(enumerate(range(0, n, block)))[::-1]  # popped from the end: block 0 first
    parts = [None] * len(starts)
    work = (kernel, starts, parts, n, block, args, scratch)
    shares = []
    try:
        if threads > 1:  # the caller's np.errstate (warn, raise, call...) holds in every thread
            _hand_out(threads - 1, (dict(np.geterr(), call=np.geterrcall()), *work), shares)
        _take_blocks(*work)
    except BaseException:
        starts.clear()  # (an interrupt in _hand_out) the helpers take no block
        raise
    finally:  # every block is done (or abandoned) before the arrays are read
        _wait_for(shares)
    for share in shares:
        if share.error is not None:
            raise share.error  # a helper's error, raised here
    return parts
