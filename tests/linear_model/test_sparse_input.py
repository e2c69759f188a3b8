"""The data path: sparse, float32 and Fortran-ordered input fit without a copy of X and
give the model of the dense float64 fit."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from skdp.linear_model import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor


def _one_hot_design(n, d, nnz, seed=0):
    """A one-hot-like CSR design (``nnz`` ones a row, scaled to norm 1) and labels."""
    rng = np.random.default_rng(seed)
    cols = np.concatenate([np.sort(rng.choice(d, nnz, replace=False)) for _ in range(n)])
    S = sp.csr_matrix((np.full(n * nnz, 1.0 / np.sqrt(nnz)), cols,
                       np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    w = rng.normal(size=d) * 4.0
    margin = S @ w
    return S, (margin + rng.logistic(size=n) > 0).astype(int), margin + rng.normal(size=n)


def _traced_peak(fit):
    """The peak of the Python (numpy) allocations traced while ``fit()`` runs, in bytes."""
    tracemalloc.start()
    try:
        fit()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


ESTIMATORS = [
    lambda: DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                                 random_state=0),
    lambda: DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                                 solver="output_perturbation", random_state=0),
    lambda: DPHuberRegressor(epsilon=1.0, data_norm=1.0, y_bound=4.0, random_state=0),
    lambda: DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1, 2],
                                 random_state=0),
    lambda: DPNonconvexRegressor(epsilon=2.0, data_norm=1.0, y_bound=4.0, random_state=0),
]


@pytest.mark.parametrize("make", ESTIMATORS)
def test_sparse_fit_is_the_dense_fit(make):
    S, y, target = _one_hot_design(3000, 60, 6)
    est = make()
    if isinstance(est, DPLogisticRegression) and len(est.classes) == 3:
        y = np.digitize(target, np.quantile(target, [1 / 3, 2 / 3]))
    elif not isinstance(est, DPLogisticRegression):
        y = target
    dense = make().fit(S.toarray(), y)
    sparse = est.fit(S, y)
    assert sparse.solver_ == dense.solver_ and sparse.dp_event_ == dense.dp_event_
    # the certified minimisers differ by rounding only, far below the noise
    assert np.abs(sparse.coef_ - dense.coef_).max() <= 1e-6 * dense.noise_scale_
    np.testing.assert_allclose(sparse.predict(S), dense.predict(S.toarray()))
    if hasattr(sparse, "decision_function"):
        np.testing.assert_allclose(sparse.decision_function(S.tocsc()),
                                   dense.decision_function(S.toarray()), atol=1e-12)


@pytest.mark.parametrize("convert", [np.asfortranarray, lambda X: X.astype(np.float32)])
def test_float32_and_fortran_input_give_the_float64_fit(convert):
    rng = np.random.default_rng(1)
    X = (rng.normal(size=(2000, 8)) * 0.4).astype(np.float32).astype(np.float64)
    y = (X @ rng.normal(size=8) + rng.logistic(size=2000) > 0).astype(int)
    ref = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                               random_state=2).fit(X, y)
    other = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                                 random_state=2).fit(convert(X), y)
    assert np.array_equal(other.coef_, ref.coef_)
    assert np.array_equal(other.intercept_, ref.intercept_)


@pytest.mark.parametrize("make", ESTIMATORS[:3])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_default_fits_do_not_copy_x(make, sparse):
    """Peak memory traced during a fit stays under a quarter of the data it is given (the
    clipped copy alone was 1.05 X)."""
    rng = np.random.default_rng(3)
    n, d = 200_000, 20
    if sparse:
        X, y, target = _one_hot_design(n, 2000, 20, seed=3)
        size = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    else:
        X = rng.normal(size=(n, d)) * 0.25
        target = X @ rng.normal(size=d) + rng.normal(size=n)
        y = (target > 0).astype(int)
        size = X.nbytes
    est = make()
    labels = y if isinstance(est, DPLogisticRegression) else target
    make().fit(X, labels)          # imports and compiled kernels loaded (traced, once)
    peak = _traced_peak(lambda: est.fit(X, labels))
    assert peak <= 0.25 * size, f"peak {peak / size:.2f} x the data"


@pytest.mark.parametrize("dtype, bound", [(np.float64, 0.5), (np.float32, 1.0)])
def test_small_dense_fits_hold_blocks_of_a_sixteenth(dtype, bound):
    """On a small design the blockwise passes (norms, Hessian, conversions) hold blocks of
    at most a sixteenth of the rows (``block_rows``), not 4096 rows: a 10^4 x 20 fit's
    traced peak was 0.73x the float64 data and 1.54x the float32 data with 4096-row blocks
    (0.37x and 0.76x with them; a float32 design's floor is its float64 blocks)."""
    rng = np.random.default_rng(4)
    X = (rng.normal(size=(10_000, 20)) * 0.1).astype(dtype)
    y = (X @ rng.normal(size=20) * 10 + rng.logistic(size=10_000) > 0).astype(int)
    make = ESTIMATORS[0]
    make().fit(X, y)
    peak = _traced_peak(lambda: make().fit(X, y))
    assert peak <= bound * X.nbytes, f"peak {peak / X.nbytes:.2f} x the data"


def test_block_rows_rule():
    from skdp._mechanisms._clipping import MIN_BLOCK_ROWS, block_rows

    assert block_rows(10**6, 4096) == 4096                 # the cache-sized cap
    assert block_rows(10_000, 4096) == 625                 # a sixteenth of the rows
    assert block_rows(1000, 4096) == MIN_BLOCK_ROWS        # not below the floor
    assert block_rows(100, 2048) == MIN_BLOCK_ROWS and block_rows(1, 64) == 64


def test_a_dense_row_solver_refuses_a_huge_sparse_design_before_allocating():
    S = sp.csr_matrix(([1.0], ([0], [0])), shape=(100_000, 100_000))
    y = np.zeros(100_000, dtype=int)
    y[::2] = 1
    est = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1], solver="phased")
    with pytest.raises(ValueError, match="dense copy of this sparse X.*objective_perturbation"):
        est.fit(S, y)
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("solver", ["auto", "warm_gd", "spider", "zeroth_order", "rrpsgd"])
def test_nonconvex_refusal_suggests_only_its_own_sparse_solver(solver):
    """DPNonconvexRegressor has neither objective nor output perturbation: on a design too
    large to densify, the way out it names is its own sparse solver, dpsgd, only."""
    S = sp.csr_matrix(([1.0], ([0], [0])), shape=(100_000, 100_000))
    est = DPNonconvexRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0, solver=solver)
    with pytest.raises(ValueError, match="dense copy of this sparse X") as info:
        est.fit(S, np.zeros(100_000))
    msg = str(info.value)
    assert msg.endswith("use solver='dpsgd', which fits on the sparse rows without a copy")
    assert "perturbation" not in msg
    assert not hasattr(est, "coef_")


def test_dpsgd_fits_a_huge_sparse_design_on_its_non_zeros():
    """dpsgd reads the CSR rows in its compiled loop (clipped as they are sampled): a
    100,000 x 100,000 design, whose dense copy would take 75 GiB, fits with a peak Python
    allocation of a few vectors of length p."""
    rng = np.random.default_rng(0)
    n = d = 100_000
    S = sp.csr_matrix((rng.uniform(0.5, 2.0, n), (np.arange(n), rng.integers(0, d, n))),
                      shape=(n, d))
    y = (rng.random(n) < 0.5).astype(int)
    est = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1], solver="dpsgd",
                               n_steps=20, batch_size=500, secure_noise=False,
                               random_state=0)
    peak = _traced_peak(lambda: est.fit(S, y))
    assert est.coef_.shape == (1, d) and np.all(np.isfinite(est.coef_))
    assert peak < 64 * (n + d) * 8, f"peak {peak / 2**20:.0f} MiB"


def test_sparse_pipelines_fit_on_the_sparse_rows():
    """A one-hot encoder with sparse output and a TF-IDF vectoriser feed the estimator
    their CSR matrices (rows of norm at most sqrt(2) and 1: public bounds)."""
    rng = np.random.default_rng(4)
    cats = rng.integers(0, 50, size=(4000, 2)).astype(str)
    y = (cats[:, 0].astype(int) % 2).astype(int)
    onehot = make_pipeline(
        OneHotEncoder(categories=[[str(i) for i in range(50)]] * 2, sparse_output=True,
                      handle_unknown="ignore"),
        DPLogisticRegression(epsilon=2.0, data_norm=np.sqrt(2.0), classes=[0, 1],
                             random_state=0))
    assert onehot.fit(cats, y).score(cats, y) > 0.8
    words = np.array(["alpha", "beta", "gamma", "delta", "omega", "sigma"])
    docs = [" ".join(rng.choice(words, 5)) for _ in range(4000)]
    label = np.array([int("alpha" in doc) for doc in docs])
    text = make_pipeline(TfidfVectorizer(), DPLogisticRegression(
        epsilon=2.0, data_norm=1.0, classes=[0, 1], random_state=0))
    assert text.fit(docs, label).score(docs, label) > 0.7
