"""The dynamic mode's PyTorch-named functions, methods and operators: values against NumPy,
PyTorch's argument conventions and type promotion, and gradients through them."""

from __future__ import annotations

import re

import numpy as np
import pytest

import staticgrad.dynamic as dy
import staticgrad.dynamic.nn.functional as F
from tests.conftest import numeric_grad

RNG = np.random.default_rng(0)


def arr(*shape, dtype=np.float32):
    return RNG.uniform(-2, 2, shape).astype(dtype)


# -- making tensors ----------------------------------------------------------------------------
def test_tensor_dtypes_follow_pytorch():
    assert dy.tensor([1.0, 2.0]).dtype is dy.float32
    assert dy.tensor([1, 2]).dtype is dy.int64
    assert dy.tensor(True).dtype is dy.bool
    assert dy.tensor(np.array([1.0])).dtype is dy.float64  # NumPy keeps its dtype
    assert dy.tensor([1, 2], dtype=dy.float64).dtype is dy.float64
    assert dy.Tensor([2]).dtype is dy.float32 and dy.Tensor([2]).tolist() == [2.0]
    assert dy.Tensor(2, 3).shape == (2, 3)
    assert dy.FloatTensor([1]).dtype is dy.float32 and dy.LongTensor([1.0]).dtype is dy.int64
    with pytest.raises(TypeError, match="cannot make a tensor"):
        dy.tensor("abc")


def test_tensor_copies_and_from_numpy_shares():
    a = np.ones(3, np.float32)
    t, s = dy.tensor(a), dy.from_numpy(a)
    a[0] = 5
    assert t.tolist() == [1.0, 1.0, 1.0] and s.tolist() == [5.0, 1.0, 1.0]
    assert dy.as_tensor(t) is t and dy.as_tensor(a).numpy() is a


def test_creation_functions():
    assert dy.zeros(2, 3).shape == (2, 3) and dy.zeros((2, 3)).dtype is dy.float32
    assert dy.ones([2]).tolist() == [1.0, 1.0]
    assert dy.full((2,), 7).dtype is dy.int64 and dy.full((2,), 7.0).tolist() == [7.0, 7.0]
    assert dy.arange(5).tolist() == [0, 1, 2, 3, 4] and dy.arange(5).dtype is dy.int64
    assert dy.arange(0, 1, 0.5).dtype is dy.float32 and dy.arange(1, 4).tolist() == [1, 2, 3]
    np.testing.assert_allclose(dy.linspace(-1, 1, 5).numpy(), [-1, -0.5, 0, 0.5, 1])
    assert dy.eye(2).tolist() == [[1, 0], [0, 1]] and dy.empty(3).shape == (3,)
    z = dy.zeros(2, requires_grad=True)
    assert z.requires_grad and z.is_leaf
    assert dy.zeros_like(dy.ones(2, dtype=dy.int64)).dtype is dy.int64
    assert dy.ones_like(z).tolist() == [1.0, 1.0] and dy.full_like(z, 3).tolist() == [3, 3]


def test_random_tensors_and_manual_seed():
    dy.manual_seed(100)
    a = dy.rand(3, 4)
    b, c = dy.randn(1000), dy.randint(0, 5, (50,))
    dy.manual_seed(100)
    assert dy.equal(a, dy.rand(3, 4))
    assert a.dtype is dy.float32 and 0 <= a.min().item() and a.max().item() < 1
    assert abs(b.mean().item()) < 0.15 and c.dtype is dy.int64 and c.max().item() <= 4
    w = dy.randn(1, 1, requires_grad=True)
    assert w.requires_grad and w.is_leaf and dy.rand_like(w).shape == (1, 1)
    with dy.no_grad():
        w.uniform_(-0.1, 0.1)
    assert abs(w.item()) <= 0.1



def test_random_kernels_are_cached_least_recently_used_first(monkeypatch):
    """One compiled draw per shape, as for the registry's kernels: bounded, oldest out."""
    from staticgrad.dynamic import dispatch
    monkeypatch.setattr(dispatch, "_RANDOM_KERNELS", type(dispatch._RANDOM_KERNELS)())
    monkeypatch.setattr(dispatch, "KERNEL_CACHE_SIZE", 3)
    for n in (1, 2, 3, 1, 4):  # 1 is used again, so 2 is the least recently used
        assert dy.rand(n).shape == (n,)
    shapes = [re.search(r"\((\d+),\)", expr)[1] for expr, _ in dispatch._RANDOM_KERNELS]
    assert shapes == ["3", "1", "4"]


# -- elementwise ops and promotion -------------------------------------------------------------
UNARY = [("exp", np.exp), ("log", np.log), ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh),
         ("sqrt", np.sqrt), ("abs", np.abs), ("neg", np.negative), ("relu",
         lambda v: np.maximum(v, 0)), ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
         ("square", np.square), ("reciprocal", np.reciprocal), ("log1p", np.log1p),
         ("rsqrt", lambda v: 1 / np.sqrt(v)), ("sign", np.sign), ("floor", np.floor)]


@pytest.mark.parametrize("name, ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_functions_and_methods(name, ref):
    v = np.abs(arr(2, 3)) + 0.1
    x = dy.tensor(v)
    np.testing.assert_allclose(getattr(dy, name)(x).numpy(), ref(v), rtol=1e-6)
    np.testing.assert_allclose(getattr(x, name)().numpy(), ref(v), rtol=1e-6)


def test_binary_operators():
    a, b = arr(2, 3), np.abs(arr(3)) + 0.5
    x, y = dy.tensor(a), dy.tensor(b)
    for got, want in [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b),
                      (x ** 2, a ** 2), (2 ** y, 2 ** b), (y ** y, b ** b), (1 - x, 1 - a),
                      (x // y, a // b), (x % y, a % b), (-x, -a), (abs(x), np.abs(a)),
                      (dy.add(x, y, alpha=2), a + 2 * b), (dy.sub(x, 1), a - 1),
                      (x.maximum(y), np.maximum(a, b)), (dy.minimum(x, y), np.minimum(a, b)),
                      (x.clamp(-1, 1), np.clip(a, -1, 1)), (x.clamp(min=0), np.maximum(a, 0))]:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal((x > y).numpy(), a > b)
    np.testing.assert_array_equal((x == x).numpy(), np.ones((2, 3), bool))
    np.testing.assert_array_equal((x != 0).numpy(), a != 0)
    np.testing.assert_array_equal(((x > 0) & (x < 1)).numpy(), (a > 0) & (a < 1))
    np.testing.assert_array_equal((~(x > 0)).numpy(), a <= 0)
    np.testing.assert_allclose((a + x).numpy(), 2 * a)  # an ndarray on the left


def test_type_promotion_as_in_pytorch():
    i = dy.arange(4)
    f32, f64 = dy.ones(4), dy.ones(4, dtype=dy.float64)
    assert (i * 0.5).dtype is dy.float32 and (i * 2).dtype is dy.int64
    assert (i / 2).dtype is dy.float32 and (i / 2).tolist() == [0.0, 0.5, 1.0, 1.5]
    assert (i // 2).tolist() == [0, 0, 1, 1]
    assert (f32 + f64).dtype is dy.float64 and (f32 + i).dtype is dy.float32
    assert (f32 + dy.tensor(1.0, dtype=dy.float64)).dtype is dy.float32  # a 0-d tensor is weak
    assert (i + dy.tensor(1.5)).dtype is dy.float32  # ...unless of a higher category
    assert (dy.tensor([True, False]) + 1).dtype is dy.int64
    assert dy.result_type(dy.tensor([1], dtype=dy.uint8), dy.tensor([1], dtype=dy.int8)) \
        is dy.int16


def test_where_and_logical():
    a = arr(3)
    x = dy.tensor(a)
    np.testing.assert_allclose(dy.where(x > 0, x, 0.0).numpy(), np.where(a > 0, a, 0))
    np.testing.assert_allclose(x.where(x < 0, dy.zeros(3)).numpy(), np.where(a < 0, a, 0))
    assert dy.logical_or(x > 0, x < 0).all().item()
    assert dy.logical_not(dy.tensor([True])).tolist() == [False]


# -- reductions ----------------------------------------------------------------------------------
def test_reductions_with_dim_and_keepdim():
    a = arr(2, 3, 4)
    x = dy.tensor(a)
    for got, want in [(x.sum(), a.sum()), (x.sum(dim=1), a.sum(1)), (dy.sum(x, (0, 2)),
                      a.sum((0, 2))), (x.sum(-1, keepdim=True), a.sum(-1, keepdims=True)),
                      (x.mean(dim=0), a.mean(0)), (x.prod(1), a.prod(1)),
                      (x.max(), a.max()), (x.amin(dim=(1, 2)), a.min((1, 2))),
                      (x.var(dim=1), a.var(1, ddof=1)), (x.std(), a.std(ddof=1)),
                      (x.var(unbiased=False), a.var())]:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
    assert dy.arange(4).sum().dtype is dy.int64 and dy.tensor([True, True]).sum().item() == 2


def test_max_min_with_dim_return_values_and_indices():
    a = arr(3, 4)
    x = dy.tensor(a)
    values, indices = x.max(dim=1)
    np.testing.assert_allclose(values.numpy(), a.max(1))
    np.testing.assert_array_equal(indices.numpy(), a.argmax(1))
    out = dy.min(x, 0, keepdim=True)
    assert out.values.shape == (1, 4) and out.indices.shape == (1, 4)
    np.testing.assert_allclose(dy.max(x, dy.zeros(3, 4)).numpy(), np.maximum(a, 0))
    assert x.argmax().item() == a.argmax() and x.argmin(dim=0).tolist() == a.argmin(0).tolist()


def test_all_any():
    x = dy.tensor([[1.0, 0.0], [2.0, 3.0]])
    assert not x.all().item() and x.any().item()
    assert x.all(dim=1).tolist() == [False, True]


# -- matrix products ---------------------------------------------------------------------------
@pytest.mark.parametrize("sa, sb", [((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)),
                                    ((3,), (3, 4)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 4)),
                                    ((3,), (5, 3, 2))])
def test_matmul_follows_numpy_rules(sa, sb):
    a, b = arr(*sa, dtype=np.float64), arr(*sb, dtype=np.float64)
    x, y = dy.tensor(a, requires_grad=True), dy.tensor(b, requires_grad=True)
    out = x @ y
    np.testing.assert_allclose(out.detach().numpy(), a @ b, rtol=1e-12)
    (out * out).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(lambda v: ((v @ b) ** 2).sum(), a),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(y.grad.numpy(), numeric_grad(lambda v: ((a @ v) ** 2).sum(), b),
                               rtol=1e-6, atol=1e-8)


def test_mm_bmm_dot_need_their_ranks():
    assert dy.dot(dy.ones(3), dy.ones(3)).item() == 3.0
    assert dy.mm(dy.ones(2, 3), dy.ones(3, 1)).shape == (2, 1)
    assert dy.bmm(dy.ones(4, 2, 3), dy.ones(4, 3, 1)).shape == (4, 2, 1)
    with pytest.raises(RuntimeError, match="matrices"):
        dy.mm(dy.ones(3), dy.ones(3))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        dy.dot(dy.ones(2, 2), dy.ones(2))


# -- shapes and indexing -----------------------------------------------------------------------
def test_shape_functions():
    a = arr(2, 3, 4)
    x = dy.tensor(a)
    assert x.view(6, 4).shape == (6, 4) and x.view(-1).shape == (24,)
    assert x.reshape((4, -1)).shape == (4, 6) and x.flatten(1).shape == (2, 12)
    assert x.unsqueeze(0).shape == (1, 2, 3, 4) and x.unsqueeze(-1).shape == (2, 3, 4, 1)
    assert x.unsqueeze(1).squeeze().shape == (2, 3, 4)
    assert x.unsqueeze(1).squeeze(1).shape == (2, 3, 4) and x.squeeze(0).shape == (2, 3, 4)
    np.testing.assert_array_equal(x.transpose(0, 2).numpy(), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(x.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x[0].t().numpy(), a[0].T)
    np.testing.assert_array_equal(x[0].T.numpy(), a[0].T)
    assert dy.tensor([1.0]).expand(2, 3).shape == (2, 3)
    assert dy.ones(3, 1).expand(-1, 4).shape == (3, 4)
    assert dy.ones(3, 1).expand_as(dy.ones(2, 3, 5)).shape == (2, 3, 5)
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.dim() == 3 and x.numel() == 24
    assert len(x) == 2 and [t.shape for t in x] == [(3, 4), (3, 4)]


def test_cat_stack_split_chunk_unbind():
    a, b = arr(2, 3), arr(1, 3)
    x, y = dy.tensor(a), dy.tensor(b)
    np.testing.assert_array_equal(dy.cat([x, y]).numpy(), np.concatenate([a, b]))
    np.testing.assert_array_equal(dy.cat([x, x], dim=1).numpy(), np.concatenate([a, a], 1))
    assert dy.stack([x, x], dim=1).shape == (2, 2, 3)
    assert [t.shape for t in dy.arange(7).split(3)] == [(3,), (3,), (1,)]
    assert [t.tolist() for t in dy.arange(5).split([2, 3])] == [[0, 1], [2, 3, 4]]
    assert [t.shape for t in x.chunk(2, dim=1)] == [(2, 2), (2, 1)]
    assert [t.tolist() for t in dy.unbind(x)] == a.tolist()


def test_indexing():
    a = arr(4, 5)
    x = dy.tensor(a)
    for got, want in [(x[1], a[1]), (x[1, 2], a[1, 2]), (x[:, 1:3], a[:, 1:3]),
                      (x[::-1, None], a[::-1, None]), (x[..., -1], a[..., -1]),
                      (x[[2, 0, 2]], a[[2, 0, 2]]), (x[dy.tensor([3, 1])], a[[3, 1]]),
                      (x[dy.tensor(1)], a[1]), (x.index_select(1, dy.tensor([4, 0])),
                                                a[:, [4, 0]])]:
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(TypeError, match="boolean mask"):
        x[x > 0]
    with pytest.raises(ValueError, match="out of bounds"):
        x[7]


def test_gradients_through_indexing_and_shapes():
    a = arr(3, 4).astype(np.float64)
    x = dy.tensor(a, requires_grad=True)
    y = (x[[0, 2, 0]] * 2).sum() + x[:, 1:].t().reshape(-1)[::2].sum() + x.unsqueeze(0).sum()
    y.backward()

    def f(v):
        return (v[[0, 2, 0]] * 2).sum() + v[:, 1:].T.reshape(-1)[::2].sum() + v.sum()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(f, a), rtol=1e-6)


# -- conversions ---------------------------------------------------------------------------------
def test_conversions():
    x = dy.tensor([1.7, -2.2])
    assert x.long().tolist() == [1, -2] and x.int().dtype is dy.int32
    assert x.double().dtype is dy.float64 and x.to(dy.float64).dtype is dy.float64
    assert x.bool().tolist() == [True, True] and x.half().dtype is dy.float16
    assert x.to("cpu") is x and x.float() is x
    c = x.clone()
    with dy.no_grad():
        c[0] = 0
    assert x.tolist()[0] != 0
    assert dy.tensor([3.5]).item() == 3.5 and int(dy.tensor(3)) == 3
    assert float(dy.tensor([2.5])) == 2.5 and [0, 1, 2][dy.tensor(1)] == 1
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        dy.ones(2).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(dy.ones(2))
    assert bool(dy.tensor([1.0])) and not bool(dy.tensor(0))
    with pytest.raises(RuntimeError, match="detach"):
        dy.ones(2, requires_grad=True).numpy()
    assert np.asarray(dy.ones(2, requires_grad=True)).tolist() == [1.0, 1.0]


def test_softmax_and_log_softmax():
    a = arr(2, 5)
    x = dy.tensor(a)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(x.softmax(dim=1).numpy(), e / e.sum(1, keepdims=True),
                               rtol=1e-6)
    np.testing.assert_allclose(dy.log_softmax(x, 1).numpy(),
                               np.log(e / e.sum(1, keepdims=True)), rtol=1e-5, atol=1e-6)


# -- nn.functional -------------------------------------------------------------------------------
def test_functional_losses_and_layers():
    logits = arr(4, 3).astype(np.float64)
    labels = np.array([0, 2, 1, 2])
    x = dy.tensor(logits, requires_grad=True)
    loss = F.cross_entropy(x, dy.tensor(labels))
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(loss.item(), -logp[np.arange(4), labels].mean(), rtol=1e-10)
    np.testing.assert_allclose(F.nll_loss(F.log_softmax(x, 1), labels).item(), loss.item(),
                               rtol=1e-10)
    loss.backward()
    probs = np.exp(logp)
    probs[np.arange(4), labels] -= 1
    np.testing.assert_allclose(x.grad.numpy(), probs / 4, rtol=1e-8)
    soft = F.cross_entropy(x, dy.tensor(np.eye(3)[labels]))
    np.testing.assert_allclose(soft.item(), loss.item(), rtol=1e-10)
    w, b = dy.tensor(arr(2, 3)), dy.tensor(arr(2))
    np.testing.assert_allclose(F.linear(dy.tensor(logits.astype(np.float32)), w, b).numpy(),
                               logits @ w.numpy().T + b.numpy(), rtol=1e-5)
    assert F.mse_loss(dy.ones(3), dy.zeros(3)).item() == 1.0
    assert F.l1_loss(dy.ones(3), dy.zeros(3), reduction="sum").item() == 3.0
    z = dy.tensor([0.0, 1.0])
    np.testing.assert_allclose(
        F.binary_cross_entropy_with_logits(dy.tensor([0.0, 2.0]), z, reduction="none").numpy(),
        [np.log(2), np.log1p(np.exp(-2.0))], rtol=1e-6)
    assert F.one_hot(dy.tensor([0, 2])).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert F.leaky_relu(dy.tensor([-1.0]), 0.1).tolist() == [pytest.approx(-0.1)]


def test_functional_dropout():
    dy.manual_seed(0)
    x = dy.ones(10000)
    y = F.dropout(x, 0.25)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.75) < 0.03 and np.allclose(np.unique(y.numpy()), [0, 4 / 3])
    assert F.dropout(x, 0.5, training=False) is x


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_mean_of_an_integer_tensor_raises_as_pytorch_does(dtype):
    x = dy.tensor([1, 2], dtype=getattr(dy, dtype))
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input "
                                           rf"dtype must be either a floating point .*{dtype}"):
        x.mean()
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        dy.mean(x, dim=0)
    assert x.mean(dtype=dy.float32).item() == (1.5 if dtype != "bool" else 1.0)
    assert x.float().mean().item() == (1.5 if dtype != "bool" else 1.0)
