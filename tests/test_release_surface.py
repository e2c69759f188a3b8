"""What a user meets around the release: no guarantee is reported where there is none
(data-derived bounds or label set), a failed fit leaves no trace, warnings point at the
user's line, and error messages say what to do."""

import math
import pickle
import warnings

import dp_accounting
import numpy as np
import pytest
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted

from skdp import (
    BudgetExceededError,
    DPGridSearchCV,
    DPHuberRegressor,
    DPLogisticRegression,
    DPNonconvexRegressor,
    PrivacyLeakWarning,
    PrivacyLedger,
)
from skdp.accounting import fitted_dp_event, fitted_privacy_guaranteed
from skdp.model_selection import dp_cross_validate
from skdp.preprocessing import DPStandardScaler


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    y = (X @ [1.0, -1.0, 0.5] > 0).astype(int)
    return X, y


# ---------------------------------------------------------------- item 2: data_norm=None


def test_data_norm_none_reports_no_guarantee_and_a_power_of_two_bound():
    X, y = _data()
    X = X * 0.77   # largest row norm is not a power of two
    with pytest.warns(PrivacyLeakWarning, match="data_norm is None"):
        clf = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    assert clf.epsilon_ == math.inf and not clf.privacy_guaranteed_
    assert isinstance(clf.dp_event_, dp_accounting.NonPrivateDpEvent)
    assert isinstance(fitted_dp_event(clf), dp_accounting.NonPrivateDpEvent)
    largest = np.linalg.norm(X, axis=1).max()
    assert clf.data_norm_ != largest and math.log2(clf.data_norm_).is_integer()
    assert clf.data_norm_ >= largest


def test_scaler_without_bounds_reports_no_guarantee_and_rounded_bounds():
    X, _ = _data()
    X = X * [3.3, 0.07, 120.0] + [0.0, 5.0, -7.0]
    with pytest.warns(PrivacyLeakWarning, match="feature_bounds is None"):
        sc = DPStandardScaler(random_state=0).fit(X)
    assert sc.epsilon_ == math.inf and not sc.privacy_guaranteed_
    assert isinstance(sc.dp_event_, dp_accounting.NonPrivateDpEvent)
    lo, hi = sc.feature_bounds_
    assert np.all(lo <= X.min(axis=0)) and np.all(hi >= X.max(axis=0))
    for v in np.concatenate([lo, hi]):   # 0 or +-(power of two): no row's value printed
        assert v == 0 or math.log2(abs(v)).is_integer()
    assert not np.isin(np.concatenate([lo, hi]), X).any()
    pipe = make_pipeline(sc, DPLogisticRegression(data_norm=2.0, classes=[0, 1]))
    assert not fitted_privacy_guaranteed(pipe)


# ------------------------------------------------------------------ item 3: classes=None


def test_classes_none_reads_the_label_set_and_reports_no_guarantee():
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning, match="classes is None"):
        clf = DPLogisticRegression(data_norm=2.0, random_state=0).fit(X, y)
    assert not clf.privacy_guaranteed_ and clf.epsilon_ == math.inf
    assert isinstance(clf.dp_event_, dp_accounting.NonPrivateDpEvent)
    # why: one row with a new label changes the model's shape -- perfectly distinguishable
    y2 = y.copy()
    y2[0] = 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = DPLogisticRegression(data_norm=2.0, random_state=0).fit(X, y2)
    assert clf.coef_.shape != other.coef_.shape
    # the private way: a public label set, same shape on both datasets
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        public = DPLogisticRegression(data_norm=2.0, classes=[0, 1, 2], random_state=0)
        assert public.fit(X, y).coef_.shape == public.fit(X, y2).coef_.shape
    assert public.privacy_guaranteed_ and public.epsilon_ <= 1.0


def test_classes_none_is_refused_by_a_ledger_before_the_fit():
    X, y = _data()
    with PrivacyLedger(epsilon=5.0) as ledger:
        clf = DPLogisticRegression(data_norm=2.0, privacy_ledger=ledger)
        with pytest.raises(BudgetExceededError), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(X, y)
        assert len(ledger) == 0 and not hasattr(clf, "coef_")
        clf.set_params(classes=[0, 1]).fit(X, y)
        assert len(ledger) == 1


def test_searches_warn_and_report_no_guarantee_without_classes():
    X, y = _data(400)
    with pytest.warns(PrivacyLeakWarning, match="classes=None"):
        search = DPGridSearchCV(DPLogisticRegression(data_norm=2.0), {"alpha": [0.01, 0.1]},
                                epsilon=2.0, random_state=0).fit(X, y)
    assert not search.privacy_guaranteed_ and search.epsilon_ == math.inf
    assert isinstance(search.dp_event_, dp_accounting.NonPrivateDpEvent)
    # the candidates ran with the label set the search read (one shape for all fits)
    np.testing.assert_array_equal(search.best_estimator_.classes, [0, 1])
    with pytest.warns(PrivacyLeakWarning, match="classes=None"):
        res = dp_cross_validate(make_pipeline(DPLogisticRegression(data_norm=2.0)), X, y,
                                epsilon=2.0, cv=3, random_state=0)
    assert not res["privacy_guaranteed"] and res["epsilon"] == math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        ok = DPGridSearchCV(DPLogisticRegression(data_norm=2.0, classes=[0, 1]),
                            {"alpha": [0.01, 0.1]}, epsilon=2.0, random_state=0).fit(X, y)
    assert ok.privacy_guaranteed_ and ok.epsilon_ <= 2.0


# ------------------------------------------------------- item 8: a failed fit leaves no trace


@pytest.mark.parametrize("make,bad_fit", [
    (lambda: DPLogisticRegression(data_norm=2.0, classes=[0, 1], solver="dpsgd",
                                  batch_size=50), lambda X, y: (X[:2], y[:2])),
    (lambda: DPHuberRegressor(data_norm=2.0), lambda X, y: (X[:1], y[:1])),
    (lambda: DPNonconvexRegressor(data_norm=2.0, solver="spider"), lambda X, y: (X, y)),
    (lambda: DPLogisticRegression(data_norm=2.0, classes=[0, 1]),
     lambda X, y: (X, np.r_[2, y[1:]])),
])
def test_failed_fit_leaves_the_estimator_as_it_was(make, bad_fit):
    X, y = _data()
    est = make()
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*bad_fit(X, y))
    assert not [k for k in vars(est) if k.endswith("_")]      # no n_features_in_ either
    with pytest.raises(Exception, match="not fitted"):
        check_is_fitted(est)
    # after a successful fit, a failed one keeps the previous model intact
    if isinstance(est, DPNonconvexRegressor):
        est.set_params(solver="warm_gd")
    yy = y if isinstance(est, DPLogisticRegression) else y.astype(float)
    est.fit(X, yy)
    before = pickle.dumps(est)
    if isinstance(est, DPNonconvexRegressor):
        est.set_params(solver="spider")
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*bad_fit(X[:, :2], yy))
    if isinstance(est, DPNonconvexRegressor):
        est.set_params(solver="warm_gd")
    assert pickle.dumps(est) == before and est.n_features_in_ == 3
    est.predict(X)


def test_parameters_are_validated_before_the_data():
    X, y = _data()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="'epsilon' parameter"):
        DPLogisticRegression(epsilon=math.inf, data_norm=2.0, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="'data_norm' parameter"):
        DPLogisticRegression(data_norm=math.inf, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="huber_threshold=0"):
        DPHuberRegressor(huber_threshold=0.0, solver="dpsgd", data_norm=2.0).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        DPLogisticRegression(data_norm=2.0, classes=[1]).fit(X, y)
    with pytest.raises(InvalidParameterError):
        DPStandardScaler(epsilon=-1.0).fit(X)
    with pytest.raises(ValueError, match="delta > 0"):
        DPStandardScaler(delta=0.0).fit(X)


# ------------------------------------------------------ item 9: warnings at the user's line


def _where(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return {(type(w.message).__name__, w.filename) for w in caught}


def test_warnings_point_at_the_users_line():
    X, y = _data(300)
    here = __file__
    cases = [
        lambda: DPLogisticRegression(classes=[0, 1]).fit(X, y),                     # data_norm
        lambda: DPLogisticRegression(data_norm=2.0).fit(X, y),                      # classes
        lambda: DPLogisticRegression(data_norm=2.0, classes=[0, 1], delta=0.01).fit(X, y),
        lambda: DPLogisticRegression(data_norm=2.0, classes=[0, 1], alpha=1e-9,
                                     solver="objective_perturbation").fit(X, y),   # floor
        lambda: DPStandardScaler().fit(X),
        lambda: make_pipeline(DPStandardScaler(), DPLogisticRegression()).fit(X, y),
        lambda: cross_val_score(DPLogisticRegression(data_norm=2.0), X, y, cv=2),
        lambda: DPGridSearchCV(DPLogisticRegression(data_norm=2.0), {"alpha": [0.1]},
                               delta=0.01, epsilon=1.0, random_state=0).fit(X, y),
    ]
    for i, case in enumerate(cases):
        where = _where(case)
        assert where, f"case {i} did not warn"
        assert {f for _, f in where} == {here}, (i, where)


# ----------------------------------------------------- item 10: messages that say what to do


def test_too_small_n_for_the_batch_says_so():
    X, y = _data()
    for est in (DPLogisticRegression(data_norm=2.0, classes=[0, 1], solver="dpsgd",
                                     batch_size=50),
                DPHuberRegressor(data_norm=2.0, solver="resque", batch_size=50),
                DPNonconvexRegressor(data_norm=2.0, solver="rrpsgd", batch_size=50)):
        with pytest.raises(ValueError, match="larger than n_samples=2: the dataset is too "
                                             "small") as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X[:2], [0, 1] if isinstance(est, DPLogisticRegression) else [0.0, 1.0])
        assert "Pass batch_size <= 2" in str(info.value)


def test_unreachable_epsilon_gives_advice():
    X, y = _data(2000)
    with pytest.raises(ValueError, match="out of reach") as info:
        DPLogisticRegression(epsilon=1e-6, data_norm=2.0, classes=[0, 1],
                             solver="dpsgd").fit(X, y)
    assert "larger epsilon" in str(info.value) and "fewer steps" in str(info.value)
