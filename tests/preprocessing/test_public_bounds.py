"""Public ``feature_bounds`` are checked from the parameter alone, before any row is read:
whether a fit raises never depends on the data (review finding: ``(-1e308, 1e308)`` raised
or not depending on one row, because the width ``hi - lo`` overflowed to inf)."""

import warnings

import numpy as np
import pytest

from skdp.preprocessing import DPSplineTransformer, DPStandardScaler
from skdp.preprocessing._common import (BOUND_MAX, BOUND_MIN_WIDTH, BOUND_REL_WIDTH,
                                        check_public_bounds)

#: ranges whose width, bins, squares or variance floor overflow or collapse
BAD_RANGES = [
    (-1e308, 1e308),            # width overflows to inf
    (1e308, 1.7e308),           # centre and squares overflow
    (0.0, 1e200),               # squared half-width overflows (scaler)
    (0.0, 1e-200),              # squared half-width underflows (scaler)
    (0.0, 5e-324),              # bins of width 0
    (1.0, 1.0 + 1e-15),         # bins narrower than a float64 spacing at 1
]


def _neighbours(n=200, d=1, seed=0):
    """Two datasets that differ in one row, the second with an extreme value."""
    X = np.random.default_rng(seed).normal(size=(n, d))
    X2 = X.copy()
    X2[-1, 0] = 1e308
    return X, X2


def _spline(bounds, d=1):
    return DPSplineTransformer(feature_bounds=[bounds] * d, random_state=0)


def _scaler(bounds, d=1):
    return DPStandardScaler(feature_bounds=bounds, random_state=0)


@pytest.mark.parametrize("make", [_spline, _scaler], ids=["spline", "scaler"])
@pytest.mark.parametrize("bounds", BAD_RANGES, ids=str)
def test_the_refusal_does_not_depend_on_a_row(make, bounds):
    messages = []
    for X in _neighbours():
        est = make(bounds)
        with pytest.raises(ValueError) as info:
            est.fit(X)
        messages.append(str(info.value))
        assert not any(k.endswith("_") and not k.startswith("_") for k in vars(est))
    assert messages[0] == messages[1]
    msg = messages[0]
    assert msg.startswith("feature_bounds for column 0")
    assert "allowed range" in msg and "1e+100" in msg      # names the usable range


def test_the_refusal_comes_before_the_data_is_validated():
    """The check reads the parameter only: even an input the fit could not read gets the
    bounds error."""
    for est in (_spline((-1e308, 1e308)), _scaler((-1e308, 1e308))):
        with pytest.raises(ValueError, match="feature_bounds for column 0"):
            est.fit([["not", "numbers"]])


@pytest.mark.parametrize("make", [_spline, _scaler], ids=["spline", "scaler"])
def test_the_error_names_the_column(make):
    if make is _spline:
        est = DPSplineTransformer(feature_bounds=[(0.0, 1.0), None, (-1e308, 1e308)])
    else:
        est = DPStandardScaler(feature_bounds=([0.0, 0.0, -1e308], [1.0, 1.0, 1e308]))
    with pytest.raises(ValueError, match="feature_bounds for column 2 is"):
        est.fit(np.zeros((10, 3)))


M = BOUND_MAX
#: the corners of the allowed range
GOOD_RANGES = [(-M, M), (M * (1 - BOUND_REL_WIDTH), M), (-M, -M * (1 - BOUND_REL_WIDTH)),
               (0.0, BOUND_MIN_WIDTH), (-BOUND_MIN_WIDTH, 0.0),
               (1e-90, 1e-90 + BOUND_MIN_WIDTH), (1.0, 1.0 + BOUND_REL_WIDTH)]


@pytest.mark.parametrize("bounds", GOOD_RANGES, ids=str)
def test_every_allowed_range_fits_without_overflow(bounds):
    """At the corners of the allowed range no computation of the fit overflows or
    collapses, whatever the rows (extreme values, a point mass on a bound)."""
    rng = np.random.default_rng(1)
    lo, hi = bounds
    X = lo + (hi - lo) * rng.uniform(size=(300, 2))
    X[:150, 1] = hi
    X[0, 0] = 1e308
    X[1, 0] = -1e308
    rows = np.vstack([X, [[lo, hi]], [[hi, lo]]])
    for est in (DPSplineTransformer(feature_bounds=[bounds, bounds], degree=3,
                                    random_state=0),
                DPSplineTransformer(feature_bounds=[bounds, bounds], degree=0,
                                    random_state=0),
                DPStandardScaler(feature_bounds=bounds, random_state=0),
                DPStandardScaler(feature_bounds=bounds, with_mean=False, random_state=0)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(all="raise", under="ignore"):
                est.fit(X)
                Z = est.transform(rows)
        assert np.all(np.isfinite(Z))
        if isinstance(est, DPSplineTransformer):
            assert all(np.all(np.isfinite(k)) and np.all(np.diff(k) > 0) for k in est.knots_)
            assert np.all(np.linalg.norm(Z, axis=1) <= est.output_norm_bound_ * (1 + 1e-12))
        else:
            assert np.all(np.isfinite(est.scale_)) and np.all(est.scale_ > 0)
            assert np.isfinite(est.output_norm_bound_)


def test_check_public_bounds_rule():
    lo, hi = check_public_bounds(0.0, [1.0, 2.0])
    np.testing.assert_array_equal(lo, [0.0, 0.0])
    np.testing.assert_array_equal(hi, [1.0, 2.0])
    for bad in [(0.0, np.inf), (np.nan, 1.0), (1.0, 1.0), (2.0, 1.0), (0.0, 2 * M),
                (1.0, 1.0 + 0.5 * BOUND_REL_WIDTH), (0.0, 0.5 * BOUND_MIN_WIDTH)]:
        with pytest.raises(ValueError, match="allowed range"):
            check_public_bounds(*bad)
