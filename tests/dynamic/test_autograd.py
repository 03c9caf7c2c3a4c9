"""The dynamic mode's autograd semantics, rule by rule, as PyTorch defines them."""

from __future__ import annotations

import gc
import re
import warnings
import weakref

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy
from staticgrad.dynamic.tape import FREED_MESSAGE, AccumulateGrad


def leaf(values, **kw):
    return dy.tensor(values, requires_grad=True, **kw)


# -- leaves, requires_grad, grad_fn -----------------------------------------------------------
def test_leaves_and_non_leaves():
    x = dy.tensor([2.0])
    w = leaf([3.0])
    b = leaf([1.0])
    y = w * x
    z = y + b
    assert (x.requires_grad, w.requires_grad, b.requires_grad) == (False, True, True)
    assert (y.requires_grad, z.requires_grad) == (True, True)
    assert (x.is_leaf, w.is_leaf, y.is_leaf, z.is_leaf) == (True, True, False, False)
    assert x.grad_fn is None and w.grad_fn is None
    z.backward()
    assert w.grad.tolist() == [2.0] and b.grad.tolist() == [1.0] and x.grad is None


def test_grad_fn_names_and_next_functions():
    w1, w2 = leaf([2.0]), leaf([5.0])
    a = dy.tensor([4.0])
    d = w1 * a + w2 * a
    loss = 10 - d
    assert type(d.grad_fn).__name__ == "AddBackward0" and d.grad_fn.name() == "AddBackward0"
    assert repr(loss.grad_fn).startswith("<RsubBackward1 object at 0x")
    (m1, i1), (m2, i2) = d.grad_fn.next_functions
    assert type(m1).__name__ == type(m2).__name__ == "MulBackward0" and i1 == i2 == 0
    acc, _ = m1.next_functions[0]
    assert isinstance(acc, AccumulateGrad) and acc.variable is w1
    assert m1.next_functions[1] == (None, 0)  # a does not require grad
    names = {
        "SumBackward0": (w1 * a).sum(), "SumBackward1": (w1 * a).sum(dim=0),
        "MeanBackward0": w1.mean(), "ExpBackward0": w1.exp(), "PowBackward0": w1 ** 3,
        "DivBackward0": w1 / a, "ViewBackward0": w1.view(1, 1), "MmBackward0":
            w1.view(1, 1) @ w2.view(1, 1), "UnsqueezeBackward0": w1.unsqueeze(0),
        "TBackward0": w1.view(1, 1).t(), "CatBackward0": dy.cat([w1, w2]),
        "StackBackward0": dy.stack([w1, w2]), "ReluBackward0": w1.relu(),
        "SelectBackward0": w1[0], "CloneBackward0": w1.clone(), "NegBackward0": -w1,
        "ExpandBackward0": w1.expand(3), "PermuteBackward0": w1.view(1, 1).permute(1, 0),
        "TanhBackward0": dy.tanh(w1), "SigmoidBackward0": w1.sigmoid(),
        "MaxBackward1": w1.max(), "SqrtBackward0": w1.sqrt(), "PowBackward1": w1 ** w2,
    }
    for name, t in names.items():
        assert type(t.grad_fn).__name__ == name, (name, t.grad_fn)


def test_requires_grad_only_on_float_leaves():
    with pytest.raises(RuntimeError, match="floating point"):
        dy.tensor([1, 2], requires_grad=True)
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        y.requires_grad = False
    x = dy.tensor([1.0])
    assert x.requires_grad_() is x and x.requires_grad
    assert dy.tensor([1.0]).requires_grad_(False).requires_grad is False


# -- backward: freeing, accumulation, seeds -------------------------------------------------------
def test_second_backward_without_retain_graph_raises_and_explains():
    w = leaf([1.0, 2.0])
    z = (w * w).sum()
    z.backward()
    with pytest.raises(RuntimeError) as info:
        z.backward()
    assert str(info.value).startswith(FREED_MESSAGE)
    assert str(info.value).endswith("(MulBackward0: the Mul op; run the forward pass under "
                                    "dy.autograd.detect_anomaly() to have this error name the "
                                    "line that recorded it)")
    assert "Trying to backward through the graph a second time" in FREED_MESSAGE
    assert "Specify retain_graph=True" in FREED_MESSAGE


def test_in_anomaly_mode_the_freed_error_names_the_line_that_recorded_the_op():
    w = leaf([1.0, 2.0])
    with dy.autograd.detect_anomaly():
        assert dy.is_anomaly_enabled()
        z = (w * w).sum()
        line = _line() - 1
        z.backward()
        with pytest.raises(RuntimeError) as info:
            z.backward()
    assert not dy.is_anomaly_enabled()
    assert str(info.value).endswith(f"(MulBackward0: the Mul op recorded at {__file__}:{line})")


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_anomaly_mode_raises_at_the_rule_that_returns_nan():
    x = leaf([0.0, 1.0])
    y = dy.sqrt(x * 0.0 - 1.0)    # NaN forward: its gradient is NaN too
    line = _line() - 1
    y.sum().backward()            # off: NaN gradients pass, as in PyTorch
    assert np.isnan(x.grad.numpy()).all()
    dy.autograd.set_detect_anomaly(True)
    try:
        y = dy.sqrt(x * 0.0 - 1.0)
        line = _line() - 1
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values "
                                               r"in its 0th output \(the Sqrt op recorded at "
                                               rf"{re.escape(__file__)}:{line}\)"):
            y.sum().backward()
    finally:
        dy.autograd.set_detect_anomaly(False)
    with dy.autograd.set_detect_anomaly(True):
        assert dy.is_anomaly_enabled()
    assert not dy.is_anomaly_enabled()


def _line() -> int:
    """The caller's line number."""
    import sys
    return sys._getframe(1).f_lineno


# PyTorch's freeing rule: a backward frees what each node saved; a second one fails only where
# a node needs a value it freed (Mul saved y; sum, y + 1, reshape and mean save none)
@pytest.mark.parametrize("f, raises", [
    (lambda y: (y * y).sum(), True),
    (lambda y: (y * 2.0).sum(), True),
    (lambda y: y.exp().sum(), True),
    (lambda y: dy.relu(y).sum(), True),
    (lambda y: (y[None] @ dy.ones(3, 2)).sum(), True),
    (lambda y: y.sum(), False),
    (lambda y: (y + 1).sum(), False),
    (lambda y: (y - 1).sum(), False),
    (lambda y: (-y).sum(), False),
    (lambda y: y.mean(), False),
    (lambda y: y.reshape(3, 1).sum(), False),
], ids=["mul", "mul-scalar", "exp", "relu", "matmul", "sum", "add", "sub", "neg", "mean",
        "reshape"])
def test_a_second_backward_raises_only_where_a_freed_value_is_needed(f, raises):
    y = leaf([1.0, 2.0, 3.0])
    z = f(y)
    z.backward()
    first = y.grad.clone()
    if raises:
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            z.backward()
    else:
        z.backward()
        np.testing.assert_allclose(y.grad.numpy(), 2 * first.numpy())


def test_backward_after_retained_backward_and_grad_as_in_the_seed_article():
    """z.backward(retain_graph=True), then autograd.grad(z, y) (which frees), then
    z.backward() again: it works where PyTorch's does, when nothing freed is needed."""
    x = leaf([1.0, 2.0])
    y = x * 3.0
    z = (y + 1.0).sum()
    z.backward(retain_graph=True)
    dz_dy, = dy.autograd.grad(z, y)   # frees the nodes it ran: Sum, Add
    assert dz_dy.tolist() == [1.0, 1.0]
    z.backward()                       # Sum and Add saved nothing; Mul was never freed
    assert x.grad.tolist() == [6.0, 6.0]
    with pytest.raises(RuntimeError, match="MulBackward0: the Mul op; run the forward"):
        z.backward()                   # now Mul's saved 3.0 is gone


def test_retain_graph_allows_a_second_backward_and_gradients_accumulate():
    a, b, c = leaf(1.0), leaf(1.0), leaf(1.0)
    y = 3 * a + 2 * b * b + dy.log(c)
    y.backward(retain_graph=True)
    y.backward()
    assert (a.grad.item(), b.grad.item(), c.grad.item()) == (6.0, 8.0, 2.0)


def test_gradients_accumulate_across_graphs_until_zeroed():
    w = leaf([0.5, 1.0, 2.0])
    x = dy.ones(3)
    for expected in (1.0, 2.0, 3.0):
        (w * x).sum().backward()  # a new graph each time
        assert w.grad.tolist() == [expected] * 3
    grad = w.grad
    w.grad.zero_()
    assert grad.tolist() == [0.0] * 3 and w.grad is grad  # zeroed in place
    (w * x).sum().backward()
    assert w.grad.tolist() == [1.0] * 3 and w.grad is grad  # accumulated in place
    w.grad = None
    (w * 2.0).sum().backward()
    assert w.grad.tolist() == [2.0] * 3


def test_backward_of_a_non_scalar_needs_a_gradient():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        y.backward()
    y.backward(dy.tensor([0.1, 1.0, 0.0001]))
    np.testing.assert_allclose(x.grad.numpy(), [0.2, 2.0, 0.0002], rtol=1e-6)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(dy.ones(2))


def test_backward_of_a_tensor_that_requires_no_grad():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        dy.tensor([1.0]).sum().backward()


def test_backward_on_a_leaf_accumulates_the_seed():
    x = leaf(3.0)
    x.backward()
    assert x.grad.item() == 1.0


def test_backward_frees_the_graph_for_memory():
    w = leaf(np.ones(1000))
    y = (w * 2.0).exp()
    node = y.grad_fn
    z = y.sum()
    z.backward()
    assert node._checks is None  # freed
    assert all(kept is None for kept in node._in + node._out)  # no value kept, only their number


def test_nodes_keep_only_what_their_rule_reads():
    w = leaf(np.ones(1000))
    h = w * 2.0
    y = h + 1.0                  # Add reads neither input: h's values are not kept
    e = y.exp()                  # Exp reads its output, not its input
    add, exp = y.grad_fn, e.grad_fn
    assert add._checks == [] and exp._in == [((1000,), sg.float64)]
    h_ref, y_ref = weakref.ref(h._data), weakref.ref(y._data)
    del h, y
    assert h_ref() is None and y_ref() is None   # freed at once: no node holds them
    x0, x1 = add.inputs
    assert x0.shape == (1000,) and x1.shape == () and x0.dtype is sg.float64
    assert np.isnan(x0.numpy()).all() and x0.numpy().strides == (0,)  # a NaN stand-in


def test_graph_is_freed_when_nothing_refers_to_it():
    w = leaf([1.0])
    y = (w * 2.0).exp()
    ref = weakref.ref(y.grad_fn)
    del y
    gc.disable()
    try:
        assert ref() is None  # no reference cycle: freed at once, without the collector
    finally:
        gc.enable()


# -- non-leaf gradients: retain_grad and the warning -------------------------------------------
def test_non_leaf_grad_is_none_with_a_warning():
    x = leaf([1.0, 1.0, 1.0, 1.0])
    y = 2 * x
    z = y.mean()
    z.backward()
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
        assert y.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is not None  # leaves do not warn


def test_retain_grad_keeps_non_leaf_gradients():
    x = leaf([1.0, 1.0, 1.0, 1.0])
    y = 2 * x
    y.retain_grad()
    z = y.mean()
    z.retain_grad()
    z.backward()
    assert repr(x.grad) == "tensor([0.5000, 0.5000, 0.5000, 0.5000])"
    assert repr(y.grad) == "tensor([0.2500, 0.2500, 0.2500, 0.2500])"
    assert repr(z.grad) == "tensor(1.)"
    assert y.retains_grad and not x.retains_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _ = y.grad


def test_retain_grad_needs_requires_grad():
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        dy.tensor([1.0]).retain_grad()


# -- hooks --------------------------------------------------------------------------------------
def test_hooks_see_the_gradient_and_can_be_removed():
    x = dy.ones(3)
    w = leaf([0.3, 0.6, 0.9])
    y = w.mul(x)
    z = y.sum()
    seen = []
    handle = y.register_hook(lambda g: seen.append(g.tolist()))
    z.backward(retain_graph=True)
    assert seen == [[1.0, 1.0, 1.0]]
    handle.remove()
    z.backward()
    assert seen == [[1.0, 1.0, 1.0]] and w.grad.tolist() == [2.0, 2.0, 2.0]


def test_hooks_may_replace_the_gradient():
    w = leaf([1.0, 2.0])
    y = w * 3
    y.register_hook(lambda g: g * 10)
    w.register_hook(lambda g: g + 1)  # a leaf hook runs before accumulation
    y.sum().backward()
    assert w.grad.tolist() == [31.0, 31.0]


def test_hook_on_a_retained_tensor_changes_its_grad():
    w = leaf([1.0])
    y = w * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 5)
    y.sum().backward()
    assert y.grad.tolist() == [5.0] and w.grad.tolist() == [10.0]


def test_hook_that_returns_a_bad_gradient_is_an_error():
    w = leaf([1.0, 2.0])
    y = w * 3
    y.register_hook(lambda g: dy.ones(3))
    with pytest.raises(RuntimeError, match="same shape"):
        y.sum().backward()


def test_hooks_need_requires_grad_and_handles_work_as_context_managers():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        dy.ones(2).register_hook(print)
    w = leaf([1.0])
    calls = []
    with w.register_hook(lambda g: calls.append(1)):
        (w * 2).sum().backward()
    (w * 2).sum().backward()
    assert calls == [1]


# -- no_grad, enable_grad, set_grad_enabled ------------------------------------------------------
def test_no_grad_records_nothing():
    w = leaf([1.0])
    with dy.no_grad():
        y = w * 2
        assert not dy.is_grad_enabled()
    assert dy.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_tape_nodes_created_counts_recorded_ops_only():
    w, x = leaf([1.0, 2.0]), dy.tensor([3.0, 4.0])
    before = dy.tape_nodes_created()
    assert dy.tape_nodes_created() == before  # reading the counter records nothing
    loss = (w * x).sum()                        # two nodes
    _ = x * 2                                   # none: x requires no grad
    with dy.no_grad():
        _ = w * 2                               # none: no_grad
    assert dy.tape_nodes_created() - before == 2
    loss.backward()                             # backward records nothing without create_graph
    assert dy.tape_nodes_created() - before == 2
    # node numbers stay in creation order (backward sorts by them)
    a = w * x
    assert a.grad_fn.seq > loss.grad_fn.seq


def test_enable_grad_inside_no_grad_and_as_decorators():
    w = leaf([1.0])
    with dy.no_grad():
        with dy.enable_grad():
            assert (w * 2).requires_grad
        assert not (w * 2).requires_grad

    @dy.no_grad()
    def f(t):
        return t * 2

    @dy.no_grad
    def g(t):
        return t * 2

    assert not f(w).requires_grad and not g(w).requires_grad and dy.is_grad_enabled()


def test_set_grad_enabled_as_call_context_and_decorator():
    w = leaf([1.0])
    with dy.set_grad_enabled(False):
        assert not (w * 2).requires_grad
    assert (w * 2).requires_grad
    dy.set_grad_enabled(False)
    try:
        assert not (w * 2).requires_grad
    finally:
        dy.set_grad_enabled(True)

    @dy.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert dy.is_grad_enabled() and not f(w).requires_grad and dy.is_grad_enabled()


# -- detach and .data ----------------------------------------------------------------------------
def test_detach_shares_data_and_cuts_the_graph():
    w = leaf([1.0, 2.0])
    y = w * 2
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None
    with dy.no_grad():
        d[0] = 10.0
    assert y.tolist() == [10.0, 4.0]  # the same memory
    z = (d * w).sum()
    z.backward()
    assert w.grad.tolist() == [10.0, 4.0]  # no gradient through d


def test_data_is_an_untracked_view():
    w = leaf([1.0, 2.0])
    w.data -= 0.5 * dy.ones(2)  # allowed even with grad mode on: .data records nothing
    assert w.tolist() == [0.5, 1.5] and w.is_leaf and w.requires_grad
    w.data = dy.tensor([7.0, 8.0])
    assert w.tolist() == [7.0, 8.0]


# -- in-place updates --------------------------------------------------------------------------
def test_sgd_update_under_no_grad():
    w = leaf([1.0, 2.0])
    lr = 0.1
    (w * w).sum().backward()
    before = w
    with dy.no_grad():
        w -= lr * w.grad
    assert w is before and w.is_leaf and w.requires_grad
    np.testing.assert_allclose(w.numpy() if not w.requires_grad else w.detach().numpy(),
                               [0.8, 1.6], rtol=1e-6)
    w.grad.zero_()
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.6, 3.2], rtol=1e-6)


def test_in_place_on_a_leaf_that_requires_grad_is_an_error():
    w = leaf([1.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        w += 1


def test_in_place_on_recorded_tensors_is_refused():
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="does not record in-place"):
        y.mul_(3)


def test_in_place_on_plain_tensors_and_methods():
    x = dy.tensor([1.0, 2.0])
    x += 1
    x *= dy.tensor([2.0, 3.0])
    x.sub_(1).div_(2)
    assert x.tolist() == [1.5, 4.0]
    x[1] = 0
    x.fill_(5.0)
    assert x.tolist() == [5.0, 5.0]
    i = dy.tensor([1, 2])
    with pytest.raises(RuntimeError, match="in place"):
        i += 0.5  # a float result cannot go into an int64 tensor, as in PyTorch
    with pytest.raises(RuntimeError, match="read-only"):
        dy.tensor([1.0]).expand(3).zero_()


def test_overwriting_a_saved_value_is_detected():
    x = leaf([1.0, 2.0])
    y = x.exp()
    z = y.sum()
    with dy.no_grad():
        y += 1  # Exp's rule reads y: backward would be wrong
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# -- grad() ---------------------------------------------------------------------------------------
def test_grad_returns_gradients_without_accumulating():
    x = dy.ones(3)
    w = leaf([0.3, 0.6, 0.9])
    y = w * x
    z = y.sum()
    dz_dy, dz_dw = dy.autograd.grad(z, [y, w])
    assert dz_dy.tolist() == [1.0] * 3 and dz_dw.tolist() == [1.0] * 3
    assert w.grad is None


def test_grad_allow_unused():
    x, y = leaf([1.0]), leaf([2.0])
    z = (x * 3).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        dy.grad(z, [x, y], retain_graph=True)
    gx, gy = dy.grad(z, [x, y], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [3.0] and gy is None
    gx, gy = dy.grad(z, [x, y], materialize_grads=True)
    assert gy.tolist() == [0.0]


def test_grad_checks_its_inputs_and_grad_outputs():
    x = leaf([1.0, 2.0])
    y = x * x
    with pytest.raises(RuntimeError, match="does not require grad"):
        dy.grad(y.sum(), dy.tensor([1.0]))
    gx, = dy.grad(y, x, grad_outputs=dy.tensor([1.0, 10.0]))
    assert gx.tolist() == [2.0, 40.0]


def test_backward_into_chosen_inputs_and_several_outputs():
    x, y = leaf([1.0, 2.0]), leaf([3.0])
    z = (x * y).sum()
    z.backward(inputs=[x], retain_graph=True)
    assert x.grad.tolist() == [3.0, 3.0] and y.grad is None
    a, b = x * 2, x * y
    ga, = dy.grad([a, b], [x], grad_outputs=[dy.ones(2), dy.tensor([1.0, 10.0])],
                  retain_graph=True)
    assert ga.tolist() == [2.0 + 3.0, 2.0 + 30.0]
    dy.autograd.backward([a.sum(), b.sum()])
    assert x.grad.tolist() == [3.0 + 5.0, 3.0 + 5.0] and y.grad.tolist() == [3.0]


def test_grad_of_a_branch_runs_only_what_it_needs():
    x = leaf([1.0, 2.0])
    a = x * 2
    b = a.exp()  # a branch that grad(.., a) does not need
    y = (a * 3).sum() + b.sum()
    ga, = dy.grad(y, a)
    np.testing.assert_allclose(ga.numpy(), 3 + np.exp([2.0, 4.0]), rtol=1e-6)
    assert not x.grad_fn and x.grad is None


def test_create_graph_gives_higher_derivatives():
    x = leaf(3.0)
    y = x ** 4
    d1, = dy.grad(y, x, create_graph=True)
    d2, = dy.grad(d1, x, create_graph=True)
    d3, = dy.grad(d2, x)
    assert [t.item() for t in (y, d1, d2, d3)] == [81.0, 108.0, 108.0, 72.0]
    assert d1.grad_fn is not None and d3.grad_fn is None


def test_backward_with_create_graph_makes_grad_differentiable():
    x = leaf([1.0, 2.0])
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.grad_fn is not None
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])


def test_hessian_vector_product():
    x = leaf([1.0, 2.0, 3.0])
    f = (x.sin() * x).sum()
    g, = dy.grad(f, x, create_graph=True)
    v = dy.tensor([1.0, 0.5, 0.25])
    hv, = dy.grad((g * v).sum(), x)
    xs = x.detach().numpy()
    np.testing.assert_allclose(hv.numpy(), (2 * np.cos(xs) - xs * np.sin(xs)) * v.numpy(),
                               rtol=1e-5)


# -- custom Functions ------------------------------------------------------------------------------
class MultiplyAdd(dy.autograd.Function):
    @staticmethod
    def forward(ctx, w, x, b):
        ctx.save_for_backward(w, x)
        return w * x + b

    @staticmethod
    def backward(ctx, grad_output):
        w, x = ctx.saved_tensors
        return grad_output * x, grad_output * w, grad_output


def test_function_with_save_for_backward():
    x = dy.ones(1)
    w, b = leaf([0.25]), leaf([0.5])
    z = MultiplyAdd.apply(w, x, b)
    assert z.tolist() == [0.75] and type(z.grad_fn).__name__ == "MultiplyAddBackward"
    assert len(z.grad_fn.next_functions) == 3
    z.backward()
    assert w.grad.tolist() == [1.0] and b.grad.tolist() == [1.0] and x.grad is None


def test_function_backward_is_used_instead_of_the_forward_ops():
    class ClipGrad(dy.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g.clamp(-1, 1)

    x = leaf([1.0, 2.0])
    (ClipGrad.apply(x) * dy.tensor([0.5, 30.0])).sum().backward()
    assert x.grad.tolist() == [0.5, 1.0]


def test_function_checks_the_number_of_gradients_and_frees_ctx():
    class Bad(dy.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        Bad.apply(leaf([1.0]), leaf([2.0])).sum().backward()
    z = MultiplyAdd.apply(leaf([1.0]), dy.ones(1), leaf([1.0]))
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*"
                                           "MultiplyAddBackward: the CustomGradient op"):
        z.backward()  # its ctx's saved tensors are gone


def test_function_that_saves_nothing_runs_backward_twice():
    class Double(dy.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    x = leaf([1.0])
    z = Double.apply(x).sum()
    z.backward()
    z.backward()  # as PyTorch's: nothing saved, nothing freed
    assert x.grad.tolist() == [4.0]


def test_function_without_grad_and_needs_input_grad():
    seen = []

    class Probe(dy.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, scale):
            seen.append(ctx.needs_input_grad)
            return x * y * scale

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    out = Probe.apply(leaf([1.0]), dy.tensor([2.0]), 3.0)
    assert seen == [(True, False, False)] and out.grad_fn is not None
    with dy.no_grad():
        assert Probe.apply(leaf([1.0]), dy.tensor([2.0]), 3.0).grad_fn is None


def test_function_saved_tensors_notice_in_place_changes():
    x = dy.tensor([1.0])
    z = MultiplyAdd.apply(leaf([1.0]), x, leaf([1.0]))
    x += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# -- gradient rules are the registry's -----------------------------------------------------------
def test_rules_are_the_registrys_and_overrides_apply():
    @sg.RegisterGradient("DynamicTestDoubleGrad")
    def _double(op, grad):
        return [grad * 2.0]

    x = leaf([1.0, 2.0])
    with sg.get_default_graph().gradient_override_map({"Identity": "DynamicTestDoubleGrad"}):
        y = sg.identity(x)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_broadcast_gradients_are_summed_back():
    a = leaf(np.ones((2, 3)))
    b = leaf(np.ones(3))
    c = leaf(np.ones((2, 1)))
    ((a * b + c) * dy.tensor([[1.0], [2.0]])).sum().backward()
    assert b.grad.shape == (3,) and b.grad.tolist() == [3.0] * 3
    assert c.grad.shape == (2, 1) and c.grad.tolist() == [[3.0], [6.0]]


def test_sg_gradients_on_dynamic_tensors_points_to_dy_grad():
    x = leaf([1.0])
    with pytest.raises(TypeError, match="dy|dynamic"):
        sg.gradients(x * 2, x)


# -- errors name the op, the shapes and the user's line --------------------------------------
def test_shape_errors_at_the_users_line_with_the_graph_sides_message():
    x, y = dy.ones(2, 3), dy.ones(4)
    with pytest.raises(ValueError) as info:
        x + y  # noqa: B018
    msg = str(info.value)
    assert "Add op at" in msg and "test_autograd.py:" in msg
    assert "incompatible shapes (2, 3) and (4,)" in msg
    with pytest.raises(ValueError, match=r"inner dimensions differ.*\(2, 3\).*\(2, 3\)"):
        dy.ones(2, 3) @ dy.ones(2, 3)
    with pytest.raises(ValueError, match="cannot reshape a tensor of shape"):
        dy.ones(2, 3).view(4, 2)


def test_graph_tensors_do_not_mix_with_dynamic_ones():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [2])
    with pytest.raises(TypeError, match="not a dynamic tensor"):
        dy.ones(2) + p
    with pytest.raises(ValueError, match="eager_mode"):
        sg.where([True, False], dy.ones(2), dy.zeros(2))
    with dy.eager_mode():
        assert sg.where([True, False], dy.ones(2), dy.zeros(2)).tolist() == [1.0, 0.0]


def test_kernel_errors_name_the_op():
    with pytest.raises(sg.errors.InvalidArgumentError, match="label value of 7"):
        dy.nn.functional.cross_entropy(dy.zeros(2, 3), dy.tensor([0, 7]))


# -- printing ---------------------------------------------------------------------------------
@pytest.mark.parametrize("make, text", [
    (lambda: dy.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (lambda: dy.tensor(-36.0), "tensor(-36.)"),
    (lambda: dy.tensor([0.5, 0.5]), "tensor([0.5000, 0.5000])"),
    (lambda: dy.tensor([0.3, 3.0, 0.0003]), "tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])"),
    (lambda: dy.tensor([1.0, 10.0]), "tensor([ 1., 10.])"),
    (lambda: dy.tensor([1, 2, 30]), "tensor([ 1,  2, 30])"),
    (lambda: dy.tensor([True, False]), "tensor([ True, False])"),
    (lambda: dy.tensor([1.5], dtype=dy.float64), "tensor([1.5000], dtype=dy.float64)"),
    (lambda: dy.tensor([[1.0, 2.0], [3.0, 4.0]]), "tensor([[1., 2.],\n        [3., 4.]])"),
    (lambda: dy.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: dy.tensor([float("nan"), 1.0]), "tensor([nan, 1.])"),
    (lambda: leaf([2.0]) * 3, "tensor([6.], grad_fn=<MulBackward0>)"),
])
def test_repr_follows_pytorch(make, text):
    assert repr(make()) == text


def test_repr_summarizes_big_tensors_and_formats_scalars():
    text = repr(dy.arange(2000))
    assert text.startswith("tensor([   0,    1,    2,  ..., 1997, 1998, 1999")
    assert f"{dy.tensor(-36.0)}" == "-36.0" and f"{dy.tensor(0.25):.1f}" == "0.2"
    assert str(dy.ones(2, 3).shape) == "dy.Size([2, 3])"


def test_the_kernel_cache_stays_bounded_when_indices_change_at_each_step(monkeypatch):
    from staticgrad.ops import kernels as registry

    monkeypatch.setattr(registry, "KERNEL_CACHE_SIZE", 64)
    x = dy.tensor(np.arange(600.0).reshape(300, 2), requires_grad=True)
    for i in range(300):  # x[i] renders a kernel (and its gradient one) per index
        (x[i] * 2).sum().backward()
    assert len(registry._KERNELS) <= 64
    np.testing.assert_array_equal(x.grad.numpy(), np.full((300, 2), 2.0))
    hot = next(reversed(registry._KERNELS))  # the most recently used stays
    (x[299] * 2).sum().backward()
    assert hot in registry._KERNELS


def test_grad_runs_only_the_hooks_of_the_leaves_asked_for():
    a = dy.tensor([1.0], requires_grad=True)
    b = dy.tensor([2.0], requires_grad=True)
    fired = []
    a.register_hook(lambda g: fired.append("a"))
    b.register_hook(lambda g: fired.append("b"))
    (ga,) = dy.grad((a * b).sum(), [a])
    assert fired == ["a"] and ga.tolist() == [2.0]
    assert b.grad is None


def test_manual_seed_takes_a_negative_seed_as_pytorch_does():
    dy.manual_seed(-1)
    a = dy.rand(3)
    dy.manual_seed(2 ** 64 - 1)
    assert dy.rand(3).tolist() == a.tolist()
