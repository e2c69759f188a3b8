"""DPStandardScaler on Dask collections, on a real engine (LocalCluster, process workers).

The release must be the in-memory one: same event, same noise for the same seed, statistics
equal up to the rounding of a partitioned sum; the rows never reach the client (only the
per-partition sums do) -- checked by counting what the scheduler returns.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from skdp import DPLogisticRegression  # noqa: E402
from skdp.preprocessing import DPStandardScaler  # noqa: E402

from .._dask_received import received_sizes  # noqa: E402

BOUNDS = [[-3.0, -3.0, 0.0], [3.0, 3.0, 10.0]]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _data(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(0.5, 1.0, n), rng.normal(-1.0, 2.0, n), rng.uniform(0, 10, n)]
    X[:50, 1] = 1e6   # rows beyond the public bound: clipped on the workers
    return X


@pytest.mark.parametrize("secure_noise", [True, False])
def test_dask_fit_is_the_in_memory_release(client, secure_noise):
    X = _data()
    kw = dict(epsilon=1.0, feature_bounds=BOUNDS, random_state=3, secure_noise=secure_noise)
    mem = DPStandardScaler(**kw).fit(X)
    dsk = DPStandardScaler(**kw).fit(da.from_array(X, chunks=(3_000, 3)))
    assert dsk.dp_event_ == mem.dp_event_ and dsk.epsilon_ == mem.epsilon_
    assert dsk.n_samples_seen_ == mem.n_samples_seen_ == X.shape[0]
    np.testing.assert_allclose(dsk.mean_, mem.mean_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(dsk.var_, mem.var_, rtol=1e-9, atol=1e-12)
    out = dsk.transform(da.from_array(X, chunks=(3_000, 3)))
    assert isinstance(out, da.Array)
    np.testing.assert_allclose(out.compute(), mem.transform(X), rtol=1e-9, atol=1e-9)


def test_dataframe_and_unknown_chunks(client):
    import pandas as pd

    X = _data(5_000, seed=1)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "c"]), npartitions=4)
    frame = frame[frame["a"] > -np.inf]      # a filter: partition lengths become unknown
    kw = dict(epsilon=2.0, feature_bounds=BOUNDS, random_state=0)
    fitted = DPStandardScaler(**kw).fit(frame)
    mem = DPStandardScaler(**kw).fit(pd.DataFrame(X, columns=["a", "b", "c"]))
    assert list(fitted.feature_names_in_) == ["a", "b", "c"]
    assert fitted.n_samples_seen_ == 5_000 and fitted.dp_event_ == mem.dp_event_
    np.testing.assert_allclose(fitted.mean_, mem.mean_, atol=1e-9)


def test_rows_stay_on_the_workers(client):
    """What the client receives during the fit: d-vectors and a boolean, never rows."""
    X = da.random.RandomState(0).normal(size=(400_000, 3), chunks=(50_000, 3))
    with received_sizes() as sizes:
        DPStandardScaler(epsilon=1.0, feature_bounds=[[-5.0] * 3, [5.0] * 3],
                         random_state=0).fit(X)
    assert sizes and max(sizes) <= 3      # the data has 1.2e6 entries


def test_bad_dask_input_and_estimators_refuse(client):
    X = _data(2_000)
    bad = X.copy()
    bad[7, 2] = np.nan
    scaler = DPStandardScaler(epsilon=1.0, feature_bounds=BOUNDS)
    with pytest.raises(ValueError, match="NaN"):
        scaler.fit(da.from_array(bad, chunks=(500, 3)))
    assert not hasattr(scaler, "mean_")          # no half-fitted model
    with pytest.raises(ValueError, match="2D"):
        scaler.fit(da.from_array(X[:, 0], chunks=500))
    with pytest.raises(ValueError, match="cannot fit a Dask collection"):
        DPLogisticRegression(data_norm=1.0, classes=[0, 1], solver="resque").fit(
            da.from_array(X, chunks=(500, 3)), (X[:, 0] > 0).astype(int))
