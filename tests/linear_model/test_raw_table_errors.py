"""A raw table (strings, categories) passed to an estimator's fit, predict or score, or to a
numeric DP transformer's fit or transform, gets an error that says
the estimators take numeric arrays and points to ``skdp.make_private_pipeline``, without
quoting any value of the data (it used to be a bare "could not convert string to float:
'<a row's value>'")."""

import numpy as np
import pytest

from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor
from skdp.preprocessing import (DPRobustScaler, DPSplineTransformer, DPStandardScaler,
                                RowwiseFunctionTransformer)

pd = pytest.importorskip("pandas")

SECRET = "Secret-Town"


def _table(n=40):
    return pd.DataFrame({"age": np.arange(n, dtype=float) % 50 + 20,
                         "city": [SECRET, "b", "c", "d"] * (n // 4)})


ESTIMATORS = [
    lambda: DPLogisticRegression(data_norm=1.0, classes=[0, 1]),
    lambda: DPHuberRegressor(data_norm=1.0),
    lambda: DPNonconvexRegressor(data_norm=1.0),
]
TABLES = {
    "strings": lambda: _table(),
    "category": lambda: _table().astype({"city": "category"}),
    "object_array": lambda: _table().to_numpy(),
    "list": lambda: _table().to_numpy().tolist(),
}


@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("make", ESTIMATORS, ids=["logistic", "huber", "nonconvex"])
def test_raw_table_points_to_make_private_pipeline(make, table):
    est = make()
    X = TABLES[table]()
    y = np.arange(40) % 2
    with pytest.raises(ValueError) as info:
        est.fit(X, y)
    msg = str(info.value)
    name = type(est).__name__
    assert msg.startswith(f"{name} takes numeric arrays")
    assert f"skdp.make_private_pipeline({name}(...)" in msg
    assert SECRET not in msg and "could not convert" not in msg      # no data value
    if table in ("strings", "category"):
        assert "non-numeric columns ['city']" in msg                  # schema: public
    # the float conversion's error quotes a row's value: it is not chained
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(est))


def test_numeric_dataframe_still_fits():
    X = _table()[["age"]] / 100.0
    reg = DPHuberRegressor(data_norm=1.0, random_state=0).fit(X, np.arange(40) % 2 * 1.0)
    assert reg.privacy_guaranteed_ and reg.coef_.shape == (1,)


@pytest.mark.parametrize("method", ["predict", "score", "decision_function", "predict_proba"])
def test_raw_table_to_a_fitted_estimator_points_to_make_private_pipeline(method):
    rng = np.random.default_rng(0)
    clf = DPLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=0).fit(
        pd.DataFrame({"age": rng.uniform(size=40), "city": rng.uniform(size=40)}),
        np.arange(40) % 2)
    X = _table()
    with pytest.raises(ValueError) as info:
        if method == "score":
            clf.score(X, np.arange(40) % 2)
        else:
            getattr(clf, method)(X)
    msg = str(info.value)
    assert msg.startswith("DPLogisticRegression takes numeric arrays")
    assert "make_private_pipeline" in msg and "non-numeric columns ['city']" in msg
    assert SECRET not in msg and info.value.__cause__ is None


def test_raw_table_to_a_regressor_predict():
    reg = DPHuberRegressor(data_norm=1.0, random_state=0).fit(
        np.full((40, 2), 0.1), np.arange(40) % 2 * 1.0)
    with pytest.raises(ValueError, match="make_private_pipeline") as info:
        reg.predict(_table().to_numpy())
    assert SECRET not in str(info.value)


TRANSFORMERS = {
    "standard": lambda: DPStandardScaler(feature_bounds=(0, 100), random_state=0),
    "robust": lambda: DPRobustScaler(random_state=0),
    "spline": lambda: DPSplineTransformer(random_state=0),
    # it quoted the value ("could not convert string to float: 'Secret-Town'")
    "rowwise": lambda: RowwiseFunctionTransformer(),
}


@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("kind", sorted(TRANSFORMERS))
def test_raw_table_to_a_numeric_transformer_points_to_the_encoders(kind, table):
    est = TRANSFORMERS[kind]()
    with pytest.raises(ValueError) as info:
        est.fit(TABLES[table]())
    msg = str(info.value)
    name = type(est).__name__
    assert msg.startswith(f"{name} takes numeric columns")
    assert "DPOneHotEncoder" in msg and "make_private_pipeline" in msg
    assert SECRET not in msg and "could not convert" not in msg
    assert info.value.__cause__ is None
    if table in ("strings", "category"):
        assert "non-numeric columns ['city']" in msg
    # and after a numeric fit, transform says the same
    numeric = pd.DataFrame({"age": np.linspace(20, 70, 400), "city": np.linspace(0, 1, 400)})
    est.fit(numeric if table in ("strings", "category") else numeric.to_numpy())
    with pytest.raises(ValueError, match=f"{name} takes numeric columns") as info:
        est.transform(TABLES[table]())
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("make", ESTIMATORS[1:], ids=["huber", "nonconvex"])
@pytest.mark.parametrize("lazy", [False, True])
def test_non_numeric_targets_are_refused_without_quoting_them(make, lazy):
    """A regressor's y with one string that is not a number: the error used to be numpy's
    "could not convert string to float: 'Secret-Town'", one row's private value, in memory
    and on Dask (raised by the workers' conversion).  It now says what is wrong only."""
    X = np.full((40, 2), 0.1)
    y = np.array([1.0] * 39 + [SECRET], dtype=object)
    if lazy:
        da = pytest.importorskip("dask.array")
        X, y = da.from_array(X, chunks=(20, 2)), da.from_array(y, chunks=20)
    est = make()
    with pytest.raises(ValueError, match="takes numeric targets") as info:
        est.fit(X, y)
    assert SECRET not in str(info.value) and info.value.__cause__ is None


@pytest.mark.parametrize("lazy", [False, True])
def test_non_numeric_targets_to_a_regressor_score_are_not_quoted(lazy):
    """``score`` on held-out rows whose y has a string: scikit-learn's R^2 quoted it."""
    reg = DPHuberRegressor(data_norm=1.0, y_bound=1.0, random_state=0).fit(
        np.full((40, 2), 0.1), np.arange(40) % 2 * 1.0)
    X = np.full((40, 2), 0.1)
    y = np.array([1.0] * 39 + [SECRET], dtype=object)
    if lazy:
        da = pytest.importorskip("dask.array")
        X, y = da.from_array(X, chunks=(20, 2)), da.from_array(y, chunks=20)
    with pytest.raises(ValueError, match="takes numeric targets") as info:
        reg.score(X, y)
    assert SECRET not in str(info.value) and info.value.__cause__ is None
