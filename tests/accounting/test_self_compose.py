"""skdp.accounting._self_compose: the library's self-composition, the same PLD bit for bit,
with vectorised truncation bounds (and the library's own value near an integer)."""

import numpy as np
import pytest
from dp_accounting.pld import common
from dp_accounting.pld.privacy_loss_distribution import from_gaussian_mechanism

import skdp.accounting._self_compose as sc


def _pmfs(pld):
    return [pld._pmf_remove] if pld._symmetric else [pld._pmf_remove, pld._pmf_add]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("sd, q, interval, counts", [
    (0.5, 0.3, 1e-2, (1, 2, 9, 300)), (0.9, 0.002, 1e-2, (1, 9, 4000)),
    (0.9, 0.04, 1e-3, (2, 300)), (1.7, 0.04, 1e-2, (9, 4000)),
    (1.7, 0.3, 1e-3, (1, 300)), (6.0, 0.002, 1e-3, (2, 9)), (1.1, 0.02, 2e-4, (250,)),
])
def test_bounds_and_pld_equal_the_library(sd, q, interval, counts):
    pld = from_gaussian_mechanism(standard_deviation=sd, sampling_prob=q,
                                  value_discretization_interval=interval)
    for count in counts:
        for pmf in _pmfs(pld):
            dense = pmf if hasattr(pmf, "_probs") else pmf.to_dense_pmf()
            for tail in (1e-15, 1e-10, 0.0):
                assert sc.self_convolve_bounds(dense._probs, count, tail) == \
                    common.compute_self_convolve_bounds(dense._probs, count, tail)
        ours, theirs = sc.self_compose(pld, count), pld.self_compose(count)
        assert type(ours) is type(theirs)
        for a, b in zip(_pmfs(ours), _pmfs(theirs)):
            assert type(a) is type(b)
            if hasattr(b, "_probs"):
                assert np.array_equal(a._probs, b._probs)
                assert (a._lower_loss, a._infinity_mass) == (b._lower_loss, b._infinity_mass)
        for delta in (1e-5, 1e-8):
            assert ours.get_epsilon_for_delta(delta) == theirs.get_epsilon_for_delta(delta)


def test_a_bound_near_an_integer_takes_the_librarys_value(monkeypatch):
    """The guard can fire: with a huge error margin every order is recomputed by scipy,
    and the result is still the library's."""
    pld = from_gaussian_mechanism(standard_deviation=1.1, sampling_prob=0.02,
                                  value_discretization_interval=1e-3)
    probs = pld._pmf_remove._probs
    calls = []
    exact = sc._exact_log_mgf
    monkeypatch.setattr(sc, "_exact_log_mgf", lambda p, o: calls.append(o) or exact(p, o))
    assert sc.self_convolve_bounds(probs, 250, 1e-15) == \
        common.compute_self_convolve_bounds(probs, 250, 1e-15)
    n_default = len(calls)
    monkeypatch.setattr(sc, "LMGF_RTOL", 1.0)
    assert sc.self_convolve_bounds(probs, 250, 1e-15) == \
        common.compute_self_convolve_bounds(probs, 250, 1e-15)
    assert len(calls) - n_default == 40 and n_default < 40


def test_a_wrong_vectorised_value_would_be_caught():
    """The comparison above can fail: bounds from log-MGFs off by 1e-3 differ."""
    pld = from_gaussian_mechanism(standard_deviation=1.1, sampling_prob=0.02,
                                  value_discretization_interval=1e-3)
    probs = pld._pmf_remove._probs
    assert sc.self_convolve_bounds(probs * 1.01, 250, 1e-15) != \
        common.compute_self_convolve_bounds(probs, 250, 1e-15)
