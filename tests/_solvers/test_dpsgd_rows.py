"""dpsgd clips rows as it samples them: the user's dense array (any float dtype, either
memory order) or a CSR matrix, with the clipping factors computed once; no clipped copy.
These tests pin that the three row sources give the copy's iterates bit for bit."""

import numpy as np
import pytest
import scipy.sparse as sp

from skdp._losses import HUBER, LOGISTIC, MULTINOMIAL
from skdp._mechanisms import clip_and_augment
from skdp._mechanisms._clipped_rows import ClippedRows
from skdp._mechanisms._clipping import row_norms
from skdp._solvers._dpsgd import design_rows
from skdp._solvers._dpsgd_kernel import dpsgd_loop


def _run(X, y, loss_id, K, fit_intercept, rows=None, n_parts=1):
    """30 steps of dpsgd_loop from a fixed seed, on the clipped copy (``rows=None``) or on
    the row source of a ClippedRows design, each batch summed in ``n_parts`` parts;
    ``(W, total)``."""
    p = X.shape[1] + int(fit_intercept)
    W = np.zeros((p, K))
    yc = np.ascontiguousarray(y, dtype=np.float64)
    if rows is None:
        Xc = clip_and_augment(X, 1.5, fit_intercept, 1.0)
        xnorm = np.empty(X.shape[0])
        row_norms(Xc, xnorm)
        args, trailing = (Xc, yc, loss_id, 1.0, 0.7, xnorm, W), ()
    else:
        design = ClippedRows(X, 1.5, fit_intercept, 1.0)
        Xk, trailing = design_rows(design)
        args = (Xk, yc, loss_id, 1.0, 0.7, design.clipped_row_norms(), W)
    rng = np.random.default_rng(5)
    parts = None if n_parts == 1 else np.empty((n_parts, p, K))
    total, _, _ = dpsgd_loop(*args, 30, 0.05, 40.0, 1.3, 1e-3, 2.0, True, 1.0, 5.0, rng, 1,
                             np.zeros((0, 0), dtype=np.int64), 0.0, np.zeros((0, 0)), 0,
                             *trailing, parts=parts)
    return W, total


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("loss_id, K", [(LOGISTIC, 1), (HUBER, 1), (MULTINOMIAL, 3)])
@pytest.mark.parametrize("kind", ["float64", "float32-F", "csr"])
@pytest.mark.parametrize("d", [9, 11])       # with the intercept: p = 10 and p = 12 (4 | p)
@pytest.mark.parametrize("n_parts", [1, 8])
def test_rows_clipped_on_the_fly_give_the_copy_bits(kind, loss_id, K, fit_intercept, d,
                                                    n_parts):
    rng = np.random.default_rng(1)
    n = 700
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0, size=(n, 1))   # half the rows clipped
    X[rng.random((n, d)) < 0.6] = 0.0
    if kind == "float32-F":
        X = np.asfortranarray(X.astype(np.float32))
    y = (rng.integers(0, 3, n) if loss_id == MULTINOMIAL
         else np.where(rng.random(n) < 0.5, -1.0, 1.0) if loss_id == LOGISTIC
         else 2.0 * rng.normal(size=n))
    W_copy, total_copy = _run(X, y, loss_id, K, fit_intercept, n_parts=n_parts)
    source = sp.csr_matrix(X) if kind == "csr" else X
    W_rows, total_rows = _run(source, y, loss_id, K, fit_intercept, rows=True,
                              n_parts=n_parts)
    assert total_rows == total_copy
    assert np.array_equal(W_rows, W_copy) and np.any(W_copy != 0.0)


def test_clipped_row_norms_are_the_copy_norms():
    """Bitwise the norms of the clipped copy's rows, dense and CSR, including rows that
    need the rescaled second pass (tiny and huge entries)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 7))
    X[:5] *= 1e-160
    X[5:10] *= 1e200
    X[rng.random(X.shape) < 0.5] = 0.0
    for fit_intercept in (True, False):
        Xc = clip_and_augment(X, 1.5, fit_intercept, 1.0)
        expected = np.empty(300)
        row_norms(Xc, expected)
        for source in (X, sp.csr_matrix(X)):
            got = ClippedRows(source, 1.5, fit_intercept, 1.0).clipped_row_norms()
            assert np.array_equal(got, expected)
