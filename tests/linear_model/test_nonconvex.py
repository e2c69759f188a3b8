"""DPNonconvexRegressor: robust fits, privacy attributes, input errors, ledger planning."""

import math
import warnings

import numpy as np
import pytest

from skdp import DPNonconvexRegressor
from skdp._losses import WelschLoss
from skdp.accounting import get_epsilon
from skdp.exceptions import PrivacyLeakWarning


def _outlier_data(n, seed, frac=0.2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    coef = np.array([1.0, -0.5, 0.25])
    y = X @ coef + 0.3 + 0.1 * rng.normal(size=n)
    bad = rng.random(n) < frac
    y[bad] = rng.uniform(5, 15, size=bad.sum())  # gross one-sided outliers
    return X, y, coef


@pytest.fixture(scope="module")
def data():
    return _outlier_data(80_000, 0)


@pytest.mark.parametrize("loss", ["welsch", "tukey", "cauchy"])
def test_robust_fit_ignores_gross_outliers(data, loss):
    X, y, coef = data
    reg = DPNonconvexRegressor(epsilon=1.0, loss=loss, loss_scale=1.0, data_norm=2.0,
                               y_bound=20.0, solver="spider", random_state=0).fit(X, y)
    ols = np.linalg.lstsq(np.c_[X, np.ones(len(y))], y, rcond=None)[0]
    err = np.abs(reg.coef_ - coef).max()
    assert err < 0.3, (loss, reg.coef_)
    assert err < 0.5 * np.abs(ols[:3] - coef).max()  # OLS is pulled by the outliers
    assert abs(reg.intercept_ - 0.3) < 0.3
    assert reg.epsilon_ <= 1.0 and reg.delta_ == 1e-6 and reg.privacy_guaranteed_
    assert reg.n_refreshes_ >= 1 and 0 < reg.gamma_ < 1 and reg.n_iter_ > 0
    assert reg.n_escapes_ >= 0 and reg.n_gradient_evals_ > 0
    assert reg.sensitivity_ > 0 and reg.noise_scale_ > 0 and reg.data_norm_ == 2.0


@pytest.mark.filterwarnings("ignore:.*nearly vacuous")
def test_privacy_attributes_are_the_exact_gdp_accounting(data):
    X, y, _ = data
    reg = DPNonconvexRegressor(epsilon=0.5, delta=1e-7, data_norm=2.0, calibration="paper",
                               solver="spider", random_state=1).fit(X[:40_000], y[:40_000])
    eps = get_epsilon(reg.dp_event_, 1e-7)
    assert reg.epsilon_ == pytest.approx(eps)
    assert eps < 0.5  # "paper" is conservative: spends ~0.3 epsilon
    tight = DPNonconvexRegressor(epsilon=0.5, delta=1e-7, data_norm=2.0, solver="spider",
                                 random_state=1).fit(X[:40_000], y[:40_000])
    assert tight.epsilon_ == pytest.approx(0.5, rel=1e-6)
    assert tight.gamma_ < reg.gamma_  # less noise per unit of budget: finer accuracy


def test_same_seed_same_model_and_predict(data):
    X, y, _ = data
    a = DPNonconvexRegressor(data_norm=2.0, random_state=3, selection="last").fit(X, y)
    b = DPNonconvexRegressor(data_norm=2.0, random_state=3, selection="last").fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and a.intercept_ == b.intercept_
    np.testing.assert_allclose(a.predict(X[:5]), X[:5] @ a.coef_ + a.intercept_)


def test_data_norm_none_warns_and_flags(data):
    X, y, _ = data
    with pytest.warns(PrivacyLeakWarning):
        reg = DPNonconvexRegressor(random_state=0).fit(X[:20_000] * 0.5, y[:20_000])
    assert reg.privacy_guaranteed_ is False


def test_errors_leave_no_fitted_state():
    X, y, _ = _outlier_data(300, 1)
    cases = [
        (dict(data_norm=2.0, solver="spider"), "needs at least n = "),
        (dict(data_norm=2.0, delta=0.0), "delta"),
        (dict(data_norm=2.0, loss="cauchy", solver="spider"), "y_bound"),
        (dict(data_norm=2.0, calibration="paper"), "calibration='paper'"),
        (dict(data_norm=2.0, solver="dpsgd"), "max_coef_norm"),
        (dict(data_norm=2.0, intercept_scaling=-1.0), "intercept_scaling"),
        (dict(data_norm=2.0, loss="huber"), "loss"),
        (dict(data_norm=2.0, loss_scale=0.0), "loss_scale"),
        (dict(data_norm=2.0, epsilon=math.inf), "epsilon"),
    ]
    for params, match in cases:
        reg = DPNonconvexRegressor(**params)
        with pytest.raises(ValueError, match=match):
            reg.fit(X, y)
        assert not hasattr(reg, "coef_")
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError):
        DPNonconvexRegressor(data_norm=2.0).fit(Xn, y)
    with pytest.raises(ValueError, match="sample_weight"):
        DPNonconvexRegressor(data_norm=2.0).fit(X, y, sample_weight=np.ones(300))


def test_dpsgd_baseline_on_nonconvex_loss(data):
    X, y, coef = data
    reg = DPNonconvexRegressor(epsilon=1.0, data_norm=2.0, solver="dpsgd", batch_size=500,
                               n_steps=2000, max_coef_norm=5.0, random_state=0).fit(X, y)
    assert reg.epsilon_ <= 1.0
    assert reg.n_escapes_ == 0 and np.isnan(reg.gamma_)
    assert np.abs(reg.coef_ - coef).max() < 0.5


def test_ledger_plan_equals_the_released_event(data):
    from skdp.accounting import PrivacyLedger
    from skdp.linear_model._base import planned_dp_event

    X, y, _ = data
    reg = DPNonconvexRegressor(data_norm=2.0, random_state=0).fit(X[:30_000], y[:30_000])
    assert planned_dp_event(reg, 30_000) == reg.dp_event_
    ledger = PrivacyLedger(epsilon=1.1, delta=1e-6)
    DPNonconvexRegressor(data_norm=2.0, random_state=0, privacy_ledger=ledger).fit(
        X[:30_000], y[:30_000])
    from skdp.exceptions import BudgetExceededError

    second = DPNonconvexRegressor(data_norm=2.0, random_state=0, privacy_ledger=ledger)
    with pytest.raises(BudgetExceededError):
        second.fit(X[:30_000], y[:30_000])
    assert not hasattr(second, "coef_")
    ledger.close()


def test_vacuous_accuracy_warns():
    X, y, _ = _outlier_data(4000, 2)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        reg = DPNonconvexRegressor(data_norm=2.0, solver="spider", random_state=0).fit(X, y)
    assert any("vacuous" in str(w.message) for w in rec)
    assert reg.epsilon_ <= 1.0
    assert reg.gamma_ >= WelschLoss(1.0).lipschitz(2.0) / 2
    assert get_epsilon(reg.dp_event_, 1e-6) == pytest.approx(reg.epsilon_)


# ---------------------------------------------------------------------------------------
# The default (solver="auto" -> warm_gd): every n >= 2, no divergence, planned == fitted


def test_default_is_warm_gd_and_ignores_gross_outliers(data):
    X, y, coef = data
    reg = DPNonconvexRegressor(epsilon=1.0, data_norm=2.0, random_state=0).fit(X, y)
    assert reg.solver_ == "warm_gd" and reg.epsilon_ == 1.0 and reg.privacy_guaranteed_
    ols = np.linalg.lstsq(np.c_[X, np.ones(len(y))], y, rcond=None)[0]
    assert np.abs(reg.coef_ - coef).max() < 0.1
    # OLS's intercept is pulled ~2 units by the 20 % one-sided outliers; the robust fit's
    # by a fraction of that
    assert abs(reg.intercept_ - 0.3) < 0.25 * abs(ols[3] - 0.3)
    # the composable record dominates the certified guarantee
    assert get_epsilon(reg.dp_event_, 1e-6) >= reg.epsilon_


@pytest.mark.parametrize("n", [2, 3, 10, 100])
def test_default_fits_any_n_and_stays_bounded(n):
    rng = np.random.default_rng(n)
    X = rng.uniform(-1, 1, (n, 3))
    y = X @ [1.0, -0.5, 0.25] + rng.normal(size=n)
    for seed in range(5):
        reg = DPNonconvexRegressor(epsilon=0.5, data_norm=2.0, random_state=seed).fit(X, y)
        assert reg.epsilon_ <= 0.5 and np.all(np.isfinite(reg.coef_))


def test_default_plan_and_ledger(data):
    from skdp.accounting import PrivacyLedger
    from skdp.linear_model._base import planned_dp_event

    X, y, _ = data
    reg = DPNonconvexRegressor(data_norm=2.0, random_state=0).fit(X[:5000], y[:5000])
    assert planned_dp_event(reg, 5000) == reg.dp_event_
    with PrivacyLedger(epsilon=1.0, delta=1e-6) as ledger:
        led = DPNonconvexRegressor(data_norm=2.0, random_state=0, privacy_ledger=ledger)
        led.fit(X[:5000], y[:5000])
        # under a ledger the record itself is calibrated to the budget
        assert ledger.epsilon_spent() <= 1.0 + 1e-9 and led.epsilon_ <= 1.0


def test_replacing_a_row_does_not_change_the_plan(data):
    X, y, _ = data
    X2, y2 = X[:3000].copy(), y[:3000].copy()
    X2[0], y2[0] = 100.0, -1e6
    a = DPNonconvexRegressor(data_norm=2.0, random_state=0).fit(X[:3000], y[:3000])
    b = DPNonconvexRegressor(data_norm=2.0, random_state=0).fit(X2, y2)
    assert a.solver_ == b.solver_ and a.dp_event_ == b.dp_event_
    assert a.noise_scale_ == b.noise_scale_ and a.alpha_ == b.alpha_


def test_default_says_when_it_returns_the_warm_start():
    """At a small budget the public plan skips the refinement: the fit says so in
    solver_params_ and still counts the warm start's iterations in n_iter_ (scikit-learn's
    n_iter check), and its model is the warm start's."""
    import warnings

    from sklearn.utils.estimator_checks import check_non_transformer_estimators_n_iter

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = X @ rng.normal(size=5) + rng.normal(size=2000)
    small = DPNonconvexRegressor(data_norm=3.0, y_bound=10.0, epsilon=0.5,
                                 random_state=0).fit(X, y)
    assert small.solver_params_ == {"n_steps": 0, "refinement": "skipped"}
    assert small.n_iter_ >= 1
    large = DPNonconvexRegressor(data_norm=3.0, y_bound=10.0, epsilon=20.0,
                                 random_state=0).fit(X, y)
    assert large.solver_params_["refinement"] == "ran" and large.solver_params_["n_steps"] > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_non_transformer_estimators_n_iter("DPNonconvexRegressor",
                                                DPNonconvexRegressor(random_state=0))
