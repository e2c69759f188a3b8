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


def test_encoder_matches_in_memory_fit():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"c": rng.choice(["a", "b", "c"], 5000).astype(object)})
    df.loc[::9, "c"] = None
    mem = DPOneHotEncoder(random_state=0).fit(df)
    lazy = DPOneHotEncoder(random_state=0).fit(dd.from_pandas(df, npartitions=3))
    assert lazy.categories_ == mem.categories_ and lazy.dp_event_ == mem.dp_event_
