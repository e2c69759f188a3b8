"""DPSplineTransformer(tail_knots=...): public decade knots beyond the boundary quantiles
(issue 48).  The values beyond the released range stay apart instead of being clamped, the
output bound holds for any input, the release and its event are unchanged, and the rule
that switches them on reads ``n/sigma`` and, on small tables, ``n``."""

import math

import numpy as np
import pytest

from skdp.preprocessing import DPSplineTransformer
from skdp.preprocessing._spline import decade_spares
from skdp.linear_model._auto import (SPLINE_SMALL_TABLE_ROWS,
                                     SPLINE_SMALL_TABLE_TAIL_KNOTS_BELOW,
                                     SPLINE_TAIL_KNOTS_BELOW, TAIL_QUANTILE_KNOTS,
                                     spline_tail_knots)

BAD_ROWS = [[np.nan, np.nan], [1e300, -1e300], [np.inf, -np.inf], [5e-324, 0.0],
            [-1e308, 1e308]]


def _pay_like(n=1400, seed=0):
    """An integer column like the credit-card ``pay_0`` (mass at -1 and 0, a thin upper
    tail) and a lognormal amount column."""
    rng = np.random.default_rng(seed)
    pay = rng.choice([-2, -1, 0, 1, 2, 3], size=n, p=[0.1, 0.2, 0.55, 0.1, 0.04, 0.01])
    return np.column_stack([pay.astype(float), rng.lognormal(11.5, 0.8, n)])


@pytest.mark.parametrize("low, high, expected", [
    (-1.0, 0.0, (-10.0, 1.0)),
    (60000.0, 240000.0, (10000.0, 1e6)),
    (0.0, 0.0, (-1.0, 1.0)),
    (28.0, 47.0, (10.0, 100.0)),
    (-5.0, -2.0, (-10.0, -1.0)),
    (0.001, 0.003, (1e-4, 0.01)),
    (10.0, 100.0, (1.0, 1000.0)),            # a power of ten is not beyond itself
    (-1.02, 3.4e-4, (-10.0, 1.0)),           # an end near 0 on the range's scale is 0
    (-1.02, -2e-17, (-10.0, 1.0)),
])
def test_decade_spares_step_one_decade_beyond_the_range(low, high, expected):
    lo, hi = decade_spares(low, high)
    assert (lo, hi) == pytest.approx(expected, rel=1e-12)
    assert lo < low and hi > high


@pytest.mark.parametrize("low, high", [(-1.7e308, 1.7e308), (5e-324, 5e-324),
                                       (-1e-310, 1e-309), (3.0, 1.0)])
def test_decade_spares_are_finite_and_ordered_at_the_float_extremes(low, high):
    lo, hi = decade_spares(low, high)
    assert math.isfinite(lo) and math.isfinite(hi) and lo < hi
    # beyond the range, but never past +-1e308 (the grid's last power of ten)
    assert lo <= max(min(low, high), -1e308) and hi >= min(max(low, high), 1e308)


def test_tail_knots_keep_the_upper_tail_apart_where_quantile_knots_clamp_it():
    # x = n/sigma ~ 6: the boundary quantiles sit near the quartiles, where pay = -1 and 0
    X = _pay_like()
    kw = dict(degree=1, epsilon=0.12, delta=1e-6, random_state=0)
    plain = DPSplineTransformer(**kw).fit(X)
    tails = DPSplineTransformer(tail_knots=True, **kw).fit(X)
    assert X.shape[0] / plain.noise_scale_ < SPLINE_TAIL_KNOTS_BELOW
    rows = np.array([[0.0, 1e5], [1.0, 1e5], [2.0, 1e5]])
    z_plain, z_tails = plain.transform(rows), tails.transform(rows)
    assert plain.knots_[0][-1] < 1.0                  # quantile knots: pay >= 1 clamped
    assert np.allclose(z_plain[0], z_plain[1]) and np.allclose(z_plain[1], z_plain[2])
    assert not np.allclose(z_tails[0], z_tails[1])    # tail knots: pay 0 and 1 apart
    assert tails.knots_[0][-1] > plain.knots_[0][-1]
    # the same release: same event and noise; the spares only add knots
    assert tails.dp_event_ == plain.dp_event_ and tails.noise_scale_ == plain.noise_scale_
    for knots in tails.knots_:
        assert knots.shape[0] >= 3 and np.all(np.diff(knots) > 0)


@pytest.mark.parametrize("degree", [0, 1, 3])
def test_tail_knots_keep_the_output_bound_for_any_input(degree):
    spl = DPSplineTransformer(tail_knots=True, degree=degree, epsilon=0.2,
                              random_state=0).fit(_pay_like())
    Z = spl.transform(np.vstack([_pay_like(300, 1), BAD_ROWS]))
    assert np.all(np.isfinite(Z))
    assert np.linalg.norm(Z, axis=1).max() <= spl.output_norm_bound_ + 1e-12
    assert Z.shape[1] == spl.n_features_out_


def test_auto_adds_the_tail_knots_below_the_knee_only_with_two_quantile_knots():
    X = _pay_like(1400)
    small = DPSplineTransformer(tail_knots="auto", epsilon=0.12, random_state=0).fit(X)
    assert X.shape[0] / small.noise_scale_ < SPLINE_TAIL_KNOTS_BELOW
    # the boundary quantiles and one spare on each side (merging can only remove)
    assert all(len(k) <= TAIL_QUANTILE_KNOTS + 2 for k in small.knots_)
    assert small.knots_[0][-1] > 0.0 and small.knots_[0][0] < -0.5
    big = _pay_like(40000)
    large = DPSplineTransformer(tail_knots="auto", epsilon=2.0, random_state=0).fit(big)
    assert big.shape[0] / large.noise_scale_ >= SPLINE_TAIL_KNOTS_BELOW
    same = DPSplineTransformer(epsilon=2.0, random_state=0).fit(big)
    for a, b in zip(large.knots_, same.knots_):
        np.testing.assert_array_equal(a, b)             # above the knee: the old knots


def test_the_rule_reads_n_over_sigma_and_the_small_table_bound():
    # from SPLINE_SMALL_TABLE_ROWS rows on: below x = n/sigma = 20 only
    assert spline_tail_knots(39_999, 2000.0) and not spline_tail_knots(40_000, 2000.0)
    assert spline_tail_knots(SPLINE_SMALL_TABLE_ROWS, SPLINE_SMALL_TABLE_ROWS / 19.99)
    assert not spline_tail_knots(SPLINE_SMALL_TABLE_ROWS, SPLINE_SMALL_TABLE_ROWS / 20.0)
    # below it: up to x = 60
    n = SPLINE_SMALL_TABLE_ROWS - 1
    assert spline_tail_knots(n, n / 59.99) and not spline_tail_knots(n, n / 60.0)
    assert spline_tail_knots(4900, 4900 / 30.5) and not spline_tail_knots(21_000, 21_000 / 30.5)
    assert SPLINE_TAIL_KNOTS_BELOW < SPLINE_SMALL_TABLE_TAIL_KNOTS_BELOW
    with pytest.raises(TypeError):
        spline_tail_knots(1400, 250.0, np.zeros(3))


def test_a_small_table_between_the_knees_gets_the_tails_and_a_large_one_does_not():
    """The same column, n/sigma between 20 and 60 on both: 4,000 rows get the boundary
    quantiles and the public spares, 24,000 rows (six copies, at a smaller epsilon) keep
    the rule's quantile knots."""
    X = _pay_like(4000)
    small = DPSplineTransformer(tail_knots="auto", degree=1, epsilon=0.3,
                                random_state=0).fit(X)
    x_small = X.shape[0] / small.noise_scale_
    assert SPLINE_TAIL_KNOTS_BELOW <= x_small < SPLINE_SMALL_TABLE_TAIL_KNOTS_BELOW
    assert all(len(k) <= TAIL_QUANTILE_KNOTS + 2 for k in small.knots_)
    rows = np.array([[0.0, 1e5], [1.0, 1e5], [2.0, 1e5]])
    z = small.transform(rows)
    assert not np.allclose(z[0], z[1])                # pay 0 and 1 apart
    big = np.vstack([X] * 6)
    for eps in np.linspace(0.02, 0.3, 57):
        large = DPSplineTransformer(tail_knots="auto", degree=1, epsilon=eps,
                                    random_state=0).fit(big)
        x_large = big.shape[0] / large.noise_scale_
        if SPLINE_TAIL_KNOTS_BELOW <= x_large < SPLINE_SMALL_TABLE_TAIL_KNOTS_BELOW:
            break
    else:                                              # pragma: no cover
        pytest.fail("no epsilon puts 24,000 rows between the knees")
    plain = DPSplineTransformer(degree=1, epsilon=eps, random_state=0).fit(big)
    for a, b in zip(large.knots_, plain.knots_):
        np.testing.assert_array_equal(a, b)           # no tails from 20,000 rows on


@pytest.mark.parametrize("tail_knots", [True, "auto"])
def test_planned_width_counts_the_tail_knots(tail_knots):
    # distinct public values: no knot merges, so the nominal width is the fitted one
    n = 1400
    X = np.column_stack([np.arange(n, dtype=float) + 5.0, np.arange(n, dtype=float) * 3.0])
    spl = DPSplineTransformer(tail_knots=tail_knots, degree=1, epsilon=0.12, random_state=0)
    low, nominal, bound = spl.planned_output(n, 2)
    spl.fit(X)
    assert low <= spl.n_features_out_ <= nominal
    assert spl.n_features_out_ == nominal
    assert bound == pytest.approx(math.sqrt(2))


@pytest.mark.parametrize("value", ["yes", 2, None])
def test_bad_tail_knots_are_refused_before_any_release(value):
    spl = DPSplineTransformer(tail_knots=value)
    with pytest.raises(ValueError, match="tail_knots"):
        spl.fit(_pay_like(100))
    assert not hasattr(spl, "knots_")


PUBLIC = ("output_norm_bound_", "epsilon_", "delta_", "dp_event_", "noise_scale_",
          "sensitivity_", "privacy_guaranteed_", "n_features_in_")


@pytest.mark.parametrize("tail_knots", [True, "auto"])
def test_tail_knots_leave_the_guarantee_unchanged_on_adversarial_neighbours(tail_knots):
    # the spares are post-processing: the same event, noise and bound whatever one row is,
    # and the decision to add them reads n and the (public) noise scale only
    X = _pay_like()
    ref = DPSplineTransformer(tail_knots=tail_knots, epsilon=0.12, random_state=0).fit(X)
    assert ref.privacy_guaranteed_ and ref.epsilon_ <= 0.12
    for bad in BAD_ROWS:
        X2 = X.copy()
        X2[7] = bad
        other = DPSplineTransformer(tail_knots=tail_knots, epsilon=0.12,
                                    random_state=0).fit(X2)
        for name in PUBLIC:
            assert getattr(other, name) == getattr(ref, name), name
        assert all(len(k) <= TAIL_QUANTILE_KNOTS + 2 for k in other.knots_)
        Z = other.transform(np.vstack([X[:50], BAD_ROWS]))
        assert np.linalg.norm(Z, axis=1).max() <= other.output_norm_bound_ + 1e-12
