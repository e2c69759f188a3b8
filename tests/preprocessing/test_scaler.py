"""DPStandardScaler: sensitivity on adversarial neighbours, accounting, statistical audit
(with an under-noised variant that must be caught), pipeline end-to-end event, errors."""

import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.pipeline import make_pipeline

from skdp import DPLogisticRegression
from skdp.accounting import (
    PrivacyLedger,
    compose,
    fitted_dp_event,
    fitted_privacy_guaranteed,
    gaussian_mu_for,
    get_epsilon,
)
from skdp.audit import epsilon_lower_bound
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.preprocessing import DPStandardScaler
from skdp.preprocessing import _scaler

EPS, DELTA = 1.0, 1e-5


def _x_star(w):
    """Worst-case x of the module docstring (argmax of g_w on [0, 2])."""
    grid = np.linspace(0.0, 2.0, 2_000_001)
    g = w * grid**2 / 4 + (1 - w) * grid**2 * (2 - grid) ** 2
    return grid[np.argmax(g)], g.max()


def _whitened_gap(scaler, X0, X1):
    """Replace-one change of the released statistics in noise units, computed here from
    the definition (clip, centre, moments), independently of the implementation."""
    lo, hi = scaler.feature_bounds_
    c = (lo + hi) / 2
    stats = []
    for X in (X0, X1):
        U = np.clip(X, lo, hi) - c
        stats.append((U.mean(0), (U**2).mean(0)))
    dm = (stats[0][0] - stats[1][0]) / scaler.mean_noise_std_
    ds = (stats[0][1] - stats[1][1]) / scaler.moment_noise_std_
    return float(np.sqrt(np.sum(dm**2) + np.sum(ds**2)))


@pytest.mark.parametrize("w", [0.2, 0.5, 0.8])
def test_sensitivity_attained_by_adversarial_neighbours_and_never_exceeded(w):
    rng = np.random.default_rng(1)
    n, d = 50, 4
    lower = np.array([-1.0, 0.0, 10.0, -5.0])
    upper = np.array([1.0, 3.0, 12.0, 5.0])
    c, r = (lower + upper) / 2, (upper - lower) / 2
    X0 = rng.uniform(lower, upper, (n, d))
    scaler = DPStandardScaler(epsilon=EPS, delta=DELTA, feature_bounds=(lower, upper), mean_share=w,
                              random_state=0).fit(X0)
    mu = gaussian_mu_for(EPS, DELTA)
    assert scaler.sensitivity_ == pytest.approx(mu)
    # worst case: u = r versus u' = (1 - x*) r in every feature (values beyond the bounds
    # are clipped first, so an adversary gains nothing by leaving them)
    x_star, _ = _x_star(w)
    X0[0] = upper + 100.0
    X1 = X0.copy()
    X1[0] = c + (1 - x_star) * r
    gap = _whitened_gap(scaler, X0, X1)
    assert gap <= mu * (1 + 1e-12)
    assert gap > mu * (1 - 1e-6)  # the bound is tight: the noise is not wasted
    # random and extreme neighbours never exceed it
    for _ in range(300):
        X1 = X0.copy()
        X1[0] = c + r * rng.choice([-1.0, 1.0, 0.0], d) * rng.uniform(0, 3, d)
        X0b = X0.copy()
        X0b[0] = c + r * rng.uniform(-2, 2, d)
        assert _whitened_gap(scaler, X0b, X1) <= mu * (1 + 1e-12)


def test_naive_split_would_be_noisier():
    """The joint sensitivity h(w) <= 1 of the naive sum, strictly for w < 1."""
    for w in (0.1, 0.5, 0.9):
        assert _scaler.moment_sensitivity_factor(w) == pytest.approx(_x_star(w)[1], abs=1e-9)
        assert _scaler.moment_sensitivity_factor(w) < 1.0


def test_accounting_matches_closed_form_and_dp_accounting():
    X = np.random.default_rng(0).uniform(0, 1, (500, 3))
    scaler = DPStandardScaler(epsilon=0.7, delta=1e-6, feature_bounds=(0, 1), random_state=0).fit(X)
    # closed-form Balle-Wang delta of a Gaussian with sensitivity/noise = sensitivity_
    mu = scaler.sensitivity_ / scaler.noise_scale_
    eps = 0.7
    delta = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert delta <= 1e-6 * (1 + 1e-9) and delta > 0.99e-6
    # dp-accounting's PLD accountant (REPLACE_ONE) agrees with the reported epsilon
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    acc = PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                        value_discretization_interval=1e-4)
    acc.compose(scaler.dp_event_)
    assert acc.get_epsilon(1e-6) == pytest.approx(0.7, rel=5e-3)
    assert scaler.epsilon_ <= 0.7 and scaler.delta_ == 1e-6
    assert scaler.privacy_guaranteed_


def test_means_only_spends_everything_on_means():
    X = np.random.default_rng(0).uniform(0, 1, (400, 2))
    a = DPStandardScaler(feature_bounds=(0, 1), with_std=False, random_state=0).fit(X)
    b = DPStandardScaler(feature_bounds=(0, 1), random_state=0).fit(X)
    assert a.scale_ is None and a.var_ is None and a.moment_noise_std_ is None
    assert np.all(a.mean_noise_std_ < b.mean_noise_std_)
    # sigma^M = sqrt(d) * 2 r / (n mu) exactly (h = 1)
    mu = gaussian_mu_for(1.0, 1e-6)
    np.testing.assert_allclose(a.mean_noise_std_, np.sqrt(2) * 1.0 / (400 * mu), rtol=1e-8)
    np.testing.assert_allclose(a.transform(X), X - a.mean_)


def test_accuracy_and_postprocessing_clamps():
    rng = np.random.default_rng(0)
    X = rng.normal([2.0, -1.0], [0.5, 2.0], (20_000, 2))
    scaler = DPStandardScaler(epsilon=1.0, delta=1e-6, feature_bounds=([0, -7], [4, 5]), random_state=3)
    Z = scaler.fit_transform(X)
    np.testing.assert_allclose(scaler.mean_, [2.0, -1.0], atol=0.05)
    np.testing.assert_allclose(scaler.scale_, [0.5, 2.0], rtol=0.05)
    np.testing.assert_allclose(Z.mean(0), 0, atol=0.1)
    np.testing.assert_allclose(scaler.inverse_transform(Z), np.clip(X, [0, -7], [4, 5]))
    # tiny n: noise dominates, yet mean stays in bounds and var in [floor, r^2]
    tiny = DPStandardScaler(epsilon=0.1, delta=1e-3, feature_bounds=(0, 1), random_state=0).fit(X[:5])
    assert np.all((tiny.mean_ >= 0) & (tiny.mean_ <= 1))
    assert np.all(tiny.var_ <= 0.25 + 1e-15)
    assert np.all(tiny.var_ >= np.minimum(tiny.moment_noise_std_, 0.25) * (1 - 1e-12))
    assert np.all(np.isfinite(tiny.transform(X[:10])))


def test_same_seed_same_output_and_no_data_read_for_bounds():
    X = np.random.default_rng(0).uniform(0, 1, (100, 2))
    a = DPStandardScaler(feature_bounds=(0, 1), random_state=7).fit(X)
    b = DPStandardScaler(feature_bounds=(0, 1), random_state=7).fit(X)
    assert np.array_equal(a.mean_, b.mean_) and np.array_equal(a.scale_, b.scale_)
    # bounds come from the parameter even when the data lie elsewhere
    c = DPStandardScaler(feature_bounds=(0, 1), random_state=7).fit(X + 50.0)
    np.testing.assert_array_equal(c.feature_bounds_, [[0, 0], [1, 1]])


def test_leaky_bounds_warn_and_are_not_guaranteed():
    X = np.random.default_rng(0).uniform(0, 1, (100, 2))
    with pytest.warns(PrivacyLeakWarning):
        s = DPStandardScaler(random_state=0).fit(X)
    assert not s.privacy_guaranteed_
    with PrivacyLedger(epsilon=5.0) as led:
        with pytest.raises(BudgetExceededError):
            DPStandardScaler(privacy_ledger=led).fit(X)
        assert len(led) == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"delta": 0.0}, "delta > 0"),
        ({"with_mean": False, "with_std": False}, "passthrough"),
        ({"feature_bounds": (1.0, 0.0)}, "lower < upper"),
        ({"feature_bounds": (0.0, np.inf)}, "finite"),
        ({"feature_bounds": ([0, 0, 0], [1, 1, 1])}, "feature_bounds must be"),
        ({"feature_bounds": np.zeros((3, 2))}, "feature_bounds must be"),
        ({"epsilon": np.inf}, "epsilon"),
        ({"mean_share": 1.0}, "mean_share"),
    ],
)
def test_invalid_parameters_leave_scaler_unfitted(kwargs, match):
    X = np.random.default_rng(0).uniform(0, 1, (50, 2))
    params = {"feature_bounds": (0.0, 1.0), **kwargs}
    s = DPStandardScaler(**params)
    with pytest.raises(ValueError, match=match):
        s.fit(X)
    assert not hasattr(s, "mean_")


@pytest.mark.parametrize("bad", [np.array([[np.nan, 1.0], [0, 1]]), np.zeros((0, 2)),
                                 np.zeros((1, 2))])
def test_bad_data_is_refused(bad):
    s = DPStandardScaler(feature_bounds=(0, 1))
    with pytest.raises(ValueError):
        s.fit(bad)
    assert not hasattr(s, "mean_")


def test_pipeline_end_to_end_event():
    rng = np.random.default_rng(0)
    X = rng.normal([5.0, -3.0], [2.0, 0.5], (2000, 2))
    y = (X[:, 0] - 5.0 > 0).astype(int)
    with PrivacyLedger(epsilon=None, delta=1e-6) as led:
        pipe = led.attach(make_pipeline(
            DPStandardScaler(epsilon=0.5, delta=1e-6, feature_bounds=([-5, -6], [15, 0]), random_state=0),
            DPLogisticRegression(epsilon=0.5, delta=1e-6, data_norm=4.0, classes=[0, 1], random_state=0),
        ))
        pipe.fit(X, y)
        event = fitted_dp_event(pipe)
        assert event == compose(pipe[0].dp_event_, pipe[1].dp_event_)
        assert fitted_privacy_guaranteed(pipe)
        total = get_epsilon(event, 1e-6)
        assert led.epsilon_spent() == pytest.approx(total, rel=1e-12)
        # composition of two (0.5, 1e-6) Gaussian releases: mu = sqrt(2) mu(0.5)
        assert total < 1.0 and total > 0.5
        assert pipe.score(X, y) > 0.8


# ----------------------------------------------------------------------------------------
# statistical audit (skdp.audit): d = 1, worst-case neighbours, 10^4 fits per side


N_FITS = 10_000
N = 100


def _audit(under_noised, monkeypatch):
    w = 0.5
    x_star, _ = _x_star(w)
    base = np.where(np.arange(N) % 2 == 0, 0.3, -0.3)[:, None]  # var ~ 0.09, off the clamps
    X0 = base.copy()
    X0[0] = 1.0
    X1 = base.copy()
    X1[0] = 1.0 - x_star
    if under_noised:
        true_h = _scaler.moment_sensitivity_factor
        monkeypatch.setattr(_scaler, "moment_sensitivity_factor", lambda w: true_h(w) / 16)
    proto = DPStandardScaler(epsilon=EPS, delta=DELTA, feature_bounds=(-1.0, 1.0), mean_share=w)
    ref = proto.set_params(random_state=0).fit(X0)
    sm, ss = ref.mean_noise_std_[0], ref.moment_noise_std_[0]
    # optimal linear test statistic in noise units: project onto the neighbours' gap
    stats = [(X.mean(), (X**2).mean()) for X in (X0, X1)]
    dm = (stats[1][0] - stats[0][0]) / sm**2
    ds = (stats[1][1] - stats[0][1]) / ss**2

    def scores(X, seed0):
        out = np.empty(N_FITS)
        for i in range(N_FITS):
            s = proto.set_params(random_state=seed0 + i).fit(X)
            M = s.mean_[0]
            S = s.var_[0] + M * M  # exact inverse while the clamps do not bind
            out[i] = dm * M + ds * S
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return epsilon_lower_bound(scores(X0, 0), scores(X1, 10 * N_FITS), delta=DELTA,
                                   random_state=0)


@pytest.mark.slow
def test_audit_honest_scaler_is_within_claim(monkeypatch):
    res = _audit(False, monkeypatch)
    assert res.epsilon_lower_bound <= EPS, res
    assert res.epsilon_lower_bound > 0.1, res  # the worst case is informative


@pytest.mark.slow
def test_audit_catches_quarter_noise(monkeypatch):
    res = _audit(True, monkeypatch)
    assert res.epsilon_lower_bound > EPS, res


def test_sparse_input_scales_without_centring_or_densifying():
    """Sparse X (with_mean=False, as scikit-learn): the released statistics are the dense
    fit's (same sums up to rounding, same noise with float noise), the transform stays
    sparse and matches the dense transform; centring and bounds without 0 are refused
    before anything is read."""
    import scipy.sparse as sp

    from skdp.preprocessing import DPStandardScaler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 6)) * 2.0
    X[rng.random(X.shape) < 0.7] = 0.0
    S = sp.csr_matrix(X)
    kw = dict(epsilon=1.0, delta=1e-6, feature_bounds=(-5.0, 5.0), with_mean=False,
              random_state=0, secure_noise=False)
    dense = DPStandardScaler(**kw).fit(X)
    sparse = DPStandardScaler(**kw).fit(S.tocsc())
    np.testing.assert_allclose(sparse.scale_, dense.scale_, rtol=1e-9)
    assert sparse.dp_event_ == dense.dp_event_
    T = sparse.transform(S)
    assert sp.issparse(T) and T.nnz == S.nnz
    np.testing.assert_allclose(T.toarray(), dense.transform(X), rtol=1e-9)
    np.testing.assert_allclose(sparse.inverse_transform(T).toarray(), np.clip(X, -5, 5),
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="Cannot center sparse"):
        DPStandardScaler(epsilon=1.0, feature_bounds=(-5.0, 5.0)).fit(S)
    with pytest.raises(ValueError, match="contain 0"):
        DPStandardScaler(epsilon=1.0, feature_bounds=(1.0, 5.0), with_mean=False).fit(S)


# --------------------------- the audit's finding: the exact path's grids can be coarse


def _moment_noise(n, d, mu, w=0.5, r=1.0):
    """The fit's per-coordinate noise stds and public bounds at ``n`` rows (``_release``)."""
    from skdp._mechanisms._summation import blocked_depth

    kappa = math.sqrt(d * _scaler.moment_sensitivity_factor(w) * (1 + _scaler.H_MARGIN)) / mu
    kappa *= _scaler.summation_inflation(n, blocked_depth(n), w)
    sigma_m = kappa * 2 * r / (n * math.sqrt(w))
    sigma_s = kappa * r * r / (n * math.sqrt(1 - w))
    return [sigma_m] * d + [sigma_s] * d, [r] * d + [r * r] * d


@pytest.mark.parametrize("n, d, eps", [(10**4, 1, 1.0), (10**7, 1, 1.0), (10**8, 10, 0.1),
                                       (10**9, 1, 0.05), (10**12, 2, 1.0)])
def test_secure_inflation_covers_the_grids_actually_drawn(n, d, eps):
    """The exact release's proof: in units of coordinate i's discrete noise (``s_i`` steps
    of ``gamma_i``), a neighbour shifts it by at most ``|dv_i|/(s_i gamma_i) + 1/s_i``, so
    the L2 shift is at most ``Delta max_i sigma_i/(s_i gamma_i) + ||1/s||`` (``Delta`` the
    normalised sensitivity, ``mu/sqrt(1 + H_MARGIN)``), and the recorded mu-GDP event
    dominates when ``(1 + m)`` times that is at most ``mu``.  The inflation assumed ``2^29``
    noise steps on every grid while ``grid_for`` coarsens it for a large ``n mu`` (down to
    ``2^12``): the bound exceeded mu at ``n = 10^7`` and ``10^9`` (the audit's
    scaler_secure_grid.py), now it holds with the grids drawn."""
    from skdp._mechanisms._exact import DOMINANCE_MARGIN, grid_for

    mu = gaussian_mu_for(eps, 1e-6)
    sigmas, bounds = _moment_noise(n, d, mu)
    gammas, steps = _scaler._secure_grids(mu, sigmas, bounds)
    assert gammas.tolist() == [grid_for(s, b) for s, b in zip(sigmas, bounds)]
    assert np.all(steps * gammas >= np.asarray(sigmas))
    delta = mu / math.sqrt(1 + _scaler.H_MARGIN)
    survives = max(sigma / (s * gamma) for sigma, s, gamma in zip(sigmas, steps, gammas))
    rounding = math.sqrt(sum(1.0 / s**2 for s in steps.tolist()))
    assert (1 + DOMINANCE_MARGIN) * (delta * survives + rounding) <= mu


def test_secure_inflation_on_fine_grids_is_the_sqrt_k_rule():
    """Where every grid has ``2^29`` noise steps (the usual case) the inflation is
    ``(1 + m) mu/(mu - (1 + m) sqrt(k) 2^-29)``, bit for bit: seeded fits are unchanged."""
    from skdp._mechanisms._exact import DOMINANCE_MARGIN, grid_for

    mu = gaussian_mu_for(1.0, 1e-6)
    sigmas, bounds = _moment_noise(10**4, 3, mu)
    gammas = [grid_for(s, b) for s, b in zip(sigmas, bounds)]
    assert [_scaler._guaranteed_steps(s, g) for s, g in zip(sigmas, gammas)] == [2.0**29] * 6
    m1 = 1 + DOMINANCE_MARGIN
    assert _scaler._secure_inflation(mu, sigmas, gammas) == \
        m1 * mu / (mu - m1 * math.sqrt(6) * 2.0**-29)


def test_scaler_and_estimator_with_one_seed_draw_independent_noise(monkeypatch):
    """Audit finding (F2, found while fixing it): ``Pipeline([DPStandardScaler(
    random_state=7), DPLogisticRegression(random_state=7)])`` -- which the accounting
    composes as independent (two key families) -- drew the model's noise integers equal to
    the scaler's: both keyed ChaCha20 with the first words of ``default_rng(7)`` (and an
    ``"auto"`` bound's release with the model's ``data_norm="auto"`` key).  The scaler now
    draws from a stream of its own, on the exact and the float path."""
    from tests._noise_keys import record_keys

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = (X[:, 0] > 0).astype(int)
    keys = record_keys(monkeypatch)
    opened = []
    for step, fit in ((DPStandardScaler(feature_bounds="auto", random_state=7), (X,)),
                      (DPLogisticRegression(classes=[0, 1], data_norm="auto",
                                            solver="output_perturbation", random_state=7),
                       (X, y))):
        keys.clear()
        step.fit(*fit)
        opened.append(set(keys))
    assert len(opened[0]) == 2 and len(opened[1]) == 2        # bounds, then the release
    assert not opened[0] & opened[1]
    # float noise: X = 0 with bounds (-1, 1) makes mean_ the noise itself (unclipped)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = DPStandardScaler(feature_bounds=(-1, 1), secure_noise=False, with_std=False,
                              random_state=7).fit(np.zeros((10_000, 4)))
    unit_noise = sc.mean_ / sc.mean_noise_std_
    assert np.all(np.abs(sc.mean_) < 1)
    assert not np.allclose(unit_noise, np.random.default_rng(7).standard_normal(4))


@pytest.mark.parametrize("value", [1e154, 1.5e308])
def test_data_read_bounds_beyond_range_raise_a_clear_error(value):
    """Audit finding (robustness): feature_bounds=None (not private) with one huge finite
    value raised 'cannot convert float NaN to integer' deep in the release; now a clear
    error that shows no value."""
    X = np.random.default_rng(0).uniform(-1, 1, (400, 3))
    X[5, 1] = value
    with pytest.warns(Warning), pytest.raises(ValueError, match="rescale the features") as e:
        DPStandardScaler(random_state=0).fit(X)
    assert "e+" not in str(e.value) and "154" not in str(e.value)
