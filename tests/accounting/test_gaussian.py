"""Analytic Gaussian mechanism: fixtures of the spec, dp-accounting, and exactness."""

import math

import dp_accounting
import pytest

from skdp.accounting import (
    calibrate_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu_for,
)

# spec output_perturbation_gd.md §2.2 (Delta = 1, delta = 1e-3)
FIXTURES = [(0.1, 17.404), (0.5, 4.610), (1.0, 2.575), (2.0, 1.445)]


@pytest.mark.parametrize("eps,sigma", FIXTURES)
def test_spec_fixtures(eps, sigma):
    assert calibrate_gaussian_sigma(eps, 1e-3, 1.0) == pytest.approx(sigma, abs=5e-4)


@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 3.0, 10.0, 30.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_matches_dp_accounting_and_is_exact(eps, delta):
    sigma = calibrate_gaussian_sigma(eps, delta, 1.0)
    assert sigma == pytest.approx(dp_accounting.get_sigma_gaussian(eps, delta), rel=1e-6)
    # exact delta at the calibrated sigma equals the target, on the safe side
    achieved = gaussian_delta(eps, 1.0 / sigma)
    assert achieved <= delta
    assert achieved == pytest.approx(delta, rel=1e-8)


def test_sensitivity_scales_sigma_linearly():
    assert calibrate_gaussian_sigma(1.0, 1e-5, 3.0) == pytest.approx(
        3.0 * calibrate_gaussian_sigma(1.0, 1e-5, 1.0), rel=1e-12
    )


def test_paper_and_classic_sigmas_vs_analytic():
    """The paper's sigma is valid on its grid; the classic one fails at eps = 10."""
    for eps in (0.1, 0.5, 1.0, 2.0):
        paper = math.sqrt(2 * math.log(2 / 1e-3)) / eps
        assert gaussian_delta(eps, 1 / paper) <= 1e-3
    classic = math.sqrt(2 * math.log(1.25 / 1e-3)) / 10.0
    assert gaussian_delta(10.0, 1 / classic) > 1e-3
    assert gaussian_delta(10.0, 1 / classic) == pytest.approx(3.4e-3, rel=0.1)


def test_epsilon_inverse():
    for mu in (0.1, 0.5, 1.0, 2.0, 5.0):
        for delta in (1e-3, 1e-7):
            eps = gaussian_epsilon(delta, mu)
            assert gaussian_delta(eps, mu) <= delta
            assert gaussian_delta(eps * (1 - 1e-6), mu) > delta or eps == 0.0
    assert gaussian_epsilon(0.0, 1.0) == math.inf
    assert gaussian_epsilon(0.5, 0.01) == 0.0


def test_invalid_targets_are_refused():
    with pytest.raises(ValueError):
        gaussian_mu_for(0.0, 1e-5)
    with pytest.raises(ValueError):
        gaussian_mu_for(1.0, 0.0)
    with pytest.raises(ValueError):
        calibrate_gaussian_sigma(1.0, 1e-5, 0.0)
