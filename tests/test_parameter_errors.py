"""Clear errors at the edges (issue 36, "Errors and edges").

Each refusal is a ``ValueError`` whose message names the parameter (and, for the numeric
ranges, the usable range), raised before the fit computes anything on the data, and the
estimator is left without fitted attributes.
"""

import numpy as np
import pytest
from sklearn.ensemble import BaggingClassifier, BaggingRegressor

from skdp import DPHuberRegressor, DPLogisticRegression
from skdp.model_selection import DPGridSearchCV


def _fitted_names(est):
    return [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]


def _binary(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


# ------------------------------------------------------------------ Dask, three classes
def test_dask_multiclass_says_dask_fits_are_binary():
    da = pytest.importorskip("dask.array")
    X, _ = _binary()
    y = np.arange(X.shape[0]) % 3
    est = DPLogisticRegression(data_norm=1.0, classes=[0, 1, 2])
    with pytest.raises(ValueError) as info:
        est.fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))
    msg = str(info.value)
    assert "binary only" in msg and "classes=[0, 1, 2]" in msg and "3 classes" in msg
    assert "in-memory" in msg
    assert "pass classes=[negative, positive]" not in msg   # the label set *was* passed
    assert _fitted_names(est) == []


def test_dask_without_classes_asks_for_the_label_set():
    da = pytest.importorskip("dask.array")
    X, y = _binary()
    est = DPLogisticRegression(data_norm=1.0)
    with pytest.raises(ValueError, match=r"needs the public label set.*classes="):
        est.fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))
    assert _fitted_names(est) == []


# ------------------------------------------------------------------ bagging
@pytest.mark.parametrize("bootstrap", [True, False])
def test_bagging_explains_resampling(bootstrap):
    X, y = _binary()
    bag = BaggingClassifier(DPLogisticRegression(data_norm=1.0, classes=[0, 1]),
                            n_estimators=2, bootstrap=bootstrap, max_samples=0.5,
                            random_state=0)
    with pytest.raises(ValueError) as info:
        bag.fit(X, y)
    msg = str(info.value)
    assert msg.startswith("sample_weight is not supported")
    assert "Bagging" in msg and "k-fold sensitivity" in msg and "bootstrap=False" in msg
    assert "disjoint blocks" in msg                       # what to do instead


def test_bagging_regressor_explains_resampling():
    X, y = _binary()
    bag = BaggingRegressor(DPHuberRegressor(data_norm=1.0), n_estimators=2, random_state=0)
    with pytest.raises(ValueError, match="row counts.*Bagging"):
        bag.fit(X, y.astype(float))


def test_real_valued_weights_keep_the_general_refusal():
    X, y = _binary()
    est = DPLogisticRegression(data_norm=1.0, classes=[0, 1])
    with pytest.raises(ValueError, match="per-sample weights change the sensitivity"):
        est.fit(X, y, sample_weight=np.full(X.shape[0], 0.5))
    assert _fitted_names(est) == []


# ------------------------------------------------------------------ search: refit_time_
def test_search_publishes_no_refit_time():
    X, y = _binary(n=400)
    search = DPGridSearchCV(DPLogisticRegression(classes=[0, 1], data_norm=1.0),
                            {"alpha": [0.01, 0.1]}, epsilon=2.0, refit=True, cv=0.5,
                            random_state=0)
    search.fit(X, y)
    assert hasattr(search, "best_estimator_")
    assert not hasattr(search, "refit_time_")
    assert not hasattr(search.best_estimator_, "n_iter_")
