"""Nonconvex robust losses (Tukey, Welsch, Cauchy): kernels and the constants G, M, rho."""

import math

import numpy as np
import pytest

from skdp._losses import (
    CAUCHY,
    ROBUST_LOSSES,
    TUKEY,
    WELSCH,
    CauchyLoss,
    TukeyLoss,
    WelschLoss,
    margin_curvatures,
    margin_derivatives,
    robust_derivatives,
)
from skdp._losses._kernels import objective_value_grad

SPECS = [TukeyLoss(0.7), TukeyLoss(2.0), WelschLoss(0.5), WelschLoss(1.0), CauchyLoss(1.0),
         CauchyLoss(3.0)]


def _derivs(loss, r):
    out = np.empty((r.size, 4))
    robust_derivatives(np.ascontiguousarray(r, dtype=float), loss.loss_id, loss.param, out)
    return out


def _reference_value(loss, r):
    c, u = loss.loss_scale, r / loss.loss_scale
    if loss.loss_id == TUKEY:
        return np.where(np.abs(u) <= 1, c * c / 6 * (1 - (1 - u * u) ** 3), c * c / 6)
    if loss.loss_id == WELSCH:
        return c * c / 2 * (1 - np.exp(-u * u))
    return c * c / 2 * np.log1p(u * u)


@pytest.mark.parametrize("loss", SPECS, ids=repr)
def test_value_matches_the_formula_and_derivatives_match_finite_differences(loss):
    rng = np.random.default_rng(0)
    c = loss.loss_scale
    r = rng.uniform(-4 * c, 4 * c, size=2000)
    if loss.loss_id == TUKEY:  # skip the kink of l''' at |r| = c
        r = r[np.abs(np.abs(r) - c) > 1e-3 * c]
    D = _derivs(loss, r)
    np.testing.assert_allclose(D[:, 0], _reference_value(loss, r), rtol=1e-12, atol=1e-15)
    h = 1e-6 * c
    Dp, Dm = _derivs(loss, r + h), _derivs(loss, r - h)
    for k in range(3):  # derivative k+1 against the central difference of derivative k
        fd = (Dp[:, k] - Dm[:, k]) / (2 * h)
        scale = max(1.0, np.abs(D[:, k + 1]).max())
        assert np.max(np.abs(fd - D[:, k + 1])) < 1e-6 * scale, k


@pytest.mark.parametrize("loss", SPECS, ids=repr)
def test_derivative_bounds_are_sups_over_a_fine_grid(loss):
    """The stated L1, L2, L3 are never exceeded on a fine grid, and are attained (tight)."""
    c = loss.loss_scale
    r = np.linspace(-20 * c, 20 * c, 2_000_001)
    D = _derivs(loss, r)
    L1, L2, L3 = loss.derivative_bounds()
    for k, bound in ((1, L1), (2, L2), (3, L3)):
        sup = np.abs(D[:, k]).max()
        assert sup <= bound * (1 + 1e-12), (k, sup, bound)
        assert sup >= bound * (1 - 1e-3), (k, sup, bound)  # Tukey: L3 at the endpoint
    # L3 is a Lipschitz constant of l'' (Tukey's l''' jumps at |r| = c; l'' must not):
    slopes = np.abs(np.diff(D[:, 2])) / np.diff(r)
    assert slopes.max() <= L3 * (1 + 1e-6)


def test_closed_form_constants():
    assert TukeyLoss(2.0).derivative_bounds() == pytest.approx((16 * 2 / (25 * 5**0.5), 1, 4))
    assert WelschLoss(1.0).derivative_bounds() == pytest.approx(
        (1 / math.sqrt(2 * math.e), 1, 1.9517830727699512), rel=1e-12)
    assert CauchyLoss(1.0).derivative_bounds()[2] == pytest.approx(1.4571067811865477, rel=1e-12)
    G, M, rho = WelschLoss(1.0).constants(3.0)
    assert (G, M, rho) == pytest.approx((3 / math.sqrt(2 * math.e), 9.0, 27 * 1.9517830727699512))
    assert TukeyLoss(3.0).sup_loss_at_zero() == pytest.approx(1.5)
    assert WelschLoss(2.0).sup_loss_at_zero() == pytest.approx(2.0)
    assert CauchyLoss(1.0).sup_loss_at_zero(None) == np.inf
    assert CauchyLoss(1.0).sup_loss_at_zero(2.0) == pytest.approx(0.5 * np.log(5.0))
    assert set(ROBUST_LOSSES) == {"tukey", "welsch", "cauchy"}


@pytest.mark.parametrize("loss", SPECS, ids=repr)
def test_G_M_rho_hold_for_rows_on_the_bound(loss):
    """Sampled ||grad f||, gradient and Hessian Lipschitz ratios of f(w) = l(a.w - y) stay
    below G, M, rho for rows with ||a|| <= R, and come close (rows on the bound, residuals
    near the maximisers)."""
    rng = np.random.default_rng(1)
    R, d = 1.7, 3
    G, M, rho = loss.constants(R)
    c = loss.loss_scale
    worst = np.zeros(3)
    for _ in range(4000):
        a = rng.normal(size=d)
        a *= R / np.linalg.norm(a)
        y = rng.normal(scale=2 * c)
        w1 = rng.normal(scale=c / R, size=d)
        w2 = w1 + rng.normal(scale=rng.choice([1e-4, 1e-2]) * c / R, size=d)
        r1, r2 = a @ w1 - y, a @ w2 - y
        D1, D2 = _derivs(loss, np.array([r1])), _derivs(loss, np.array([r2]))
        g1, g2 = D1[0, 1] * a, D2[0, 1] * a
        H1, H2 = D1[0, 2] * np.outer(a, a), D2[0, 2] * np.outer(a, a)
        dw = np.linalg.norm(w1 - w2)
        worst = np.maximum(worst, [np.linalg.norm(g1), np.linalg.norm(g1 - g2) / dw,
                                   np.linalg.norm(H1 - H2, 2) / dw])
    assert np.all(worst <= np.array([G, M, rho]) * (1 + 1e-6)), worst
    assert worst[0] >= 0.95 * G and worst[1] >= 0.9 * M and worst[2] >= 0.5 * rho


@pytest.mark.parametrize("loss", SPECS[::2], ids=repr)
def test_dispatch_through_the_shared_kernels(loss):
    """margin_derivatives, margin_curvatures and objective_value_grad use the same row."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 4))
    y = rng.normal(scale=2, size=500)
    W = rng.normal(size=(4, 1))
    z = X @ W[:, 0]
    D = _derivs(loss, z - y)
    G = np.empty((500, 1))
    total = margin_derivatives(z[:, None].copy(), y, loss.loss_id, loss.param, G)
    assert total == pytest.approx(D[:, 0].sum(), rel=1e-12)
    np.testing.assert_allclose(G[:, 0], D[:, 1], rtol=1e-14, atol=1e-300)
    curv = np.empty(500)
    margin_curvatures(z, y, loss.loss_id, loss.param, curv)
    np.testing.assert_allclose(curv, D[:, 2], rtol=1e-14, atol=1e-300)
    grad = np.empty_like(W)
    val = objective_value_grad(X, y, W, loss.loss_id, loss.param, 0.1, grad)
    assert val == pytest.approx(D[:, 0].mean() + 0.05 * np.sum(W**2), rel=1e-12)
    np.testing.assert_allclose(grad[:, 0], X.T @ D[:, 1] / 500 + 0.1 * W[:, 0], rtol=1e-10,
                               atol=1e-14)


@pytest.mark.parametrize("loss_id", [TUKEY, WELSCH, CAUCHY])
def test_extreme_residuals_are_finite(loss_id):
    r = np.array([-1e308, -1e200, -1e30, -1e8, 0.0, 1e8, 1e30, 1e200, 1e308])
    out = np.empty((r.size, 4))
    robust_derivatives(r, loss_id, 1.0, out)
    assert np.all(np.isfinite(out))
    assert np.all(np.abs(out[:, 1]) <= 0.5) and np.all(np.abs(out[:, 2]) <= 1.0)
