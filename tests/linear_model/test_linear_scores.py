"""predict and decision_function compute ``X @ coef + intercept`` on one BLAS thread
(``linear_scores``): a threaded product leaves an OpenBLAS worker spinning into the next
fit's parallel kernels."""

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_info

import skdp.linear_model._base as base
from skdp import DPHuberRegressor, DPLogisticRegression


@pytest.fixture
def blas_threads_seen(monkeypatch):
    seen = []
    product = base.safe_sparse_dot

    def recording(*args, **kwargs):
        seen.append([p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"])
        return product(*args, **kwargs)

    monkeypatch.setattr(base, "safe_sparse_dot", recording)
    return seen


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5)) * 0.3
    return X, (X[:, 0] > 0).astype(int), X @ rng.normal(size=5), rng.integers(0, 3, 400)


@pytest.mark.parametrize("sparse", [False, True])
def test_scores_on_one_blas_thread(blas_threads_seen, sparse):
    X, y_bin, y_reg, y_multi = _data()
    models = [DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1]).fit(X, y_bin),
              DPLogisticRegression(epsilon=1.0, data_norm=1.0,
                                   classes=[0, 1, 2]).fit(X, y_multi),
              DPHuberRegressor(epsilon=1.0, data_norm=1.0, y_bound=3.0).fit(X, y_reg)]
    Xs = sp.csr_matrix(X) if sparse else X
    for m in models:
        blas_threads_seen.clear()
        out = m.decision_function(Xs) if hasattr(m, "decision_function") else m.predict(Xs)
        expected = X @ np.atleast_2d(m.coef_).T + m.intercept_
        np.testing.assert_allclose(out, expected.reshape(out.shape), rtol=1e-12, atol=1e-12)
        assert blas_threads_seen and all(t == 1 for t in blas_threads_seen[0])
        m.predict(Xs)
        assert all(t == 1 for threads in blas_threads_seen for t in threads)
