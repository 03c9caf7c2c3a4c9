"""The block runner of fused groups (backends/numpy/blocks.py): every element once, parts in
block order, errors and interrupts after every thread stopped, the caller's errstate in every
thread, and fork safety."""

from __future__ import annotations

import os
import select
import signal
import warnings

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.backends.numpy import runtime as rt


@pytest.mark.parametrize("n", [0, 1, 5, 17, 64, 1000, 4099])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_run_blocks_covers_every_element_once_in_equal_blocks(monkeypatch, n, threads):
    from staticgrad.backends.numpy import blocks as runtime_blocks
    monkeypatch.setattr(runtime_blocks, "BLOCK", 64)
    monkeypatch.setattr(runtime_blocks, "THREADS", threads)
    seen = np.zeros(n, int)

    def kernel(lo, hi, counts, rows):
        counts[lo:hi] += 1
        assert rows.shape == (2, hi - lo) and rows.dtype == np.float32
        return (hi - lo,)
    sizes = [p[0] for p in rt.run_blocks(kernel, n, seen, scratch=(2, np.float32))]
    assert (seen == 1).all() and sum(sizes) == n
    assert all(s <= 64 for s in sizes) and len(set(sizes[:-1])) <= 1
    assert len(sizes) >= min(threads, n // 64)  # each thread has a whole block at least


def test_run_blocks_returns_parts_in_block_order_whichever_thread_takes_them(monkeypatch):
    """Threads take blocks as they come free: a slow thread takes fewer, and the parts still
    come back in block order (so sums made of them do not change from run to run)."""
    import threading
    import time

    from staticgrad.backends.numpy import blocks as runtime_blocks
    monkeypatch.setattr(runtime_blocks, "BLOCK", 10)
    monkeypatch.setattr(runtime_blocks, "THREADS", 2)
    main = threading.get_ident()
    taken = {}

    def kernel(lo, hi):
        taken[lo] = threading.get_ident() == main
        if threading.get_ident() != main:
            time.sleep(0.02)  # the helper thread is slow: the caller takes most blocks
        return (lo,)
    parts = rt.run_blocks(kernel, 200)
    assert [p[0] for p in parts] == list(range(0, 200, 10))
    assert sum(taken.values()) > 12, taken  # 20 blocks: the main thread took most of them


def test_run_blocks_stops_every_thread_before_an_error_is_raised(monkeypatch):
    import time

    from staticgrad.backends.numpy import blocks as runtime_blocks
    monkeypatch.setattr(runtime_blocks, "BLOCK", 10)
    monkeypatch.setattr(runtime_blocks, "THREADS", 2)
    running, done = [], []

    def kernel(lo, hi):
        running.append(lo)
        if lo == 30:
            raise FloatingPointError("block 3")
        time.sleep(0.005)
        done.append(lo)
        return (lo,)
    with pytest.raises(FloatingPointError, match="block 3"):
        rt.run_blocks(kernel, 1000)
    finished = len(done)
    time.sleep(0.05)
    assert len(done) == finished and len(running) < 100  # nothing runs on after the error


def test_run_blocks_computes_every_block_under_the_callers_errstate(monkeypatch):
    import threading
    import time

    from staticgrad.backends.numpy import blocks as runtime_blocks
    monkeypatch.setattr(runtime_blocks, "BLOCK", 10)
    monkeypatch.setattr(runtime_blocks, "THREADS", 2)
    main = threading.get_ident()

    def kernel(lo, hi):
        if threading.get_ident() == main:
            time.sleep(0.01)  # the helper thread takes most blocks
        return (threading.get_ident() == main, np.geterr()["invalid"], np.geterr()["over"])
    with np.errstate(invalid="raise", over="ignore"):
        parts = rt.run_blocks(kernel, 200)
    assert any(not p[0] for p in parts)  # the helper thread computed some blocks
    assert all(p[1:] == ("raise", "ignore") for p in parts)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        rt.run_blocks(lambda lo, hi: np.log(np.full(3, -1.0 if lo == 190 else 1.0)), 200)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX")
def test_a_fused_group_runs_in_a_child_process_after_fork(monkeypatch):
    """fork copies only the forking thread: a child used to wait forever for its share of its
    first fused group, queued for a pool thread of the parent's that it did not have."""
    from staticgrad.backends.numpy import blocks as runtime_blocks
    monkeypatch.setattr(runtime_blocks, "THREADS", 2)  # helpers, even on one core
    n = 4 * runtime_blocks.BLOCK
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [n], name="x")
        y = sg.reduce_sum(sg.tanh(x) * 2.0)
    xv = np.linspace(-1, 3, n, dtype=np.float32)
    with sg.Session(graph=g) as sess:
        want = sess.run(y, {x: xv})
        assert runtime_blocks._helpers > 0  # the parent has a helper now
        read, write = os.pipe()
        with warnings.catch_warnings():  # Python 3.12 and later warn of fork with threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: its result through the pipe, and out, whatever happens
            try:
                os.write(write, np.float32(sess.run(y, {x: xv})).tobytes())
            finally:
                os._exit(0)
        os.close(write)
        got = b""
        ready, _, _ = select.select([read], [], [], 60)
        if ready:
            got = os.read(read, 4)
        os.close(read)
        if not got:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert got, "the child process never finished its fused group"
    assert np.frombuffer(got, np.float32)[0] == want


def test_run_blocks_does_not_wait_for_a_helper_that_never_started(monkeypatch):
    """Every block taken before a helper gets to its share: the caller goes on, and lets go of
    its arrays. (Here the only helper is held up by another caller's block.)"""
    import gc
    import threading
    import weakref

    from staticgrad.backends.numpy import blocks as runtime_blocks
    monkeypatch.setattr(runtime_blocks, "BLOCK", 10)
    monkeypatch.setattr(runtime_blocks, "THREADS", 2)
    monkeypatch.setattr(runtime_blocks, "_helpers", 0)  # one helper, on a queue of its own
    monkeypatch.setattr(runtime_blocks, "_shares", None)
    release, blocked = threading.Event(), threading.Event()

    def slow(lo, hi):
        if threading.current_thread().name.startswith("staticgrad"):
            blocked.set()  # the helper is held up here
            release.wait(30)
        else:
            blocked.wait(10)  # the other caller waits until the helper is
        return (lo,)
    other = threading.Thread(target=rt.run_blocks, args=(slow, 40), daemon=True)
    other.start()
    try:
        assert blocked.wait(10)
        done, kept = [], []

        def mine():
            array = np.zeros(40)
            kept.append(weakref.ref(array))
            done.append(rt.run_blocks(lambda lo, hi, a: (lo,), 40, array))
        caller = threading.Thread(target=mine, daemon=True)
        caller.start()
        caller.join(5)  # while the helper is still held up
        assert done, "run_blocks waited for a share that no helper had started"
        assert [p[0] for p in done[0]] == [0, 10, 20, 30]
        gc.collect()
        assert kept[0]() is None  # the dropped share holds no array
    finally:
        release.set()
        other.join(10)
    assert not other.is_alive()


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs POSIX interval timers")
def test_an_interrupt_while_waiting_ends_run_blocks_only_after_the_helpers(monkeypatch):
    """Found by review: Ctrl-C while the caller waited for a helper ended run_blocks with the
    helper still writing into the caller's arrays."""
    import threading
    import time

    from staticgrad.backends.numpy import blocks as runtime_blocks
    monkeypatch.setattr(runtime_blocks, "BLOCK", 10)
    monkeypatch.setattr(runtime_blocks, "THREADS", 2)
    runtime_blocks.run_blocks(lambda lo, hi: (), 20)  # a helper is there
    out = np.zeros(20)
    helping = threading.Event()

    def kernel(lo, hi, out):
        if threading.current_thread() is threading.main_thread():
            assert helping.wait(10)  # the helper has the other block
            signal.setitimer(signal.ITIMER_REAL, 0.2)  # Ctrl-C while the caller waits for it
        else:
            helping.set()
            time.sleep(0.6)
        out[lo:hi] = 1
        return ()

    def interrupt(*_):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            runtime_blocks.run_blocks(kernel, 20, out)
        assert (out == 1).all()  # the helper's block was done before run_blocks raised
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_fused_group_calls_the_callers_errstate_handler_from_every_thread():
    """Found by review: pool threads got the caller's modes but not its np.errstate(call=...)
    handler, and NumPy failed with a NameError where the handler was to be called."""
    from staticgrad.backends.numpy import blocks as runtime_blocks
    n = 4 * runtime_blocks.BLOCK
    g = sg.Graph()
    with g.as_default():
        x = sg.placeholder(sg.float32, [n], name="x")
        y = sg.exp(x * 2.0) + 1.0
    calls = []
    for bad in (0, n - 1):  # whichever thread takes the block
        v = np.ones(n, np.float32)
        v[bad] = 3e38
        with sg.Session(graph=g) as sess, \
                np.errstate(all="call", call=lambda k, f: calls.append(k)):
            got = sess.run(y, {x: v})
        assert got[bad] == np.inf
    assert calls and set(calls) == {"overflow"}
