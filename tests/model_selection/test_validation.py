"""dp_cross_validate: per-row accounting of k fits + k scores, reproducibility, refusals."""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from skdp import DPHuberRegressor, DPLogisticRegression
from skdp.accounting import (compose, gaussian_epsilon, gaussian_event, gaussian_mu_for,
                              get_epsilon)
from skdp.exceptions import BudgetExceededError
from skdp.model_selection import _validation, dp_cross_validate, make_private_scorer

from ._toy import NoisyMeanClassifier


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (302, 2))
    y = (X[:, 0] > 0.1 * rng.normal(size=302)).astype(int)
    return X, y


@pytest.mark.parametrize("k", [2, 5])
def test_total_is_k_minus_1_fits_plus_one_score(data, k):
    X, y = data
    res = dp_cross_validate(DPLogisticRegression(classes=[0, 1], data_norm=2.0), X, y, epsilon=1.0,
                            delta=1e-6, cv=k, random_state=0, return_estimator=True)
    models = res["estimator"]
    fit_mus = [m.sensitivity_ / m.noise_scale_ for m in models]
    assert max(fit_mus) == pytest.approx(min(fit_mus), rel=1e-9)
    sigma_s = np.array(res["budget_split"]["score_noise_std"])
    sens_s = np.array(res["budget_split"]["score_sensitivity"])
    # folds of 302 // k or +1 rows: sensitivity 1/|fold|, each released at the same mu
    assert set(np.round(1 / sens_s).astype(int)) <= {302 // k, 302 // k + 1}
    score_mu = (sens_s / sigma_s).max()
    expected = gaussian_epsilon(1e-6, math.sqrt((k - 1) * fit_mus[0] ** 2 + score_mu**2))
    assert res["epsilon"] == pytest.approx(expected, rel=1e-6)
    assert 0.99 < res["epsilon"] <= 1.0
    # the naive count (all k fits and all k scores for every row) is strictly larger
    naive = compose(*[m.dp_event_ for m in models],
                    *[gaussian_event(s, d) for s, d in zip(sigma_s, sens_s)])
    assert get_epsilon(naive, 1e-6) > res["epsilon"] * 1.1
    assert res["test_score"].shape == (k,)
    assert res["privacy_guaranteed"]


def test_pure(data):
    X, y = data
    res = dp_cross_validate(DPLogisticRegression(classes=[0, 1], data_norm=2.0), X, y, epsilon=1.0,
                            delta=0.0, cv=4, random_state=0, return_estimator=True)
    eps_fit = res["estimator"][0].epsilon_
    assert res["epsilon"] == pytest.approx(4 * eps_fit, rel=1e-9)  # 3 fits + 1 score
    assert res["epsilon"] <= 1.0


def test_scores_are_noisy_and_reproducible(data):
    X, y = data
    kw = dict(epsilon=1.0, cv=3)
    a = dp_cross_validate(DPLogisticRegression(classes=[0, 1],
                                               data_norm=2.0), X, y, random_state=1, **kw)
    b = dp_cross_validate(DPLogisticRegression(classes=[0, 1],
                                               data_norm=2.0), X, y, random_state=1,
                          n_jobs=2, **kw)
    c = dp_cross_validate(DPLogisticRegression(classes=[0, 1],
                                               data_norm=2.0), X, y, random_state=2, **kw)
    np.testing.assert_array_equal(a["test_score"], b["test_score"])
    assert not np.array_equal(a["test_score"], c["test_score"])
    # the noise is as claimed: the spread over seeds of a fold score matches sigma
    high = [dp_cross_validate(DPLogisticRegression(classes=[0, 1],
                                                   data_norm=2.0), X, y, epsilon=50.0,
                              cv=3, random_state=s)["test_score"] for s in range(3)]
    assert np.all(np.abs(np.array(high) - np.mean(high)) < 0.2)


def test_refusals(data):
    X, y = data
    est = DPLogisticRegression(classes=[0, 1], data_norm=2.0)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X, y, cv=1)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X, y, epsilon=0.0)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X, y, delta=1.0)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X, None)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X[:5], y[:5], cv=3)
    with pytest.raises(TypeError):
        dp_cross_validate(est, X, y, scoring=lambda e, X, y: 1.0)


# ---- audit F3: a plain estimator's non-Gaussian event was accounted after k fits -------


def _count_fits(monkeypatch):
    """Training-part sizes of every fit ``dp_cross_validate`` runs on the private folds."""
    fits = []
    original = _validation.fit_and_score

    def spy(est, parts, scorer, keep_model):
        fits.append(parts[0].shape[0])
        return original(est, parts, scorer, keep_model)

    monkeypatch.setattr(_validation, "fit_and_score", spy)
    return fits


@pytest.mark.parametrize("solver, kw, n, k", [
    ("objective_perturbation", {}, 3000, 5),
    ("dpsgd", dict(batch_size=30, n_steps=20), 302, 3),
])
def test_a_non_gaussian_estimator_is_calibrated_before_its_fits(monkeypatch, solver, kw, n,
                                                                k):
    """It used to be fitted on all k folds and only then refused (objective perturbation
    at 3000 rows: epsilon 1.538 > 1; DP-SGD's Poisson-sampled steps at 302 rows).  The
    per-fit budget is now lowered, from the placeholder events, until the k - 1 fits and
    the score fit the total, as the search does; then each fold is fitted once."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (n, 3))
    y = (X[:, 0] > 0).astype(int)
    fits = _count_fits(monkeypatch)
    est = DPLogisticRegression(data_norm=2.0, classes=[0, 1], solver=solver, **kw)
    res = dp_cross_validate(est, X, y, epsilon=1.0, delta=1e-6, cv=k, random_state=0)
    assert len(fits) == k and sum(fits) == (k - 1) * n
    assert res["privacy_guaranteed"] and 0.9 < res["epsilon"] <= 1.0
    # below the Gaussian plan (mu_total / sqrt(k)), which over-spends with these events
    assert res["budget_split"]["fit_mu"] < gaussian_mu_for(1.0, 1e-6) / math.sqrt(k)


class _GaussianOnly(NoisyMeanClassifier):
    """Releases a Gaussian event even when asked for pure DP (delta = 0)."""

    def fit(self, X, y):
        asked = self.delta
        self.delta = asked or 1e-6
        try:
            return super().fit(X, y)
        finally:
            self.delta = asked


def test_a_pure_budget_is_refused_before_any_fit(monkeypatch):
    """delta = 0 with a step that does not release a pure event: refused from its
    placeholder event, before the first fit on a private fold (it used to be fitted k
    times first)."""
    X = np.zeros((60, 1))
    y = np.arange(60) % 2
    fits = _count_fits(monkeypatch)
    with pytest.raises(BudgetExceededError):
        dp_cross_validate(_GaussianOnly(), X, y, epsilon=1.0, delta=0.0, cv=3,
                          random_state=0)
    assert fits == []


# ---- audit F1: the returned fold models carried the noise key of their fit ------------


def test_returned_fold_models_do_not_reproduce_their_release(data, monkeypatch):
    """random_state=None: each fold model keys its noise from the OS and carries the
    user's random_state (None); refitting it on its own training part does not
    reproduce it (it used to, bit for bit: the key was its random_state)."""
    X, y = data
    parts = []
    original = _validation.fit_and_score

    def spy(est, part, scorer, keep_model):
        parts.append(part)
        return original(est, part, scorer, keep_model)

    monkeypatch.setattr(_validation, "fit_and_score", spy)
    est = DPLogisticRegression(data_norm=1.5, classes=[0, 1], solver="output_perturbation")
    res = dp_cross_validate(est, X, y, epsilon=1.0, cv=3, random_state=None,
                            return_estimator=True)
    for model, part in zip(res["estimator"], parts):
        assert model.random_state is None
        again = clone(model).fit(part[0], part[1])
        assert not np.array_equal(again.coef_, model.coef_)


class _KeyRecorder(NoisyMeanClassifier):
    keys = []

    def fit(self, X, y):
        type(self).keys.append(self.random_state)
        return super().fit(X, y)


def test_seeded_folds_get_distinct_derived_keys(data):
    X, y = data
    runs = []
    for _ in range(2):
        _KeyRecorder.keys = []
        res = dp_cross_validate(_KeyRecorder(random_state=3), X, y, epsilon=1.0, cv=4,
                                random_state=0, return_estimator=True)
        keys = [k for k in _KeyRecorder.keys if k is not None]     # not the placeholders
        assert len(keys) == 4 and len(set(keys)) == 4 and 3 not in keys
        assert [m.random_state for m in res["estimator"]] == [3] * 4
        runs.append((keys, res["test_score"]))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_an_overflowing_validation_row_is_scored_silently():
    """Audit finding: dp_cross_validate scored each fold's rows with the model's predict,
    ``X @ coef_`` on unclipped rows; a finite extreme row overflowed it and numpy warned
    ("overflow encountered in matmul") on that neighbour only, outside the release (an
    exception under ``simplefilter("error")``).  Now no warning, no exception, finite
    released fold scores -- accuracy of a classifier and a user's absolute error."""
    from .test_search import _extreme_row_data

    X, y, y_reg = _extreme_row_data()
    mae = make_private_scorer(lambda t, p: np.abs(t - p), lower=0.0, upper=2.0,
                              greater_is_better=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = [
            dp_cross_validate(DPLogisticRegression(data_norm=1.0, classes=[0, 1]), X, y,
                              epsilon=1.0, cv=3, random_state=0, return_estimator=True),
            dp_cross_validate(DPHuberRegressor(data_norm=1.0, y_bound=2.0), X, y_reg,
                              scoring=mae, epsilon=1.0, cv=3, random_state=0,
                              return_estimator=True),
        ]
    for res in results:
        assert res["test_score"].shape == (3,)
        assert np.all(np.isfinite(res["test_score"]))
        # the case is exercised: every fold's model overflows on the row
        with np.errstate(all="ignore"):
            assert not any(np.isfinite(X[17] @ np.ravel(m.coef_)) for m in res["estimator"])


# ----------------------------------------------------------------------------------------
# dp_cross_validate's own privacy_ledger: charged the fold plan's event before any row


@pytest.mark.parametrize("adaptive", [False, True])
def test_a_short_ledger_refuses_cross_validation_before_any_fit(data, monkeypatch, adaptive):
    """dp_cross_validate used to take no ledger: its event could be recorded only after
    the fold scores were returned, and a short budget then raised 'Nothing was released'
    (false).  The fold plan's event is now reserved before the first fold is fitted."""
    from .test_search import ledger_with_a_fit_spent, record_private_fits

    calls = record_private_fits(monkeypatch)
    with ledger_with_a_fit_spent(adaptive) as ledger:
        before = ledger.entries()
        with pytest.raises(BudgetExceededError, match="Nothing was released"):
            dp_cross_validate(DPLogisticRegression(classes=[0, 1], data_norm=2.0), *data,
                              epsilon=1.0, cv=3, random_state=0, privacy_ledger=ledger)
        assert calls == []
        assert ledger.entries() == before


@pytest.mark.parametrize("adaptive", [False, True])
def test_the_ledger_holds_exactly_the_cross_validation_event(data, monkeypatch, adaptive):
    from skdp.accounting import PrivacyLedger
    from skdp.accounting._ledger import event_to_json

    from .test_search import record_private_fits

    calls = record_private_fits(monkeypatch)
    with PrivacyLedger(epsilon=5.0, delta=1e-6, adaptive=adaptive) as ledger:
        res = dp_cross_validate(DPLogisticRegression(classes=[0, 1], data_norm=2.0), *data,
                                epsilon=1.0, cv=3, random_state=0, privacy_ledger=ledger)
        assert len(calls) == 3
        (entry,) = ledger.entries()
        assert entry.status == "committed" and entry.source == "dp_cross_validate"
        assert event_to_json(entry.event) == event_to_json(res["dp_event"])
        assert res["epsilon"] <= 1.0 and res["privacy_guaranteed"]


def test_failing_cross_validation_is_charged_its_planned_event(data, monkeypatch):
    """A fold's fit fails on the data: charged with the planned event (it used to cancel
    the reservation: nothing spent)."""
    from skdp.accounting import PrivacyLedger

    original = DPLogisticRegression.fit

    def failing(self, X, y):
        if np.any(np.asarray(X) != 0):
            raise FloatingPointError("solver failed")
        return original(self, X, y)

    monkeypatch.setattr(DPLogisticRegression, "fit", failing)
    with PrivacyLedger(epsilon=5.0) as ledger:
        with pytest.raises(FloatingPointError):
            dp_cross_validate(DPLogisticRegression(classes=[0, 1], data_norm=2.0), *data,
                              cv=3, privacy_ledger=ledger)
        (entry,) = ledger.entries()
        assert entry.status == "committed" and entry.source == "dp_cross_validate (failed)"


def test_cross_validation_refuses_before_reading_the_label_set(data, monkeypatch):
    from skdp.accounting import PrivacyLedger

    reads = []
    original = _validation.public_label_set
    monkeypatch.setattr(_validation, "public_label_set",
                        lambda *args: reads.append(1) or original(*args))
    with PrivacyLedger(epsilon=5.0) as ledger:
        with pytest.raises(BudgetExceededError, match="not differentially private"):
            dp_cross_validate(DPLogisticRegression(data_norm=2.0), *data, cv=3,
                              privacy_ledger=ledger)
        assert reads == [] and len(ledger) == 0


def test_the_cross_validation_ledger_parameter_is_validated(data):
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="privacy_ledger"):
        dp_cross_validate(DPLogisticRegression(classes=[0, 1], data_norm=2.0), *data,
                          privacy_ledger="a ledger")


@pytest.mark.parametrize("kind", ["Pipeline", "PrivatePipeline"])
def test_a_subclassed_container_is_refused_before_any_fold_is_fitted(data, kind):
    """Audit finding: dp_cross_validate read the folds' events from trial fits on public
    placeholder rows (fitted_dp_event, or a PrivatePipeline's plan), which walked a
    ColumnTransformer subclass that reads the whole table as a verified container, and
    then fitted it on every private fold.  It is refused before the first fold's fit now:
    no batch it recorded holds a private value."""
    from tests._subclassed_containers import clear_seen, saw_private_rows

    from .test_search import _reading_container_pipelines

    X, y = data
    clear_seen()
    with pytest.raises(TypeError, match=r"'(batchmeancolumns|ct)' \(BatchMeanColumns\) "
                                        "is a subclass of ColumnTransformer"):
        dp_cross_validate(_reading_container_pipelines()[kind], X, y, epsilon=1.0, cv=3,
                          random_state=0)
    assert not saw_private_rows(X)

