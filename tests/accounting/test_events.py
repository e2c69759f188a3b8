"""Pin skdp's mechanism -> event convention against closed forms.

If dp-accounting ever changed what ``GaussianDpEvent(z)`` means under REPLACE_ONE, or if
skdp's mapping drifted, these tests fail instead of the noise silently halving.
"""

import math

import pytest
from dp_accounting import NeighboringRelation
from dp_accounting.pld import PLDAccountant

from skdp.accounting import (
    NEIGHBORING_RELATION,
    calibrate_gaussian_sigma,
    compose,
    gaussian_epsilon,
    gaussian_event,
    get_delta,
    get_epsilon,
    pure_dp_event,
)
from skdp.exceptions import UnsupportedDpEventError


def _pld_epsilon(event, delta):
    acc = PLDAccountant(NeighboringRelation.REPLACE_ONE)
    acc.compose(event)
    return acc.get_epsilon(delta)


def test_relation_is_replace_one():
    assert NEIGHBORING_RELATION == NeighboringRelation.REPLACE_ONE


def test_design_md_measurement():
    """z = 1 under REPLACE_ONE PLD is eps = 10.0 at delta = 1e-5."""
    ev = gaussian_event(noise_std=1.0, sensitivity=2.0)
    assert ev.noise_multiplier == 1.0
    assert _pld_epsilon(ev, 1e-5) == pytest.approx(10.0, abs=0.01)
    assert get_epsilon(ev, 1e-5) == pytest.approx(10.0, abs=0.01)


@pytest.mark.parametrize("sensitivity", [0.01, 1.0, 7.0])
@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_gaussian_event_matches_balle_wang_and_pld(sensitivity, eps):
    """A release calibrated by the analytic Gaussian mechanism for (eps, delta) is reported
    as eps by the closed form, and by dp-accounting's PLD independently (to its
    discretisation): the event carries exactly the sensitivity the noise was made for."""
    delta = 1e-6
    sigma = calibrate_gaussian_sigma(eps, delta, sensitivity)
    ev = gaussian_event(sigma, sensitivity)
    assert get_epsilon(ev, delta) == pytest.approx(eps, rel=1e-9)
    assert _pld_epsilon(ev, delta) == pytest.approx(eps, rel=2e-3, abs=2e-3)
    # halving the sensitivity used for the event would be caught here
    assert get_epsilon(gaussian_event(sigma, sensitivity / 2), delta) < 0.7 * eps


def test_composition_of_gaussians_is_gdp():
    evs = [gaussian_event(s, 1.0) for s in (2.0, 3.0, 5.0)]
    mu = math.sqrt(sum((1.0 / s) ** 2 for s in (2.0, 3.0, 5.0)))
    total = compose(*evs)
    assert get_epsilon(total, 1e-6) == pytest.approx(gaussian_epsilon(1e-6, mu), rel=1e-12)
    assert get_epsilon(total, 1e-6) == pytest.approx(_pld_epsilon(total, 1e-6), rel=2e-3)
    nested = compose(compose(evs[0], evs[1]), [evs[2]])
    assert len(nested.events) == 3


def test_pure_dp_event():
    ev = pure_dp_event(0.7)
    assert get_epsilon(ev, 0.0) == pytest.approx(0.7, rel=1e-12)
    assert get_epsilon(ev, 1e-6) <= 0.7
    assert get_epsilon(compose(ev, ev, ev), 0.0) == pytest.approx(2.1, rel=1e-12)
    # basic composition is not optimal at delta > 0: PLD must do no worse
    assert get_epsilon(compose(*[ev] * 10), 1e-5) < 7.0
    assert get_delta(ev, 0.7) == 0.0
    assert get_delta(ev, 0.0) == pytest.approx((math.exp(0.7) - 1) / (math.exp(0.7) + 1))


def test_mixed_and_degenerate_events():
    g = gaussian_event(3.0, 1.0)
    mixed = compose(g, pure_dp_event(0.5))
    assert get_epsilon(mixed, 0.0) == math.inf
    e = get_epsilon(mixed, 1e-5)
    assert get_epsilon(g, 1e-5) < e < get_epsilon(g, 1e-5) + 0.5 + 1e-3
    import dp_accounting

    assert get_epsilon(dp_accounting.NoOpDpEvent(), 1e-6) == 0.0
    assert get_epsilon(dp_accounting.NonPrivateDpEvent(), 1e-6) == math.inf
    with pytest.raises(UnsupportedDpEventError):
        get_epsilon(dp_accounting.LaplaceDpEvent(1.0), 1e-6)
    with pytest.raises(ValueError):
        get_epsilon(g, 1.0)
    with pytest.raises(ValueError):
        gaussian_event(0.0, 1.0)


def test_delta_event_is_peeled_off_and_survives_the_ledger(tmp_path):
    """A (0, delta_T) release adds delta_T at every epsilon, composes with any accountant
    of the rest, and is stored and read back by the ledger."""
    from skdp.accounting import DeltaDpEvent, PrivacyLedger, compose, gaussian_event
    from skdp.accounting import get_delta, get_epsilon
    from skdp.accounting._ledger import event_from_json, event_to_json

    rest = gaussian_event(10.0, 1.0)
    event = compose(rest, DeltaDpEvent(1e-7))
    for eps in (0.0, 0.3, 5.0):
        assert get_delta(event, eps) == pytest.approx(get_delta(rest, eps) + 1e-7, rel=1e-9)
    assert get_epsilon(event, 1e-6) == get_epsilon(rest, 1e-6 - 1e-7)
    assert get_epsilon(event, 1e-7) == float("inf")
    assert event_from_json(event_to_json(event)) == event
    with PrivacyLedger(epsilon=2.0, delta=1e-6, path=tmp_path / "l.db") as ledger:
        ledger.record(event, source="discovery")
        assert get_epsilon(ledger.dp_event, 1e-6) == get_epsilon(event, 1e-6)


def test_an_epsilon_beyond_the_float_range_is_refused_clearly():
    """e^epsilon overflows above ~709: refused with a ValueError naming the limit (not an
    OverflowError from deep in the plan), before any row is read; the largest epsilon
    represented still composes to itself."""
    import numpy as np
    import pandas as pd

    from skdp import DPLogisticRegression, DPNonconvexRegressor, make_private_pipeline
    from skdp.accounting import get_epsilon, pure_dp_event
    from skdp.accounting._events import MAX_PURE_EPSILON

    with pytest.raises(ValueError, match="beyond what the accounting represents"):
        pure_dp_event(1000.0)
    assert get_epsilon(pure_dp_event(MAX_PURE_EPSILON), 0.0) == pytest.approx(
        MAX_PURE_EPSILON, rel=1e-9)
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.choice(list("xyz"), 300)})
    # a plan that charges a ledger a pure-DP pair of the whole budget (a model whose event
    # follows the released width) refuses it before any row
    pipe = make_private_pipeline(DPNonconvexRegressor(y_bound=1.0, solver="zeroth_order",
                                                      calibration="paper"),
                                 epsilon=1000.0, numeric=["a"], categorical=["b"])
    with pytest.raises(ValueError, match="beyond what the accounting represents"):
        pipe.fit(X, np.clip(X["a"], -1.0, 1.0))
    assert not hasattr(pipe, "epsilon_")
    # a plan of Gaussian and subsampled events only composes within it
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1000.0,
                                 numeric=["a"], categorical=["b"])
    pipe.fit(X, (X["a"] > 0).astype(int))
    assert pipe.privacy_guaranteed_ and pipe.epsilon_ <= 1000.0


def test_events_close_ignores_what_releases_nothing_and_nothing_else():
    """Audit finding (F5): a pipeline's plan leaves out a public-category encoder's
    ``NoOpDpEvent`` while its fitted event holds it, and the tree comparison called the
    private search's candidate data-dependent.  A NoOp composes to nothing: compositions
    are compared without them; every real release (a Gaussian, a pure-DP one, a
    ``NonPrivateDpEvent``) still counts."""
    import dp_accounting

    from skdp.accounting._events import events_close

    noop, g, h = dp_accounting.NoOpDpEvent(), gaussian_event(2.0, 1.0), pure_dp_event(0.5)
    leak = dp_accounting.NonPrivateDpEvent()
    assert events_close(compose(noop, g), g)
    assert events_close(compose(g, noop, h), compose(g, h))
    assert events_close(compose(noop, noop), noop)
    assert events_close(dp_accounting.SelfComposedDpEvent(compose(noop, g), 3),
                        dp_accounting.SelfComposedDpEvent(g, 3))
    assert not events_close(noop, g)
    assert not events_close(compose(noop, g), compose(g, g))
    assert not events_close(compose(noop, leak), noop)
    assert not events_close(compose(g, h), g)
    # nothing real is dropped: the privacy loss is unchanged, the event untouched if it
    # holds no NoOp
    from skdp.accounting._events import without_no_ops

    for event in (compose(g, noop, h), compose(noop, leak), compose(noop, compose(g, noop))):
        assert get_epsilon(without_no_ops(event), 1e-6) == get_epsilon(event, 1e-6)
    assert without_no_ops(compose(g, h)) == compose(g, h)
    plain = compose(g, h)
    assert without_no_ops(plain) is plain


def test_domination_compares_the_gaussian_mu_and_the_thresholds_delta():
    """A released event is accepted behind a width-setting release only when the planned
    one dominates it: a larger Gaussian mu with a smaller delta has a smaller epsilon at
    one delta but is not dominated (an epsilon comparison accepted it)."""
    from skdp.accounting import DeltaDpEvent, compose, gaussian_event, get_epsilon
    from skdp.accounting._events import privacy_profile_at_most

    planned = compose(gaussian_event(4.0, 1.0), DeltaDpEvent(1e-7))
    assert privacy_profile_at_most(compose(gaussian_event(4.2, 1.0), DeltaDpEvent(1e-7)),
                                   planned)
    other = compose(gaussian_event(3.99, 1.0), DeltaDpEvent(1e-9))
    assert get_epsilon(other, 1e-6) <= get_epsilon(planned, 1e-6)
    assert not privacy_profile_at_most(other, planned)
    assert not privacy_profile_at_most(compose(gaussian_event(4.2, 1.0),
                                               DeltaDpEvent(2e-7)), planned)


def test_dominated_by_is_exact_leaf_by_leaf_or_by_the_gaussian_total():
    """``dominated_by`` (a released-bounds fit's check of what it ran against what it
    reserved): no tolerance -- a record one unit in the last place above the bound is not
    dominated -- leaf by leaf, or for Gaussian compositions by their total mu^2."""
    import dp_accounting

    from skdp.accounting import DeltaDpEvent, poisson_gaussian_event
    from skdp.accounting._events import dominated_by, loosened

    def zcdp(rho, xi):
        return dp_accounting.ZCDpEvent(rho=rho, xi=xi)

    bound = compose(gaussian_event(4.0, 1.0), zcdp(0.01, 0.3), DeltaDpEvent(1e-9))
    assert dominated_by(bound, bound)
    assert dominated_by(compose(gaussian_event(4.0, 1.0), zcdp(0.01, 0.2),
                                DeltaDpEvent(1e-10)), bound)
    up = math.nextafter(0.3, 1.0)
    assert not dominated_by(compose(gaussian_event(4.0, 1.0), zcdp(0.01, up),
                                    DeltaDpEvent(1e-9)), bound)
    assert not dominated_by(compose(gaussian_event(math.nextafter(4.0, 0.0), 1.0),
                                    zcdp(0.01, 0.3), DeltaDpEvent(1e-9)), bound)
    # another structure with a zCDP leaf: not comparable, hence not dominated
    assert not dominated_by(compose(zcdp(0.01, 0.3), gaussian_event(4.0, 1.0)), bound)
    # loosened: dominates, by more than rounding and less than the margin
    for event in (bound, poisson_gaussian_event(0.01, 1.5, 100)):
        wider = loosened(event, 1e-10)
        assert dominated_by(event, wider) and not dominated_by(wider, event)
        assert get_epsilon(wider, 1e-6) == pytest.approx(get_epsilon(event, 1e-6), rel=1e-9)
    # Gaussian compositions: one total mu^2, proved with its rounding bounded
    steps = dp_accounting.SelfComposedDpEvent(gaussian_event(3.0, 1.0), 8)   # mu^2 = 8/9
    same = dp_accounting.SelfComposedDpEvent(gaussian_event(1.5, 1.0), 2)    # mu^2 = 8/9
    assert not dominated_by(steps, same)                   # equal: not provable in floats
    assert dominated_by(steps, loosened(same, 1e-12))
    assert not dominated_by(loosened(steps, 1e-12), same)
