"""conv_blocked: convolution and its gradients in blocks of the batch, on threads, each block's
product with the BLAS on one thread.

Checked against the definition written out here (a sum over each window, and its two
adjoints by the chain rule done by hand) and against runtime_conv, with slabs small enough
that blocks hold 1, 2 or 3 images and do not divide the batch (nor the threads' parts), the
batch split between threads or not, stride 1 and 2, SAME, VALID and explicit padding,
dilation, 1 and many channels, batch 1. Then: the BLAS's thread count is back to what it was
after a call, and without threadpoolctl conv_fast keeps its whole-batch lowering.
"""

import itertools
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

from staticgrad import runtime_conv as ref
from staticgrad.backends.numpy import conv_blocked, conv_fast

pytestmark = pytest.mark.usefixtures("loops_at_every_size")  # (conftest.py)

needs_blocks = pytest.mark.skipif(
    not (conv_fast.available() and conv_blocked.available()),
    reason="needs numba's loops and threadpoolctl with a BLAS it knows")

CASES = [  # (input shape, kernel, out channels, strides, padding, dilations)
    ((5, 7, 6, 1), 3, 4, (1, 1), "SAME", (1, 1)),
    ((5, 7, 6, 3), 3, 2, (2, 2), "SAME", (1, 1)),
    ((4, 8, 8, 2), 5, 3, (1, 1), "VALID", (1, 1)),
    ((3, 9, 7, 4), 3, 5, (2, 1), "VALID", (1, 1)),
    ((1, 6, 6, 3), 3, 2, (1, 1), "SAME", (1, 1)),
    ((7, 6, 7, 2), 2, 3, (2, 2), ((1, 0), (0, 1)), (1, 1)),
    ((4, 9, 9, 2), 3, 3, (1, 1), "SAME", (2, 2)),
    # one input channel: the windows copied by NumPy from a zero-bordered block (_Windows)
    ((5, 9, 8, 1), 5, 3, (2, 1), "SAME", (1, 1)),
    ((4, 9, 9, 1), 3, 2, (1, 2), ((2, 0), (1, 3)), (2, 1)),
    ((3, 8, 7, 1), 2, 2, (3, 2), "VALID", (1, 1)),
]


def _arrays(seed, *shapes, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _hand_conv(x, w, strides, pads, dilations):
    """The definition: every output is the sum over its window of x times w."""
    (kh, kw, _, o), (sh, sw), (dh, dw) = w.shape, strides, dilations
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    oh = (xp.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[2] - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, o))
    for p, q in itertools.product(range(oh), range(ow)):
        window = xp[:, p * sh:p * sh + (kh - 1) * dh + 1:dh, q * sw:q * sw + (kw - 1) * dw + 1:dw]
        out[:, p, q] = np.einsum("bijc,ijco->bo", window, w)
    return out


def _hand_gradients(x, w, dy, strides, pads, dilations):
    """d<dy, conv(x, w)>/dx and /dw: the sum is linear in each, so each element of a gradient
    is the sum with a unit array in place of x (or w)."""
    def unit(shape, i):
        e = np.zeros(int(np.prod(shape)))
        e[i] = 1
        return e.reshape(shape)
    dx = [np.sum(dy * _hand_conv(unit(x.shape, i), w, strides, pads, dilations))
          for i in range(x.size)]
    dw = [np.sum(dy * _hand_conv(x, unit(w.shape, i), strides, pads, dilations))
          for i in range(w.size)]
    return np.reshape(dx, x.shape), np.reshape(dw, w.shape)


@pytest.fixture(params=[(1, 0), (2, 0), (3, 1 << 30), (3, 0)],
                ids=["blocks of 1, threads", "blocks of 2, threads", "blocks of 3, one thread",
                     "blocks of 3, threads"])
def blocks(request, monkeypatch):
    """Slabs sized for `images` images of each case, the batch split between threads when
    MIN_SPLIT_MACS is 0."""
    images, min_split = request.param
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", min_split)
    return images


def _slab_for(monkeypatch, images, shape, k, c, strides, padding, dilations, itemsize):
    pads = ref.resolve_pads(padding, shape[1:3], (k, k), strides, dilations)
    oh, ow = ref.output_hw(shape[1:3], (k, k), strides, pads, dilations)
    monkeypatch.setattr(conv_blocked, "SLAB_BYTES", images * oh * ow * k * k * c * itemsize)
    return pads


@needs_blocks
@pytest.mark.parametrize("shape,k,o,strides,padding,dilations", CASES)
def test_blocks_against_the_definition(shape, k, o, strides, padding, dilations, blocks,
                                       monkeypatch):
    x, w = _arrays(0, shape, (k, k, shape[3], o))
    pads = _slab_for(monkeypatch, blocks, shape, k, shape[3], strides, padding, dilations, 8)
    what = f"x{shape} w{w.shape} strides {strides} {padding} dilations {dilations}"
    y = conv_fast.conv2d(x, w, strides, padding, dilations)
    np.testing.assert_allclose(y, _hand_conv(x, w, strides, pads, dilations), rtol=1e-12,
                               atol=1e-12, err_msg=what)
    (dy,) = _arrays(1, y.shape)
    want_dx, want_dw = _hand_gradients(x, w, dy, strides, pads, dilations)
    np.testing.assert_allclose(
        conv_fast.conv2d_backprop_input(shape, w, dy, strides, padding, dilations), want_dx,
        rtol=1e-11, atol=1e-12, err_msg=f"input gradient of {what}")
    np.testing.assert_allclose(
        conv_fast.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dilations),
        want_dw, rtol=1e-11, atol=1e-12, err_msg=f"filter gradient of {what}")


@needs_blocks
@pytest.mark.parametrize("shape,k,o,strides,padding,dilations", CASES)
def test_float32_blocks_against_runtime_conv(shape, k, o, strides, padding, dilations,
                                             blocks, monkeypatch):
    x, w = _arrays(2, shape, (k, k, shape[3], o), dtype=np.float32)
    _slab_for(monkeypatch, blocks, shape, k, shape[3], strides, padding, dilations, 4)
    what = f"float32 x{shape} w{w.shape} strides {strides} {padding}"
    y = conv_fast.conv2d(x, w, strides, padding, dilations)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref.conv2d(x, w, strides, padding, dilations), rtol=1e-5,
                               atol=1e-5, err_msg=what)
    (dy,) = _arrays(3, y.shape, dtype=np.float32)
    for got, want in [
            (conv_fast.conv2d_backprop_input(shape, w, dy, strides, padding, dilations),
             ref.conv2d_backprop_input(shape, w, dy, strides, padding, dilations)),
            (conv_fast.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dilations),
             ref.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dilations))]:
        assert got.dtype == np.float32 and got.shape == want.shape, what
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=what)


@needs_blocks
def test_the_blas_threads_are_back_after_a_call(monkeypatch):
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 0)
    controller = conv_blocked._blas_controller()
    before = [lib["num_threads"] for lib in controller.info()]
    seen = []
    im2col = conv_fast._load().im2col

    def spy(*args):  # what the BLAS is set to while the blocks run
        seen.append([lib["num_threads"] for lib in controller.info()])
        return im2col(*args)

    monkeypatch.setattr(conv_fast._load(), "im2col", spy)
    x, w = _arrays(4, (4, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    assert seen and all(threads == [1] * len(before) for threads in seen)
    assert [lib["num_threads"] for lib in controller.info()] == before


def test_without_threadpoolctl_conv_fast_keeps_one_product(monkeypatch):
    monkeypatch.setattr(conv_blocked, "_blas", {"controller": None, "users": 0})
    assert not conv_blocked.available()
    x, w = _arrays(5, (3, 6, 5, 2), (3, 3, 2, 4), dtype=np.float32)
    y = conv_fast.conv2d(x, w, (2, 1), "SAME", (1, 1))
    np.testing.assert_allclose(y, ref.conv2d(x, w, (2, 1), "SAME", (1, 1)), rtol=1e-5,
                               atol=1e-5)
    (dy,) = _arrays(6, y.shape, dtype=np.float32)
    np.testing.assert_allclose(conv_fast.conv2d_backprop_filter(x, w.shape, dy, (2, 1), "SAME",
                                                                (1, 1)),
                               ref.conv2d_backprop_filter(x, w.shape, dy, (2, 1), "SAME",
                                                          (1, 1)), rtol=1e-4, atol=1e-4)


def test_images_per_block():
    assert conv_blocked.images_per_block(128, conv_blocked.SLAB_BYTES // 3) == 3
    assert conv_blocked.images_per_block(128, 10 * conv_blocked.SLAB_BYTES) == 1
    assert conv_blocked.images_per_block(2, 16) == 2


def _blas_threads():
    return [lib.get_num_threads() for lib in conv_blocked._blas_controller().lib_controllers]


def _spy_on_im2col(monkeypatch, before_each):
    """conv_fast's im2col, with before_each() called first (on whichever thread runs it)."""
    kernels = conv_fast._load()
    im2col = kernels.im2col

    def spy(*args):
        before_each()
        return im2col(*args)

    monkeypatch.setattr(kernels, "im2col", spy)


def _convolve_meeting(monkeypatch, x, w, meet, release, other):
    """conv_fast.conv2d(x, w) with meet() before each im2col; then release set and `other`
    (the thread meet started) joined, whatever the call did."""
    _spy_on_im2col(monkeypatch, meet)
    try:
        conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    finally:
        release.set()
        other.join()


@needs_blocks
def test_a_call_on_another_thread_holds_the_blas_to_one_thread(monkeypatch):
    """threadpoolctl lets one Python thread set a pthreads OpenBLAS's threads, the first that
    did while it lives (here the test's, as a user's own threadpool_limits would): a call on
    another thread must hold the BLAS all the same, and put it back."""
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 1 << 62)  # on the caller's thread
    for lib in conv_blocked._blas_controller().lib_controllers:
        lib.set_num_threads(lib.get_num_threads())  # this thread controls, if none did
    before, seen = _blas_threads(), []
    _spy_on_im2col(monkeypatch, lambda: seen.append(_blas_threads()))
    x, w = _arrays(7, (2, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    other = threading.Thread(target=conv_fast.conv2d, args=(x, w, (1, 1), "SAME", (1, 1)))
    other.start()
    other.join()
    assert seen == [[1] * len(before)]
    assert _blas_threads() == before


@needs_blocks
def test_two_threads_calls_overlapping_leave_the_blas_as_it_was(monkeypatch):
    """Two sessions on two threads: this thread's call goes in first and out first, the other
    one's restores the BLAS (it stayed on one thread for good when only this thread could)."""
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 1 << 62)
    for lib in conv_blocked._blas_controller().lib_controllers:
        lib.set_num_threads(lib.get_num_threads())
    before = _blas_threads()
    x, w = _arrays(8, (2, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    other = threading.Thread(target=conv_fast.conv2d, args=(x, w, (1, 1), "SAME", (1, 1)))
    other_inside, first_out = threading.Event(), threading.Event()

    def meet():
        if threading.current_thread() is other:
            other_inside.set()
            first_out.wait(30)
        elif not other_inside.is_set():
            other.start()
            other_inside.wait(30)

    _convolve_meeting(monkeypatch, x, w, meet, first_out, other)
    assert _blas_threads() == before


@needs_blocks
def test_a_call_does_not_take_the_users_threadpool_limits_away(monkeypatch):
    """A call on a thread that lives on (a training thread) and then the user's own
    threadpool_limits on another: the limit holds there."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    libs = conv_blocked._blas_controller().lib_controllers
    for lib in libs:  # no thread controls OpenBLAS's threads yet (threadpoolctl 3.8)
        if hasattr(type(lib), "clear_controlling_thread"):
            type(lib).clear_controlling_thread(force=True)
    x, w = _arrays(9, (2, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    done, stop = threading.Event(), threading.Event()

    def training():
        conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
        done.set()
        stop.wait(30)

    trainer = threading.Thread(target=training)
    trainer.start()
    try:
        assert done.wait(30)
        before = _blas_threads()
        with threadpoolctl.threadpool_limits(limits=3, user_api="blas"):
            assert _blas_threads() == [3] * len(libs)
        assert _blas_threads() == before
    finally:
        stop.set()
        trainer.join()


def _exit_code(pid, timeout=60):
    """The exit code of child `pid`, killed (and None) if it has not ended within `timeout`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@needs_blocks
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_forked_while_a_call_is_inside_gets_the_blas_back(monkeypatch):
    """A fork on another thread while this thread's call holds the BLAS on one thread: the
    child has no thread to let go of it, so it must start let go (its BLAS as before the call)
    and hold and restore it on its own calls."""
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 1 << 62)
    x, w = _arrays(10, (2, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    want = conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))  # compiled, and the BLAS found
    before, parent, held_in_child, codes = _blas_threads(), os.getpid(), [], []

    def fork():
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                at_start = _blas_threads()
                y = conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
                code = 0 if (at_start == before and held_in_child == [[1] * len(before)]
                             and _blas_threads() == before and np.array_equal(y, want)) else 2
            finally:
                os._exit(code)
        codes.append(_exit_code(pid))

    forker = threading.Thread(target=fork)

    def im2col_hook():
        if os.getpid() != parent:
            held_in_child.append(_blas_threads())
        elif not forker.is_alive() and not codes:
            forker.start()
            forker.join()

    _spy_on_im2col(monkeypatch, im2col_hook)
    conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    assert codes == [0]
    assert _blas_threads() == before


@needs_blocks
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_forked_inside_this_threads_hold_keeps_it_until_it_lets_go():
    """A fork on the thread that holds the BLAS (a py_func that forks inside the run of a plan
    with convolutions, which holds it throughout): the child's thread is still inside, so the
    BLAS stays on one thread until it lets go, is as before then, and is held again by the
    child's next hold (the count not left below zero)."""
    before = _blas_threads()
    one = [1] * len(before)
    pid = None
    try:
        with conv_blocked.one_blas_thread():
            pid = os.fork()
            inside = _blas_threads()
        if pid == 0:
            after = _blas_threads()
            with conv_blocked.one_blas_thread():
                again = _blas_threads()
            ok = (inside, after, again, _blas_threads(), conv_blocked._blas["users"]) == (
                one, before, one, before, 0)
            os._exit(0 if ok else 2)
    finally:
        if pid == 0:
            os._exit(1)
    assert _exit_code(pid) == 0
    assert _blas_threads() == before


def _conv_and_gradients(x, w, dy, strides, padding):
    return (conv_fast.conv2d(x, w, strides, padding, (1, 1)),
            conv_fast.conv2d_backprop_input(x.shape, w, dy, strides, padding, (1, 1)),
            conv_fast.conv2d_backprop_filter(x, w.shape, dy, strides, padding, (1, 1)))


def _runtime_conv(x, w, dy, strides, padding):
    return (ref.conv2d(x, w, strides, padding, (1, 1)),
            ref.conv2d_backprop_input(x.shape, w, dy, strides, padding, (1, 1)),
            ref.conv2d_backprop_filter(x, w.shape, dy, strides, padding, (1, 1)))


@pytest.mark.parametrize("missing", ["threadpoolctl", "numba"])
def test_without_a_package_of_the_extra_the_results_stand(missing, monkeypatch):
    """The package's import fails (as where it is not installed), found afresh."""
    monkeypatch.setitem(sys.modules, missing, None)
    monkeypatch.setattr(conv_blocked, "_blas", {})
    monkeypatch.setattr(conv_fast, "_state", {})
    assert not (conv_blocked.available() if missing == "threadpoolctl"
                else conv_fast.available())
    x, w, dy = _arrays(11, (5, 7, 6, 3), (3, 3, 3, 4), (5, 4, 3, 4), dtype=np.float32)
    for got, want in zip(_conv_and_gradients(x, w, dy, (2, 2), "SAME"),
                         _runtime_conv(x, w, dy, (2, 2), "SAME")):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_blocks
def test_a_part_that_raises_leaves_no_part_running_after_the_call(monkeypatch):
    """On three threads the first helper's part raises (a slab it could not allocate): the
    call raises only once the other helper's part has ended, or that one ran on, its products
    with the BLAS let go, into arrays nobody reads."""
    monkeypatch.setitem(conv_fast._state, "threads", 3)
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 0)
    x, w = _arrays(12, (3, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))  # compiled (or loaded) first
    x[1] = 7  # the image of the part that raises
    failed, ended = threading.Event(), threading.Event()

    def parts_meet_here(images):
        if threading.current_thread() is threading.main_thread():
            return
        if not np.all(images == 7):
            failed.wait(30)
            time.sleep(0.2)
            ended.set()
        else:
            failed.set()
            raise MemoryError("no room for the slab")

    kernels = conv_fast._load()
    im2col = kernels.im2col

    def spy(images, *args):
        parts_meet_here(images)
        return im2col(images, *args)

    monkeypatch.setattr(kernels, "im2col", spy)
    with pytest.raises(MemoryError):
        conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    assert ended.is_set()


@needs_blocks
def test_the_users_own_limits_around_a_call_stand(monkeypatch):
    """threadpool_limits around the user's code on this thread: held to one inside the call,
    the user's limit back after it, and the user's exit gives back what was there before."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 0)
    seen = []
    _spy_on_im2col(monkeypatch, lambda: seen.append(_blas_threads()))
    x, w = _arrays(13, (4, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    before = _blas_threads()
    with threadpoolctl.threadpool_limits(limits=3, user_api="blas"):
        conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
        assert _blas_threads() == [3] * len(before)
    assert seen and all(threads == [1] * len(before) for threads in seen)
    assert _blas_threads() == before


@needs_blocks
@pytest.mark.xfail(strict=True, reason="the BLAS's thread count is process-wide: a call holds "
                   "it for its whole length, so a user's threadpool_limits entered on another "
                   "thread during a call and left after it saves the held 1 and puts it back "
                   "for good; only products that do not go through the setting would avoid it")
def test_a_users_limits_on_another_thread_overlapping_a_call(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 1 << 62)
    x, w = _arrays(14, (2, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    before = _blas_threads()
    entered, call_out = threading.Event(), threading.Event()

    def user():
        for lib in conv_blocked._blas_controller().lib_controllers:
            if hasattr(type(lib), "clear_controlling_thread"):  # this thread may set them
                type(lib).clear_controlling_thread(force=True)
        with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
            entered.set()
            call_out.wait(30)

    other = threading.Thread(target=user)

    def meet():
        if not other.is_alive() and not entered.is_set():
            other.start()
            entered.wait(30)

    _convolve_meeting(monkeypatch, x, w, meet, call_out, other)
    try:
        assert _blas_threads() == before
    finally:
        for lib in conv_blocked._blas_controller().lib_controllers:
            conv_blocked._set_threads(lib, before[0])


@needs_blocks
def test_a_restore_cut_short_by_keyboardinterrupt_is_made_good_by_the_next_call(monkeypatch):
    """Ctrl-C can land between the last caller's count going to 0 and the BLAS's count put
    back (about 1 in 200 interrupts of back-to-back small calls): the next call must restore
    the count from before, not save the held 1 as the count to go back to."""
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 0)
    x, w = _arrays(15, (4, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    before = _blas_threads()
    set_threads, cut = conv_blocked._set_threads, []

    def interrupted_restore(lib, threads):
        if threads != 1 and not cut:
            cut.append(threads)
            raise KeyboardInterrupt
        set_threads(lib, threads)

    monkeypatch.setattr(conv_blocked, "_set_threads", interrupted_restore)
    with pytest.raises(KeyboardInterrupt):
        conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    assert cut and conv_blocked._blas["users"] == 0
    conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    try:
        assert _blas_threads() == before
    finally:
        for lib, threads in zip(conv_blocked._blas_controller().lib_controllers, before):
            set_threads(lib, threads)


@needs_blocks
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_forked_while_another_thread_holds_the_lock_does_not_hang():
    x, w = _arrays(16, (2, 6, 6, 2), (3, 3, 2, 3), dtype=np.float32)
    want = conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))
    holding, let_go = threading.Event(), threading.Event()

    def hold():
        with conv_blocked._blas_lock:
            holding.set()
            let_go.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(30)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = 0 if np.array_equal(conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1)),
                                           want) else 2
            finally:
                os._exit(code)
        assert _exit_code(pid, timeout=30) == 0
    finally:
        let_go.set()
        holder.join()


@needs_blocks
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k,strides,padding,dilations", [
    ((5, 7, 6, 1), 3, (1, 1), "SAME", (1, 1)),
    ((4, 9, 8, 1), 5, (2, 1), "SAME", (1, 1)),
    ((4, 9, 9, 1), 3, (1, 2), ((2, 0), (1, 3)), (2, 1)),
    ((3, 8, 7, 1), 2, (3, 2), "VALID", (1, 1)),
    ((2, 6, 6, 1), 3, (2, 2), ((4, 4), (0, 5)), (1, 1)),  # pads larger than the window
    ((3, 5, 5, 2), 3, (1, 1), "SAME", (1, 1)),  # two channels: numba's im2col
])
def test_one_channel_windows_are_numbas_im2col_element_for_element(shape, k, strides, padding,
                                                                   dilations, dtype):
    # blocks of 2 images (the last one short), each filling the slab over the one before
    x = _arrays(4, shape, dtype=dtype)[0]
    pads = ref.resolve_pads(padding, shape[1:3], (k, k), strides, dilations)
    out_hw = ref.output_hw(shape[1:3], (k, k), strides, pads, dilations)
    top_left = (pads[0][0], pads[1][0])
    kernels = conv_fast._load()
    slab = np.full((2, *out_hw, k, k, shape[3]), np.nan, dtype)
    windows = conv_blocked._Windows(kernels, x, slab, top_left, strides, dilations)
    assert (windows.padded is not None) == (shape[3] == 1)
    for start in range(0, shape[0], 2):
        end = min(start + 2, shape[0])
        want = np.empty((end - start, *slab.shape[1:]), dtype)
        kernels.im2col(x[start:end], *top_left, strides, dilations, want)
        np.testing.assert_array_equal(windows(start, end), want)


@needs_blocks
def test_one_channel_windows_take_no_more_memory_than_a_slab():
    # pads and strides far larger than the window: the bordered block would be 600x600 an
    # image for a 7x7x3x3 slab; numba's im2col, which pads nothing, makes these windows
    x = _arrays(5, (64, 28, 28, 1), dtype=np.float32)[0]
    slab = np.empty((64, 7, 7, 3, 3, 1), np.float32)
    windows = conv_blocked._Windows(conv_fast._load(), x, slab, (300, 300), (100, 100), (1, 1))
    assert windows.padded is None
    w = _arrays(6, (3, 3, 1, 2), dtype=np.float32)[0]
    pads = ((300, 300), (300, 300))
    np.testing.assert_array_equal(conv_fast.conv2d(x, w, (100, 100), pads, (1, 1)),
                                  ref.conv2d(x, w, (100, 100), pads, (1, 1)))
