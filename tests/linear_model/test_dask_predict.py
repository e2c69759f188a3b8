"""A fitted estimator on Dask collections: predictions are lazy Dask arrays equal to the
in-memory ones, the default score comes from per-partition sums, and the schema checks run
when the method is called, not when a block is computed."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.metrics import r2_score

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor  # noqa: E402


def _rows(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)) / 2


def _recorded(X, chunks):
    """``X`` as a Dask array whose blocks append to a list when computed."""
    computed = []

    def block(b):
        computed.append(len(b))
        return b

    return da.from_array(X, chunks=(chunks, 3)).map_blocks(
        block, dtype=X.dtype, meta=np.empty((0, 3))), computed


@pytest.mark.parametrize("classes", [[0, 1], ["a", "b", "c"]])
def test_classifier_methods_are_lazy_and_equal_to_in_memory(classes):
    X = _rows()
    labels = np.asarray(classes)
    y = labels[np.digitize(X[:, 0], [-0.3, 0.3]) % labels.size]
    model = DPLogisticRegression(classes=classes, data_norm=2.0, random_state=0).fit(X, y)
    k = labels.size
    shapes = {"predict": (3000,), "decision_function": (3000,) if k == 2 else (3000, k),
              "predict_proba": (3000, k), "predict_log_proba": (3000, k)}
    for method, shape in shapes.items():
        Xd, computed = _recorded(X, 700)
        out = getattr(model, method)(Xd)
        assert isinstance(out, da.Array) and out.shape == shape
        assert computed == []                               # nothing computed yet
        expected = getattr(model, method)(X)
        if method == "predict":
            np.testing.assert_array_equal(out.compute(), expected)
        else:
            np.testing.assert_allclose(out.compute(), expected, rtol=1e-12, atol=1e-12)
        assert sorted(computed) == [200, 700, 700, 700, 700]
    y_chunks = da.from_array(y, chunks=450)                 # other chunks: aligned by position
    assert model.score(da.from_array(X, chunks=(700, 3)), y_chunks) == model.score(X, y)
    assert model.score(da.from_array(X, chunks=(700, 3)), y) == model.score(X, y)


@pytest.mark.parametrize("Est", [DPHuberRegressor, DPNonconvexRegressor])
def test_regressor_predict_and_score_on_a_dask_dataframe(Est):
    """A DataFrame's partitions go to the in-memory predict with the fitted column names
    (no warning); R^2 from sums about the mean matches scikit-learn's even for targets far
    from 0."""
    X = _rows()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    y = X @ [1.0, 2.0, -1.0] + 1e6                  # a large mean: s2 - s^2/n would cancel
    model = Est(data_norm=2.0, y_bound=2e6, random_state=0).fit(frame, y)
    lazy = dd.from_pandas(frame, npartitions=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pred = model.predict(lazy)
        assert isinstance(pred, da.Array)
        np.testing.assert_allclose(pred.compute(), model.predict(frame), rtol=1e-13)
        score = model.score(lazy, dd.from_pandas(pd.Series(y), npartitions=3))
    expected = r2_score(y, model.predict(frame))
    assert score == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert score == pytest.approx(model.score(frame, y), rel=1e-9, abs=1e-9)


def test_schema_errors_are_raised_at_the_call_and_unfitted_models_refuse():
    X = _rows()
    y = (X[:, 0] > 0).astype(int)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = DPLogisticRegression(classes=[0, 1], data_norm=2.0, random_state=0).fit(frame, y)
    renamed = dd.from_pandas(frame.rename(columns={"c": "z"}), npartitions=2)
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict_proba(renamed)
    with pytest.raises(ValueError, match="X has 2 features"):
        model.predict(da.from_array(X[:, :2], chunks=(1000, 2)))
    with pytest.raises(ValueError, match="X has 2 features"):
        model.score(da.from_array(X[:, :2], chunks=(1000, 2)), y)
    with pytest.raises(NotFittedError):
        DPHuberRegressor(data_norm=1.0).predict(da.from_array(X, chunks=(1000, 3)))
    with pytest.raises(NotFittedError):
        DPLogisticRegression(classes=[0, 1]).score(da.from_array(X, chunks=(1000, 3)), y)


def test_empty_partitions_predict_transform_and_score():
    """A DataFrame partition without rows gives an empty block (the in-memory methods
    refuse zero rows): predictions, probabilities, a transform and the score equal the
    in-memory ones."""
    from skdp.preprocessing import DPRobustScaler

    X = pd.DataFrame(_rows(600), columns=["a", "b", "c"])
    y = (X["a"] > 0).astype(int)
    frame = dd.concat([dd.from_pandas(X.iloc[:200], npartitions=1),
                       dd.from_pandas(X.iloc[:0], npartitions=1),
                       dd.from_pandas(X.iloc[200:], npartitions=1)])
    model = DPLogisticRegression(data_norm=2.0, classes=[0, 1], random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.predict(frame).compute(), model.predict(X))
    np.testing.assert_allclose(model.predict_proba(frame).compute(), model.predict_proba(X))
    assert model.score(frame, dd.from_pandas(y, npartitions=2)) == model.score(X, y)
    scaler = DPRobustScaler(random_state=0).fit(X)
    np.testing.assert_allclose(scaler.transform(frame).compute(), scaler.transform(X))
