"""Loss kernels: derivatives against finite differences, constants against sampled sups."""

import numpy as np
import pytest

from skdp._losses import (
    HUBER,
    LOGISTIC,
    HuberLoss,
    LogisticLoss,
    MultinomialLoss,
    margin_curvatures,
    margin_derivatives,
)
from skdp._losses._kernels import objective_value_grad


def _value(loss_id, param, Z, y):
    G = np.empty_like(Z)
    return margin_derivatives(Z, y, loss_id, param, G), G


@pytest.mark.parametrize(
    "loss_id,param,ys",
    [
        (LOGISTIC, 0.0, [-1.0, 1.0]),
        (HUBER, 0.7, [-2.0, 0.0, 0.3, 5.0]),
    ],
)
def test_scalar_derivatives_match_finite_differences(loss_id, param, ys):
    rng = np.random.default_rng(0)
    z = rng.uniform(-6, 6, size=400)
    y = rng.choice(ys, size=400)
    h = 1e-6
    _, G = _value(loss_id, param, z[:, None], y)
    for i in range(z.size):
        vp, _ = _value(loss_id, param, np.array([[z[i] + h]]), y[i : i + 1])
        vm, _ = _value(loss_id, param, np.array([[z[i] - h]]), y[i : i + 1])
        assert abs((vp - vm) / (2 * h) - G[i, 0]) < 1e-6
    curv = np.empty_like(z)
    margin_curvatures(z, y, loss_id, param, curv)
    for i in range(z.size):
        if loss_id == HUBER and abs(abs(z[i] - y[i]) - param) < 1e-4:
            continue  # kink of the Huber second derivative
        _, Gp = _value(loss_id, param, np.array([[z[i] + h]]), y[i : i + 1])
        _, Gm = _value(loss_id, param, np.array([[z[i] - h]]), y[i : i + 1])
        assert abs((Gp[0, 0] - Gm[0, 0]) / (2 * h) - curv[i]) < 1e-5


def test_multinomial_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    K = 4
    Z = rng.normal(scale=3, size=(50, K))
    y = rng.integers(0, K, size=50).astype(float)
    _, G = _value(1, 0.0, Z, y)
    h = 1e-6
    for i in range(50):
        for k in range(K):
            Zp, Zm = Z[i : i + 1].copy(), Z[i : i + 1].copy()
            Zp[0, k] += h
            Zm[0, k] -= h
            num = (_value(1, 0.0, Zp, y[i : i + 1])[0] - _value(1, 0.0, Zm, y[i : i + 1])[0]) / (2 * h)
            assert abs(num - G[i, k]) < 1e-6
    # value is the cross-entropy of the softmax
    ref = -np.log(np.exp(Z[np.arange(50), y.astype(int)]) / np.exp(Z).sum(1)).sum()
    assert _value(1, 0.0, Z, y)[0] == pytest.approx(ref, rel=1e-12)


def test_extreme_margins_are_finite():
    z = np.array([[-1e300], [1e300], [-800.0], [800.0]])
    v, G = _value(LOGISTIC, 0.0, z, np.array([1.0, -1.0, 1.0, 1.0]))
    assert np.isfinite(v) and np.all(np.isfinite(G)) and np.all(np.abs(G) <= 1)
    v, G = _value(1, 0.0, np.array([[1e300, -1e300, 0.0]]), np.array([1.0]))
    assert np.isfinite(G).all()


@pytest.mark.parametrize(
    "loss,K",
    [(LogisticLoss(), 1), (HuberLoss(0.5), 1), (HuberLoss(3.0), 1), (MultinomialLoss(3), 3)],
)
def test_lipschitz_and_smoothness_bounds_hold_on_sampled_rows(loss, K):
    """Sampled sup of ||grad_W l|| and of the gradient's Lipschitz ratio stay below L, beta,
    and the sampled sup comes close to them (so the constants are not loose by much)."""
    rng = np.random.default_rng(2)
    C = 2.5
    L, beta = loss.lipschitz(C), loss.smoothness(C)
    d = 3
    worst_L, worst_beta = 0.0, 0.0
    for _ in range(3000):
        x = rng.normal(size=(1, d))
        x *= C / np.linalg.norm(x)  # rows on the bound: where the sup is attained
        if K == 1:
            y = rng.choice([-1.0, 1.0]) if loss.loss_id == LOGISTIC else rng.normal(scale=20)
        else:
            y = float(rng.integers(0, K))
        W1 = rng.normal(scale=rng.choice([0.1, 1, 10]), size=(d, K))
        W2 = W1 + rng.normal(scale=rng.choice([1e-3, 0.1, 1]), size=(d, K))
        g1, g2 = np.empty((d, K)), np.empty((d, K))
        objective_value_grad(x, np.array([y]), W1, loss.loss_id, loss.param, 0.0, g1)
        objective_value_grad(x, np.array([y]), W2, loss.loss_id, loss.param, 0.0, g2)
        worst_L = max(worst_L, np.linalg.norm(g1))
        worst_beta = max(worst_beta, np.linalg.norm(g1 - g2) / np.linalg.norm(W1 - W2))
    assert worst_L <= L * (1 + 1e-12)
    assert worst_beta <= beta * (1 + 1e-9)
    assert worst_L >= 0.9 * L
    assert worst_beta >= 0.5 * beta


def test_sup_loss_at_zero():
    assert LogisticLoss().sup_loss_at_zero() == pytest.approx(np.log(2))
    assert MultinomialLoss(5).sup_loss_at_zero() == pytest.approx(np.log(5))
    assert HuberLoss(1.0).sup_loss_at_zero(0.5) == pytest.approx(0.125)
    assert HuberLoss(1.0).sup_loss_at_zero(3.0) == pytest.approx(2.5)
    assert HuberLoss(1.0).sup_loss_at_zero(None) == np.inf


def test_objective_kernel_matches_numpy_and_is_thread_count_independent():
    import numba

    rng = np.random.default_rng(3)
    X = rng.normal(size=(10_000, 7))
    y = np.sign(rng.normal(size=10_000))
    W = rng.normal(size=(7, 1))
    g = np.empty_like(W)
    v = objective_value_grad(X, y, W, LOGISTIC, 0.0, 0.3, g)
    z = X @ W[:, 0]
    ref_v = np.mean(np.logaddexp(0, -y * z)) + 0.15 * np.sum(W**2)
    ref_g = X.T @ (-y / (1 + np.exp(y * z))) / 10_000 + 0.3 * W[:, 0]
    assert v == pytest.approx(ref_v, rel=1e-12)
    np.testing.assert_allclose(g[:, 0], ref_g, rtol=1e-10, atol=1e-14)
    n_threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        g1 = np.empty_like(W)
        v1 = objective_value_grad(X, y, W, LOGISTIC, 0.0, 0.3, g1)
    finally:
        numba.set_num_threads(n_threads)
    assert v1 == v and np.array_equal(g1, g)
