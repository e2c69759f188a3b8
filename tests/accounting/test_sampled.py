"""Poisson-subsampled Gaussian events and their calibration (DP-SGD accounting).

The convention is pinned against a closed form (q = 1: the Gaussian mechanism with replace
sensitivity 2C, ``mu = 2/z``) and the calibration is checked with skdp's reporting
accountant and with a fresh dp-accounting PLD accountant built independently here.
"""

import math

import dp_accounting
import pytest
from dp_accounting.pld import PLDAccountant

import skdp.accounting._sampled as sampled
from skdp.accounting import (
    calibrate_poisson_gaussian,
    gaussian_epsilon,
    get_epsilon,
    poisson_gaussian_event,
)
from skdp.accounting._accountant import PLD_DISCRETIZATION


def _fresh_pld_epsilon(q, z, steps, delta):
    """ε from a PLD accountant built here, from dp-accounting's own event classes."""
    acc = PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=PLD_DISCRETIZATION,
    )
    acc.compose(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), steps
    )
    return acc.get_epsilon(delta)


def test_event_structure():
    ev = poisson_gaussian_event(0.02, 3.5, 17)
    assert isinstance(ev, dp_accounting.SelfComposedDpEvent)
    assert ev.count == 17
    assert isinstance(ev.event, dp_accounting.PoissonSampledDpEvent)
    assert ev.event.sampling_probability == 0.02
    assert isinstance(ev.event.event, dp_accounting.GaussianDpEvent)
    assert ev.event.event.noise_multiplier == 3.5


@pytest.mark.parametrize("z", [1.0, 4.0, 10.0])
def test_full_sampling_one_step_is_the_gaussian_closed_form(z):
    """q = 1, one step: Gaussian with per-record bound C, noise zC, replace sensitivity 2C."""
    delta = 1e-5
    eps = get_epsilon(poisson_gaussian_event(1.0, z, 1), delta)
    exact = gaussian_epsilon(delta, 2.0 / z)
    assert exact <= eps <= exact * 1.01 + 1e-3  # PLD is pessimistic, and close
    # the add/remove reading (mu = 1/z) would be far smaller: the convention is pinned
    assert eps > 1.5 * gaussian_epsilon(delta, 1.0 / z)


def test_full_sampling_composition_is_gdp():
    z, steps, delta = 6.0, 25, 1e-6
    eps = get_epsilon(poisson_gaussian_event(1.0, z, steps), delta)
    exact = gaussian_epsilon(delta, 2.0 * math.sqrt(steps) / z)
    assert exact <= eps <= exact * 1.01 + 1e-3


def test_subsampling_amplifies_and_is_monotone_in_q():
    z, steps, delta = 2.0, 200, 1e-5
    e1 = get_epsilon(poisson_gaussian_event(0.01, z, steps), delta)
    e2 = get_epsilon(poisson_gaussian_event(0.02, z, steps), delta)
    full = gaussian_epsilon(delta, 2.0 * math.sqrt(steps) / z)
    assert e1 < e2 < full


@pytest.mark.parametrize(
    "epsilon, delta, q, steps",
    [(1.0, 1e-5, 0.01, 1000), (0.5, 1e-6, 0.05, 200), (2.0, 1e-5, 0.1, 100)],
)
def test_calibration_is_safe_and_tight(epsilon, delta, q, steps):
    z = calibrate_poisson_gaussian(epsilon, delta, q, steps)
    reported = get_epsilon(poisson_gaussian_event(q, z, steps), delta)
    fresh = _fresh_pld_epsilon(q, z, steps, delta)
    for eps in (reported, fresh):
        assert eps <= epsilon
        assert eps >= 0.98 * epsilon
    # smallest: 2 % less noise breaks the target
    assert _fresh_pld_epsilon(q, 0.98 * z, steps, delta) > epsilon


def test_calibration_full_sampling_matches_closed_form():
    epsilon, delta = 1.0, 1e-5
    z = calibrate_poisson_gaussian(epsilon, delta, 1.0, 1)
    exact = gaussian_epsilon(delta, 2.0 / z)
    assert 0.98 * epsilon <= exact <= epsilon


def test_calibration_is_cached():
    args = (0.7, 1e-5, 0.03, 300)
    z1 = calibrate_poisson_gaussian(*args)
    hits = sampled._calibrate_cached.cache_info().hits
    z2 = calibrate_poisson_gaussian(*args)
    assert z1 == z2
    assert sampled._calibrate_cached.cache_info().hits == hits + 1


def test_calibration_floor_for_huge_epsilon(monkeypatch):
    """Targets met by any z >= Z_MIN return Z_MIN (a raised floor keeps the test fast)."""
    monkeypatch.setattr(sampled, "Z_MIN", 2.0)
    sampled._calibrate_cached.cache_clear()
    try:
        z = calibrate_poisson_gaussian(20.0, 1e-5, 1.0, 1)
    finally:
        sampled._calibrate_cached.cache_clear()
    assert z == 2.0
    assert get_epsilon(poisson_gaussian_event(1.0, z, 1), 1e-5) <= 20.0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(epsilon=0.0, delta=1e-5, sampling_rate=0.1, steps=10),
        dict(epsilon=math.inf, delta=1e-5, sampling_rate=0.1, steps=10),
        dict(epsilon=1.0, delta=0.0, sampling_rate=0.1, steps=10),
        dict(epsilon=1.0, delta=1.0, sampling_rate=0.1, steps=10),
        dict(epsilon=1.0, delta=1e-5, sampling_rate=0.0, steps=10),
        dict(epsilon=1.0, delta=1e-5, sampling_rate=1.5, steps=10),
        dict(epsilon=1.0, delta=1e-5, sampling_rate=0.1, steps=0),
    ],
)
def test_calibration_rejects_invalid_input(kwargs):
    with pytest.raises(ValueError):
        calibrate_poisson_gaussian(**kwargs)


def test_event_rejects_invalid_input():
    with pytest.raises(ValueError):
        poisson_gaussian_event(0.0, 1.0, 1)
    with pytest.raises(ValueError):
        poisson_gaussian_event(0.5, -1.0, 1)
    with pytest.raises(ValueError):
        poisson_gaussian_event(0.5, 1.0, 0)


# --- the PLD grid picked from ε itself (skdp.accounting._accountant.pld_interval) ---------

from skdp.accounting import _accountant  # noqa: E402


def _pld_on_grid(q, z, steps, delta, interval):
    acc = PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                        value_discretization_interval=interval)
    acc.compose(poisson_gaussian_event(q, z, steps))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize(
    "q, z, steps",
    [(0.126, 13.5, 159), (0.04, 1.02, 500), (4e-3, 0.73, 5000), (1.26e-3, 0.98, 1883),
     (1.26e-3, 7.7, 1883)],
)
def test_adaptive_grid_is_pessimistic_and_close_to_the_fine_grid(q, z, steps):
    """The reported ε is an upper bound for any grid width; measured here: it is never
    below a 2x finer grid than the finest, and within 1 % of the finest."""
    _accountant._pld_epsilon_cached.cache_clear()
    reported = get_epsilon(poisson_gaussian_event(q, z, steps), 1e-6)
    finest = _pld_on_grid(q, z, steps, 1e-6, PLD_DISCRETIZATION)
    finer = _pld_on_grid(q, z, steps, 1e-6, PLD_DISCRETIZATION / 2)
    assert reported >= finer * (1 - 1e-9)
    assert reported <= finest * 1.01


def test_grid_widths_are_half_powers_of_two_in_range():
    for eps in (1e-3, 0.05, 0.3, 1.0, 7.0, 20.0, 1e3, math.inf):
        for count in (1, 10, 1000, 10**6):
            k = 2 * math.log2(_accountant.pld_interval(eps, count) / _accountant.PLD_FINEST)
            assert abs(k - round(k)) < 1e-9 and 0 <= round(k) <= _accountant.PLD_COARSEST_LEVEL


def test_discrete_losses_keep_the_finest_grid():
    """Randomized response rounds up by the full width at each step: the adaptive width
    would make 10 compositions worse than basic composition (7.04 > 7 at width 6.4e-3)."""
    rr = dp_accounting.RandomizedResponseDpEvent(2.0 / (1.0 + math.exp(0.7)), 2)
    ev = dp_accounting.ComposedDpEvent([rr] * 10)
    assert not _accountant._gaussian_leaves_only(ev)
    assert _accountant._gaussian_leaves_only(poisson_gaussian_event(0.1, 1.0, 3))
    assert get_epsilon(ev, 1e-5) < 7.0


def test_small_sampling_rate_large_epsilon_is_not_over_noised():
    """The former floor z >= 0.5 gave ε = 5.26 for a target of 10 here (n = 1e7, default
    schedule): the calibration now reaches the target."""
    q, steps = 1.26e-3, 1883
    z = calibrate_poisson_gaussian(10.0, 1e-6, q, steps)
    assert z < 0.5
    assert 0.99 * 10.0 <= get_epsilon(poisson_gaussian_event(q, z, steps), 1e-6) <= 10.0


def test_composed_events_with_lists_are_cached(monkeypatch):
    """A ComposedDpEvent holds a list (unhashable): its hashable form (tuples) is the cache
    key, so the same composed event is accounted once, with the value of the uncached
    path; a new parameter is a new key."""
    calls = []
    adaptive = _accountant._pld_epsilon_adaptive

    def counting(event, delta):
        calls.append(event)
        return adaptive(event, delta)

    monkeypatch.setattr(_accountant, "_pld_epsilon_adaptive", counting)
    _accountant._pld_epsilon_cached.cache_clear()

    def event(z):
        return dp_accounting.ComposedDpEvent(
            [poisson_gaussian_event(0.02, z, 300), dp_accounting.GaussianDpEvent(30.0)])

    first = get_epsilon(event(1.5), 1e-6)
    again = get_epsilon(event(1.5), 1e-6)
    assert first == again == adaptive(event(1.5), 1e-6)
    assert len(calls) == 1
    assert isinstance(calls[0].events, tuple)
    assert get_epsilon(event(1.6), 1e-6) < first and len(calls) == 2


@pytest.mark.parametrize("delta", [1e-11, 1e-12, 1e-14])
def test_below_the_pld_floor_the_bound_is_renyi(delta):
    """Below PLD_DELTA_FLOOR the FFT's rounding in the PLD composition is of the order of
    the tail mass (the accountant's docstring): epsilon and delta come from Rényi DP."""
    from skdp.accounting import rdp_delta, rdp_epsilon
    from skdp.accounting._accountant import PLD_DELTA_FLOOR, get_delta

    assert delta < PLD_DELTA_FLOOR
    ev = poisson_gaussian_event(0.005, 3.62442, 3000)  # the audit's worst case at 1e-12
    eps = get_epsilon(ev, delta)
    assert eps == rdp_epsilon(ev, delta)
    assert eps > _fresh_pld_epsilon(0.005, 3.62442, 3000, delta)  # Rényi is looser
    assert get_delta(ev, eps) == rdp_delta(ev, eps) <= delta * (1 + 1e-9)


def test_at_the_pld_floor_the_pld_is_kept():
    from skdp.accounting._accountant import PLD_DELTA_FLOOR, _pld_epsilon

    ev = poisson_gaussian_event(0.01, 3.0, 500)
    assert get_epsilon(ev, PLD_DELTA_FLOOR) == _pld_epsilon(ev, PLD_DELTA_FLOOR)
