"""The memoised PLD builder (skdp.accounting._pld_memo) gives dp-accounting's PLDAccountant's
numbers bit for bit, hits its caches only on equal public inputs, and falls back to the
accountant for what it does not build."""

import itertools
import math

import pytest

from skdp.accounting import (compose, gaussian_event, get_delta, get_epsilon,
                             poisson_gaussian_event)
from skdp.accounting import _lazy_dp_accounting as dp_accounting
from skdp.accounting import _pld_memo
from skdp.accounting._events import NEIGHBORING_RELATION


def _reference(event, interval):
    from dp_accounting.pld import PLDAccountant

    return PLDAccountant(NEIGHBORING_RELATION,
                         value_discretization_interval=interval).compose(event)


def _events(q, z, T):
    steps = poisson_gaussian_event(q, z, T)
    model = dp_accounting.ComposedDpEvent((steps, gaussian_event(25.0, 1.0)))
    # a pipeline's total: two transformers' Gaussians, then the model (nested)
    return [steps, model,
            dp_accounting.ComposedDpEvent(
                (gaussian_event(4.0, 1.0), gaussian_event(6.5, 1.0), model)),
            dp_accounting.SelfComposedDpEvent(gaussian_event(3.0, 1.0), 7),
            dp_accounting.ComposedDpEvent(
                (dp_accounting.NoOpDpEvent(), steps, dp_accounting.NoOpDpEvent()))]


@pytest.mark.parametrize("q,z,T", [(0.01, 0.8, 50), (0.073, 9.0, 274), (0.2, 2.0, 30)])
@pytest.mark.parametrize("interval", [6.4e-3, 2.26e-3])
def test_same_numbers_as_the_accountant_cold_and_warm(q, z, T, interval):
    _pld_memo.clear_caches()
    for event in _events(q, z, T):
        expected = _reference(event, interval)
        for _ in range(2):      # cold, then from the caches
            got = _pld_memo.pld_of(event, interval, NEIGHBORING_RELATION)
            for delta in (1e-5, 1e-7):
                assert got.get_epsilon(delta) == expected.get_epsilon(delta)
            for eps in (0.3, 2.0):
                assert got.get_delta(eps) == expected.get_delta(eps)


def test_a_prefix_built_for_one_event_serves_another_only_when_equal():
    _pld_memo.clear_caches()
    interval = 6.4e-3
    t1, t2 = gaussian_event(4.0, 1.0), gaussian_event(6.5, 1.0)
    for z in (3.0, 3.0 * (1 + 1e-12), 3.1):  # nearly equal noise is another event
        event = dp_accounting.ComposedDpEvent((t1, t2, poisson_gaussian_event(0.05, z, 40)))
        got = _pld_memo.pld_of(event, interval, NEIGHBORING_RELATION).get_epsilon(1e-6)
        assert got == _reference(event, interval).get_epsilon(1e-6)


def test_non_private_and_unsupported_events():
    interval = 6.4e-3
    nonprivate = dp_accounting.ComposedDpEvent(
        (gaussian_event(4.0, 1.0), dp_accounting.NonPrivateDpEvent()))
    memo = _pld_memo.pld_of(nonprivate, interval, NEIGHBORING_RELATION)
    assert memo.get_epsilon(1e-6) == math.inf and memo.get_delta(1.0) == 1
    zero_noise = poisson_gaussian_event(0.1, 0.0, 3)
    assert _pld_memo.pld_of(zero_noise, interval, NEIGHBORING_RELATION).get_epsilon(
        1e-6) == math.inf
    rr = dp_accounting.RandomizedResponseDpEvent(noise_parameter=0.5, num_buckets=2)
    assert _pld_memo.pld_of(dp_accounting.ComposedDpEvent((rr, gaussian_event(4.0, 1.0))),
                            interval, NEIGHBORING_RELATION) is None
    # a list inside a ComposedDpEvent: its leaves still key the caches
    listed = dp_accounting.ComposedDpEvent([gaussian_event(4.0, 1.0),
                                            poisson_gaussian_event(0.1, 1.0, 5)])
    assert _pld_memo.pld_of(listed, interval, NEIGHBORING_RELATION).get_epsilon(1e-6) == \
        _reference(listed, interval).get_epsilon(1e-6)

def test_reported_epsilon_unchanged_through_get_epsilon():
    """The reporting accountant's answer with the memo equals the one it gives from
    dp-accounting's accountant on the grid it picks (the memo is a cache, not a bound)."""
    from skdp.accounting import _accountant

    for q, z, T in itertools.product((0.02, 0.1), (1.0, 4.0), (20, 200)):
        event = compose(gaussian_event(5.0, 1.0), poisson_gaussian_event(q, z, T))
        _accountant._pld_epsilon_cached.cache_clear()
        _accountant.pld_epsilon_on_grid.cache_clear()
        _pld_memo.clear_caches()
        eps = get_epsilon(event, 1e-6)
        frozen = _accountant._hashable_form(event)
        count = _accountant.composition_count(frozen)
        interval = _accountant.grid_width(_accountant.PLD_COARSEST_LEVEL)
        ref = _reference(frozen, interval).get_epsilon(1e-6)
        while True:     # the width rule of _pld_epsilon_adaptive, on the accountant
            wanted = _accountant.pld_interval(
                _accountant.grid_corrected(ref, interval, count), count)
            if wanted >= interval:
                break
            interval = wanted
            ref = _reference(frozen, interval).get_epsilon(1e-6)
        assert eps == ref
        assert get_delta(event, eps) <= 1e-6 * (1 + 1e-9)



def test_a_leaf_built_under_one_relation_never_serves_another():
    """The leaf cache is keyed on the neighbouring relation: the same Poisson leaf built
    under add/remove first, then asked under replace-one, gives the replace-one PLD
    (failed before: the add/remove PLD was returned from the cache)."""
    from dp_accounting import NeighboringRelation

    _pld_memo.clear_caches()
    event, interval = poisson_gaussian_event(0.05, 1.2, 40), 2e-3
    leaf, count = event.event, event.count
    add_remove = _pld_memo._leaf_pld(leaf, count, interval,
                                     NeighboringRelation.ADD_OR_REMOVE_ONE)
    replace = _pld_memo._leaf_pld(leaf, count, interval, NEIGHBORING_RELATION)
    assert replace is not add_remove
    expected = _reference(event, interval).get_epsilon(1e-6)
    assert replace.get_epsilon_for_delta(1e-6) == pytest.approx(expected, rel=1e-9)
    assert add_remove.get_epsilon_for_delta(1e-6) < 0.9 * expected
