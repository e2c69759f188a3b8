"""The floating-point error of the sensitive sums (skdp._mechanisms._summation).

A release calibrated for the sensitivity ``2C`` of an exact sum must also hold for the
float64 sum the program computes.  The first test shows that the plain ``1e-12`` clipping
margin does not make that true for large batches; the others check that the summation
margin does, on adversarial neighbours whose terms sit at the clip bound.
"""

import math

import numpy as np
import pytest

from skdp._mechanisms._summation import (
    BLOCK,
    blocked_depth,
    blocked_sum,
    gamma_k,
    summation_clip,
    summation_factor,
)

N = 100_000


def _neighbours(rng, n, clip):
    """Terms in ``[clip/2, clip]`` (partial sums grow, so every addition rounds), and the
    neighbour that flips the first term: the exact sums differ by ``2 t_0 <= 2 clip``."""
    t = rng.uniform(0.5, 1.0, n) * clip
    t[0] = clip
    t2 = t.copy()
    t2[0] = -clip
    return t, t2


def _sequential(t):
    return float(np.cumsum(t)[-1])      # recursive summation, depth n - 1


def test_float_sum_exceeds_the_plain_clipping_margin():
    """With terms clipped to C (1 - 1e-12) only, the computed sums of neighbours differ by
    more than 2C: the 1e-12 margin does not cover the rounding of a 1e5-term sum."""
    rng = np.random.default_rng(0)
    C = 1.0
    worst = 0.0
    for _ in range(20):
        t, t2 = _neighbours(rng, N, C * (1.0 - 1e-12))
        worst = max(worst, abs(_sequential(t) - _sequential(t2)))
    assert worst > 2.0 * C


def test_summation_clip_keeps_the_sensitivity_of_the_computed_sum():
    rng = np.random.default_rng(0)
    C = 1.0
    clip = summation_clip(C, N)
    assert clip < C * (1.0 - 1e-12)
    for _ in range(20):
        t, t2 = _neighbours(rng, N, clip)
        assert abs(_sequential(t) - _sequential(t2)) <= 2.0 * C
        # the same for the mean by the public count (one more rounding)
        assert abs(_sequential(t) / N - _sequential(t2) / N) <= 2.0 * C / N


def test_factor_formula_and_refusal():
    u = 2.0 ** -53
    assert gamma_k(10) == pytest.approx(10 * u / (1 - 10 * u))
    assert summation_factor(1) >= 1.0 + gamma_k(1)
    assert summation_factor(10**6) == pytest.approx(1.0 + 1e6 * gamma_k(10**6), rel=1e-15)
    assert summation_factor(10**6, depth=100) < summation_factor(10**6)
    with pytest.raises(ValueError, match="block the sum"):
        summation_factor(10**9)          # recursive summation of 1e9 terms: no bound < 2
    assert summation_factor(10**9, depth=blocked_depth(10**9)) < 1.0 + 2e-3


@pytest.mark.parametrize("n", [1, 2, 4095, 4096, 4097, 50_000])
def test_blocked_sum_error_within_its_depth_bound(n):
    """The componentwise bound ``|s^ - s| <= gamma_d sum |a|`` at the depth that
    :func:`blocked_depth` states, against an exact (fsum) reference."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, 3)) * np.exp(rng.uniform(-20, 20, (n, 3)))
    got = blocked_sum(A)
    d = blocked_depth(n)
    for j in range(3):
        exact = math.fsum(A[:, j])
        assert abs(got[j] - exact) <= gamma_k(d) * math.fsum(np.abs(A[:, j]))
    assert blocked_depth(n) <= max(n - 1, 0) or n > BLOCK


def test_dpsgd_clip_includes_the_summation_margin():
    from skdp._solvers._dpsgd import _clip_bound

    L, p = 1.5, 20
    for n in (100, 22_792, 10**6):
        clip = _clip_bound(L, p, n)
        assert clip * summation_factor(n) <= L * (1.0 - 1e-12)
    # the default (one term) keeps the previous threshold up to gamma_2
    assert _clip_bound(L, p) == pytest.approx(L * (1 - 1e-12 - 4 * (p + 8) * 2.0**-53))


def test_scaler_moments_of_neighbours_stay_within_mu():
    """DPStandardScaler's computed moments of two neighbours, in noise units, differ by at
    most mu (the analysed sensitivity), rows at the bounds."""
    from skdp.preprocessing._scaler import (
        H_MARGIN,
        _clipped_moments,
        moment_sensitivity_factor,
        summation_depth,
        summation_inflation,
    )

    rng = np.random.default_rng(1)
    n, d, w, mu = 200_000, 2, 0.5, 0.3
    lower, upper = np.full(d, -1.0), np.full(d, 1.0)
    centre, radius = (lower + upper) / 2, (upper - lower) / 2
    X = rng.uniform(0.6, 1.0, (n, d))
    X[0] = 1.0
    X2 = X.copy()
    # the worst replacement: u - u' = x_- r, the maximiser of g_w (scaler docstring), so
    # the exact moments already move by mu / sqrt(1 + H_MARGIN) / inflation
    x_minus = (3.0 - math.sqrt(1.0 - w / (2.0 * (1.0 - w)))) / 2.0
    X2[0] = 1.0 - x_minus
    kappa = math.sqrt(d * moment_sensitivity_factor(w) * (1 + H_MARGIN)) / mu
    kappa *= summation_inflation(n, summation_depth(X), w)
    sm = kappa * 2 * radius / (n * math.sqrt(w))
    ss = kappa * radius**2 / (n * math.sqrt(1 - w))
    m1, s1 = _clipped_moments(X, lower, upper, centre, True)
    m2, s2 = _clipped_moments(X2, lower, upper, centre, True)
    change = np.concatenate([(m1 - m2) / sm, (s1 - s2) / ss])
    assert np.linalg.norm(change) <= mu
    assert np.linalg.norm(change) >= 0.999 * mu / summation_inflation(n, summation_depth(X), w)
    assert summation_inflation(n, summation_depth(X), w) > 1.0


def test_score_sensitivity_covers_the_rounding():
    from skdp.model_selection import make_private_scorer

    scorer = make_private_scorer(lambda y, pred: (y == pred).astype(float), lower=0.0,
                                 upper=1.0)
    for n in (10, 10_000, 10**6):
        base, released = scorer.sensitivity(n), scorer.released_sensitivity(n)
        assert released >= base * (1.0 + 2.0 * n * gamma_k(n))
    # neighbours of a mean of terms in [0, 1] at the bound: the computed means differ by
    # at most the released sensitivity
    rng = np.random.default_rng(2)
    t = rng.uniform(0.0, 1.0, N)
    t[0] = 1.0
    t2 = t.copy()
    t2[0] = 0.0
    assert abs(float(np.sum(t)) / N - float(np.sum(t2)) / N) <= scorer.released_sensitivity(N)
