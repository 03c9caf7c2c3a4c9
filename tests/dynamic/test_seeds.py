"""The seed articles' PyTorch examples, run as written with `dy` in place of `torch`, print
the articles' numbers (examples/course/ prints them both ways, as programs)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import staticgrad.dynamic as dy

torch = dy  # the articles' spelling


@pytest.fixture(autouse=True)
def _quiet_non_leaf_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the articles print non-leaf .grad
        yield


def test_seed_000_weights_chain(capsys):
    from staticgrad.dynamic import FloatTensor
    from staticgrad.dynamic.autograd import Variable

    a = Variable(FloatTensor([4]))
    weights = [Variable(FloatTensor([i]), requires_grad=True) for i in (2, 5, 9, 7)]
    w1, w2, w3, w4 = weights
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    L = (10 - d)
    L.backward()
    for index, weight in enumerate(weights, start=1):
        gradient, *_ = weight.grad.data
        print(f"Gradient of w{index} w.r.t to L: {gradient}")
    assert capsys.readouterr().out.splitlines() == [
        "Gradient of w1 w.r.t to L: -36.0", "Gradient of w2 w.r.t to L: -28.0",
        "Gradient of w3 w.r.t to L: -8.0", "Gradient of w4 w.r.t to L: -20.0"]


def test_seed_000_retain_grad(capsys):
    x = torch.tensor([1., 1, 1, 1], requires_grad=True)
    y = 2 * x
    z = y.mean()
    z.backward()
    print(x.grad, y.grad, z.grad)
    x = torch.tensor([1., 1, 1, 1], requires_grad=True)
    y = 2 * x
    y.retain_grad()
    z = y.mean()
    z.retain_grad()
    z.backward()
    print(x.grad, y.grad, z.grad)
    assert capsys.readouterr().out.splitlines() == [
        "tensor([0.5000, 0.5000, 0.5000, 0.5000]) None None",
        "tensor([0.5000, 0.5000, 0.5000, 0.5000]) tensor([0.2500, 0.2500, 0.2500, 0.2500]) "
        "tensor(1.)"]


def test_seed_000_graph_is_built_on_the_fly_and_no_grad_builds_none():
    w = torch.tensor([1.0], requires_grad=True)
    frozen = torch.tensor([2.0])  # requires_grad=False: "frozen", no gradient reaches it
    out = w * frozen
    assert out.grad_fn is not None
    with torch.no_grad():
        inference = w * frozen
    assert inference.grad_fn is None and not inference.requires_grad
    out.backward()
    assert frozen.grad is None and w.grad.tolist() == [2.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()
    out = w * frozen  # calling forward again builds a brand-new graph
    out.backward()
    assert w.grad.tolist() == [4.0]


def test_seed_001_vector_jacobian_products(capsys):
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0, 5.0], requires_grad=True)
    c = torch.tensor([6.0, 7.0, 8.0], requires_grad=True)
    y = 3 * a + 2 * b * b + torch.log(c)
    gradients = torch.FloatTensor([0.1, 1.0, 0.0001])
    y.backward(gradients, retain_graph=True)
    print(a.grad)
    print(b.grad)
    print(c.grad)
    assert capsys.readouterr().out.splitlines() == [
        "tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])",
        "tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])",
        "tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])"]


def test_seed_001_scalars_and_accumulation(capsys):
    a = torch.tensor(0.1, requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)
    c = torch.tensor(0.1, requires_grad=True)
    y = 3 * a + 2 * b * b + torch.log(c)
    y.backward()
    print(a.grad, b.grad, c.grad)
    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)
    c = torch.tensor(1.0, requires_grad=True)
    y = 3 * a + 2 * b * b + torch.log(c)
    y.backward(retain_graph=True)
    y.backward()
    print(a.grad, b.grad, c.grad)
    assert capsys.readouterr().out.splitlines() == [
        "tensor(3.) tensor(4.) tensor(10.)", "tensor(6.) tensor(8.) tensor(2.)"]


def test_seed_001_empty_tensors_run(capsys):
    a = torch.empty(1, requires_grad=True)
    b = torch.empty(1, requires_grad=True)
    c = torch.empty(1, requires_grad=True)
    with torch.no_grad():  # torch.empty holds whatever memory held; give it the article's
        a.fill_(1.1001), b.fill_(0.0), c.fill_(0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) and 1/0, as NumPy warns
        y = 3 * a + 2 * b * b + torch.log(c)
        y.backward(torch.FloatTensor([1.1001]))
    print(a.grad, b.grad, c.grad)
    assert capsys.readouterr().out.split() == ["tensor([3.3003])", "tensor([0.])",
                                               "tensor([inf])"]


def test_seed_002_chain_rule_node_by_node(capsys):
    X1 = torch.tensor(2.0, requires_grad=True)
    X2 = torch.tensor(3.0, requires_grad=True)
    a = X1 * X2
    y1 = torch.log(a)
    y2 = torch.sin(X2)
    w = y1 * y2
    z = w
    a.retain_grad()
    y1.retain_grad()
    y2.retain_grad()
    w.retain_grad()
    z.retain_grad()
    print("Forward: z =", z.item())
    z.backward()
    print(f"dz/dz = 1 -> {z.grad.item()}")
    print(f"dz/dw = dz/dz * dz/dw = 1 * 1 = {w.grad.item()}")
    print(f"dz/dy1 = dz/dw * y2 = {w.grad.item()} * {y2.item()} = {y1.grad.item()}")
    print(f"dz/dy2 = dz/dw * y1 = {w.grad.item()} * {y1.item()} = {y2.grad.item()}")
    print(f"dz/da = dz/dy1 * (1/a) = {y1.grad.item()} * (1/{a.item()}) = {a.grad.item()}")
    print(f"dz/dX1 = dz/da * X2 = {a.grad.item()} * {X2.item()} = {X1.grad.item()}")
    print(f"dz/dX2 = {a.grad.item()} * {X1.item()} + {y2.grad.item()} * "
          f"{torch.cos(X2).item()} = {X2.grad.item()}")
    assert capsys.readouterr().out.splitlines() == [
        "Forward: z = 0.2528530955314636",
        "dz/dz = 1 -> 1.0",
        "dz/dw = dz/dz * dz/dw = 1 * 1 = 1.0",
        "dz/dy1 = dz/dw * y2 = 1.0 * 0.14112000167369843 = 0.14112000167369843",
        "dz/dy2 = dz/dw * y1 = 1.0 * 1.7917594909667969 = 1.7917594909667969",
        "dz/da = dz/dy1 * (1/a) = 0.14112000167369843 * (1/6.0) = 0.023520000278949738",
        "dz/dX1 = dz/da * X2 = 0.023520000278949738 * 3.0 = 0.07056000083684921",
        "dz/dX2 = 0.023520000278949738 * 2.0 + 1.7917594909667969 * -0.9899924993515015 = "
        "-1.7267885208129883"]


def test_seed_003_leaves_grad_fn_and_grads(capsys):
    x = torch.Tensor([2])
    w = torch.randn(1, requires_grad=True)
    b = torch.randn(1, requires_grad=True)
    y = torch.mul(w, x)
    z = torch.add(y, b)
    print(x.requires_grad, w.requires_grad, b.requires_grad)
    print(y.requires_grad, z.requires_grad)
    print(x.is_leaf, w.is_leaf, b.is_leaf, y.is_leaf, z.is_leaf)
    print(x.grad_fn, w.grad_fn, b.grad_fn)
    print(y.grad_fn, z.grad_fn)
    z.backward()
    print(w.grad, b.grad, x.grad)
    print(y.grad, z.grad)
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == ["False True True", "True True", "True True True False False",
                       "None None None"]
    assert re.fullmatch(r"<MulBackward0 object at 0x[0-9a-f]+> "
                        r"<AddBackward0 object at 0x[0-9a-f]+>", out[4])
    assert out[5:] == ["tensor([2.]) tensor([1.]) None", "None None"]


def pytorch_cpu_rand(seed, size):
    """What `torch.manual_seed(seed); torch.rand(size)` draws on the CPU: MT19937 seeded as
    NumPy's legacy RandomState seeds it, a float32 being the low 24 bits of a draw * 2**-24."""
    draws = np.random.RandomState(seed).randint(0, 2**32, size=tuple(size), dtype=np.uint32)
    return torch.tensor(((draws & 0xFFFFFF) * 2.0**-24).astype(np.float32))


def test_seed_003_regression_by_hand_written_gradient_descent():
    torch.manual_seed(100)
    x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)
    y = 3 * x.pow(2) + 2 + 0.2 * pytorch_cpu_rand(100, x.size())  # the article's torch.rand
    w = torch.randn(1, 1, dtype=torch.float, requires_grad=True)
    b = torch.zeros(1, 1, dtype=torch.float, requires_grad=True)
    assert repr(b) == "tensor([[0.]], requires_grad=True)"
    lr = 0.001
    for _ in range(800):
        y_pred = w * x.pow(2) + b
        loss = (y - y_pred) ** 2
        loss = loss.sum()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
            w.grad.zero_()
            b.grad.zero_()
    # the article: tensor([[2.9668]]) and tensor([[2.1138]]) (the fit forgets where w started)
    assert repr(w) == "tensor([[2.9668]], requires_grad=True)"
    assert repr(b) == "tensor([[2.1138]], requires_grad=True)"
    assert w.is_leaf and w.requires_grad and w.shape == (1, 1)


def test_seed_004_hook_and_autograd_grad(capsys):
    x = torch.ones(3)
    w = torch.rand(3, requires_grad=True)
    y = w.mul(x)
    z = y.sum()

    def variable_hook(grad):
        print("hook:", grad)

    hook_handle = y.register_hook(variable_hook)
    z.backward(retain_graph=True)
    hook_handle.remove()
    print("autograd.grad:", torch.autograd.grad(z, y))
    assert capsys.readouterr().out.splitlines() == [
        "hook: tensor([1., 1., 1.])", "autograd.grad: (tensor([1., 1., 1.]),)"]


def test_seed_004_repeated_backward(capsys):
    x = torch.ones(3)
    w = torch.rand(3, requires_grad=True)
    y = w.mul(x)
    z = y.sum()
    z.backward(retain_graph=True)
    print(w.grad)
    z.backward()
    print(w.grad)
    w.grad.zero_()
    z = w.mul(x).sum()  # without retain_graph: rebuild the graph from the leaves
    z.backward()
    y = w.mul(x)
    z = y.sum()
    z.backward()
    print(w.grad)
    assert capsys.readouterr().out.splitlines() == [
        "tensor([1., 1., 1.])", "tensor([2., 2., 2.])", "tensor([2., 2., 2.])"]


def test_seed_004_custom_function_and_higher_order(capsys):
    class MultiplyAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, w, x, b):
            ctx.save_for_backward(w, x)
            return w * x + b

        @staticmethod
        def backward(ctx, grad_output):
            w, x = ctx.saved_tensors
            return grad_output * x, grad_output * w, grad_output

    x = torch.ones(1)
    w = torch.tensor([0.25], requires_grad=True)
    b = torch.tensor([0.5], requires_grad=True)
    z = MultiplyAdd.apply(w, x, b)
    z.backward()
    print(z.detach(), w.grad, b.grad)
    x = torch.tensor(3.0, requires_grad=True)
    y = x ** 4
    d1, = torch.autograd.grad(y, x, create_graph=True)
    d2, = torch.autograd.grad(d1, x, create_graph=True)
    d3, = torch.autograd.grad(d2, x)
    print(y.item(), d1.item(), d2.item(), d3.item())
    assert capsys.readouterr().out.splitlines() == [
        "tensor([0.7500]) tensor([1.]) tensor([1.])", "81.0 108.0 108.0 72.0"]
