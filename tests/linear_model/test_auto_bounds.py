"""data_norm="auto" outside a pipeline and y_bound="auto": bounds released privately inside
the fit, with the split reported and the total within budget."""

import numpy as np
import pytest

from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor
from skdp.accounting import PrivacyLedger, compose, get_epsilon
from skdp.linear_model._auto import AUTO_NORM_QUANTILE, AUTO_Y_QUANTILE
from skdp.linear_model._base import planned_dp_event


def _classification(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) * 2.0
    y = (X @ rng.normal(size=5) + rng.normal(size=n) > 0).astype(int)
    return X, y


def _regression(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, X @ rng.normal(size=5) * 3.0 + rng.normal(size=n)


def test_logistic_auto_norm_is_released_and_accounted():
    X, y = _classification()
    clf = DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0).fit(X, y)
    assert clf.privacy_guaranteed_
    assert 0.99 <= clf.epsilon_ <= 1.0
    assert get_epsilon(clf.dp_event_, 1e-6) == clf.epsilon_
    split = clf.budget_split_
    assert set(split) == {"bounds", "model", "mu_share_bounds"}
    true_q = np.quantile(np.linalg.norm(X, axis=1), AUTO_NORM_QUANTILE)
    assert 0.8 * true_q < clf.data_norm_ < 1.25 * true_q
    assert clf.score(X, y) > 0.9
    # planned from public quantities (a composite charges it before the fit): the bound's
    # count tree, then the model at the largest epsilon that composes with it
    planned = planned_dp_event(DPLogisticRegression(classes=[0, 1], data_norm="auto"),
                               X.shape[0], X.shape[1])
    assert get_epsilon(planned, 1e-6) == pytest.approx(clf.epsilon_, rel=1e-6)


@pytest.mark.parametrize("bad", [1e300, -1e300, 5e-324])
def test_an_extreme_row_does_not_move_the_bound(bad):
    X, y = _classification()
    ref = DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0).fit(X, y)
    X2 = X.copy()
    X2[0] = bad
    other = DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0).fit(X2, y)
    # the model's event is planned at the released bound (a DP release, which may differ
    # between neighbours): its reported composition can move in the last bits (the
    # base-rate check's Gaussian, at a fraction of the objective noise's mu = 2L/sigma),
    # and so can the model's share, which the secant of largest_model_epsilon computes
    # from those compositions (post-processing of the release either way)
    assert other.budget_split_.keys() == ref.budget_split_.keys()
    for key, value in ref.budget_split_.items():
        assert other.budget_split_[key] == pytest.approx(value, rel=1e-12, abs=0), key
    assert other.epsilon_ == pytest.approx(ref.epsilon_, rel=1e-12, abs=0)
    assert abs(other.data_norm_ - ref.data_norm_) < 0.05 * ref.data_norm_


@pytest.mark.parametrize("cls", [DPHuberRegressor, DPNonconvexRegressor])
def test_regressors_release_data_norm_and_y_bound(cls):
    X, y = _regression()
    y[0] = 1e300                       # clipped to the released bound, never read as one
    reg = cls(data_norm="auto", y_bound="auto", random_state=0).fit(X, y)
    assert reg.privacy_guaranteed_ and 0.99 <= reg.epsilon_ <= 1.0
    # a high quantile of |y| (the level is kept one noise rank inside the data: at n = 6000
    # the margin is ~10 %), never the 1e300 row
    low, high = np.quantile(np.abs(y), [0.85, AUTO_Y_QUANTILE])
    assert low < reg.y_bound_ < 1.1 * high
    assert reg.score(X[1:], y[1:]) > 0.8


def test_y_bound_auto_with_public_data_norm():
    X, y = _regression()
    reg = DPHuberRegressor(data_norm=4.0, y_bound="auto", random_state=0).fit(X, y)
    assert reg.data_norm_ == 4.0 and reg.epsilon_ <= 1.0
    assert len(reg.dp_event_.events) >= 2


def test_ledger_counts_the_bound_release(tmp_path):
    X, y = _classification()
    with PrivacyLedger(epsilon=1.05, delta=1e-6, path=tmp_path / "ledger.db") as ledger:
        clf = DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0,
                                   privacy_ledger=ledger).fit(X, y)
        recorded = ledger.dp_event
        assert get_epsilon(recorded, 1e-6) == pytest.approx(
            get_epsilon(compose(clf.dp_event_), 1e-6), rel=1e-9)
        with pytest.raises(Exception, match="budget|exceed"):
            DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=1,
                                 privacy_ledger=ledger).fit(X, y)


def test_pure_dp_is_refused_before_any_release():
    X, y = _classification(200)
    clf = DPLogisticRegression(classes=[0, 1], data_norm="auto", delta=0.0)
    with pytest.raises(ValueError, match="delta > 0"):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")


def test_a_release_too_noisy_for_its_rows_warns_before_it_runs(monkeypatch):
    """Where the quantile release's rank noise exceeds half the rows (a public function of
    n, epsilon, delta and the number of bounds), the fit warns before anything is
    released; with enough rows it does not."""
    import warnings

    import skdp._mechanisms._quantiles as quantiles_mod
    from skdp._mechanisms._quantiles import UNRESOLVED_RANK_NOISE, rank_noise
    from skdp.linear_model._auto import auto_bounds_mu

    def share(n, k, eps):
        return rank_noise(n, k, auto_bounds_mu(eps, 1e-6))

    assert share(600, 1, 1.0) > UNRESOLVED_RANK_NOISE
    assert share(900, 1, 1.0) < UNRESOLVED_RANK_NOISE < share(900, 2, 1.0)
    assert share(900, 1, 2.0) < share(900, 1, 1.0)
    X, y = _regression(n=600)

    def no_release(*args, **kwargs):
        raise RuntimeError("released")

    monkeypatch.setattr(quantiles_mod, "release_tree_histogram", no_release)
    with pytest.warns(UserWarning, match="data_norm='auto' on 600 rows.*public bound") as seen, \
            pytest.raises(RuntimeError, match="released"):
        DPHuberRegressor(data_norm="auto", random_state=0).fit(X, y)
    assert seen[0].filename == __file__                  # the user's line
    monkeypatch.undo()
    X, y = _regression(n=3000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPHuberRegressor(data_norm="auto", y_bound="auto", random_state=0).fit(X, y)
