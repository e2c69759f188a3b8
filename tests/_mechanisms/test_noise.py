"""Noise samplers: their laws, checked statistically (fixed seeds, stated error rates)."""

import numpy as np
import pytest
from scipy import stats

from skdp._mechanisms import gaussian_noise, norm_laplace_noise

N_DRAWS = 20_000


@pytest.mark.parametrize("d", [1, 2, 10, 50])
def test_norm_laplace_radius_is_gamma_and_direction_uniform(d):
    """KS test of ||z|| against Gamma(d, scale) at level 1e-3 (fixed seed)."""
    rng = np.random.default_rng(d)
    scale = 0.7
    Z = np.array([norm_laplace_noise(rng, (d,), scale) for _ in range(N_DRAWS)])
    radius = np.linalg.norm(Z, axis=1)
    assert stats.kstest(radius, stats.gamma(a=d, scale=scale).cdf).pvalue > 1e-3
    # mean zero and covariance (d + 1) scale^2 I / ... : E[z z^T] = E r^2 / d I = (d+1) scale^2 I
    se = np.sqrt((d + 1) * scale**2 / N_DRAWS)
    assert np.all(np.abs(Z.mean(axis=0)) < 5 * se)
    cov = Z.T @ Z / N_DRAWS
    np.testing.assert_allclose(np.diag(cov), (d + 1) * scale**2, rtol=0.1)
    # direction independent of the radius: correlation of |u_1| with r is ~0
    if d > 1:
        u1 = np.abs(Z[:, 0]) / radius
        assert abs(np.corrcoef(u1, radius)[0, 1]) < 5 / np.sqrt(N_DRAWS)


def test_norm_laplace_density_ratio_is_bounded_by_epsilon():
    """p(z - a)/p(z - b) <= exp(eps) for centres Delta apart (analytic density)."""
    rng = np.random.default_rng(0)
    eps, Delta, d = 0.8, 1.3, 5
    scale = Delta / eps
    a = np.zeros(d)
    b = rng.normal(size=d)
    b *= Delta / np.linalg.norm(b)
    Z = np.array([norm_laplace_noise(rng, (d,), scale) for _ in range(2000)])
    log_ratio = (np.linalg.norm(Z - b, axis=1) - np.linalg.norm(Z - a, axis=1)) / scale
    assert np.max(np.abs(log_ratio)) <= eps + 1e-12


def test_gaussian_noise_is_chi_square():
    rng = np.random.default_rng(5)
    d, sigma = 7, 2.5
    Z = np.array([gaussian_noise(rng, (d,), sigma) for _ in range(N_DRAWS)])
    q = np.sum(Z**2, axis=1) / sigma**2
    assert stats.kstest(q, stats.chi2(d).cdf).pvalue > 1e-3


def test_same_seed_same_noise():
    a = norm_laplace_noise(np.random.default_rng(3), (4, 2), 1.0)
    b = norm_laplace_noise(np.random.default_rng(3), (4, 2), 1.0)
    assert a.shape == (4, 2) and np.array_equal(a, b)
