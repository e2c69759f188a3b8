"""The design clipped on the fly (no copy of X): the copy's bits on dense input, the bound
on every row whatever the format, and sparse sums within the certified allowance."""

import numpy as np
import pytest
import scipy.sparse as sp

from skdp._losses import HuberLoss, LogisticLoss, MultinomialLoss
from skdp._mechanisms import clip_and_augment
from skdp._mechanisms._clipped_rows import ClippedRows, sparse_row_norms
from skdp._mechanisms._clipping import SAFETY, clip_safety, feature_row_norms
from skdp._solvers._objective import Objective


def _adversarial_rows(rng, n, d):
    """Rows of every magnitude, a zero row, an overflowing and a subnormal one."""
    X = rng.normal(size=(n, d)) * rng.choice([1e-3, 0.3, 1.0, 1e3, 1e150], size=(n, 1))
    X[0] = 0.0
    X[1, :] = 1.7976931348623157e308
    X[2, :] = 5e-324
    return X


def _in_layout(X, layout):
    """``X`` in the memory layout of a test case: Fortran order, a strided view, or as it
    is ("C"; "float32" is a dtype, applied by the caller)."""
    if layout == "F":
        return np.asfortranarray(X)
    if layout == "strided":
        return np.repeat(X, 2, axis=1)[:, ::2]
    return X


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("layout", ["C", "F", "float32", "strided"])
def test_dense_rows_are_the_copy_bit_for_bit(fit_intercept, layout):
    rng = np.random.default_rng(0)
    X = _adversarial_rows(rng, 300, 7)
    if layout == "float32":
        X = np.clip(X, -1e30, 1e30).astype(np.float32)   # finite in float32
    reference = clip_and_augment(np.ascontiguousarray(X, dtype=np.float64), 2.0,
                                 fit_intercept, 0.5)
    X = _in_layout(X, layout)
    original = X.copy()
    design = ClippedRows(X, 2.0, fit_intercept, 0.5)
    # not copied -- unless a row is longer than 2^200 times the bound (here the rows of
    # 1e150 and 1.8e308): those are stored clipped, in a copy
    long_rows = np.abs(np.asarray(X, dtype=np.float64)).max() > 1e100
    assert (design.X is X) != long_rows
    assert np.array_equal(X, original)                    # the user's rows unchanged
    assert design.shape == reference.shape
    assert np.array_equal(design.dense(), reference)
    assert np.array_equal(design.rows(17, 123), reference[17:123])


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_sparse_rows_respect_the_bound(fit_intercept):
    rng = np.random.default_rng(1)
    X = _adversarial_rows(rng, 400, 9)
    X[rng.random(X.shape) < 0.6] = 0.0
    X[3] = 0.0
    X[3, 4] = 1e300
    S = sp.csr_matrix(X)
    design = ClippedRows(S, 2.0, fit_intercept, 0.5)
    dense = design.dense()
    assert np.all(np.isfinite(dense))
    norms = np.array([np.sqrt(np.sum((row / 2.0) ** 2)) * 2.0 for row in dense])
    assert np.all(norms <= 2.0)
    # the same rows as the dense clip, to a few ulps (only the norms' summation differs)
    np.testing.assert_allclose(dense, clip_and_augment(X, 2.0, fit_intercept, 0.5),
                               rtol=1e-14, atol=1e-300)
    for fmt in ("csc", "coo"):
        other = ClippedRows(S.asformat(fmt), 2.0, fit_intercept, 0.5)
        assert other.sparse and np.array_equal(other.scale, design.scale)


def test_duplicate_sparse_entries_are_summed_before_the_norm():
    """A CSR row holding the entry (0, 0) twice, 0.6 + 0.6: its norm is 1.2, not
    sqrt(0.72); it is clipped to the bound, and the user's matrix is not modified."""
    S = sp.csr_matrix((np.array([0.6, 0.6, 0.5]), np.array([0, 0, 1]), np.array([0, 2, 3])),
                      shape=(2, 2))
    assert not S.has_canonical_format
    design = ClippedRows(S, 1.0, False, 0.0)
    dense = design.dense()
    assert np.linalg.norm(dense[0]) <= 1.0
    assert dense[0, 0] == pytest.approx(1.0, rel=1e-11)
    assert S.nnz == 3 and not S.has_canonical_format


def test_sparse_norms_are_overflow_safe():
    S = sp.csr_matrix(np.array([[1e200, 1e200, 0.0], [0.0, 0.0, 0.0], [3.0, 0.0, 4.0],
                                [1e-170, 0.0, 1e-170]]))
    norms = sparse_row_norms(S)
    # the last row's squares underflow to 0: reported as a zero row, as by the dense
    # kernel (its norm, 1.4e-170, is far inside any bound: nothing to clip)
    np.testing.assert_allclose(norms, [np.sqrt(2) * 1e200, 0.0, 5.0, 0.0], rtol=1e-15)
    np.testing.assert_array_equal(feature_row_norms(S), norms)
    np.testing.assert_array_equal(feature_row_norms(S.toarray()), norms)


def test_clip_safety_grows_with_the_width():
    """``S = 1 - 1e-12`` up to 8990 columns (the copy's bits unchanged); wider rows get the
    margin their norm's rounding needs, so a row of 10^6 equal entries stays inside."""
    assert clip_safety(10) == clip_safety(8990) == SAFETY
    assert clip_safety(10**6) < SAFETY
    d = 10**6
    x = np.full((1, d), 1.0 + 2.0 ** -40)
    out = clip_and_augment(x, 1.0, False, 0.0)
    assert float(np.sqrt(np.sum(out.astype(np.longdouble) ** 2))) <= 1.0


@pytest.mark.parametrize("loss, K", [(LogisticLoss(), 1), (HuberLoss(0.5), 1),
                                     (MultinomialLoss(), 3)])
def test_kernel_pass_on_the_design_is_the_pass_on_the_copy(loss, K):
    """The compiled pass builds each clipped row in a buffer: the same value and gradient
    bits as the pass over the copy, for the specialised and the generic kernel (forced
    here; they run for Huber above NUMPY_MAX_WORK, multinomial, and on Dask workers)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(5000, 6)) * rng.choice([0.1, 1.0, 10.0], size=(5000, 1))
    y = (rng.integers(0, K, 5000).astype(float) if K > 1
         else (np.sign(rng.normal(size=5000)) if isinstance(loss, LogisticLoss)
               else rng.normal(size=5000)))
    W = rng.normal(size=(7, K))
    copy = Objective(clip_and_augment(X, 2.0, True, 1.0), y, loss, 0.1, K, 2.0)
    copy.vectorised = False
    for Xin in (X, np.asfortranarray(X)):
        lazy = Objective(ClippedRows(Xin, 2.0, True, 1.0), y, loss, 0.1, K, 2.0)
        lazy.vectorised = False
        v1, g1 = copy.value_grad(W)
        v2, g2 = lazy.value_grad(W)
        assert v1 == v2 and np.array_equal(g1, g2)


@pytest.mark.parametrize("loss, K", [(LogisticLoss(), 1), (HuberLoss(0.5), 1),
                                     (MultinomialLoss(), 3)])
def test_sparse_pass_is_within_its_rounding_allowance(loss, K):
    """The CSR pass adds in another order than the dense one: the two gradients differ by
    less than the sum of their certified allowances (which bound each one's distance to
    the exact gradient), and the Hessians agree."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 40)) * (rng.random((3000, 40)) < 0.1) * 3.0
    y = (rng.integers(0, K, 3000).astype(float) if K > 1
         else (np.sign(rng.normal(size=3000)) if isinstance(loss, LogisticLoss)
               else rng.normal(size=3000)))
    W = rng.normal(size=(41, K))
    dense = Objective(ClippedRows(X, 1.5, True, 1.0), y, loss, 0.01, K, 1.5)
    sparse = Objective(ClippedRows(sp.csr_matrix(X), 1.5, True, 1.0), y, loss, 0.01, K, 1.5)
    assert sparse.sparse and sparse.vectorised
    v1, g1 = dense.value_grad(W)
    v2, g2 = sparse.value_grad(W)
    assert np.linalg.norm(g1 - g2) <= dense.rounding_allowance(W) + sparse.rounding_allowance(W)
    assert v1 == pytest.approx(v2, rel=1e-12)
    if K == 1:
        np.testing.assert_allclose(dense.hessian(W), sparse.hessian(W), atol=1e-14)
    # the warm start's subsample keeps the format and the factors
    sub = sparse.subsample(7)
    assert sub.sparse and sub.n == len(range(0, 3000, 7))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("layout", ["C", "F", "float32", "strided"])
def test_weighted_gram_is_the_copys(fit_intercept, layout):
    """Newton's Hessian on the design clipped on the fly (the clip factor folded into the
    weights' roots, syrk on each block's transpose) is ``X'^T diag(w) X'`` of the clipped
    copy, across block boundaries, symmetric."""
    from skdp._mechanisms._clipped_rows import GRAM_BLOCK_ROWS

    rng = np.random.default_rng(3)
    n = 2 * GRAM_BLOCK_ROWS + 11
    X = rng.normal(size=(n, 6)) * rng.choice([0.1, 1.0, 30.0], size=(n, 1))
    if layout == "float32":
        X = X.astype(np.float32)
    reference = clip_and_augment(np.ascontiguousarray(X, dtype=np.float64), 2.0,
                                 fit_intercept, 0.5)
    X = _in_layout(X, layout)
    w = rng.random(n)
    w[::7] = 0.0
    H = ClippedRows(X, 2.0, fit_intercept, 0.5).weighted_gram(w.copy())
    np.testing.assert_allclose(H, (reference.T * w) @ reference, rtol=1e-12, atol=1e-12)
    assert np.array_equal(H, H.T)


def test_gram_of_blocks_takes_any_block_layout():
    """C-ordered blocks go to syrk transposed, others as they are: the same Gram."""
    from skdp._mechanisms._clipped_rows import gram_of_blocks

    rng = np.random.default_rng(4)
    blocks = [rng.normal(size=(50, 5)), np.asfortranarray(rng.normal(size=(30, 5))),
              rng.normal(size=(40, 10))[:, ::2]]
    G = gram_of_blocks(iter(blocks), 5)
    np.testing.assert_allclose(G, sum(B.T @ B for B in blocks), rtol=1e-13)
    assert np.array_equal(G, G.T)


def _sparse_adversarial(rng, n, d, dtype=np.float64, index_dtype=np.int32):
    """A CSR design with rows of every magnitude (the clip factors differ), an empty row
    and uneven non-zero counts."""
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.15)
    X *= rng.choice([1e-3, 0.3, 1.0, 1e3], size=(n, 1))
    X[5] = 0.0
    S = sp.csr_matrix(X.astype(dtype))
    S.indices = S.indices.astype(index_dtype)
    S.indptr = S.indptr.astype(index_dtype)
    return S


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("dtype, index_dtype", [(np.float64, np.int32),
                                                (np.float32, np.int64)])
def test_sparse_gram_product_is_the_two_products(fit_intercept, dtype, index_dtype):
    """Newton-CG's Hessian-vector product reads a sparse row once: bitwise
    ``rmatvec(curv * matvec(v))``, over several chunks, with zero curvatures and an
    empty row; a dense design takes the two products."""
    rng = np.random.default_rng(8)
    S = _sparse_adversarial(rng, 5000, 60, dtype, index_dtype)
    for X in (S, S.toarray()):
        design = ClippedRows(X, 1.5, fit_intercept, 0.5)
        v = rng.normal(size=design.shape[1])
        curv = rng.random(design.shape[0])
        curv[::9] = 0.0
        expected = design.rmatvec(curv * design.matvec(v))
        assert np.array_equal(design.gram_product(curv, v), expected)


def test_sparse_accumulate_with_one_output_is_the_general_loop():
    """The one-output loop of ``csr_accumulate`` adds the same products in the same order
    as the loop over outputs: the first column of a two-output sum, bit for bit."""
    from skdp._mechanisms._sparse_kernels import csr_accumulate

    rng = np.random.default_rng(9)
    S = _sparse_adversarial(rng, 3000, 50)
    g = rng.normal(size=(3000, 1)) * rng.choice([1e-8, 1.0, 1e8], size=(3000, 1))
    one = np.zeros((50, 1))
    two = np.zeros((50, 2))
    csr_accumulate(S.data, S.indices, S.indptr, 100, 2900, g[100:2900], one)
    csr_accumulate(S.data, S.indices, S.indptr, 100, 2900,
                   np.repeat(g[100:2900], 2, axis=1), two)
    assert np.array_equal(one[:, 0], two[:, 0])
    assert np.any(one != 0.0)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)])
def test_sparse_curvature_reuses_the_margins_of_the_last_evaluation(loss):
    """At the point evaluated last, a sparse objective's curvatures come from the margins
    that evaluation computed (no pass is counted) and equal those of a fresh pass bit for
    bit; at any other point they are computed afresh."""
    rng = np.random.default_rng(10)
    S = _sparse_adversarial(rng, 4000, 30)
    y = np.sign(rng.normal(size=4000)) if isinstance(loss, LogisticLoss) \
        else rng.normal(size=4000)
    objective = Objective(ClippedRows(S, 1.5, True, 0.5), y, loss, 0.01, 1, 1.5)
    fresh = Objective(ClippedRows(S, 1.5, True, 0.5), y, loss, 0.01, 1, 1.5)
    W1, W2 = rng.normal(size=(31, 1)), rng.normal(size=(31, 1))
    objective.value_grad(W1)
    passes = objective.n_example_gradients
    assert np.array_equal(objective.curvature(W1), fresh.curvature(W1))
    assert objective.n_example_gradients == passes
    W1[3, 0] += 1e-9        # the caller's array changed after the evaluation
    assert np.array_equal(objective.curvature(W1), fresh.curvature(W1))
    assert np.array_equal(objective.curvature(W2), fresh.curvature(W2))
    assert objective.n_example_gradients == passes + 2 * objective.n


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("dense_sum", [True, False])
def test_sparse_weighted_gram_is_the_copys(fit_intercept, dense_sum, monkeypatch):
    """Newton's Hessian on CSR rows clipped on the fly -- the pairs of each row's non-zeros
    summed into dense chunk parts (csr_weighted_gram), or scipy's sparse product for wide
    designs -- is ``X'^T diag(w) X'`` of the clipped copy, symmetric."""
    from skdp._mechanisms import _clipped_rows

    if not dense_sum:
        monkeypatch.setattr(_clipped_rows, "SPARSE_DENSE_GRAM_MAX", 0)
    rng = np.random.default_rng(5)
    X = _sparse_adversarial(rng, 3000, 9)
    reference = clip_and_augment(X.toarray(), 2.0, fit_intercept, 0.5)
    w = rng.random(X.shape[0])
    w[::7] = 0.0
    H = ClippedRows(X, 2.0, fit_intercept, 0.5).weighted_gram(w.copy())
    np.testing.assert_allclose(H, (reference.T * w) @ reference, rtol=1e-12, atol=1e-12)
    if dense_sum:
        assert np.array_equal(H, H.T)       # c_i (x_t x_u) for both (j, k) and (k, j)


@pytest.mark.parametrize("solver", ["output_perturbation", "objective_perturbation"])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_row_near_the_float_limit_is_the_clipped_row(solver, sparse):
    """Audit finding: the passes without a copy computed a margin as fl(s_i fl(x_i . w)),
    the unclipped row first, so a finite row of norm ~1e308 overflowed: numpy warned on
    that dataset only, and the row's loss was not that of any row within the bound.  Such
    rows are now stored clipped: no warning, and the fit is the fit of the same data with
    that row clipped beforehand, bit for bit."""
    import warnings

    from skdp import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (600, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    X[0] = [1e308, -1e308, 1e308]
    clipped = X.copy()
    clipped[0] = ClippedRows(X, 1.0, False, 1.0).rows(0, 1)[0]
    assert np.linalg.norm(clipped[0]) <= 1.0
    fits = []
    for data in (X, clipped):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            fits.append(DPLogisticRegression(data_norm=1.0, classes=[0, 1], solver=solver,
                                             random_state=0).fit(
                sp.csr_matrix(data) if sparse else data, y))
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert X[0, 0] == 1e308                 # the user's array is not changed
