"""The raw-table transformers fit Dask collections partition by partition (their statistics
are sums) and release exactly what the in-memory fit releases."""

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
pd = pytest.importorskip("pandas")

from skdp.preprocessing import DPOneHotEncoder, DPRobustScaler, DPSplineTransformer  # noqa


def _frame(n=6000):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=n), "z": rng.lognormal(size=n)})
    df.loc[::17, "x"] = np.nan
    return df


@pytest.mark.parametrize("cls", [DPSplineTransformer, DPRobustScaler])
def test_numeric_transformers_match_in_memory_fit(cls):
    df = _frame()
    mem = cls(random_state=0).fit(df)
    lazy = cls(random_state=0).fit(dd.from_pandas(df, npartitions=4))
    arr = cls(random_state=0).fit(da.from_array(df.to_numpy(), chunks=(1000, 2)))
    for other in (lazy, arr):
        assert other.dp_event_ == mem.dp_event_
        for name in ("knots_", "center_", "scale_", "clip_bounds_"):
            if hasattr(mem, name):
                for a, b in zip(getattr(mem, name), getattr(other, name)):
                    np.testing.assert_array_equal(a, b)
    assert list(lazy.feature_names_in_) == ["x", "z"]


@pytest.mark.parametrize("cls", [DPSplineTransformer, DPRobustScaler])
def test_a_nullable_missing_value_is_a_value_on_dask_too(cls):
    """pandas' nullable columns (Int64, Float64, boolean) reach a Dask array as object
    blocks; a pd.NA there is a missing value, as in memory (its public NaN bin), not an
    error that one row would trigger on Dask only (a TypeError before)."""
    df = _frame(3000)
    df["k"] = pd.array(np.arange(3000) % 50, dtype="Int64")
    df["f"] = pd.array(np.linspace(-1, 1, 3000), dtype="Float64")
    df.loc[7, "k"] = pd.NA
    df.loc[11, "f"] = pd.NA
    mem = cls(random_state=0).fit(df)
    lazy = cls(random_state=0).fit(dd.from_pandas(df, npartitions=3))
    assert lazy.dp_event_ == mem.dp_event_
    for name in ("knots_", "center_", "scale_"):
        for a, b in zip(getattr(mem, name, ()), getattr(lazy, name, ())):
            np.testing.assert_array_equal(a, b)
    assert hasattr(mem, "knots_") or hasattr(mem, "center_")


def test_encoder_matches_in_memory_fit():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"c": rng.choice(["a", "b", "c"], 5000).astype(object)})
    df.loc[::9, "c"] = None
    mem = DPOneHotEncoder(random_state=0).fit(df)
    lazy = DPOneHotEncoder(random_state=0).fit(dd.from_pandas(df, npartitions=3))
    assert lazy.categories_ == mem.categories_ and lazy.dp_event_ == mem.dp_event_


@pytest.mark.parametrize("cls, columns", [(DPRobustScaler, ["x", "z"]),
                                          (DPSplineTransformer, ["x", "z"]),
                                          (DPOneHotEncoder, ["c"])])
def test_fitted_transformers_transform_dask_rows_lazily(cls, columns):
    """A fitted transformer transforms a Dask DataFrame lazily: each partition, with its
    own dtypes and names, goes to the in-memory transform on its worker (a CSR basis
    densified there); the result equals the in-memory transform, and nothing is computed
    until asked.  Wrong column names are refused at the call."""
    import dask

    rng = np.random.default_rng(3)
    df = _frame()
    df["c"] = rng.choice(["a", "b", "c"], len(df)).astype(object)
    df.loc[::11, "c"] = None
    fitted = cls(random_state=0).fit(df[columns])
    calls = []
    lazy = dd.from_pandas(df[columns], npartitions=4).map_partitions(
        lambda part: calls.append(len(part)) or part, meta=df[columns].iloc[:0])
    with dask.config.set(scheduler="synchronous"):
        out = fitted.transform(lazy)
        assert isinstance(out, da.Array)
        assert out.shape[1] == len(fitted.get_feature_names_out())
        assert sum(calls) == 0                          # lazy
        expected = fitted.transform(df[columns])
        expected = expected.toarray() if hasattr(expected, "toarray") else expected
        np.testing.assert_array_equal(out.compute(), expected)
    with pytest.raises(ValueError, match="feature names should match"):
        fitted.transform(dd.from_pandas(df[columns].rename(columns={columns[0]: "w"}),
                                        npartitions=2))


def test_standard_scaler_releases_its_auto_bounds_from_the_partitions(monkeypatch):
    """DPStandardScaler(feature_bounds="auto") on a Dask array: the bounds' count trees
    are summed from the partitions, so bounds, moments and event are the in-memory fit's,
    bit for bit; transform and inverse_transform stay lazy; a NaN is refused before the
    bounds are released."""
    import skdp._mechanisms._quantiles as quantiles_mod
    from skdp.preprocessing import DPStandardScaler

    rng = np.random.default_rng(2)
    X = rng.normal(size=(8000, 3)) * [1.0, 10.0, 100.0] + [0.0, 5.0, -50.0]
    Xd = da.from_array(X, chunks=(1500, 3))
    mem = DPStandardScaler(feature_bounds="auto", random_state=0).fit(X)
    lazy = DPStandardScaler(feature_bounds="auto", random_state=0).fit(Xd)
    for name in ("feature_bounds_", "mean_", "scale_"):
        np.testing.assert_array_equal(getattr(lazy, name), getattr(mem, name))
    assert repr(lazy.dp_event_) == repr(mem.dp_event_) and lazy.epsilon_ == mem.epsilon_
    Z = lazy.transform(Xd)
    back = lazy.inverse_transform(Z)
    assert isinstance(Z, da.Array) and isinstance(back, da.Array)
    np.testing.assert_allclose(Z.compute(), mem.transform(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(back.compute(), mem.inverse_transform(mem.transform(X)),
                               rtol=1e-12, atol=1e-9)

    def no_release(*args, **kwargs):
        raise AssertionError("released before the check")

    monkeypatch.setattr(quantiles_mod, "release_tree_histogram", no_release)
    bad = X.copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        DPStandardScaler(feature_bounds="auto", random_state=0).fit(
            da.from_array(bad, chunks=(1500, 3)))


def test_a_string_in_a_dask_x_is_named_without_its_value():
    """Review finding: on Dask an object column's entry that is not a number raised
    numpy's 'could not convert string to float: <value>' (a private value), and a
    regressor blamed y for it.  Now a message about X that shows no value."""
    from skdp import DPHuberRegressor, DPLogisticRegression

    rng = np.random.default_rng(0)
    a = pd.Series(rng.uniform(-1, 1, 200), dtype=object)
    a[17] = "secret-9f1"
    ddf = dd.from_pandas(pd.DataFrame({"a": a, "b": rng.uniform(-1, 1, 200)}),
                         npartitions=2)
    yb = dd.from_pandas(pd.Series((rng.uniform(size=200) > 0.5).astype(int)), npartitions=2)
    yr = dd.from_pandas(pd.Series(rng.uniform(-1, 1, 200)), npartitions=2)
    for est, y in ((DPLogisticRegression(data_norm=2.0, classes=[0, 1]), yb),
                   (DPHuberRegressor(data_norm=2.0, y_bound=1.0), yr),
                   (DPRobustScaler(), None)):
        with pytest.raises(ValueError, match="X holds an entry") as e:
            est.fit(ddf, y)
        assert "secret" not in str(e.value)
