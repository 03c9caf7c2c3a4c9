"""The numerically delicate runtime kernels against float64 references, special values
included."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

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
