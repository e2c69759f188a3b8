"""The model's share by one search over its noise (linear_model/_budget.py _joint_share):
every answer checked by the exact (PLD) accountant, monotone, close to the share search's,
used only inside a composite's fit, keyed on public quantities only."""

import math
import warnings

import numpy as np
import pytest

from skdp import DPLogisticRegression
from skdp.accounting import (DeltaDpEvent, calibrate_poisson_gaussian, compose,
                             gaussian_event, get_epsilon, poisson_gaussian_event)
from skdp.accounting import _lazy_dp_accounting as dp_accounting
from skdp.accounting._sampled import (RTOL, _JOINT, calibrate_poisson_gaussian_after,
                                      joint_calibrations)
from skdp.linear_model._base import planned_dp_event
from skdp.linear_model._budget import EPSILON_RTOL, largest_model_epsilon

DELTA = 1e-6


def _model(**kw):
    return DPLogisticRegression(classes=[0, 1], solver="dpsgd", data_norm=1.0, **kw)


def _noise_multiplier(event):
    stack = [event]
    while stack:
        ev = stack.pop()
        if isinstance(ev, dp_accounting.PoissonSampledDpEvent):
            return ev.event.noise_multiplier
        if isinstance(ev, dp_accounting.ComposedDpEvent):
            stack.extend(ev.events)
        elif isinstance(ev, dp_accounting.SelfComposedDpEvent):
            stack.append(ev.event)
    raise AssertionError("no DP-SGD step in the event")


def _prior(sigma1, sigma2, threshold=True):
    parts = [gaussian_event(sigma1, 1.0), gaussian_event(sigma2, 1.0)]
    if threshold:
        parts.append(DeltaDpEvent(DELTA / 4))
    return parts


CASES = [  # (n, d, epsilon, prior noise)
    (3000, 50, 1.0, (9.0, 9.5)),
    (3000, 50, 0.5, (15.0, 15.0)),
    (30000, 100, 1.0, (9.0, 9.5)),
    (2000, 20, 4.0, (3.0, 4.0)),
]


@pytest.mark.parametrize("n,d,epsilon,sigmas", CASES)
def test_joint_share_is_checked_exactly_and_close_to_the_share_search(n, d, epsilon, sigmas):
    events = _prior(*sigmas)
    old = largest_model_epsilon(_model(), events, n, d, epsilon, DELTA)  # no context
    with joint_calibrations():
        new = largest_model_epsilon(_model(), events, n, d, epsilon, DELTA)
        planned = planned_dp_event(_model(epsilon=new, delta=DELTA), n, d)
    total = get_epsilon(compose(*events, planned), DELTA)
    # exact checks: the composition within the budget, the model within its share
    assert total <= epsilon
    assert get_epsilon(planned, DELTA) <= new
    # and spending it: as tight as the share search (tolerances of both searches)
    assert total >= epsilon * (1.0 - 2.0 * EPSILON_RTOL - RTOL)
    assert abs(new / old - 1.0) <= 0.01
    old_total = get_epsilon(compose(*events, planned_dp_event(
        _model(epsilon=old, delta=DELTA), n, d)), DELTA)
    assert old_total <= epsilon


def test_joint_share_is_used_only_inside_the_context():
    n, d, epsilon = 3000, 50, 1.0
    events = _prior(9.0, 9.5)
    with joint_calibrations():
        share = largest_model_epsilon(_model(), events, n, d, epsilon, DELTA)
        inside = _noise_multiplier(planned_dp_event(_model(epsilon=share, delta=DELTA), n, d))
    outside = _noise_multiplier(planned_dp_event(_model(epsilon=share, delta=DELTA), n, d))
    # outside, the model calibrates on its own: within RTOL of its share, never above it
    own = get_epsilon(planned_dp_event(_model(epsilon=share, delta=DELTA), n, d), DELTA)
    assert share * (1.0 - RTOL) <= own <= share
    assert inside != outside
    # inside, the noise the composition was checked with
    key_z = [z for k, z in _JOINT._data.items() if k[0] == share]
    assert inside in key_z


def test_joint_share_is_monotone():
    n, d = 3000, 50
    with joint_calibrations():
        by_budget = [largest_model_epsilon(_model(), _prior(9.0, 9.5), n, d, e, DELTA)
                     for e in (1.0, 1.5, 2.0, 4.0)]
        by_prior = [largest_model_epsilon(_model(), _prior(s, s), n, d, 1.0, DELTA)
                    for s in (8.0, 12.0, 20.0, 40.0)]
    assert all(a < b for a, b in zip(by_budget, by_budget[1:]))
    assert all(a < b for a, b in zip(by_prior, by_prior[1:]))


@pytest.mark.parametrize("epsilon,q,steps", [(1.0, 0.01, 300), (0.5, 0.07, 274),
                                             (3.0, 0.2, 40)])
def test_calibrate_after_meets_the_target_and_reduces_to_the_plain_calibration(
        epsilon, q, steps):
    s = 25.0 / epsilon     # the prior releases take about a tenth of the budget
    prior = _prior(s, 1.2 * s)
    z = calibrate_poisson_gaussian_after(prior, epsilon, DELTA, q, steps, 0.05)
    total = get_epsilon(compose(*prior, poisson_gaussian_event(q, z, steps),
                                gaussian_event(1.0 / 0.05, 1.0)), DELTA)
    assert epsilon * (1.0 - RTOL) <= total <= epsilon
    # more noise before the steps leaves them less: z grows
    z_more = calibrate_poisson_gaussian_after(_prior(0.7 * s, 0.8 * s), epsilon, DELTA, q,
                                              steps, 0.05)
    assert z_more > z
    # no prior release: the plain calibration, the same number
    assert calibrate_poisson_gaussian_after([], epsilon, DELTA, q, steps) == \
        calibrate_poisson_gaussian(epsilon, DELTA, q, steps)


def test_calibrate_after_refuses_what_it_cannot_compose():
    rr = dp_accounting.RandomizedResponseDpEvent(noise_parameter=0.5, num_buckets=2)
    assert calibrate_poisson_gaussian_after([rr], 1.0, DELTA, 0.01, 100) is None


def test_pipeline_fit_uses_the_checked_noise_and_depends_on_public_quantities_only():
    """Two tables of the same public schema and size: the same share, the same noise (the
    registry's keys are the model's calibration inputs -- budgets and public sizes); the
    pipeline's total within its budget."""
    import pandas as pd

    from skdp import make_private_pipeline

    rng = np.random.default_rng(0)
    n = 2500

    def table(seed):
        r = np.random.default_rng(seed)
        X = pd.DataFrame({"a": r.normal(size=n), "b": r.uniform(0, 50, size=n),
                          "c": r.choice(["x", "y", "z"], size=n).astype(object)})
        return X, (r.random(n) < 0.3).astype(int)

    fits = []
    for seed in (1, 2):
        X, y = table(seed)
        pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                     delta=DELTA, numeric=["a", "b"], categorical=["c"],
                                     random_state=int(rng.integers(100)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pipe.fit(X, y)
        assert pipe.epsilon_ <= 1.0
        model = pipe[-1]
        assert get_epsilon(model.dp_event_, DELTA) <= pipe.budget_split_["model"][0]
        fits.append((pipe.budget_split_["model"][0], _noise_multiplier(model.dp_event_)))
    assert fits[0] == fits[1]
    for key in list(_JOINT._data):
        assert all(isinstance(v, (float, int)) and not isinstance(v, bool) for v in key)
        assert math.isfinite(_JOINT._data[key])


def test_a_model_that_releases_its_own_bounds_keeps_its_search():
    """A data_norm='auto' model splits its share with its own (nested) search: the joint
    path declines it (its inner model, with a public bound, may take it), and the share
    found in the context is checked as any: the model's planned event, read in the
    context, composes within the budget."""
    from skdp.linear_model._budget import _joint_share

    events = _prior(9.0, 9.5)
    auto = DPLogisticRegression(classes=[0, 1], solver="dpsgd", data_norm="auto")
    with joint_calibrations():
        assert _joint_share(auto, events, 3000, 20, 1.0, DELTA) is None
        share = largest_model_epsilon(auto, events, 3000, 20, 1.0, DELTA)
        planned = planned_dp_event(
            DPLogisticRegression(classes=[0, 1], solver="dpsgd", data_norm="auto",
                                 epsilon=share, delta=DELTA), 3000, 20)
    assert get_epsilon(compose(*events, planned), DELTA) <= 1.0


def _counting_planner(monkeypatch):
    """Patch the planner the budget split calls; returns the list of probed epsilons."""
    import skdp.linear_model._base as base

    seen = []
    original = base.planned_dp_event

    def counting(probe, *args, **kwargs):
        seen.append(float(probe.epsilon))
        return original(probe, *args, **kwargs)

    monkeypatch.setattr(base, "planned_dp_event", counting)
    return seen


def test_a_model_without_a_sampled_calibration_is_not_planned_by_the_joint_path(
        monkeypatch):
    """Objective perturbation runs no DP-SGD calibration: the joint path declines it from
    its solver alone, without planning it (each plan runs the alpha rule's calibrations),
    and the share search's answer is the same."""
    from skdp import DPHuberRegressor
    from skdp.linear_model._budget import _joint_share

    events = _prior(9.0, 9.5)
    huber = DPHuberRegressor(y_bound=1.0, data_norm=3.0)
    seen = _counting_planner(monkeypatch)
    with joint_calibrations():
        assert _joint_share(huber, events, 3000, 40, 1.0, DELTA) is None
        assert seen == []
        inside = largest_model_epsilon(huber, events, 3000, 40, 1.0, DELTA)
    assert inside == largest_model_epsilon(huber, events, 3000, 40, 1.0, DELTA)
