"""PrivacyLedger(adaptive=True): the Rényi filter's order, budget and reserve, what it
admits against the exact composition, its persistence and its reports."""

import json
import math
import multiprocessing
import os
import pickle
import re
import sqlite3

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

from skdp import DPLogisticRegression
from skdp.accounting import (
    DeltaDpEvent,
    LedgerCorruptError,
    PrivacyLedger,
    compose,
    gaussian_event,
    gaussian_mu_for,
    poisson_gaussian_event,
    pure_dp_event,
)
from skdp.accounting._filter import (
    RenyiFilter,
    event_rdp_at,
    gaussian_optimal_order,
    renyi_budget,
)
from skdp.accounting._gaussian import gaussian_epsilon
from skdp.accounting._ledger import event_to_json
from skdp.accounting._rdp import replace_one_sampled_gaussian_rdp
from skdp.exceptions import BudgetExceededError
from skdp.linear_model._auto import LEDGER_FILTER_DELTA_RESERVE_SHARE

DELTA = 1e-6
BUDGETS = [(0.1, 1e-6), (1.0, 1e-6), (1.0, 1e-9), (3.0, 1e-5), (10.0, 1e-6)]


def _gaussian(mu):
    """A release with Gaussian-DP parameter mu (sensitivity 1, noise 1/mu)."""
    return gaussian_event(1.0 / mu, 1.0)


def _admitted(ledger, event, n_tries):
    count = 0
    for _ in range(n_tries):
        try:
            ledger.record(event)
        except BudgetExceededError:
            break
        count += 1
    return count


# ----------------------------------------------------------------------------------------
# the filter's constants


@pytest.mark.parametrize("epsilon, delta", BUDGETS)
def test_budget_converts_to_the_budget_and_is_tight(epsilon, delta):
    flt = RenyiFilter.for_budget(epsilon, delta)
    assert flt.delta_reserve == LEDGER_FILTER_DELTA_RESERVE_SHARE * delta
    budget = flt.budget
    eps_at, _ = compute_epsilon([flt.order], [budget], flt.delta_rdp)
    assert 0.0 < budget and eps_at <= epsilon
    assert compute_epsilon([flt.order], [budget * (1 + 1e-9)], flt.delta_rdp)[0] > epsilon


@pytest.mark.parametrize("epsilon, delta", BUDGETS)
def test_order_maximises_the_admitted_gaussian_workload(epsilon, delta):
    order = gaussian_optimal_order(epsilon, delta)

    def admitted(a):
        return renyi_budget(epsilon, delta, a) / a

    best = admitted(order)
    for factor in (0.8, 0.95, 1.05, 1.25):
        assert admitted(order * factor) <= best
    # rounded to four significant digits: within 1e-6 of the continuous optimum's value
    fine = max(admitted(a) for a in np.geomspace(order / 1.01, order * 1.01, 201))
    assert best >= fine * (1 - 1e-6)


def test_filter_admits_less_than_the_exact_composition_by_the_documented_share():
    """At (1, 1e-6): 0.819 of the exact Gaussian-DP mu^2 (the figure in the docs)."""
    flt = RenyiFilter.for_budget(1.0, 1e-6)
    admitted_mu2 = 2.0 * flt.budget / flt.order
    assert admitted_mu2 / gaussian_mu_for(1.0, 1e-6) ** 2 == pytest.approx(0.819, abs=5e-4)


def _exact_conversion(order, rdp, delta):
    """dp-accounting's conversion of (order, rdp)-RDP at delta, in 50-digit arithmetic."""
    import mpmath

    with mpmath.workdps(50):
        a, r, d = mpmath.mpf(order), mpmath.mpf(rdp), mpmath.mpf(delta)
        return r + mpmath.log(1 - 1 / a) - mpmath.log(d * a) / (a - 1)


def _zcdp_pad(value):
    """An event of Rényi divergence ``value`` at every order."""
    return dp_accounting.ZCDpEvent(rho=0.0, xi=float(value))


@pytest.mark.parametrize("epsilon, delta", BUDGETS + [(0.001, 1e-12), (200.0, 0.5)])
def test_what_the_filter_admits_converts_within_the_budget_in_exact_arithmetic(epsilon,
                                                                               delta):
    """Audit: B was the largest float whose *float* conversion is <= epsilon, and the
    divergences' float sum was compared with it with no margin: at (10, 1e-6) two
    releases whose float sum is B proved epsilon + 1.3e-15 in exact arithmetic.  Now the
    exact sum of what is admitted converts to at most epsilon."""
    from fractions import Fraction

    flt = RenyiFilter.for_budget(epsilon, delta)
    assert _exact_conversion(flt.order, flt.budget, flt.delta_rdp) <= epsilon
    with PrivacyLedger(epsilon=epsilon, delta=delta, adaptive=True) as led:
        B = led.renyi_filter.budget
        first = math.nextafter(B / 2.0, math.inf)
        second = B - first
        while first + math.nextafter(second, math.inf) <= B:
            second = math.nextafter(second, math.inf)
        # and the next one up: a sum within a rounding of the budget
        admitted = []
        for value in (first, second, math.nextafter(second, math.inf)):
            try:
                led.record(_zcdp_pad(value))
                admitted.append(value)
            except BudgetExceededError:
                pass
        assert admitted[0] == first
        exact = sum((Fraction(v) for v in admitted), Fraction(0))
        assert _exact_conversion(flt.order, _mp_fraction(exact), flt.delta_rdp) <= epsilon


def _mp_fraction(frac):
    import mpmath

    with mpmath.workdps(50):
        return mpmath.mpf(frac.numerator) / frac.denominator


def test_the_divergences_are_summed_exactly_rounded():
    """Ten thousand releases each below half a unit in the last place of the running
    total: a float sum left to right never moves (the total stayed within the budget
    while the exact one exceeded it by 4e-12 relative); the filter's sum is the correctly
    rounded exact sum."""
    flt = RenyiFilter.for_budget(1.0, DELTA)
    big = flt.budget
    tiny = 0.49 * (math.nextafter(big, math.inf) - big)
    texts = [event_to_json(_zcdp_pad(big))] + [event_to_json(_zcdp_pad(tiny))] * 10_000
    assert flt.admits(texts[:1])
    assert not flt.admits(texts)


@pytest.mark.parametrize("epsilon", [1e-6, 1e-5, 1e-4])
def test_a_budget_without_a_renyi_budget_is_refused_at_creation(epsilon):
    """Audit: at delta = 1e-12 the order search stops at 1e5, where a budget below
    ~1.6e-4 leaves a negative Rényi budget: the ledger was created and refused every
    release, printing a negative budget.  Now it is refused, naming the smallest epsilon
    that works at that delta."""
    with pytest.raises(ValueError, match=r"delta=1e-12 needs epsilon > 0\.000159,") as info:
        PrivacyLedger(epsilon=epsilon, delta=1e-12, adaptive=True)
    assert not re.search(r"(?<![e\d])-\d", str(info.value))   # no negative budget shown
    with pytest.raises(ValueError, match="needs epsilon >"):
        RenyiFilter.for_budget(epsilon, 1e-12)


def test_the_smallest_epsilon_named_works():
    from skdp.accounting._filter import MAX_ORDER, smallest_filter_epsilon

    smallest = smallest_filter_epsilon(1e-12)
    assert 1.5e-4 < smallest < 1.6e-4
    with PrivacyLedger(epsilon=1.01 * smallest, delta=1e-12, adaptive=True) as led:
        flt = led.renyi_filter
        assert flt.order == MAX_ORDER and 0.0 < flt.budget
        assert _exact_conversion(flt.order, flt.budget, flt.delta_rdp) <= 1.01 * smallest
    with pytest.raises(ValueError, match="needs epsilon >"):
        PrivacyLedger(epsilon=0.99 * smallest, delta=1e-12, adaptive=True)


# ----------------------------------------------------------------------------------------
# the Rényi divergence of each event at the filter's order


def test_event_rdp_at_matches_closed_forms():
    order = 23.26
    assert event_rdp_at(event_to_json(_gaussian(0.125)), order) == pytest.approx(
        (order * 0.125 ** 2 / 2, 0.0))
    zcdp = dp_accounting.ZCDpEvent(0.01, 0.002)
    assert event_rdp_at(event_to_json(zcdp), order) == pytest.approx(
        (0.002 + order * 0.01, 0.0))
    twice = dp_accounting.SelfComposedDpEvent(_gaussian(0.1), 7)
    assert event_rdp_at(event_to_json(twice), order)[0] == pytest.approx(7 * order * 0.01 / 2)
    with_threshold = compose(_gaussian(0.125), DeltaDpEvent(1e-7))
    assert event_rdp_at(event_to_json(with_threshold), order) == pytest.approx(
        (order * 0.125 ** 2 / 2, 1e-7))
    assert event_rdp_at(event_to_json(dp_accounting.NonPrivateDpEvent()), order)[0] == math.inf
    # pure epsilon-DP: at most epsilon at every order
    assert 0.0 < event_rdp_at(event_to_json(pure_dp_event(0.5)), order)[0] <= 0.5


def test_event_rdp_at_reads_dpsgd_steps_with_the_replace_one_curve():
    order = 11.5
    event = poisson_gaussian_event(0.02, 1.5, 300)
    expected = 300 * replace_one_sampled_gaussian_rdp(0.02, 1.5, [order])[0]
    assert event_rdp_at(event_to_json(event), order)[0] == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------------------
# the ledger


def test_adaptive_ledger_refuses_what_only_the_exact_composition_admits():
    """mu = 1/8 releases at (1, 1e-6): the exact composition admits 3, the filter 2."""
    event = _gaussian(0.125)
    with PrivacyLedger(epsilon=1.0, delta=DELTA) as exact, \
            PrivacyLedger(epsilon=1.0, delta=DELTA, adaptive=True) as adaptive:
        assert _admitted(exact, event, 5) == 3
        assert _admitted(adaptive, event, 5) == 2
        assert len(adaptive) == 2  # the refused release wrote nothing
        flt = adaptive.renyi_filter
        left = flt.budget - 2 * flt.order * 0.125 ** 2 / 2
        assert adaptive.remaining == pytest.approx(
            gaussian_epsilon(DELTA, math.sqrt(2 * left / flt.order)))
        assert not adaptive.would_exceed(_gaussian(math.sqrt(2 * left / flt.order) * 0.999))
        assert adaptive.would_exceed(_gaussian(math.sqrt(2 * left / flt.order) * 1.001))


def test_refusal_message_names_the_filter():
    with PrivacyLedger(epsilon=1.0, delta=DELTA, adaptive=True) as led:
        with pytest.raises(BudgetExceededError, match=r"Rényi filter at order 23\.26 with "
                           r"this release: divergence .* Nothing was released"):
            led.record(_gaussian(gaussian_mu_for(1.0, DELTA)), source="whole budget")
        assert len(led) == 0


def test_delta_parts_are_held_to_the_reserve():
    reserve = LEDGER_FILTER_DELTA_RESERVE_SHARE * DELTA
    event = compose(_gaussian(0.01), DeltaDpEvent(0.3 * DELTA))
    with PrivacyLedger(epsilon=1.0, delta=DELTA, adaptive=True) as led:
        led.record(event)
        assert 0.3 * DELTA <= reserve
        with pytest.raises(BudgetExceededError, match=r"\(0, delta\) parts 6e-07 of 5e-07"):
            led.record(event)  # 0.6 delta > the reserve, the Rényi part is far from full
        led.record(_gaussian(0.01))  # no (0, delta) part: still admitted


def test_epsilon_spent_is_the_filter_guarantee():
    with PrivacyLedger(epsilon=2.0, delta=DELTA, adaptive=True) as led:
        assert (led.epsilon_spent(), led.delta_spent()) == (0.0, 0.0)
        led.record(_gaussian(0.05))
        assert (led.epsilon_spent(), led.delta_spent()) == (2.0, DELTA)
        assert led.epsilon_spent(delta=DELTA) == 2.0
        with pytest.raises(ValueError, match="no epsilon at another delta"):
            led.epsilon_spent(delta=1e-5)
        with pytest.raises(ValueError, match="no delta at another epsilon"):
            led.delta_spent(epsilon=1.0)
        text = led.summary()
        assert "adaptive" in text.splitlines()[0]
        assert "Rényi filter at order" in text and "still fits" in text.splitlines()[-1]


def test_invalid_adaptive_parameters():
    with pytest.raises(ValueError, match="needs an epsilon budget"):
        PrivacyLedger(adaptive=True)
    with pytest.raises(ValueError, match="delta > 0"):
        PrivacyLedger(epsilon=1.0, delta=0.0, adaptive=True)
    with pytest.raises(TypeError, match="True or False"):
        PrivacyLedger(epsilon=1.0, adaptive="yes")


def test_adaptive_store_persists_its_filter(tmp_path):
    path = tmp_path / "study.sqlite"
    led = PrivacyLedger(epsilon=1.0, delta=DELTA, path=path, adaptive=True)
    led.record(_gaussian(0.125))
    reopened, copied = PrivacyLedger.open(path), pickle.loads(pickle.dumps(led))
    for again in (reopened, copied):
        assert again.adaptive and again.renyi_filter == led.renyi_filter
    assert _admitted(reopened, _gaussian(0.125), 3) == 1  # the filter holds 2 in all
    assert copied.would_exceed(_gaussian(0.125)) and len(copied) == 2
    con = sqlite3.connect(path)
    meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    assert meta["schema"] == "2" and meta["composition"] == "renyi_filter"
    assert json.loads(meta["filter_order"]) == led.renyi_filter.order
    # a header that lost its filter is corrupt, never read as an exact store
    con.execute("DELETE FROM meta WHERE key = 'filter_order'")
    con.commit()
    con.close()
    with pytest.raises(LedgerCorruptError):
        PrivacyLedger.open(path)


def test_exact_store_keeps_schema_1(tmp_path):
    path = tmp_path / "exact.sqlite"
    PrivacyLedger(epsilon=1.0, delta=DELTA, path=path).close()
    con = sqlite3.connect(path)
    meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    assert meta["schema"] == "1" and "composition" not in meta
    con.execute("INSERT INTO meta VALUES ('composition', 'renyi_filter')")
    con.commit()
    con.close()
    with pytest.raises(LedgerCorruptError):
        PrivacyLedger.open(path)


def test_estimator_fits_are_admitted_by_their_events_divergence():
    """Objective perturbation's zCDP record: the filter admits floor(B / r) fits."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400, 3))
    y = (X[:, 0] > 0).astype(int)
    with PrivacyLedger(epsilon=1.0, delta=DELTA, adaptive=True) as led:
        fitted = []
        for seed in range(8):
            try:
                fitted.append(DPLogisticRegression(
                    epsilon=0.25, delta=1e-7, data_norm=2.0, classes=[0, 1], random_state=seed,
                    privacy_ledger=led).fit(X, y))
            except BudgetExceededError:
                break
        flt = led.renyi_filter
        per_fit = event_rdp_at(event_to_json(fitted[0].dp_event_), flt.order)[0]
        assert len(fitted) == len(led) == int(flt.budget // per_fit) >= 1


def _spend_until_refused(ledger, event, n_tries):
    return _admitted(ledger, event, n_tries)


def test_concurrent_spending_is_atomic_under_the_filter():
    """Three processes race for a filter that holds exactly 7 releases."""
    flt = RenyiFilter.for_budget(1.0, DELTA)
    mu = math.sqrt(2 * flt.budget / (7.5 * flt.order))  # 7 fit, 8 do not
    ctx = multiprocessing.get_context("spawn")
    with PrivacyLedger(epsilon=1.0, delta=DELTA, adaptive=True) as led:
        with ctx.Pool(3) as pool:
            counts = pool.starmap(_spend_until_refused, [(led, _gaussian(mu), 5)] * 3)
        assert sum(counts) == 7 == len(led)
        assert len({e.pid for e in led.entries()}) >= 2
        assert os.path.exists(led.path)
