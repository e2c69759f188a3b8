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
        DPLogisticRegression(solver=solver, data_norm=3.0, batch_size=5, random_state=0).fit(Xs, ys)
        DPHuberRegressor(solver=solver, data_norm=3.0, batch_size=5, random_state=0).fit(Xs, ys)
        DPLogisticRegression(solver=solver, data_norm=3.0, batch_size=5, random_state=0).fit(
            Xs, np.arange(20) % 3)
    yield
