"""Regressions found by attacking the dynamic mode's fast paths (dispatch plans, run_binary /
run_unary, the tape's generated builders, anomaly mode): each test states what the full path
(or the behaviour before the fast paths, or PyTorch) gives, and checks that the fast path
gives the same."""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy


# -- tracing under gradient_override_map ----------------------------------------------------------
def test_trace_keeps_the_gradient_override_of_an_op_recorded_under_gradient_override_map():
    """Before the fast paths, `_override` wrote `_gradient_op_type` into the attrs that the
    tracer received too, so an op traced inside a gradient_override_map block carried the
    override into the traced graph (as an op built in that block of a static graph does), and
    sg.gradients of the traced graph used it. `_finish` now applies the override to the tape
    node's copy of the attrs only, and the tracer gets the op without it."""
    @sg.RegisterGradient("FastpathTraceTimesSeven")
    def _seven(op, grad):
        return [grad * 0.0 + 7.0, grad * 0.0 + 7.0]

    w = dy.tensor([3.0, 4.0])

    def f(a):
        with sg.get_default_graph().gradient_override_map({"Mul": "FastpathTraceTimesSeven"}):
            return (a * w).sum()

    x = dy.tensor([1.0, 2.0], requires_grad=True)
    traced = dy.trace(f, x)
    muls = [op for op in traced.graph.get_operations() if op.type == "Mul"]
    assert len(muls) == 1
    assert muls[0].attrs.get("_gradient_op_type") == "FastpathTraceTimesSeven"
    grads = sg.gradients(traced.outputs, traced.inputs)
    with sg.Session(graph=traced.graph) as sess:
        got = sess.run(grads, {traced.inputs[0]: np.array([1.0, 2.0], np.float32)})
    np.testing.assert_array_equal(got[0], [7.0, 7.0])


# -- anomaly mode ---------------------------------------------------------------------------------
def _nan_backward(x):
    y = (x.sqrt() * 0.0).sum()  # sqrt'(0) = inf, times 0: NaN in SqrtBackward0's result
    y.backward()


def test_detect_anomaly_with_check_nan_false_does_not_raise_on_nan():
    """PyTorch: torch.autograd.detect_anomaly(check_nan=False) records lines but lets a NaN
    gradient through (x.grad == [nan, 0.]); the argument is accepted here and ignored."""
    x = dy.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with dy.autograd.detect_anomaly(check_nan=False):
            _nan_backward(x)
    g = x.grad.numpy()
    assert np.isnan(g[0]) and g[1] == 0.0


def test_set_detect_anomaly_with_check_nan_false_does_not_raise_on_nan():
    """PyTorch: torch.autograd.set_detect_anomaly(True, check_nan=False) as above."""
    x = dy.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with dy.autograd.set_detect_anomaly(True, check_nan=False):
            _nan_backward(x)
    assert np.isnan(x.grad.numpy()[0])


def test_detect_anomaly_still_raises_on_nan_by_default():
    x = dy.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with dy.autograd.detect_anomaly(), \
                pytest.raises(RuntimeError, match="SqrtBackward0' returned nan values"):
            _nan_backward(x)


# -- thread safety of the kernel cache ------------------------------------------------------------
class _EvictedAfterGet(OrderedDict):
    """_KERNELS as another thread leaves it: the entry that `get` just found is evicted (the
    least recently used one, by a thread that filled the cache) before this thread's
    `move_to_end` runs. Two threads running ops over ever new expressions (x[i] in a loop, or
    KERNEL_CACHE_SIZE reached) interleave so."""

    def get(self, key, default=None):
        value = super().get(key, default)
        self.pop(key, None)
        return value


def test_an_op_survives_another_thread_evicting_its_kernel(monkeypatch):
    """kernels.kernel() does `_KERNELS.get(key)` then `_KERNELS.move_to_end(key)`: if another
    thread evicts the entry in between, move_to_end raises KeyError (the dynamic mode's random
    kernels avoid this with pop-and-put-back, see dispatch._random_kernel). Seen with four
    threads running `(x * y + x).exp()` and `x[i]` over a small cache: a bare KeyError('a0 +
    a1', 2) out of `a + b` (dispatch._run asks kernel() a second time to make the plan, outside
    its try), or InvalidArgumentError('Mul op ... failed: KeyError') before the fast paths."""
    from staticgrad.ops import kernels
    monkeypatch.setattr(kernels, "_KERNELS", _EvictedAfterGet())
    x = dy.tensor(np.arange(5, dtype=np.float64) + 0.25)
    y = dy.tensor(np.full(5, 2.0))
    np.testing.assert_array_equal((x * y).numpy(), x.numpy() * 2.0)
    np.testing.assert_array_equal((x * y).numpy(), x.numpy() * 2.0)
    ints = dy.tensor(np.arange(5))  # never planned: kernel() at every call
    assert (ints * ints).tolist() == [0, 1, 4, 9, 16]
    assert (ints * ints).tolist() == [0, 1, 4, 9, 16]


# -- cache growth ---------------------------------------------------------------------------------
def test_builders_of_variadic_ops_stay_bounded_over_ever_new_arities(monkeypatch):
    """tape._BUILDERS is emptied beyond BUILDERS_KEPT ("one per arity of variadic ops: cat of
    1, 2, 3..."), but tape._KINDS, keyed by (op type, n inputs, n outputs), keeps every
    builder it was given, and is never emptied: a loop that stacks a growing list (a decoder
    stacking its outputs at each step) keeps one compiled builder per length, each of code
    O(length). Measured: dy.stack of 1..400 tensors that require grad holds 34 MB after the
    loop (3.9 MB before the builders), and takes 4.3 s for 1..300 (0.5 s before)."""
    from staticgrad.dynamic import tape
    monkeypatch.setattr(tape, "BUILDERS_KEPT", 8)
    monkeypatch.setattr(tape, "_KINDS", {})
    monkeypatch.setattr(tape, "_BUILDERS", {})
    x = dy.tensor([1.0], requires_grad=True)
    for n in range(1, 41):
        y = dy.stack([x] * n)
        assert y.grad_fn is not None
    live = {id(build) for (op_type, *_), (_, build) in tape._KINDS.items() if op_type == "Pack"}
    assert len(live) <= tape.BUILDERS_KEPT


# -- guards (these hold now; they lock in fast-path properties) ------------------------------------
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # np.arange(0, 3, 0) on the plan
def test_a_planned_range_of_float_inputs_still_refuses_a_zero_delta():
    """Range reads its (float) inputs' values in its shape rule, yet has no integer input, so
    it is planned; a call the shape rule would refuse must still be refused (the kernel
    raising sends the call down the full path)."""
    from staticgrad.dynamic import dispatch
    start, limit = dy.tensor(0.0), dy.tensor(3.0)
    for _ in range(2):
        out = dispatch.run_operation("Range", [start, limit, dy.tensor(1.0)],
                                     {"dtype": sg.float32}).outputs[0]
        assert out.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="range delta must not be zero"):
        dispatch.run_operation("Range", [start, limit, dy.tensor(0.0)], {"dtype": sg.float32})


def test_trace_records_ops_that_run_binary_and_run_unary_take_straight_to_their_plan():
    x = dy.tensor([1.0, 2.0])
    y = dy.tensor([3.0, 4.0])
    (x * y).exp()  # planned: the traced call below takes the fast paths
    traced = dy.trace(lambda a: (a * y).exp(), x)
    assert [op.type for op in traced.graph.get_operations()
            if op.type in ("Mul", "Exp")] == ["Mul", "Exp"]
    with sg.Session(graph=traced.graph) as sess:
        got = sess.run(traced.outputs, {traced.inputs[0]: np.array([1.0, 2.0], np.float32)})
    np.testing.assert_allclose(got, np.exp([3.0, 8.0]), rtol=1e-6)


# -- the tape's backward step (autograd._step) against autodiff.backward_step ------------------
def _programs():
    """Small programs whose nodes cover what `_step` takes as it is and what it hands back to
    `_checked` or to backward_step: broadcasting, matmul's core dims, a bool input, integer
    indices (an IndexedSlices gradient), reductions, an op of several outputs."""
    rng = np.random.default_rng(0)

    def leaf(*shape):
        return dy.tensor(rng.normal(size=shape).astype(np.float32), requires_grad=True)

    x, y, w = leaf(3), leaf(2, 3), leaf(3, 4)
    return {
        "broadcast mul": lambda: (x * y).sum(),
        "rsub of a number": lambda: (10.0 - x * x).sum(),
        "matmul": lambda: (y @ w).exp().sum(),
        "where": lambda: dy.where(x > 0, x, x * 2.0).sum(),
        "gather": lambda: w[dy.tensor([0, 2, 2])].mean(),
        "mean over a dim": lambda: (y.mean(dim=0) - x).pow(2).sum(),
        "several outputs": lambda: (y.unbind(0)[1] * 2.0).sum(),
    }


@pytest.mark.parametrize("name", list(_programs()))
def test_the_tapes_step_gives_what_backward_step_gives(name):
    """Every node's step, taken by `_step` (which skips backward_step's decisions and takes
    gradients of exactly their input's shape and dtype as they are) and by backward_step:
    the same gradients, None in the same places."""
    from staticgrad.autodiff import backward_step
    from staticgrad.dynamic import autograd
    from staticgrad.dynamic.mode import EAGER
    from staticgrad.graph import _default

    out = _programs()[name]()
    nodes = autograd._reachable([out.op])
    _default.stack.append(EAGER)  # as the walk runs rules
    try:
        with dy.no_grad():
            for node in nodes:
                grads = [dy.ones_like(t) for t in node.outputs]
                fast = autograd._step(node, grads, node.wanted)
                full = backward_step(node, grads, wanted=node.wanted)
                assert [g is None for g in fast] == [g is None for g in full], node.name()
                for a, b in zip(fast, full):
                    if a is not None:
                        assert a.dtype is b.dtype and a.shape == b.shape, node.name()
                        np.testing.assert_allclose(a.numpy(), b.numpy(), err_msg=node.name())
    finally:
        _default.stack.pop()
