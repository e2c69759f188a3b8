"""Tests of the black-box privacy audit helpers (``skdp.audit``).

Statistical tests use fixed seeds, so each outcome is deterministic; the comments
state the probability with which a *correct* implementation would fail the
assertion for a random seed (the error rate), and the measured values behind
every informativeness threshold.
"""

import doctest
import functools
import warnings

import joblib
import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq
from sklearn.base import BaseEstimator

import skdp.audit
from skdp.audit import (
    AuditResult,
    audit_estimator,
    clopper_pearson,
    epsilon_lower_bound,
    project_outputs,
)
from skdp.audit import _blackbox

EPS = 1.0
DELTA = 1e-5


@functools.lru_cache(maxsize=None)
def analytic_gaussian_sigma(epsilon, delta, sensitivity):
    """Smallest σ of the analytic Gaussian mechanism (Balle & Wang 2018, Thm. 8).

    The Gaussian mechanism with L2 sensitivity Δ and noise N(0, σ² I) is (ε, δ)-DP
    iff Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) ≤ δ; the left side decreases in σ.
    """

    def excess(sigma):
        a = sensitivity / (2.0 * sigma)
        b = epsilon * sigma / sensitivity
        return stats.norm.cdf(a - b) - np.exp(epsilon) * stats.norm.cdf(-a - b) - delta

    return brentq(excess, 1e-4 * sensitivity, 1e4 * sensitivity, xtol=1e-14, rtol=1e-12)


def gaussian_scores(n, noise_factor=1.0, seed=0, sensitivity=1.0):
    """Outputs of the Gaussian mechanism on D0 (mean 0) and D1 (mean Δ)."""
    sigma = noise_factor * analytic_gaussian_sigma(EPS, DELTA, sensitivity)
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, sigma, n), rng.normal(sensitivity, sigma, n)


def laplace_scores(n, epsilon=EPS, noise_factor=1.0, seed=0, sensitivity=1.0):
    """Outputs of the Laplace mechanism (scale Δ/ε is ε-DP) on D0 and D1."""
    scale = noise_factor * sensitivity / epsilon
    rng = np.random.default_rng(seed)
    return rng.laplace(0.0, scale, n), rng.laplace(sensitivity, scale, n)


# ---------------------------------------------------------------------------
# Clopper–Pearson
# ---------------------------------------------------------------------------


def test_analytic_gaussian_helper_matches_known_value():
    # The test helper itself: the analytic calibration for (1, 1e-5) is σ ≈ 3.7306 Δ
    # (classical bound sqrt(2 ln(1.25/δ))/ε ≈ 4.84 Δ is looser), and δ(σ) = 1e-5.
    sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert sigma == pytest.approx(3.7306, abs=1e-3)
    assert sigma < np.sqrt(2 * np.log(1.25 / 1e-5))
    assert analytic_gaussian_sigma(1.0, 1e-5, 2.0) == pytest.approx(2 * sigma, rel=1e-9)


def test_clopper_pearson_zero_successes_closed_form():
    lower, upper = clopper_pearson(0, 10, confidence=0.95)
    assert lower == 0.0
    assert upper == pytest.approx(1 - 0.05 ** (1 / 10), rel=1e-12)
    _, upper = clopper_pearson(0, 1000, confidence=0.99)
    assert upper == pytest.approx(1 - 0.01 ** (1 / 1000), rel=1e-10)


def test_clopper_pearson_all_successes_closed_form():
    lower, upper = clopper_pearson(10, 10, confidence=0.95)
    assert upper == 1.0
    assert lower == pytest.approx(0.05 ** (1 / 10), rel=1e-12)


@pytest.mark.parametrize("k,n", [(1, 10), (3, 17), (50, 100), (997, 1000), (12, 10_000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    # Two one-sided bounds at 95% each form scipy's exact two-sided 90% interval.
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.90, method="exact")
    lower, upper = clopper_pearson(k, n, confidence=0.95)
    assert lower == pytest.approx(ci.low, rel=1e-9)
    assert upper == pytest.approx(ci.high, rel=1e-9)


def test_clopper_pearson_monotone():
    n = 50
    uppers = [clopper_pearson(k, n)[1] for k in range(n + 1)]
    lowers = [clopper_pearson(k, n)[0] for k in range(n + 1)]
    assert np.all(np.diff(uppers) > 0)
    assert np.all(np.diff(lowers) > 0)
    assert all(lo < k / n < up or (k == 0 and lo == 0) or (k == n and up == 1)
               for k, (lo, up) in enumerate(zip(lowers, uppers)))
    # more trials with the same count -> smaller upper bound
    assert np.all(np.diff([clopper_pearson(5, m)[1] for m in range(5, 200, 7)]) < 0)
    # higher confidence -> wider
    ups = [clopper_pearson(7, 40, confidence=c)[1] for c in (0.5, 0.9, 0.95, 0.99, 0.999)]
    assert np.all(np.diff(ups) > 0)


@pytest.mark.parametrize("p", [0.001, 0.03, 0.25, 0.5, 0.9])
def test_clopper_pearson_upper_bound_exact_coverage(p):
    # Exact (not simulated) coverage: P_p(upper(K) >= p) = sum of pmf over covering k.
    n, confidence = 60, 0.95
    ks = np.arange(n + 1)
    covered = np.array([clopper_pearson(int(k), n, confidence)[1] >= p for k in ks])
    coverage = stats.binom.pmf(ks, n, p)[covered].sum()
    assert coverage >= confidence - 1e-12


@pytest.mark.parametrize(
    "k,n,confidence,match",
    [(-1, 10, 0.95, "k must satisfy"), (11, 10, 0.95, "k must satisfy"),
     (0, 0, 0.95, "n must be at least 1"), (1, 10, 1.0, "confidence"),
     (1, 10, 0.0, "confidence")],
)
def test_clopper_pearson_validation(k, n, confidence, match):
    with pytest.raises(ValueError, match=match):
        clopper_pearson(k, n, confidence)


def test_clopper_pearson_rejects_non_integers():
    with pytest.raises(TypeError):
        clopper_pearson(1.5, 10)


# ---------------------------------------------------------------------------
# epsilon_lower_bound on exactly analysable mechanisms
# ---------------------------------------------------------------------------

N_SCALAR = 100_000  # runs per dataset; 50 000 per side are counted


def test_gaussian_mechanism_honest_is_not_flagged_and_bound_is_informative():
    s0, s1 = gaussian_scores(N_SCALAR, seed=0)
    res = epsilon_lower_bound(s0, s1, delta=DELTA, random_state=0)
    assert isinstance(res, AuditResult)
    assert res.n_0 == res.n_1 == N_SCALAR // 2
    # Validity: P(bound > true ε = 1) <= 5% for any correct implementation.
    assert res.epsilon_lower_bound <= EPS
    # Informativeness: measured 0.506 here; over 40 seeds 0.42–0.63 (mean 0.50).
    # The best any threshold test can certify at these sample sizes (expected
    # counts, no sampling noise) is about 0.54.
    assert res.epsilon_lower_bound >= 0.35


def test_gaussian_mechanism_under_noised_is_caught():
    # σ/4: the true ε at δ = 1e-5 is far above 1.
    s0, s1 = gaussian_scores(N_SCALAR, noise_factor=0.25, seed=1)
    res = epsilon_lower_bound(s0, s1, delta=DELTA, random_state=1)
    # measured 2.475; over 30 seeds 2.47–2.95
    assert res.epsilon_lower_bound > 1.5 * EPS


def test_gaussian_mechanism_slightly_under_noised_is_caught():
    # A subtler bug: using the noise of ε = 2 while claiming ε = 1 (σ ≈ 0.54 σ_1).
    sigma_2 = analytic_gaussian_sigma(2.0, DELTA, 1.0)
    factor = sigma_2 / analytic_gaussian_sigma(EPS, DELTA, 1.0)
    s0, s1 = gaussian_scores(2 * N_SCALAR, noise_factor=factor, seed=2)
    res = epsilon_lower_bound(s0, s1, delta=DELTA, random_state=2)
    # measured 1.310; with 2e5 runs per side over 20 seeds 1.15–1.41 (with 1e5 runs
    # 4 of 20 seeds stayed below 1, so this bug needs the larger sample)
    assert res.epsilon_lower_bound > EPS


def test_laplace_mechanism_honest_and_under_noised():
    s0, s1 = laplace_scores(N_SCALAR, seed=3)
    honest = epsilon_lower_bound(s0, s1, delta=0.0, random_state=3)
    # Pure ε-DP: the privacy loss equals ε on a whole tail, so the audit is tight;
    # error rate of this assertion <= 5%. Measured 0.994 (over 30 seeds 0.95–0.99).
    assert honest.epsilon_lower_bound <= EPS
    assert honest.epsilon_lower_bound >= 0.85
    s0, s1 = laplace_scores(N_SCALAR, noise_factor=0.25, seed=4)
    under = epsilon_lower_bound(s0, s1, delta=0.0, random_state=4)
    # True ε = 4; measured 3.968 (over 30 seeds 3.80–4.00).
    assert under.epsilon_lower_bound > 2.0 * EPS
    assert under.epsilon_lower_bound <= 4.0


def test_randomized_response_bound_is_valid_and_tight():
    # Randomised response with ε = ln 3: the discrete outputs put all mass on ties.
    rng = np.random.default_rng(5)
    s0 = (rng.random(40_000) < 0.25).astype(float)
    s1 = (rng.random(40_000) < 0.75).astype(float)
    res = epsilon_lower_bound(s0, s1, delta=0.0, random_state=5)
    assert res.epsilon_lower_bound <= np.log(3)  # error rate <= 5%
    assert res.epsilon_lower_bound >= 0.9 * np.log(3)  # measured 1.060 (ln 3 = 1.099)


def test_coverage_over_repetitions_at_the_tightest_point():
    # Frequentist check of the guarantee P(bound > ε) <= 1 - confidence, on a
    # mechanism whose ε is attained by a threshold test (randomised response,
    # ε = ln 3), 200 independent audits of 500 runs per side. Measured: 0/200
    # exceedances (other seeds: 6/400). A correct implementation exceeds with
    # probability at most 5% per audit, so more than 22 of 200 happens with
    # probability P(Bin(200, 0.05) > 22) ≈ 1.9e-4.
    rng = np.random.default_rng(6)
    exceed = 0
    for rep in range(200):
        s0 = (rng.random(500) < 0.25).astype(float)
        s1 = (rng.random(500) < 0.75).astype(float)
        res = epsilon_lower_bound(s0, s1, delta=0.0, random_state=rep)
        exceed += res.epsilon_lower_bound > np.log(3)
    assert stats.binom.sf(22, 200, 0.05) < 3e-4
    assert exceed <= 22


def test_direction_less_is_found_when_neighbours_are_swapped():
    s0, s1 = gaussian_scores(20_000, noise_factor=0.25, seed=7)
    res_greater = epsilon_lower_bound(s0, s1, delta=DELTA, random_state=0)
    res_less = epsilon_lower_bound(s1, s0, delta=DELTA, random_state=0)
    assert res_greater.direction == "greater"
    assert res_less.direction == "less"
    assert res_less.epsilon_lower_bound > 1.5
    assert res_less.epsilon_lower_bound == pytest.approx(
        res_greater.epsilon_lower_bound, abs=0.5
    )
    # restricting the search to the wrong direction finds nothing
    wrong = epsilon_lower_bound(s0, s1, delta=DELTA, direction="less", random_state=0)
    assert wrong.direction == "less"
    assert wrong.epsilon_lower_bound < 0.1


def test_fixed_threshold_counts_all_runs_and_matches_manual_computation():
    s0, s1 = gaussian_scores(5_000, noise_factor=0.5, seed=8)
    t = 0.5
    res = epsilon_lower_bound(s0, s1, delta=DELTA, threshold=t, confidence=0.9)
    assert (res.n_0, res.n_1) == (5_000, 5_000)
    assert res.threshold == t and res.direction == "greater"
    fp, fn = int(np.sum(s0 > t)), int(np.sum(s1 <= t))
    assert (res.false_positives, res.false_negatives) == (fp, fn)
    # Bonferroni: each rate at 1 - 0.1/2 = 0.95
    fpr_up = clopper_pearson(fp, 5_000, 0.95)[1]
    fnr_up = clopper_pearson(fn, 5_000, 0.95)[1]
    assert res.fpr_upper == pytest.approx(fpr_up, rel=1e-12)
    assert res.fnr_upper == pytest.approx(fnr_up, rel=1e-12)
    expected = max(
        np.log((1 - DELTA - fnr_up) / fpr_up), np.log((1 - DELTA - fpr_up) / fnr_up), 0.0
    )
    assert res.epsilon_lower_bound == pytest.approx(expected, rel=1e-12)
    # "less": D1 iff score < t
    res_less = epsilon_lower_bound(s0, s1, delta=DELTA, threshold=t, direction="less")
    assert res_less.false_positives == int(np.sum(s0 < t))
    assert res_less.false_negatives == int(np.sum(s1 >= t))


def test_selection_uses_half_and_is_reproducible():
    s0, s1 = gaussian_scores(1_001, seed=9)
    a = epsilon_lower_bound(s0, s1[:800], delta=DELTA, random_state=42)
    b = epsilon_lower_bound(s0, s1[:800], delta=DELTA, random_state=42)
    assert a == b
    assert (a.n_0, a.n_1) == (1_001 - 500, 400)
    assert a.confidence == 0.95 and a.delta == DELTA


def test_counted_runs_are_disjoint_from_selection_runs():
    # White-box: reproduce the documented split (permutation of D0 runs, then of D1
    # runs, from the same RandomState; first halves select) and recount.
    s0, s1 = gaussian_scores(3_001, noise_factor=0.5, seed=16)
    res = epsilon_lower_bound(s0, s1, delta=DELTA, random_state=np.random.RandomState(7))
    rs = np.random.RandomState(7)
    perm_0, perm_1 = rs.permutation(3_001), rs.permutation(3_001)
    count_0, count_1 = s0[perm_0[1_500:]], s1[perm_1[1_500:]]
    assert (res.n_0, res.n_1) == (1_501, 1_501)
    assert res.direction == "greater"
    assert res.false_positives == int(np.sum(count_0 > res.threshold))
    assert res.false_negatives == int(np.sum(count_1 <= res.threshold))
    # the counts on the selection halves differ (so the check is not vacuous)
    sel_fp = int(np.sum(s0[perm_0[:1_500]] > res.threshold))
    assert sel_fp != res.false_positives


def test_perfectly_separated_outputs_give_the_sample_size_limited_bound():
    # A deterministic, non-private "mechanism": zero errors on the counted runs.
    n = 1_000
    s0, s1 = np.zeros(n), np.ones(n)
    res = epsilon_lower_bound(s0, s1, delta=0.0, random_state=0)
    assert res.false_positives == 0 and res.false_negatives == 0
    u = 1 - 0.025 ** (1 / (n // 2))  # CP upper for 0 of 500 at 97.5%
    assert res.fpr_upper == pytest.approx(u) and res.fnr_upper == pytest.approx(u)
    assert res.epsilon_lower_bound == pytest.approx(np.log((1 - u) / u))
    assert res.epsilon_lower_bound > 4.5  # ln(500 / ln 40) ≈ 4.9


def test_identical_distributions_give_zero():
    # Output independent of the data: the mechanism is 0-DP, so the bound must be
    # 0 (error rate <= 5%); measured exactly 0 (the criterion is never positive).
    rng = np.random.default_rng(10)
    res = epsilon_lower_bound(rng.normal(size=20_000), rng.normal(size=20_000),
                              delta=DELTA, random_state=0)
    assert res.epsilon_lower_bound == 0.0


def test_large_delta_guards_log_of_non_positive_numbers():
    s0, s1 = gaussian_scores(2_000, noise_factor=0.25, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = epsilon_lower_bound(s0, s1, delta=0.999, random_state=0)
        assert res.epsilon_lower_bound == 0.0
        # constant scores: every rate bound is 1 or tiny, no warnings either
        res = epsilon_lower_bound(np.zeros(50), np.zeros(50), delta=0.0, random_state=0)
        assert res.epsilon_lower_bound == 0.0


def test_bound_decreases_with_delta():
    s0, s1 = gaussian_scores(20_000, noise_factor=0.5, seed=12)
    bounds = [
        epsilon_lower_bound(s0, s1, delta=d, threshold=0.5).epsilon_lower_bound
        for d in (0.0, 1e-3, 1e-2, 0.1)
    ]
    assert np.all(np.diff(bounds) < 0)


# ---------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------


def test_too_few_samples_raises():
    with pytest.raises(ValueError, match="at least 10 runs"):
        epsilon_lower_bound(np.zeros(9), np.ones(100), delta=0.0)
    with pytest.raises(ValueError, match="scores_1 has 5 runs"):
        epsilon_lower_bound(np.zeros(100), np.ones(5), delta=0.0)


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 1.5, np.nan])
def test_delta_outside_unit_interval_raises(delta):
    s0, s1 = np.zeros(20), np.ones(20)
    with pytest.raises(ValueError, match=r"delta must lie in \[0, 1\)"):
        epsilon_lower_bound(s0, s1, delta=delta)


def test_other_invalid_inputs_raise():
    s0, s1 = np.zeros(20), np.ones(20)
    with pytest.raises(ValueError, match="1-D"):
        epsilon_lower_bound(np.zeros((20, 2)), s1, delta=0.0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        epsilon_lower_bound(np.r_[s0[:-1], np.nan], s1, delta=0.0)
    with pytest.raises(ValueError, match="confidence"):
        epsilon_lower_bound(s0, s1, delta=0.0, confidence=1.0)
    with pytest.raises(ValueError, match="direction"):
        epsilon_lower_bound(s0, s1, delta=0.0, direction="up")
    with pytest.raises(ValueError, match="threshold must be finite"):
        epsilon_lower_bound(s0, s1, delta=0.0, threshold=np.inf)
    with pytest.raises(TypeError):
        epsilon_lower_bound(s0, s1, delta=None)


def test_result_is_frozen():
    res = epsilon_lower_bound(np.zeros(20), np.ones(20), delta=0.0, random_state=0)
    with pytest.raises(AttributeError):
        res.epsilon_lower_bound = 0.0


# ---------------------------------------------------------------------------
# project_outputs
# ---------------------------------------------------------------------------


def test_project_outputs_recovers_mean_difference_direction():
    d, n = 5, 4_000
    rng = np.random.default_rng(13)
    shift = rng.normal(size=d)
    shift /= np.linalg.norm(shift)
    out_0 = rng.normal(size=(n, d))
    out_1 = rng.normal(size=(n, d)) + shift
    s0, s1, u = project_outputs(out_0, out_1, return_direction=True)
    assert s0.shape == (n // 2,) and s1.shape == (n // 2,)
    assert np.linalg.norm(u) == pytest.approx(1.0)
    # Direction error per coordinate ~ sqrt(2/2000) ≈ 0.03: measured cosine 0.9975.
    assert u @ shift > 0.99
    # The counted projections are exactly those of the remaining runs.
    np.testing.assert_allclose(s0, out_0[n // 2:] @ u)
    np.testing.assert_allclose(s1, out_1[n // 2:] @ u)
    # Projected pair is again a unit-variance Gaussian pair with mean gap ≈ 1.
    assert np.mean(s1) - np.mean(s0) == pytest.approx(1.0, abs=0.1)


def test_project_outputs_direction_depends_only_on_held_out_runs():
    rng = np.random.default_rng(14)
    out_0 = rng.normal(size=(300, 5))
    out_1 = rng.normal(size=(250, 5)) + 0.5
    s0, s1, u = project_outputs(out_0, out_1, n_direction=100, return_direction=True)
    assert s0.shape == (200,) and s1.shape == (150,)
    # Replacing every counted run by garbage does not change the direction.
    out_0b, out_1b = out_0.copy(), out_1.copy()
    out_0b[100:] = 1e3 * rng.normal(size=(200, 5))
    out_1b[100:] = -1e3
    _, _, u_b = project_outputs(out_0b, out_1b, n_direction=100, return_direction=True)
    np.testing.assert_array_equal(u, u_b)
    # ... while changing a held-out run does.
    out_0b[0] += 10.0
    _, _, u_c = project_outputs(out_0b, out_1b, n_direction=100, return_direction=True)
    assert not np.allclose(u, u_c)


def test_project_outputs_edge_cases_and_validation():
    # 1-D outputs are one coordinate; equal held-out means give zero projections.
    s0, s1 = project_outputs(np.arange(20.0), np.arange(20.0) + 1)
    np.testing.assert_allclose(s0, np.arange(10.0, 20.0))
    s0, s1 = project_outputs(np.ones((20, 3)), np.ones((20, 3)))
    assert np.all(s0 == 0) and np.all(s1 == 0)
    with pytest.raises(ValueError, match="same number of output"):
        project_outputs(np.zeros((20, 3)), np.zeros((20, 2)))
    with pytest.raises(ValueError, match="n_direction"):
        project_outputs(np.zeros((20, 3)), np.zeros((20, 3)), n_direction=20)
    with pytest.raises(ValueError, match="n_direction"):
        project_outputs(np.zeros((20, 3)), np.zeros((20, 3)), n_direction=0)
    with pytest.raises(ValueError, match="NaN"):
        project_outputs(np.full((20, 3), np.nan), np.zeros((20, 3)))
    with pytest.raises(ValueError, match="shape"):
        project_outputs(np.zeros((20, 3, 1)), np.zeros((20, 3, 1)))


def test_vector_gaussian_mechanism_audit_via_projection():
    # Gaussian mechanism in d = 5 with the shift of norm Δ along a random direction.
    d, n, delta_sens = 5, 100_000, 1.0
    sigma = analytic_gaussian_sigma(EPS, DELTA, delta_sens)
    rng = np.random.default_rng(15)
    shift = rng.normal(size=d)
    shift *= delta_sens / np.linalg.norm(shift)
    results = []
    for factor in (1.0, 0.25):
        out_0 = rng.normal(0.0, factor * sigma, size=(n, d))
        out_1 = rng.normal(0.0, factor * sigma, size=(n, d)) + shift
        s0, s1 = project_outputs(out_0, out_1)
        results.append(epsilon_lower_bound(s0, s1, delta=DELTA, random_state=0))
    honest, under = results
    assert honest.n_0 == n // 4
    assert honest.epsilon_lower_bound <= EPS  # error rate <= 5%; measured 0.452
    assert honest.epsilon_lower_bound >= 0.25
    assert under.epsilon_lower_bound > 1.5 * EPS  # measured 2.347


# ---------------------------------------------------------------------------
# audit_estimator
# ---------------------------------------------------------------------------


class NoisyMeanEstimator(BaseEstimator):
    """Releases the mean of the rows (x_i, y_i), clipped to L2 norm 1, plus noise.

    Replacing one row moves the mean by at most Δ = 2/n in L2, and Gaussian noise
    with the analytic σ for (ε = 1, δ = 1e-5) makes the release (1, 1e-5)-DP.
    ``noise_multiplier < 1`` is the deliberately broken variant.
    """

    def __init__(self, noise_multiplier=1.0, random_state=None):
        self.noise_multiplier = noise_multiplier
        self.random_state = random_state

    def fit(self, X, y):
        Z = np.column_stack([np.asarray(X, dtype=float), np.asarray(y, dtype=float)])
        Z /= np.maximum(1.0, np.linalg.norm(Z, axis=1, keepdims=True))
        n = Z.shape[0]
        sigma = self.noise_multiplier * analytic_gaussian_sigma(EPS, DELTA, 2.0 / n)
        rng = np.random.default_rng(self.random_state)
        release = Z.mean(axis=0) + rng.normal(0.0, sigma, size=Z.shape[1])
        self.coef_ = release[:-1]
        self.intercept_ = release[-1]
        return self


def worst_case_pair(n=20, seed=0):
    """Neighbours whose released means differ by exactly Δ = 2/n (rows ±e_1)."""
    rng = np.random.default_rng(seed)
    X0 = rng.uniform(-0.5, 0.5, size=(n, 2))
    y0 = rng.uniform(-0.5, 0.5, size=n)
    X0[-1], y0[-1] = [1.0, 0.0], 0.0
    X1, y1 = X0.copy(), y0.copy()
    X1[-1] = [-1.0, 0.0]
    return X0, y0, X1, y1


N_FITS = 20_000  # per dataset; ~40 µs per fit; 5 000 per side are counted


def test_audit_estimator_honest_estimator_passes():
    X0, y0, X1, y1 = worst_case_pair()
    res = audit_estimator(
        lambda seed: NoisyMeanEstimator(1.0, random_state=seed),
        X0, y0, X1, y1, n_fits=N_FITS, delta=DELTA, random_state=0,
    )
    assert (res.n_0, res.n_1) == (N_FITS // 4, N_FITS // 4)
    assert res.epsilon_lower_bound <= EPS  # error rate <= 5%
    # measured 0.261; over 6 seeds 0.24–0.32 (only a quarter of the fits counted)
    assert res.epsilon_lower_bound >= 0.15


def test_audit_estimator_under_noised_estimator_is_caught():
    X0, y0, X1, y1 = worst_case_pair()
    res = audit_estimator(
        lambda seed: NoisyMeanEstimator(0.25, random_state=seed),
        X0, y0, X1, y1, n_fits=N_FITS, delta=DELTA, random_state=0,
    )
    assert res.epsilon_lower_bound > 1.3 * EPS  # measured 2.02; over 6 seeds 1.74–2.33


def test_audit_estimator_seeds_statistic_and_reproducibility():
    X0, y0, X1, y1 = worst_case_pair()
    seen = []

    def make(seed):
        seen.append(seed)
        return NoisyMeanEstimator(0.25, random_state=seed)

    kwargs = dict(n_fits=40, delta=DELTA, random_state=3)
    a = audit_estimator(make, X0, y0, X1, y1, **kwargs)
    assert len(seen) == 80 and len(set(seen)) == 80  # distinct seeds for all fits
    assert all(isinstance(s, int) for s in seen)
    b = audit_estimator(make, X0, y0, X1, y1, **kwargs)
    assert a == b
    assert seen[:80] == seen[80:]
    # custom statistic: only the first coefficient (a scalar release)
    c = audit_estimator(make, X0, y0, X1, y1, statistic=lambda est: est.coef_[0],
                        **kwargs)
    assert (c.n_0, c.n_1) == (10, 10)
    # the default statistic is coef_ followed by intercept_
    est = NoisyMeanEstimator(random_state=0).fit(X0, y0)
    np.testing.assert_array_equal(
        _blackbox._released_model(est), np.r_[est.coef_, est.intercept_]
    )


def test_audit_estimator_n_jobs_gives_same_result():
    X0, y0, X1, y1 = worst_case_pair()

    def make(seed):
        return NoisyMeanEstimator(0.5, random_state=seed)

    a = audit_estimator(make, X0, y0, X1, y1, n_fits=40, delta=DELTA, random_state=1)
    # threading backend: same code path, without ~3 s of process start-up
    with joblib.parallel_backend("threading"):
        b = audit_estimator(make, X0, y0, X1, y1, n_fits=40, delta=DELTA,
                            random_state=1, n_jobs=2)
    assert a == b


def test_audit_estimator_validation():
    X0, y0, X1, y1 = worst_case_pair()

    def make(seed):
        return NoisyMeanEstimator(random_state=seed)

    with pytest.raises(ValueError, match="n_fits=18 is too small"):
        audit_estimator(make, X0, y0, X1, y1, n_fits=18, delta=DELTA)
    with pytest.raises(ValueError, match="n_fits=40 is too small"):
        audit_estimator(make, X0, y0, X1, y1, n_fits=40, delta=DELTA, n_direction=31)
    with pytest.raises(ValueError, match=r"delta must lie in \[0, 1\)"):
        audit_estimator(make, X0, y0, X1, y1, n_fits=40, delta=1.0)
    with pytest.raises(ValueError, match="n_direction must be at least 1"):
        audit_estimator(make, X0, y0, X1, y1, n_fits=40, delta=DELTA, n_direction=0)
    with pytest.raises(TypeError, match="callable"):
        audit_estimator(None, X0, y0, X1, y1, n_fits=40, delta=DELTA)

    class NoCoef(BaseEstimator):
        def __init__(self, random_state=None):
            self.random_state = random_state

        def fit(self, X, y):
            return self

    with pytest.raises(AttributeError, match="statistic"):
        audit_estimator(NoCoef, X0, y0, X1, y1, n_fits=40, delta=DELTA)


# ---------------------------------------------------------------------------
# docs
# ---------------------------------------------------------------------------


def test_docstring_examples_run():
    result = doctest.testmod(_blackbox, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10
    assert result.failed == 0


def test_public_api():
    assert set(skdp.audit.__all__) == {
        "AuditResult", "audit_estimator", "clopper_pearson", "epsilon_lower_bound",
        "project_outputs",
    }
    for name in skdp.audit.__all__:
        assert getattr(skdp.audit, name).__doc__


# ---------------------------------------------------------------------------
# the claim of an estimator audit is the fitted guarantee
# ---------------------------------------------------------------------------


def _logistic_canaries():
    from skdp.__main__ import canary_pair

    return canary_pair(60, 2, 1.0, True, seed=0)


def test_audit_estimator_claims_inf_for_a_fit_without_guarantee_and_warns_once():
    from skdp import DPLogisticRegression
    from skdp.exceptions import PrivacyLeakWarning

    X0, y0, X1, y1 = _logistic_canaries()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = audit_estimator(lambda s: DPLogisticRegression(data_norm=1.0, random_state=s),
                              X0, y0, X1, y1, n_fits=20, delta=1e-6, random_state=0)
    assert res.claimed_epsilon == np.inf
    assert "classes" in res.claim_note and "classes=[...]" in res.claim_note
    assert "[0, 1]" not in res.claim_note       # the labels read from y are not shown
    assert not res.violated                    # nothing can exceed inf
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1                     # 40 fits, one warning


def test_audit_estimator_claims_the_fitted_epsilon():
    from skdp import DPLogisticRegression

    X0, y0, X1, y1 = _logistic_canaries()
    res = audit_estimator(lambda s: DPLogisticRegression(data_norm=1.0, classes=[0, 1],
                                                         epsilon=0.5, random_state=s),
                          X0, y0, X1, y1, n_fits=20, delta=1e-6, random_state=0)
    assert 0.0 < res.claimed_epsilon <= 0.5 and res.claim_note is None
    assert res.violated == (res.epsilon_lower_bound > res.claimed_epsilon)
