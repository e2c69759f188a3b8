"""Shared fixtures: compile (or load from cache) the numba kernels once per session."""

import numpy as np
import pytest


@pytest.fixture(scope="session", autouse=True)
def warm_kernels():
    """Load every kernel once so no test measures or races numba compilation."""
    from skdp._losses import HUBER, LOGISTIC, MULTINOMIAL
    from skdp._losses._kernels import margin_curvatures, margin_derivatives, objective_value_grad
    from skdp._mechanisms._clipping import clip_rows

    X = np.ones((3, 2))
    y = np.array([1.0, -1.0, 1.0])
    for loss_id, K in ((LOGISTIC, 1), (HUBER, 1), (MULTINOMIAL, 2)):
        W = np.zeros((2, K))
        grad = np.empty_like(W)
        yk = np.array([0.0, 1.0, 0.0]) if K > 1 else y
        objective_value_grad(X, yk, W, loss_id, 1.0, 0.1, grad)
        G = np.empty((3, K))
        margin_derivatives(X @ W, yk, loss_id, 1.0, G)
    margin_curvatures(np.zeros(3), y, LOGISTIC, 0.0, np.empty(3))
    clip_rows(X, 1.0, 1.0, np.empty((3, 3)))
    from skdp import DPHuberRegressor, DPLogisticRegression

    Xs = np.random.default_rng(0).normal(size=(20, 2))
    ys = np.arange(20) % 2
    for solver in ("output_perturbation", "dpsgd"):
        DPLogisticRegression(classes=[0, 1],
                             solver=solver, data_norm=3.0, batch_size=5, random_state=0).fit(Xs, ys)
        DPHuberRegressor(solver=solver, data_norm=3.0, batch_size=5, random_state=0).fit(Xs, ys)
        DPLogisticRegression(classes=[0, 1, 2],
                             solver=solver, data_norm=3.0, batch_size=5, random_state=0).fit(
            Xs, np.arange(20) % 3)
    # nonconvex solvers: spider (its loop and escape kernels) and rrpsgd (the dpsgd kernel
    # on a robust loss)
    from skdp._losses import WelschLoss
    from skdp._solvers._rrpsgd import solve_rrpsgd
    from skdp._solvers._spider import solve_spider

    A = np.random.default_rng(0).normal(size=(200, 2))
    kw = dict(delta=1e-6, alpha=0.0, data_norm=3.0, fit_intercept=False)
    solve_spider(A, A[:, 0].copy(), WelschLoss(), epsilon=1e3, gamma=0.3,
                 rng=np.random.default_rng(0), **kw)
    solve_rrpsgd(A, A[:, 0].copy(), WelschLoss(), epsilon=1.0, batch_size=50, n_steps=2,
                 rng=np.random.default_rng(0), **kw)
    # zeroth-order solver (one cached kernel chain: zo_run, batch/row estimates)
    import warnings

    from skdp._losses._nonsmooth import CappedAbsoluteLoss
    from skdp._solvers._zeroth_order import solve_zeroth_order

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        solve_zeroth_order(A, A[:, 0].copy(), CappedAbsoluteLoss(), epsilon=1.0,
                           rng=np.random.default_rng(0), **kw)
    # phased / resque solvers (phased_phase, resque_loop + oracle_round, smoothed losses)
    for solver in ("phased", "resque"):
        DPHuberRegressor(solver=solver, huber_threshold=0.0, data_norm=3.0, max_coef_norm=3.0,
                         batch_size=5, block_size=2, random_state=0).fit(Xs, ys)
        DPLogisticRegression(classes=[0, 1],
                             solver=solver, data_norm=3.0, batch_size=5, block_size=2,
                             random_state=0).fit(Xs, ys)
    # the threaded oracle round of resque (oracle_round_parallel)
    DPLogisticRegression(classes=[0, 1],
                         solver="resque", data_norm=3.0, batch_size=5, block_size=2, n_jobs=2,
                         random_state=0).fit(Xs, ys)
    yield
