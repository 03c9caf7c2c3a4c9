"""The numerically delicate runtime kernels against float64 references, special values
included."""

from __future__ import annotations

import numpy as np
import pytest

from staticgrad import runtime as rt

RNG = np.random.default_rng(5)
SPECIALS = [-1.0, np.inf, -np.inf, np.nan, 0.0, -2.0, 1e-30, -1e-30]


def _ulps(got, want, dtype):
    fin = np.isfinite(want) & (want != 0)
    spacing = np.spacing(np.abs(want[fin]).astype(dtype)).astype(np.float64)
    return np.abs(got[fin].astype(np.float64) - want[fin]) / spacing


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
