"""The specialised objective kernels agree bit for bit with the generic one."""

import numpy as np


def test_binary_value_grad_is_bitwise_the_generic_kernel():
    """The specialised logistic/Huber pass returns the generic kernel's bits, on one thread
    and on several (chunk groups on Python threads), for n below and above N_CHUNKS and
    BLOCK, W = 0 included."""
    import numba

    from skdp._losses._kernels import (
        HUBER, LOGISTIC, binary_value_grad, objective_value_grad)

    rng = np.random.default_rng(0)
    previous = numba.get_num_threads()
    try:
        for trial in range(40):
            n = int(rng.choice([1, 2, 15, 16, 17, 300, 9000]))
            d = int(rng.integers(1, 20))
            X = np.ascontiguousarray(rng.standard_normal((n, d)) / np.sqrt(d))
            loss = (LOGISTIC, HUBER)[trial % 2]
            y = (np.where(rng.random(n) < 0.5, -1.0, 1.0) if loss == LOGISTIC
                 else 3.0 * rng.standard_normal(n))
            W = rng.standard_normal((d, 1)) * (0.0 if trial % 7 == 0 else 1.0)
            alpha = (0.0, 1e-3, 0.3)[trial % 3]
            for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
                numba.set_num_threads(threads)
                g1, g2 = np.empty_like(W), np.empty_like(W)
                v1 = objective_value_grad(X, y, W, loss, 1.0, alpha, g1)
                v2 = binary_value_grad(X, y, W, loss, 1.0, alpha, g2)
                assert v1 == v2
                assert np.array_equal(g1, g2) and np.array_equal(np.signbit(g1),
                                                                 np.signbit(g2))
    finally:
        numba.set_num_threads(previous)


def test_huber_hessian_weights_match_the_kernel():
    """Objective.hessian computes Huber's l'' in numpy: the kernel's values exactly (the
    Gram matrix is summed by BLAS syrk in blocks: equal up to rounding)."""
    from skdp._losses import HuberLoss
    from skdp._losses._kernels import margin_curvatures
    from skdp._losses._vectorised import curvature_weights
    from skdp._solvers._objective import Objective

    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 4)) / 2.0
    y = 2.0 * rng.standard_normal(500)
    y[:3] = np.nan                                   # NaN residuals: weight 0 in both
    W = rng.standard_normal((4, 1))
    loss = HuberLoss(1.0)
    H = Objective(X, y, loss, 0.1, 1, 1.5).hessian(W)
    curv = np.empty(500)
    margin_curvatures(np.ascontiguousarray(X @ W[:, 0]), y, loss.loss_id, loss.param, curv)
    assert np.array_equal(curvature_weights(X @ W[:, 0], y, loss.loss_id, loss.param), curv)
    ref = (X.T * curv) @ X / 500
    ref[np.diag_indices_from(ref)] += 0.1
    np.testing.assert_allclose(H, ref, rtol=1e-13, atol=1e-15)
    assert np.array_equal(H, H.T)
    assert 0 < curv.sum() < 497 and np.all(curv[:3] == 0.0)


def test_weighted_gram_blocks_match_the_product():
    """The blocked syrk Gram equals X^T diag(w) X across block boundaries (n > block)."""
    from skdp._solvers import _objective

    rng = np.random.default_rng(2)
    n = 2 * _objective.HESSIAN_BLOCK_ROWS + 17
    X = rng.standard_normal((n, 7))
    w = rng.random(n)
    w[::5] = 0.0
    G = _objective.weighted_gram(X, w)
    np.testing.assert_allclose(G, (X.T * w) @ X, rtol=1e-12)
    assert np.array_equal(G, G.T)
