"""Rényi-DP accounting of skdp events (skdp/accounting/_rdp.py).

The translation GaussianDpEvent(z) -> GaussianDpEvent(z/2) is pinned against closed forms
computed here independently (Gaussian RDP curve alpha mu^2/2 with mu = 2/z, the exact
Balle-Wang epsilon, dp-accounting's PLD on the untranslated event), and the uncorrected
reading is shown to under-count -- so a regression of the translation fails these tests.
"""

import math

import dp_accounting
import numpy as np
import pytest
from scipy.special import logsumexp
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod

from skdp.accounting import (
    NEIGHBORING_RELATION,
    compose,
    gaussian_epsilon,
    gaussian_event,
    get_epsilon,
    poisson_gaussian_event,
    pure_dp_event,
    rdp_delta,
    rdp_epsilon,
    repeat_and_select_event,
    to_rdp_event,
)
from skdp.exceptions import UnsupportedDpEventError

ORDERS = np.array(rdp_mod.DEFAULT_RDP_ORDERS, dtype=float)


def _eps_from_curve(curve, delta):
    return rdp_mod.compute_epsilon(ORDERS, curve, delta)[0]


@pytest.mark.parametrize("z", [0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-7])
def test_gaussian_matches_closed_form_rdp_curve(z, delta):
    # skdp GaussianDpEvent(z): replace-one sensitivity 2C, noise zC -> mu = 2/z, whose RDP
    # curve is alpha mu^2 / 2 exactly (Mironov 2017, Prop. 7).
    mu = 2.0 / z
    expected = _eps_from_curve(ORDERS * mu**2 / 2.0, delta)
    assert rdp_epsilon(dp_accounting.GaussianDpEvent(z), delta) == pytest.approx(
        expected, rel=1e-12
    )


@pytest.mark.parametrize("z", [0.5, 1.0, 3.0, 10.0])
def test_gaussian_never_below_exact_and_not_loose(z):
    delta = 1e-6
    exact = gaussian_epsilon(delta, 2.0 / z)  # Balle-Wang, exact for mu-GDP
    via_rdp = rdp_epsilon(dp_accounting.GaussianDpEvent(z), delta)
    assert exact <= via_rdp <= 1.35 * exact + 0.05
    # the known pitfall: the untranslated event under REPLACE_ONE is read with half
    # the sensitivity and under-counts -- this is what the translation prevents
    naive = dp_accounting.rdp.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
    naive.compose(dp_accounting.GaussianDpEvent(z))
    assert naive.get_epsilon(delta) < exact


def test_gaussian_agrees_with_pld_on_plain_gaussian():
    delta = 1e-5
    for z in (1.0, 4.0):
        pld = PLDAccountant(NEIGHBORING_RELATION, value_discretization_interval=1e-4)
        pld.compose(dp_accounting.GaussianDpEvent(z))
        pld_eps = pld.get_epsilon(delta)
        assert pld_eps == pytest.approx(gaussian_epsilon(delta, 2.0 / z), rel=2e-3)
        assert rdp_epsilon(dp_accounting.GaussianDpEvent(z), delta) >= pld_eps * (1 - 2e-3)


def test_calibrated_release_maps_to_its_mu():
    sigma, sens = 3.0, 0.5
    ev = gaussian_event(sigma, sens)  # mu = sens / sigma
    mu = sens / sigma
    assert to_rdp_event(ev).noise_multiplier == pytest.approx(1.0 / mu)
    assert rdp_epsilon(ev, 1e-6) == pytest.approx(
        _eps_from_curve(ORDERS * mu**2 / 2, 1e-6), rel=1e-12
    )


def test_composition_adds_rdp_curves():
    ev = compose(
        dp_accounting.GaussianDpEvent(2.0),
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(4.0), 3),
    )
    mu2 = (2 / 2.0) ** 2 + 3 * (2 / 4.0) ** 2
    assert rdp_epsilon(ev, 1e-6) == pytest.approx(
        _eps_from_curve(ORDERS * mu2 / 2, 1e-6), rel=1e-12
    )


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_pure_event_is_the_binary_rr_pair(eps):
    # Rényi divergence of P = (e^eps, 1)/(1 + e^eps) vs Q = (1, e^eps)/(1 + e^eps).
    p = math.exp(eps) / (1 + math.exp(eps))
    q = 1 - p
    lp, lq = math.log(p), math.log(q)
    curve = np.array(
        [logsumexp([a * lp + (1 - a) * lq, a * lq + (1 - a) * lp]) / (a - 1) for a in ORDERS]
    )
    assert rdp_epsilon(pure_dp_event(eps), 1e-6) == pytest.approx(
        _eps_from_curve(curve, 1e-6), rel=1e-9
    )
    # never below the exact (closed-form) epsilon of that release
    assert rdp_epsilon(pure_dp_event(eps), 1e-6) >= get_epsilon(pure_dp_event(eps), 1e-6)


@pytest.mark.parametrize(
    "event",
    [
        dp_accounting.LaplaceDpEvent(1.0),
        dp_accounting.RandomizedResponseDpEvent(0.5, 3),
        dp_accounting.SampledWithoutReplacementDpEvent(100, 10, dp_accounting.GaussianDpEvent(1)),
        # Poisson-sampled steps are accounted (test_rdp_sampled.py), but only over a
        # single Gaussian
        dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.LaplaceDpEvent(1.0)),
        dp_accounting.PoissonSampledDpEvent(
            0.1, compose(dp_accounting.GaussianDpEvent(1.0), dp_accounting.GaussianDpEvent(1.0))),
        compose(poisson_gaussian_event(0.1, 1.0, 10), dp_accounting.LaplaceDpEvent(1.0)),
    ],
)
def test_refuses_what_rdp_cannot_account_exactly(event):
    with pytest.raises(UnsupportedDpEventError, match="cannot be accounted exactly by Rényi"):
        to_rdp_event(event)
    with pytest.raises(UnsupportedDpEventError):
        rdp_epsilon(event, 1e-6)
    with pytest.raises(UnsupportedDpEventError):
        repeat_and_select_event(event, 5, 1.0)


def _papernot_steinke_tnb(curve, mean, shape, gamma):
    """Theorem 2 of Papernot & Steinke (2022), written out independently."""
    c = (1 + shape) * np.min((1 - 1 / ORDERS) * curve - math.log(gamma) / ORDERS)
    out = curve + math.log(mean) / (ORDERS - 1) + c
    return np.minimum.accumulate(out[::-1])[::-1]  # monotonicity in the order


@pytest.mark.parametrize("shape", [0.0, 1.0, 2.0])
def test_repeat_and_select_gaussian_matches_theorem(shape):
    z, mean, delta = 8.0, 10.0, 1e-6
    mu = 2.0 / z
    gamma = rdp_mod._gamma_truncated_negative_binomial(shape, mean)
    curve = _papernot_steinke_tnb(ORDERS * mu**2 / 2, mean, shape, gamma)
    got = rdp_epsilon(repeat_and_select_event(dp_accounting.GaussianDpEvent(z), mean, shape),
                      delta)
    assert got == pytest.approx(_eps_from_curve(curve, delta), rel=1e-9)
    # selection costs more than one run, much less than mean-fold composition
    one = rdp_epsilon(dp_accounting.GaussianDpEvent(z), delta)
    composed = rdp_epsilon(dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(z), int(mean)), delta)
    assert one < got < composed


@pytest.mark.parametrize("shape,factor", [(1.0, 3.0), (0.0, 2.0)])
def test_repeat_and_select_pure_limit_is_liu_talwar(shape, factor):
    # At high order the RDP bound of RepeatAndSelect on an eps-DP run tends to
    # (2 + shape) eps: 3 eps for the geometric distribution (Liu & Talwar 2019).
    eps = 1.0
    acc = dp_accounting.rdp.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
    acc.compose(to_rdp_event(repeat_and_select_event(pure_dp_event(eps), 10, shape)))
    top = acc._rdp[-1]
    assert factor * eps - 0.01 < top < factor * eps + 0.02


def test_rdp_delta_inverts_epsilon():
    ev = repeat_and_select_event(gaussian_event(5.0, 1.0), 4, 1.0)
    eps = rdp_epsilon(ev, 1e-6)
    assert rdp_delta(ev, eps) <= 1.01e-6
    assert rdp_delta(ev, 0.5 * eps) > 1e-6


def test_invalid_arguments():
    ev = gaussian_event(1.0, 1.0)
    with pytest.raises(ValueError):
        rdp_epsilon(ev, 0.0)
    with pytest.raises(ValueError):
        rdp_delta(ev, -1.0)
    with pytest.raises(ValueError):
        repeat_and_select_event(ev, 0.5, 1.0)
    with pytest.raises(ValueError):
        repeat_and_select_event(ev, 2.0, -1.0)


def test_repeat_and_select_nested_in_composition():
    sel = repeat_and_select_event(gaussian_event(5.0, 1.0), 4, 1.0)
    total = compose(sel, gaussian_event(5.0, 1.0))
    assert rdp_epsilon(total, 1e-6) > rdp_epsilon(sel, 1e-6)
    translated = to_rdp_event(total)
    assert isinstance(translated.events[0], dp_event.RepeatAndSelectDpEvent)
    assert translated.events[0].event.noise_multiplier == pytest.approx(5.0)


def test_get_epsilon_routes_private_selection_to_rdp():
    """get_epsilon/get_delta account RepeatAndSelect through the RDP translation."""
    from skdp.accounting import gaussian_event, get_delta, get_epsilon
    from skdp.accounting._rdp import rdp_delta, rdp_epsilon, repeat_and_select_event

    ev = repeat_and_select_event(gaussian_event(4.0, 1.0), mean=5.0, shape=1.0)
    assert get_epsilon(ev, 1e-6) == rdp_epsilon(ev, 1e-6)
    assert get_delta(ev, 1.0) == rdp_delta(ev, 1.0)
    # selection costs more than a single run
    assert get_epsilon(ev, 1e-6) > get_epsilon(gaussian_event(4.0, 1.0), 1e-6)
