"""The numerically delicate runtime kernels against float64 references, special values
included."""

from __future__ import annotations

import os
import select
import signal
import warnings

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import runtime as rt

RNG = np.random.default_rng(5)
SPECIALS = [-1.0, np.inf, -np.inf, np.nan, 0.0, -2.0, 1e-30, -1e-30]


def _ulps(got, want, dtype):
    fin = np.isfinite(want) & (want != 0)
    spacing = np.spacing(np.abs(want[fin]).astype(dtype)).astype(np.float64)
    return np.abs(got[fin].astype(np.float64) - want[fin]) / spacing


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint8,
                                   np.int64])
def test_clip_is_np_clip(dtype):
    """rt.clip, NumPy's clip ufunc without np.clip's Python wrapper, gives np.clip's values
    (NaN, infinities and signed zeros included), with Python numbers (what the wrapper
    handles itself, for integers) or 0-d arrays as bounds, into out=. (Python integer bounds
    out of the dtype's range, which np.clip drops and the ufunc refuses, no op passes.)"""
    if np.dtype(dtype).kind == "f":
        x = np.concatenate([RNG.normal(size=1000) * 8, SPECIALS, [-0.0, 6.0, -6.0]]).astype(dtype)
        bounds = [(-0.0, 0.0), (0.0, 6.0), (-1.5, np.inf), (np.nan, 1.0), (2.0, -2.0)]
    else:
        info = np.iinfo(dtype)
        x = RNG.integers(info.min, info.max, 1000, dtype=dtype, endpoint=True)
        bounds = [(0, 6), (int(info.min), int(info.max)), (max(int(info.min), -3), 3)]
    for lo, hi in bounds:
        want = np.clip(x, lo, hi)
        for got in (rt.clip(x, lo, hi), rt.clip(x, np.array(lo, dtype), np.array(hi, dtype),
                                                 out=np.empty_like(x))):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype,max_ulps", [(np.float32, 4), (np.float64, 2)])
def test_log1p_is_accurate_everywhere(dtype, max_ulps):
    x = np.concatenate([RNG.normal(size=20000) * 10.0 ** RNG.uniform(-12, 6, 20000),
                        -1 + RNG.uniform(0, 1, 2000) ** 4, SPECIALS]).astype(dtype)
    with np.errstate(all="ignore"):
        got = rt.log1p(x)
        want = np.log1p(x.astype(np.float64))
    assert got.dtype == dtype
    assert _ulps(got, want, dtype).max() <= max_ulps
    special = got[-len(SPECIALS):]
    assert special[0] == -np.inf and special[1] == np.inf
    assert np.isnan(special[2]) and np.isnan(special[3]) and np.isnan(special[5])
    assert special[4] == 0 and special[6] == dtype(1e-30)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_is_accurate_in_both_tails(dtype):
    x = np.concatenate([np.linspace(-80, 80, 10001), SPECIALS]).astype(dtype)
    with np.errstate(all="ignore"):
        got = rt.sigmoid(x)
        want = 1 / (1 + np.exp(-x.astype(np.float64)))
    assert got.dtype == dtype
    assert _ulps(got, want, dtype).max() <= 4
    special = got[-len(SPECIALS):]
    assert special[1] == 1 and special[2] == 0 and np.isnan(special[3]) and special[4] == 0.5
    deep = np.linspace(-800, -80, 1001).astype(dtype)  # down to and past exp's overflow
    with np.errstate(all="ignore"):
        want = 1 / (1 + np.exp(-deep.astype(np.float64)))
    with np.errstate(all="raise"):  # no overflow or underflow reported, in either tail
        got = rt.sigmoid(deep)
        assert (rt.sigmoid(-deep) == 1).all()
    normal = want >= np.finfo(dtype).tiny
    assert _ulps(got[normal], want[normal], dtype).max() <= 4
    assert (np.abs(got - want)[~normal] <= np.finfo(dtype).tiny).all()


# float32: every number was checked; these three are the worst (5.12, 5.31, 5.34 ulps)
_SOFTPLUS_WORST = [-2.7568996, -3.453807, -4.152139]


@pytest.mark.parametrize("dtype,max_ulps", [(np.float16, 2), (np.float32, 5.5),
                                            (np.float64, 2.5)])
def test_softplus_is_accurate_everywhere_and_never_warns(dtype, max_ulps):
    """Against log(1 + exp(x)) in long double (80-bit on x86: np.logaddexp's own error is
    then seen too, 1.5 ulps in float32), from the deep negative tail, where softplus(x) is
    exp(x) and its digits come from the correction alone, to where it is x."""
    fin = np.finfo(dtype)
    x = np.concatenate([np.linspace(-120, 120, 48001), np.geomspace(fin.tiny, 200, 20000),
                        -np.geomspace(fin.tiny, 200, 20000), RNG.normal(size=20000) * 8,
                        [fin.tiny, fin.smallest_subnormal], _SOFTPLUS_WORST]).astype(dtype)
    with np.errstate(all="raise"):  # exp(-|x|) underflows: expected, never reported
        got = rt.softplus(x)
    want = np.logaddexp(np.longdouble(0), x.astype(np.longdouble)).astype(np.float64)
    assert got.dtype == dtype
    assert _ulps(got, want, dtype).max() <= max_ulps  # subnormal results too, in their ulps
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, fin.max, -fin.max], dtype)
    for size in (7, rt.SOFTPLUS_MIN_SIZE * 7):  # np.logaddexp's path, then the SIMD one
        with np.errstate(all="raise"):
            special = rt.softplus(np.resize(specials, size))[:7]
        assert special[0] == np.inf and special[1] == 0 and np.isnan(special[2])
        assert special[3] == special[4] == dtype(np.log(2))
        assert special[5] == fin.max and special[6] == 0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_softplus_is_max_plus_rt_log1p_of_exp_bit_for_bit(dtype):
    """Large arrays: max(x, 0) + log1p(exp(-|x|)), log1p with rt.log1p's correction (whose
    clip does nothing here: 1 + exp(-|x|) is in [1, 2]). Smaller ones: np.logaddexp."""
    x = (RNG.normal(size=5000) * 10.0 ** RNG.uniform(-8, 2, 5000)).astype(dtype)
    with np.errstate(under="ignore"):
        want = np.maximum(x, 0) + rt.log1p(np.exp(-np.abs(x)))
        np.testing.assert_array_equal(rt.softplus(x), want)
        small = x[:rt.SOFTPLUS_MIN_SIZE - 1]
        np.testing.assert_array_equal(rt.softplus(small), np.logaddexp(dtype(0), small))
    with np.errstate(under="raise"):  # not even for one number
        assert rt.softplus(dtype(-1000)) == 0 and rt.softplus(dtype(-1000)).dtype == dtype


@pytest.mark.parametrize("helper", [rt.sigmoid, rt.log1p, rt.softplus])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_helpers_write_into_out_even_over_their_input(helper, dtype):
    """Fused kernels and the memory plan call these with out=, out possibly x itself."""
    x = np.concatenate([RNG.normal(size=2000) * 5, SPECIALS]).astype(dtype)
    with np.errstate(all="ignore"):
        want = helper(x)
        out = np.empty_like(x)
        assert helper(x, out=out) is out
        np.testing.assert_array_equal(out, want)
        y = x.copy()
        assert helper(y, out=y) is y
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("value", [0.5, -0.0, 1e-30, -0.75, 3.0])
def test_helpers_on_one_number_match_numpy(value):
    """The scalar fast path calls them on NumPy scalars: same dtype, same value as an array."""
    x = np.float32(value)
    assert rt.log1p(x).dtype == np.float32 and rt.sigmoid(x).dtype == np.float32
    assert rt.log1p(x) == np.log1p(x) and np.signbit(rt.log1p(x)) == np.signbit(x)
    assert abs(rt.sigmoid(x) - rt.sigmoid(np.array([x]))[0]) <= np.spacing(np.float32(1))
    assert isinstance(rt.softplus(x), np.float32) and rt.softplus(x) == np.logaddexp(0, x)


def _same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_update_in_place_writes_into_the_variable_unless_it_cannot_or_errors_may_raise():
    var = np.arange(6, dtype=np.float32)
    got = rt.update_in_place(np.subtract, var, np.ones(6, np.float32))
    assert got is var
    np.testing.assert_array_equal(var, np.arange(6) - 1)
    frozen = np.arange(6, dtype=np.float32)
    frozen.flags.writeable = False
    wider = np.ones(6, np.float64)  # the result would be float64: not var's dtype
    for target, delta in ((frozen, np.ones(6, np.float32)), (var.copy(), wider),
                          (var.copy(), np.ones((2, 6), np.float32))):
        before = target.copy()
        got = rt.update_in_place(np.add, target, delta)
        assert got is not target
        np.testing.assert_array_equal(target, before)
        np.testing.assert_array_equal(got, before + delta)
    def handler(kind, flag):
        raise FloatingPointError(kind)

    class Log:
        def write(self, text):
            raise FloatingPointError(text)

    big = np.full(4, 3e38, np.float32)
    for settings in ({"over": "raise"}, {"over": "call", "call": handler},
                     {"over": "log", "call": Log()}):
        with np.errstate(**settings), pytest.raises(FloatingPointError):
            rt.update_in_place(np.add, big, big)
        np.testing.assert_array_equal(big, np.float32(3e38))  # unchanged
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with np.errstate(over="warn"), pytest.raises(RuntimeWarning, match="overflow"):
            rt.update_in_place(np.add, big, big)
    np.testing.assert_array_equal(big, np.float32(3e38))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with np.errstate(over="warn"):
            assert rt.update_in_place(np.add, big, big) is big  # warned and ignored: in place
    assert np.isinf(big).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int32,
                                   np.int64, np.uint16, np.bool_])
def test_select_is_np_where_bit_for_bit(dtype):
    """rt.select computes on the bits above SELECT_MIN_SIZE elements: NaN payloads, signed
    zeros and every integer come out as np.where gives them, with arrays, Python numbers
    (taking the array's dtype, as np.where gives them) and broadcasting."""
    n = rt.SELECT_MIN_SIZE * 2 + 3
    raw = RNG.integers(0, 256, size=(2, n * np.dtype(dtype).itemsize), dtype=np.uint8)
    x, y = (raw[i].view(dtype) if dtype != np.bool_ else raw[i] > 127 for i in (0, 1))
    if np.dtype(dtype).kind == "f":  # NaNs with payloads and signs, and both zeros
        x[:4] = np.array([np.nan, -np.nan, 0.0, -0.0], dtype)
        x.view(np.uint8)[-2 * np.dtype(dtype).itemsize:] = 0xFF  # two NaNs, all bits set
    cond = RNG.random(n) < 0.5
    _same_bits(rt.select(cond, x, y), np.where(cond, x, y))
    for number in (0, 1, -0.0, 2.5, True):
        want = np.where(cond, x, number)  # dtype by NEP 50: bool and 2.5 may promote
        _same_bits(rt.select(cond, x, number), want)
        _same_bits(rt.select(cond, number, y), np.where(cond, number, y))
    grid = RNG.random((64, n // 64)) < 0.5  # cond, x and y of three broadcast shapes
    col, row = x[:64].reshape(64, 1), y[: n // 64].reshape(1, -1)
    _same_bits(rt.select(grid, col, row), np.where(grid, col, row))
    _same_bits(rt.select(cond[:10], x[:10], y[:10]), np.where(cond[:10], x[:10], y[:10]))


def test_select_reads_any_nonzero_bool_byte_as_true_and_passes_odd_inputs_to_np_where():
    """A bool array may hold bytes other than 0 and 1 (u8.view(bool)): np.where reads them as
    True, and so does select. A Python int the dtype cannot hold, None or a list are
    np.where's to handle, whatever it makes of them."""
    n = rt.SELECT_MIN_SIZE * 2
    cond = np.frombuffer(bytes([0, 255, 2, 1, 128, 0, 7, 0]) * (n // 8), np.bool_)
    x = RNG.standard_normal(n).astype(np.float32)
    _same_bits(rt.select(cond, x, -x), np.where(cond, x, -x))
    small = np.arange(n).astype(np.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whatever NumPy says of 300 in int8, both say it
        _same_bits(rt.select(cond, small, 300), np.where(cond, small, 300))
    for odd in (None, [1.0] * n):
        np.testing.assert_array_equal(rt.select(cond, x, odd), np.where(cond, x, odd))


@pytest.mark.parametrize("n", [0, 1, 5, 17, 64, 1000, 4099])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_run_blocks_covers_every_element_once_in_equal_blocks(monkeypatch, n, threads):
    from staticgrad import runtime_blocks
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

    from staticgrad import runtime_blocks
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

    from staticgrad import runtime_blocks
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

    from staticgrad import runtime_blocks
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
    from staticgrad import runtime_blocks
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

    from staticgrad import runtime_blocks
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

    from staticgrad import runtime_blocks
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
    from staticgrad import runtime_blocks
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
